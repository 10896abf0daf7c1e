/**
 * sherlock's own failures and their exit codes.
 *
 * Everything outside `lib/cli/` throws one of these instead of printing; the
 * CLI prints `sherlock: <message>` as one line and exits with `exitCode`.
 * The codes follow sysexits(3) so that scripts can tell sherlock's failures
 * from the agent's (whose exit code sherlock passes through unchanged).
 *
 * @module
 */

/** Exit codes for sherlock's own failures (see the README's table). */
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
} as const;

/** One of the values of {@linkcode ExitCode}. */
export type ExitCodeValue = typeof ExitCode[keyof typeof ExitCode];

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

/** The message of any thrown value, without a stack trace. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
