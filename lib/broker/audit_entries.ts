/**
 * The audit log's entries, and reading them back. Outside `daemon/` so that
 * `sherlock broker log` reads the log without loading the daemon, which
 * writes it (`daemon/audit_log.ts`).
 *
 * @module
 */

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
    | "idle_lock"
    | "session_start"
    | "secret_set"
    | "secret_rm"
    | "shutdown";
  /**
   * The agent of the session, for token and session events: the one the
   * session registered with, never what a request claims.
   */
  agent?: string;
  /** The session, for token and session events (as registered). */
  session?: string;
  /** The service, for token events; the secret's name, for secret events. */
  service?: string;
  /** The services a session registered, for `session_start`. */
  services?: string[];
  /** The pid of the sherlock that registered a session. */
  pid?: number;
  /** That process's executable as the daemon read it (Linux), if it could. */
  exe?: string;
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

/**
 * The last `count` entries of the audit log at `path`, oldest first; none
 * when there is no log yet. Lines that do not parse are skipped.
 */
export function readAudit(path: string, count: number): AuditEntry[] {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
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
