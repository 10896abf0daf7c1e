/**
 * The audit log: which session of which agent received which service's
 * token, when, and until when — never a token's value. JSON lines in
 * `$XDG_STATE_HOME/sherlock/audit.log`, 0600 in a 0700 folder. The entry
 * type and the reader are in `../audit_entries.ts`, which the CLI reads
 * without loading the daemon.
 *
 * @module
 */

import { join } from "node:path";
import { ensurePrivateDir } from "../../private_files.ts";
import type { AuditEntry } from "../audit_entries.ts";

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
