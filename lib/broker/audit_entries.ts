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
    | "login_start"
    | "login"
    | "login_failed"
    | "logout"
    | "idle_lock"
    | "remember"
    | "forget"
    | "passphrase_change"
    | "session_start"
    | "secret_set"
    | "secret_rm"
    | "oauth_start"
    | "oauth_authorized"
    | "oauth_revoked"
    | "oauth_scope_challenge"
    | "oauth_scope_failed"
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
  /** The scopes a remote server asked for, for `oauth_scope_challenge`. */
  scopes?: string[];
  /** The services a session registered, for `session_start`. */
  services?: string[];
  /**
   * The agent's own credentials a session registered, for `session_start`;
   * true on a token event that served one of them.
   */
  credentials?: string[] | true;
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
  /**
   * The OS keyring, for a login with the key it remembers and for
   * `remember` and `forget`.
   */
  keyring?: string;
  /** A short, secret-free reason, for failures. */
  reason?: string;
}

/** The most rotated files read (`audit.log.1` …); the daemon keeps 3. */
const MAX_ROTATED_FILES = 16;

/**
 * The last `count` entries of the audit log at `path` and, when it holds
 * fewer, of its rotated files (`<path>.1` is the newest), oldest first;
 * none when there is no log yet. Lines that do not parse are skipped.
 */
export function readAudit(path: string, count: number): AuditEntry[] {
  let entries: AuditEntry[] = [];
  for (let index = 0; index <= MAX_ROTATED_FILES; index++) {
    if (entries.length >= count) break;
    let text: string;
    try {
      text = Deno.readTextFileSync(index === 0 ? path : `${path}.${index}`);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) break;
      throw error;
    }
    entries = [...parseEntries(text), ...entries];
  }
  return count === 0 ? [] : entries.slice(-count);
}

function parseEntries(text: string): AuditEntry[] {
  const entries: AuditEntry[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const entry = JSON.parse(line);
      // A line that is not an entry (a forged one) is skipped too.
      if (typeof entry === "object" && entry !== null) entries.push(entry);
    } catch {
      // A torn line from a crash is not worth failing over.
    }
  }
  return entries;
}
