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
import { NoPermissionError, UsageError } from "../errors.ts";
import { CAPABILITY_ENV } from "../render/servers.ts";

/** Fetches the credential and prints it; returns 0. */
export async function credentialCommand(
  args: readonly string[],
): Promise<number> {
  const { socket, name } = parseCredentialArguments(args);
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
  await Deno.stdout.write(new TextEncoder().encode(`${token}\n`));
  return 0;
}

/** Parses `--socket PATH NAME`. Throws {@linkcode UsageError}. */
export function parseCredentialArguments(
  args: readonly string[],
): { socket: string; name: string } {
  let socket: string | undefined;
  const positional: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    if (arg === "--socket") {
      socket = args[++index];
      if (socket === undefined) {
        throw new UsageError("credential: --socket needs a value");
      }
    } else if (arg.startsWith("-")) {
      throw new UsageError(`credential: unknown option ${arg}`);
    } else positional.push(arg);
  }
  if (socket === undefined || positional.length !== 1) {
    throw new UsageError(
      "credential needs --socket PATH and one credential name; see sherlock credential --help",
    );
  }
  return { socket, name: positional[0] };
}
