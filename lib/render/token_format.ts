/**
 * A service's `[token] format` filled in with its token: the one rule the
 * rendered config and the token shim share. Pure, and with no imports, so
 * the shim loads nothing else for it.
 *
 * @module
 */

/**
 * `format` with every `{token}` replaced by `token`, literally: `$&`, `$1`
 * or `$$` in the token are not replacement patterns.
 */
export function applyTokenFormat(format: string, token: string): string {
  return format.replaceAll("{token}", () => token);
}
