/**
 * The audit log: which session of which agent received which service's
 * token, when, and until when — never a token's value. JSON lines in
 * `$XDG_STATE_HOME/sherlock/audit.log`, 0600 in a 0700 folder.
 *
 * @module
 */

import { join } from "node:path";
import { ensurePrivateDir } from "../../private_files.ts";

/** One line of the audit log. */
export interface AuditEntry {
  /** When (RFC 3339). */
  time: string;
  /** What happened. */
  event:
    | "token"
    | "token_failed"
    | "login"
    | "login_failed"
    | "logout"
    | "idle_lock";
  /** The agent of the session, for token events. */
  agent?: string;
  /** The session, for token events. */
  session?: string;
  /** The service, for token events. */
  service?: string;
  /** The token's source (`secret`, `command`). */
  source?: string;
  /** The token's expiry (RFC 3339), if known. */
  expiresAt?: string | null;
  /** True when the token came from the daemon's cache. */
  cached?: boolean;
  /** The login provider, for login events. */
  provider?: string;
  /** A short, secret-free reason, for failures. */
  reason?: string;
}

/** The audit log's path. */
export function auditLogPath(stateDir: string): string {
  return join(stateDir, "audit.log");
}

/** Appends one entry (the time is filled in). */
export function appendAudit(
  stateDir: string,
  entry: Omit<AuditEntry, "time">,
): void {
  ensurePrivateDir(stateDir);
  const line = JSON.stringify({ time: new Date().toISOString(), ...entry }) +
    "\n";
  const file = Deno.openSync(auditLogPath(stateDir), {
    append: true,
    create: true,
    mode: 0o600,
  });
  try {
    file.writeSync(new TextEncoder().encode(line));
  } finally {
    file.close();
  }
}

/** The last `count` entries, oldest first; lines that do not parse are skipped. */
export function readAudit(stateDir: string, count: number): AuditEntry[] {
  let text: string;
  try {
    text = Deno.readTextFileSync(auditLogPath(stateDir));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  const entries: AuditEntry[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      entries.push(JSON.parse(line));
    } catch {
      // A torn line from a crash is not worth failing over.
    }
  }
  return entries.slice(-count);
}
