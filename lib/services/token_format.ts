/**
 * How a token is written into a value (`[token] format`) and the header the
 * bridge sends it in unless a service names another: one rule for the
 * rendered entries (`render/servers.ts`), the token shim (`launch/shim.ts`)
 * and the bridge (`cli/bridge.ts`, `bridge/relay.ts`). Names and a pure
 * function only, like `token_sources.ts`, so that the bridge may import it
 * and nothing else of sherlock's (docs/architecture.md, "Import rules").
 *
 * @module
 */

/** The header the bridge sends a token in unless told another. */
export const BRIDGE_TOKEN_HEADER = "Authorization";
/** How the bridge writes a token into its header unless told otherwise. */
export const BRIDGE_TOKEN_FORMAT = "Bearer {token}";

/**
 * A service's `[token] format` with every `{token}` replaced by `token`,
 * literally (`$&`, `$1` or `$$` in the token are not replacement patterns).
 * The token shim writes its variable with it too.
 */
export function applyTokenFormat(format: string, token: string): string {
  return format.replaceAll("{token}", () => token);
}
