/**
 * `sherlock shim`: the token shim. With token delivery `shim`, a rendered
 * stdio entry runs
 *
 *     sherlock shim --socket <path> --session <id> --agent <name>
 *                   --token-env <VAR> [--token-format <fmt>] <service>
 *                   -- <server command…>
 *
 * instead of the server. The shim asks the broker for the service's token
 * when the server starts, then runs the real server with the token added to
 * its environment, stdin/stdout/stderr passed through, its exit code passed
 * back and signals forwarded. Nothing secret is ever written, and a server
 * that the agent restarts gets a fresh token.
 *
 * Everything the shim needs is in its argv, because some agents (Codex)
 * pass only a short whitelist of environment variables to servers.
 *
 * @module
 */

import { fetchToken } from "../broker/client.ts";
import {
  ExecutableNotFoundError,
  NotExecutableError,
  UsageError,
} from "../errors.ts";
import {
  exitCodeOf,
  FORWARDED_SIGNALS,
  IGNORED_SIGNALS,
} from "../launch/spawn.ts";
import { printLine } from "./output.ts";

/** The help text of `sherlock shim`. */
export const SHIM_HELP =
  `Usage: sherlock shim --socket PATH --session ID --agent NAME
                     --token-env VAR [--token-format FORMAT] SERVICE -- COMMAND [ARGS…]

Used inside rendered MCP configs, not by hand: fetches SERVICE's token from
the broker at PATH and runs COMMAND with the token in VAR (written as
FORMAT, default "{token}"), its stdio passed through.`;

/** The parsed argv of a shim. */
export interface ShimArguments {
  /** The broker's socket. */
  socket: string;
  /** The session that started the agent. */
  session: string;
  /** The agent of that session. */
  agent: string;
  /** The variable the server reads its token from. */
  tokenEnv: string;
  /** How the token is written into that variable. */
  tokenFormat: string;
  /** The service's name. */
  service: string;
  /** The real server's argv. */
  command: string[];
}

/** Runs the shim; returns the server's exit code. */
export async function shimCommand(args: readonly string[]): Promise<number> {
  if (args[0] === "--help" || args[0] === "-h") {
    printLine(SHIM_HELP);
    return 0;
  }
  const shim = parseShimArguments(args);
  const answer = await fetchToken(shim.socket, {
    service: shim.service,
    session: shim.session,
    agent: shim.agent,
  });
  const [program, ...programArgs] = shim.command;
  // Caught from before the server exists, so that a signal that arrives
  // while it starts still reaches it instead of ending the shim alone.
  let child: Deno.ChildProcess | undefined;
  const pending: Deno.Signal[] = [];
  const forward = (signal: Deno.Signal) => {
    try {
      child?.kill(signal);
    } catch {
      // Already gone.
    }
  };
  const handlers: [Deno.Signal, () => void][] = [];
  if (Deno.build.os !== "windows") {
    for (const signal of [...FORWARDED_SIGNALS, ...IGNORED_SIGNALS]) {
      const handler = () => child ? forward(signal) : pending.push(signal);
      Deno.addSignalListener(signal, handler);
      handlers.push([signal, handler]);
    }
  }
  try {
    // stdin and stdout are the MCP channel: pass them straight through.
    try {
      child = new Deno.Command(program, {
        args: programArgs,
        env: {
          // A function, so that `$&` or `$$` in a token is not a pattern.
          [shim.tokenEnv]: shim.tokenFormat.replaceAll(
            "{token}",
            () => answer.token,
          ),
        },
        stdin: "inherit",
        stdout: "inherit",
        stderr: "inherit",
      }).spawn();
    } catch (error) {
      const what = `the server of service ${shim.service} (${program})`;
      if (error instanceof Deno.errors.NotFound) {
        throw new ExecutableNotFoundError(`${what} was not found on PATH`);
      }
      if (error instanceof Deno.errors.PermissionDenied) {
        throw new NotExecutableError(`${what} is not executable`);
      }
      throw error;
    }
    for (const signal of pending) forward(signal);
    return exitCodeOf(await child.status);
  } finally {
    for (const [signal, handler] of handlers) {
      Deno.removeSignalListener(signal, handler);
    }
  }
}

/** Parses the shim's argv. Throws {@linkcode UsageError}. */
export function parseShimArguments(args: readonly string[]): ShimArguments {
  const separator = args.indexOf("--");
  if (separator === -1 || separator === args.length - 1) {
    throw new UsageError(
      "shim needs -- followed by the server's command; see sherlock shim --help",
    );
  }
  const options = new Map<string, string>();
  const positional: string[] = [];
  const known = [
    "--socket",
    "--session",
    "--agent",
    "--token-env",
    "--token-format",
  ];
  for (let index = 0; index < separator; index++) {
    const arg = args[index];
    if (known.includes(arg)) {
      const value = args[index + 1];
      if (value === undefined || index + 1 >= separator) {
        throw new UsageError(`shim: ${arg} needs a value`);
      }
      options.set(arg, value);
      index++;
    } else if (arg.startsWith("-")) {
      throw new UsageError(`shim: unknown option ${arg}`);
    } else positional.push(arg);
  }
  if (positional.length !== 1) {
    throw new UsageError("shim needs exactly one service name");
  }
  const required = (name: string): string => {
    const value = options.get(name);
    if (value === undefined) throw new UsageError(`shim needs ${name}`);
    return value;
  };
  const tokenFormat = options.get("--token-format") ?? "{token}";
  if (!tokenFormat.includes("{token}")) {
    throw new UsageError("shim: --token-format must contain {token}");
  }
  return {
    socket: required("--socket"),
    session: required("--session"),
    agent: required("--agent"),
    tokenEnv: required("--token-env"),
    tokenFormat,
    service: positional[0],
    command: args.slice(separator + 1),
  };
}
