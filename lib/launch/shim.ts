/**
 * The token shim's run: fetch one service's token from the broker when its
 * server starts, then become the server with the token added to its
 * environment. Nothing secret is written, and a server that the agent
 * restarts gets a fresh token. `lib/cli/shim.ts` parses the argv.
 *
 * Where it can (Linux and macOS), the shim replaces itself with the server
 * (`execve`, lib/os/exec.ts): the server keeps the shim's pid, so its
 * parent is the agent, its exit status and a death by signal are its own,
 * and no sherlock process stays resident (about 37 MiB per server; see
 * docs/BENCHMARKS.md, "The token shim"). Where exec is impossible (Windows,
 * no FFI, libc not found), or with `SHERLOCK_SHIM_SPAWN=1` in its
 * environment, it spawns the server instead and stays as its parent: stdio
 * inherited (stdin and stdout are the MCP channel), signals relayed, the
 * exit code passed back (128+N for a death by signal N).
 *
 * @module
 */

import { fetchToken } from "../broker/client.ts";
import { ExecutableNotFoundError, NotExecutableError } from "../errors.ts";
import { applyTokenFormat } from "../services/token_format.ts";
import { Errno, type Exec, openExec } from "../os/exec.ts";
import {
  findExecutable,
  FORWARDED_SIGNALS,
  IGNORED_SIGNALS,
  type RelayRules,
  SignalRelay,
  spawnError,
} from "./spawn.ts";

/**
 * What one shim runs: all of it from its argv, but for the session's
 * capability, which comes from its entry's env (`CAPABILITY_ENV`).
 */
export interface ShimOptions {
  /** The broker's socket. */
  socket: string;
  /** The session that started the agent. */
  session: string;
  /** The agent of that session. */
  agent: string;
  /** The variable the server reads its token from. */
  tokenEnv: string;
  /** How the token is written into that variable (holds `{token}`). */
  tokenFormat: string;
  /** The service's name. */
  service: string;
  /** The real server's argv. */
  command: string[];
  /** The session's broker capability. */
  capability: string;
}

/**
 * The variable that makes the shim spawn its server and stay resident even
 * where it could exec: the fallback's own switch, so that it is tested
 * (and measured) on the platforms that exec.
 */
export const SHIM_SPAWN_VARIABLE = "SHERLOCK_SHIM_SPAWN";

/**
 * The shim's rules when it spawns: it stands in for the server, so every
 * signal the agent sends it goes to the server (only: the shim is not a
 * shell), also one that arrives while the server starts.
 */
export const SHIM_RELAY: RelayRules = {
  forwarded: [...FORWARDED_SIGNALS, ...IGNORED_SIGNALS],
  toGroup: false,
  early: "deliver",
};

/**
 * Runs the server of `options.service` with its token: by exec, never
 * returning, or spawned, returning the exit code to exit with (the
 * server's, or 128+N when signal N killed it). Throws the broker client's
 * errors, and `ExecutableNotFoundError` or `NotExecutableError` when the
 * server cannot be started.
 */
export async function runShim(options: ShimOptions): Promise<number> {
  // No signal listener before the exec: a signal during the fetch ends the
  // shim by its default action, as it would end a server just started.
  const { token } = await fetchToken(options.socket, {
    service: options.service,
    capability: options.capability,
  });
  const tokenValue = applyTokenFormat(options.tokenFormat, token);
  if (Deno.env.get(SHIM_SPAWN_VARIABLE) !== "1") {
    const exec = openExec();
    if (exec !== undefined) execServer(exec, { options, tokenValue });
  }
  return await spawnServer(options, tokenValue);
}

/**
 * Replaces this process with the server; returns never: throws the error
 * for a server that cannot start.
 */
function execServer(
  exec: Exec,
  { options, tokenValue }: { options: ShimOptions; tokenValue: string },
): never {
  const [program] = options.command;
  const what = `the server of service ${options.service} (${program})`;
  // execve does no PATH search: look it up as the spawn would, in the
  // shim's PATH, which is the one the agent gave the server.
  const lookup = findExecutable(program, Deno.env.get("PATH"));
  if (!lookup.found) {
    exec.close();
    if (lookup.reason === "not-executable") {
      throw new NotExecutableError(`${what} is not executable`);
    }
    throw new ExecutableNotFoundError(`${what} was not found on PATH`);
  }
  const errno = exec.exec({
    path: lookup.path,
    argv: options.command,
    env: { ...Deno.env.toObject(), [options.tokenEnv]: tokenValue },
  });
  exec.close();
  if (errno === Errno.ENOENT) {
    // The lookup found the file: what is missing is its #! interpreter.
    throw new ExecutableNotFoundError(
      `${what} cannot be started: the interpreter on its #! line was not found`,
    );
  }
  throw new NotExecutableError(
    errno === Errno.EACCES
      ? `${what} is not executable`
      : errno === Errno.ENOEXEC
      ? `${what} is not executable (no #! line and not a binary for this machine)`
      : errno === Errno.E2BIG
      ? `${what} cannot be started: its arguments and environment are over the system's limit`
      : `${what} cannot be started (execve errno ${errno})`,
  );
}

/** Spawns the server and relays signals to it; returns its exit code. */
async function spawnServer(
  options: ShimOptions,
  tokenValue: string,
): Promise<number> {
  const [program, ...args] = options.command;
  const relay = new SignalRelay(SHIM_RELAY);
  try {
    return await relay.spawn({
      path: program,
      args,
      env: { [options.tokenEnv]: tokenValue },
      inheritEnv: true,
    });
  } catch (error) {
    const what = `the server of service ${options.service} (${program})`;
    throw spawnError(error, {
      notFound: `${what} was not found on PATH`,
      notExecutable: `${what} is not executable`,
      tooLong:
        `${what} could not be started: its arguments and environment are larger than the system allows; shorten the service's [server] args or env`,
    });
  } finally {
    relay.close();
  }
}
