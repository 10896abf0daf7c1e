/**
 * The token shim's run: fetch one service's token from the broker when its
 * server starts, then run the server with the token added to its
 * environment, stdio passed through (stdin and stdout are the MCP channel),
 * signals relayed and its exit code passed back. Nothing secret is written,
 * and a server that the agent restarts gets a fresh token. `lib/cli/shim.ts`
 * parses the argv.
 *
 * @module
 */

import { fetchToken } from "../broker/client.ts";
import { applyTokenFormat } from "../render/servers.ts";
import {
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
 * The shim's rules: it stands in for the server, so every signal the agent
 * sends it goes to the server (only: the shim is not a shell), also one
 * that arrives while the server starts.
 */
export const SHIM_RELAY: RelayRules = {
  forwarded: [...FORWARDED_SIGNALS, ...IGNORED_SIGNALS],
  toGroup: false,
  early: "deliver",
};

/**
 * Runs the server of `options.service` with its token; returns the exit
 * code to exit with (the server's, or 128+N when signal N killed it).
 * Throws the broker client's errors, and `ExecutableNotFoundError` or
 * `NotExecutableError` when the server cannot be started.
 */
export async function runShim(options: ShimOptions): Promise<number> {
  const { token } = await fetchToken(options.socket, {
    service: options.service,
    capability: options.capability,
  });
  const [program, ...args] = options.command;
  const relay = new SignalRelay(SHIM_RELAY);
  try {
    return await relay.spawn({
      path: program,
      args,
      env: {
        [options.tokenEnv]: applyTokenFormat(options.tokenFormat, token),
      },
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
