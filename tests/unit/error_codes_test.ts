/**
 * The error taxonomy (lib/errors.ts): one table
 * from each protocol code to its HTTP status and exit code, and one class
 * per exit code.
 */

import assert from "node:assert/strict";
import {
  CantCreateError,
  ConfigError,
  ERROR_CODES,
  errorCodeMeaning,
  errorWithExitCode,
  ExecutableNotFoundError,
  ExitCode,
  NoPermissionError,
  NotExecutableError,
  SherlockError,
  UnavailableError,
  UsageError,
} from "../../lib/errors.ts";

Deno.test("ERROR_CODES: every code is an HTTP error status and one of sherlock's exit codes", () => {
  const exitCodes = new Set<number>(Object.values(ExitCode));
  for (const [code, meaning] of Object.entries(ERROR_CODES)) {
    assert.ok(meaning.status >= 400 && meaning.status < 600, code);
    assert.ok(exitCodes.has(meaning.exitCode), code);
  }
});

Deno.test("ERROR_CODES: the operator's failures and the client's bugs", () => {
  const exit = (code: keyof typeof ERROR_CODES) => ERROR_CODES[code].exitCode;
  assert.equal(exit("not_logged_in"), 77);
  assert.equal(exit("wrong_passphrase"), 77);
  assert.equal(exit("no_secret"), 77);
  assert.equal(exit("unknown_session"), 77);
  assert.equal(exit("service_not_in_session"), 77);
  assert.equal(ERROR_CODES.unknown_session.status, 401);
  assert.equal(ERROR_CODES.service_not_in_session.status, 403);
  assert.equal(exit("helper_failed"), 69);
  assert.equal(exit("unknown_service"), 78);
  assert.equal(exit("store_write_failed"), 73);
  assert.equal(exit("bad_request"), 2);
  assert.equal(exit("internal"), 70);
  assert.equal(exit("not_found"), 70);
});

Deno.test("errorCodeMeaning: a code this sherlock does not know has none", () => {
  assert.equal(errorCodeMeaning("helper_failed"), ERROR_CODES.helper_failed);
  assert.equal(errorCodeMeaning("from_a_newer_daemon"), undefined);
  assert.equal(errorCodeMeaning("toString"), undefined);
  assert.equal(errorCodeMeaning(undefined), undefined);
});

Deno.test("errorWithExitCode: the class of each exit code", () => {
  const cases = [
    [ExitCode.Usage, UsageError],
    [ExitCode.Config, ConfigError],
    [ExitCode.CantCreate, CantCreateError],
    [ExitCode.Unavailable, UnavailableError],
    [ExitCode.NoPermission, NoPermissionError],
    [ExitCode.NotFound, ExecutableNotFoundError],
    [ExitCode.NotExecutable, NotExecutableError],
    [ExitCode.Software, SherlockError],
  ] as const;
  for (const [exitCode, type] of cases) {
    const error = errorWithExitCode("it failed", exitCode);
    assert.ok(error instanceof type, String(exitCode));
    assert.equal(error.exitCode, exitCode);
    assert.equal(error.message, "it failed");
  }
});
