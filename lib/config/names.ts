/**
 * The shapes of names that end up in file names, argv and config keys.
 * Shared by the schemas and the pure launch code; no dependencies.
 *
 * @module
 */

/**
 * A profile or service name: lowercase letters, digits, `-` and `_`, starting
 * with a letter or digit. No dots (they separate parts of rendered file
 * names) and nothing a shell or a TOML bare key would treat specially.
 */
export const NAME_PATTERN: RegExp = /^[a-z0-9][a-z0-9_-]*$/;

/**
 * The longest profile or service name: the broker takes an agent's name of
 * at most this length from a session (longer strings are refused there, so
 * that nobody can flood the audit log with them).
 */
export const MAX_NAME_LENGTH = 64;

/** An environment variable name as POSIX shells accept it. */
export const ENV_NAME_PATTERN: RegExp = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * An HTTP header name (RFC 9110's token): no spaces, colons or control
 * characters.
 */
export const HEADER_NAME_PATTERN: RegExp = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Whether `value` holds a control character (U+0000–U+001F, U+007F): a
 * newline would break the header or variable a token or secret goes into
 * (header injection), a NUL the argv or environment it is passed in.
 */
export function hasControlCharacters(value: string): boolean {
  // deno-lint-ignore no-control-regex -- control characters are the point
  return /[\x00-\x1f\x7f]/.test(value);
}

/**
 * The most characters of a key or name from an operator's file (or argv)
 * that an error line quotes: enough to recognize it, and a line stays one
 * readable line however long the key.
 */
export const MAX_QUOTED_LENGTH = 64;

/**
 * `text` as an error line quotes it: whole up to
 * {@linkcode MAX_QUOTED_LENGTH} characters, else its start and `…`.
 */
export function shortenForQuote(text: string): string {
  if (text.length <= MAX_QUOTED_LENGTH) return text;
  let end = MAX_QUOTED_LENGTH;
  // Never half a surrogate pair.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}
