/**
 * The agent's own credentials (a profile's `[credentials]` and
 * `[api_key_helper]`): which names the session registers with the broker,
 * what goes into the agent's environment once fetched, and the settings
 * that let Claude Code ask for its key itself. Pure: the fetching is the
 * session's (`session.ts`).
 *
 * @module
 */

import type { Profile } from "../profiles/schema.ts";
import { shellQuote } from "../runtime/shell_quote.ts";

/** The subcommand an agent's key helper runs: `sherlock credential <name>`. */
export const CREDENTIAL_COMMAND = "credential";

/**
 * The credential names (service or secret names) the session registers:
 * every `[credentials]` value and `[api_key_helper] credential`, each once,
 * in the profile's order.
 */
export function credentialNames(
  profile: Pick<Profile, "credentials" | "api_key_helper">,
): string[] {
  const names = new Set(Object.values(profile.credentials ?? {}));
  if (profile.api_key_helper !== undefined) {
    names.add(profile.api_key_helper.credential);
  }
  return [...names];
}

/**
 * The variables `[credentials]` sets, from the fetched values by name. A
 * name without a value is an error of the caller's (the fetch failed).
 */
export function credentialEnv(
  credentials: Readonly<Record<string, string>> | undefined,
  fetched: ReadonlyMap<string, string>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [variable, name] of Object.entries(credentials ?? {})) {
    const value = fetched.get(name);
    if (value === undefined) {
      throw new Error(`credential ${name} (${variable}) was not fetched`);
    }
    env[variable] = value;
  }
  return env;
}

/**
 * The arguments that hand Claude Code a key helper for the session:
 * `--settings {"apiKeyHelper": "<sherlock> credential --socket PATH NAME"}`.
 * The command holds no secret: the helper finds the session's capability
 * in the environment Claude Code runs it with.
 */
export function apiKeyHelperArgs(
  options: {
    credential: string;
    socket: string;
    selfCommand: readonly string[];
  },
): string[] {
  const command = [
    ...options.selfCommand,
    CREDENTIAL_COMMAND,
    "--socket",
    options.socket,
    options.credential,
  ].map(shellQuote).join(" ");
  return ["--settings", JSON.stringify({ apiKeyHelper: command })];
}
