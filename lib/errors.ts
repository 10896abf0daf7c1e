/**
 * sherlock's own failures and their exit codes.
 *
 * Everything outside `lib/cli/` throws one of these instead of printing; the
 * CLI prints `sherlock: <message>` as one line and exits with `exitCode`.
 * The codes follow sysexits(3) so that scripts can tell sherlock's failures
 * from the agent's (whose exit code sherlock passes through unchanged).
 * {@linkcode ErrorCode} lists the broker's error codes and
 * {@linkcode ERROR_CODES} gives each its HTTP status (the daemon's side) and
 * exit code (the client's): here, because every command loads this module
 * anyway, and every part may import it (the protocol re-exports the type).
 *
 * @module
 */

/** Exit codes for sherlock's own failures (see docs/manual/exit_codes.md). */
export const ExitCode = {
  /** The command line was wrong. */
  Usage: 2,
  /** An internal bug; the message says how to get details. */
  Software: 70,
  /** The broker could not be reached, even after starting it. */
  Unavailable: 69,
  /** A file sherlock must write could not be created safely. */
  CantCreate: 73,
  /** The operator is not logged in to the broker. */
  NoPermission: 77,
  /** A profile, service or config file is invalid. */
  Config: 78,
  /** The agent's executable exists but cannot be executed. */
  NotExecutable: 126,
  /** The agent's executable was not found. */
  NotFound: 127,
  /** Ctrl-C at a prompt: as if SIGINT (2) had ended sherlock, 128+2. */
  Interrupted: 130,
} as const;

/** One of the values of {@linkcode ExitCode}. */
export type ExitCodeValue = typeof ExitCode[keyof typeof ExitCode];

/**
 * Why a broker request failed, as a machine-readable code (the protocol's,
 * `lib/broker/protocol.ts` re-exports it); each one's HTTP status and exit
 * code are in {@linkcode ERROR_CODES}, which must name every one.
 */
export type ErrorCode =
  | "bad_request"
  | "too_large"
  | "not_found"
  | "method_not_allowed"
  | "timeout"
  | "not_logged_in"
  | "no_store"
  | "wrong_passphrase"
  | "unknown_session"
  | "service_not_in_session"
  | "credential_not_in_session"
  | "store_exists"
  | "store_unusable"
  | "store_write_failed"
  | "unknown_service"
  | "invalid_service"
  | "no_secret"
  | "helper_failed"
  | "needs_authorization"
  | "oauth_failed"
  | "oauth_unsupported"
  | "invalid_config"
  | "exchange_refused"
  | "keyring_unavailable"
  | "internal";

/** What an {@linkcode ErrorCode} means on each side. */
export interface ErrorCodeMeaning {
  /** The daemon's HTTP status for it. */
  status: number;
  /** sherlock's exit code for it; `Software` for a client's bug. */
  exitCode: ExitCodeValue;
}

/** Every error code of the protocol, with its status and exit code. */
export const ERROR_CODES: Readonly<Record<ErrorCode, ErrorCodeMeaning>> = {
  bad_request: { status: 400, exitCode: ExitCode.Usage },
  too_large: { status: 413, exitCode: ExitCode.Software },
  not_found: { status: 404, exitCode: ExitCode.Software },
  method_not_allowed: { status: 405, exitCode: ExitCode.Software },
  timeout: { status: 408, exitCode: ExitCode.Software },
  not_logged_in: { status: 401, exitCode: ExitCode.NoPermission },
  no_store: { status: 404, exitCode: ExitCode.NoPermission },
  wrong_passphrase: { status: 401, exitCode: ExitCode.NoPermission },
  unknown_session: { status: 401, exitCode: ExitCode.NoPermission },
  service_not_in_session: { status: 403, exitCode: ExitCode.NoPermission },
  credential_not_in_session: { status: 403, exitCode: ExitCode.NoPermission },
  store_exists: { status: 409, exitCode: ExitCode.Usage },
  store_unusable: { status: 409, exitCode: ExitCode.Config },
  store_write_failed: { status: 500, exitCode: ExitCode.CantCreate },
  unknown_service: { status: 404, exitCode: ExitCode.Config },
  invalid_service: { status: 422, exitCode: ExitCode.Config },
  no_secret: { status: 404, exitCode: ExitCode.NoPermission },
  helper_failed: { status: 502, exitCode: ExitCode.Unavailable },
  needs_authorization: { status: 401, exitCode: ExitCode.NoPermission },
  oauth_failed: { status: 502, exitCode: ExitCode.Unavailable },
  oauth_unsupported: { status: 422, exitCode: ExitCode.Config },
  invalid_config: { status: 422, exitCode: ExitCode.Config },
  exchange_refused: { status: 403, exitCode: ExitCode.NoPermission },
  keyring_unavailable: { status: 503, exitCode: ExitCode.Unavailable },
  internal: { status: 500, exitCode: ExitCode.Software },
};

/** The meaning of a code from the wire, if this sherlock knows it. */
export function errorCodeMeaning(
  code: string | undefined,
): ErrorCodeMeaning | undefined {
  return code !== undefined && Object.hasOwn(ERROR_CODES, code)
    ? ERROR_CODES[code as ErrorCode]
    : undefined;
}

/** A failure of sherlock itself, with the exit code it maps to. */
export class SherlockError extends Error {
  /** The process exit code for this failure. */
  readonly exitCode: number;

  /** Creates an error whose message is the one line the operator sees. */
  constructor(message: string, exitCode: number) {
    super(message);
    this.name = "SherlockError";
    this.exitCode = exitCode;
  }
}

/** The command line is wrong (exit 2). */
export class UsageError extends SherlockError {
  /** Creates a usage error. */
  constructor(message: string) {
    super(message, ExitCode.Usage);
    this.name = "UsageError";
  }
}

/** A profile, service or config file is invalid (exit 78). */
export class ConfigError extends SherlockError {
  /** Creates a configuration error. */
  constructor(message: string) {
    super(message, ExitCode.Config);
    this.name = "ConfigError";
  }
}

/** A file sherlock must write cannot be created safely (exit 73). */
export class CantCreateError extends SherlockError {
  /** Creates a cannot-create error. */
  constructor(message: string) {
    super(message, ExitCode.CantCreate);
    this.name = "CantCreateError";
  }
}

/** The broker cannot be reached (exit 69). */
export class UnavailableError extends SherlockError {
  /** Creates an unavailable error. */
  constructor(message: string) {
    super(message, ExitCode.Unavailable);
    this.name = "UnavailableError";
  }
}

/** The operator is not logged in, or a credential was refused (exit 77). */
export class NoPermissionError extends SherlockError {
  /** Creates a permission error. */
  constructor(message: string) {
    super(message, ExitCode.NoPermission);
    this.name = "NoPermissionError";
  }
}

/**
 * Nothing accepted a connection on the broker's socket (no daemon, or a
 * stale socket): unlike a daemon that accepted and then failed, starting
 * one may help. Exit 69.
 */
export class BrokerNotRunningError extends UnavailableError {
  /** Creates the error. */
  constructor(message: string) {
    super(message);
    this.name = "BrokerNotRunningError";
  }
}

/** The operator is not logged in to the broker (exit 77). */
export class NotLoggedInError extends NoPermissionError {
  /** Creates the error. */
  constructor(message: string) {
    super(message);
    this.name = "NotLoggedInError";
  }
}

/**
 * The broker refused the passphrase (exit 77): on a terminal, login asks
 * again.
 */
export class WrongPassphraseError extends NoPermissionError {
  /** Creates the error. */
  constructor(message: string) {
    super(message);
    this.name = "WrongPassphraseError";
  }
}

/** The agent's executable was not found (exit 127). */
export class ExecutableNotFoundError extends SherlockError {
  /** Creates a not-found error. */
  constructor(message: string) {
    super(message, ExitCode.NotFound);
    this.name = "ExecutableNotFoundError";
  }
}

/** The agent's executable exists but cannot be executed (exit 126). */
export class NotExecutableError extends SherlockError {
  /** Creates a not-executable error. */
  constructor(message: string) {
    super(message, ExitCode.NotExecutable);
    this.name = "NotExecutableError";
  }
}

/**
 * The error of the class that exits with `exitCode` (a plain
 * {@linkcode SherlockError} for a code without a class of its own).
 */
export function errorWithExitCode(
  message: string,
  exitCode: ExitCodeValue,
): SherlockError {
  switch (exitCode) {
    case ExitCode.Usage:
      return new UsageError(message);
    case ExitCode.Config:
      return new ConfigError(message);
    case ExitCode.CantCreate:
      return new CantCreateError(message);
    case ExitCode.Unavailable:
      return new UnavailableError(message);
    case ExitCode.NoPermission:
      return new NoPermissionError(message);
    case ExitCode.NotFound:
      return new ExecutableNotFoundError(message);
    case ExitCode.NotExecutable:
      return new NotExecutableError(message);
    default:
      return new SherlockError(message, exitCode);
  }
}

/** The message of any thrown value, without a stack trace. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
