/**
 * `sherlock credential --socket PATH NAME`: prints one of the session's
 * own credentials (a profile's `[api_key_helper]`) on stdout, for Claude
 * Code's `apiKeyHelper`, which runs it with the agent's environment and
 * reads the key from its output. It prints a token by design, so it
 * answers only a registered session (its capability in the environment)
 * and only for a credential that session registered; the broker refuses
 * anything else and audits it (docs/security.md).
 *
 * @module
 */

import { fetchToken } from "../broker/client.ts";
import { NoPermissionError } from "../errors.ts";
import { CAPABILITY_ENV } from "../render/servers.ts";
import {
  parseArguments,
  type ParsedArguments,
  requiredValue,
} from "./commands.ts";
import type { CommandContext } from "./context.ts";

/** Fetches the credential and prints it; returns 0. */
export async function credentialCommand(
  args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const { socket, name } = credentialOptions(args);
  const capability = Deno.env.get(CAPABILITY_ENV);
  if (capability === undefined || capability === "") {
    throw new NoPermissionError(
      `credential: no session capability in ${CAPABILITY_ENV}; it runs only as the key helper of a session that "sherlock run" started`,
    );
  }
  const { token } = await fetchToken(socket, {
    service: name,
    capability,
    credential: true,
  });
  // Written as it is: the agent reads the key, nothing styles or escapes it.
  context.stdout.writeSync(new TextEncoder().encode(`${token}\n`));
  return 0;
}

/** Parses `--socket PATH NAME`; throws a usage error (exit 2) otherwise. */
export function parseCredentialArguments(
  args: readonly string[],
): { socket: string; name: string } {
  return credentialOptions(parseArguments("credential", args));
}

function credentialOptions(
  parsed: ParsedArguments,
): { socket: string; name: string } {
  return {
    socket: requiredValue(parsed, { command: "credential", flag: "--socket" }),
    name: parsed.positionals[0],
  };
}
