/**
 * `sherlock shim`: the token shim's command line. With token delivery
 * `shim`, a rendered stdio entry runs
 *
 *     sherlock shim --socket <path> --session <id> --agent <name>
 *                   --token-env <VAR> [--token-format <fmt>] <service>
 *                   -- <server command…>
 *
 * instead of the server; `lib/launch/shim.ts` runs it. Everything the shim
 * needs is in its argv, because some agents (Codex) pass only a short
 * whitelist of their own environment variables to servers — except the
 * session's broker capability, which is in the entry's own `env` (every
 * agent passes that to the server it starts), since any local user can
 * read a process's argv.
 *
 * @module
 */

import { NoPermissionError, UsageError } from "../errors.ts";
import {
  parseArguments,
  type ParsedArguments,
  requiredValue,
} from "./commands.ts";
import type { CommandContext } from "./context.ts";
import { runShim, type ShimOptions } from "../launch/shim.ts";
import { CAPABILITY_ENV } from "../render/servers.ts";

/** Runs the shim; returns the server's exit code. */
export async function shimCommand(
  args: ParsedArguments,
  _context: CommandContext,
): Promise<number> {
  const options = shimOptions(args);
  const capability = Deno.env.get(CAPABILITY_ENV);
  // Gone before the server starts: it inherits the shim's environment.
  Deno.env.delete(CAPABILITY_ENV);
  if (capability === undefined || capability === "") {
    throw new NoPermissionError(
      `shim: no session capability in ${CAPABILITY_ENV}; the shim runs from a config that "sherlock run" rendered`,
    );
  }
  return await runShim({ ...options, capability });
}

/**
 * Parses the shim's argv (the capability is not in it). Throws
 * {@linkcode UsageError}.
 */
export function parseShimArguments(
  args: readonly string[],
): Omit<ShimOptions, "capability"> {
  return shimOptions(parseArguments("shim", args));
}

/** The shim's options from its parsed argv. Throws {@linkcode UsageError}. */
function shimOptions(
  parsed: ParsedArguments,
): Omit<ShimOptions, "capability"> {
  if (parsed.rest.length === 0) {
    throw new UsageError(
      "shim needs -- followed by the server's command; see sherlock shim --help",
    );
  }
  const required = (flag: string) =>
    requiredValue(parsed, { command: "shim", flag });
  const tokenFormat = parsed.value("--token-format") ?? "{token}";
  if (!tokenFormat.includes("{token}")) {
    throw new UsageError("shim: --token-format must contain {token}");
  }
  return {
    socket: required("--socket"),
    session: required("--session"),
    agent: required("--agent"),
    tokenEnv: required("--token-env"),
    tokenFormat,
    service: parsed.positionals[0],
    command: parsed.rest,
  };
}
