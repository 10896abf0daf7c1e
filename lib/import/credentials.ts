/**
 * Which values of an imported server look like credentials: an env value
 * or header whose name says so (`*TOKEN*`, `*KEY*`, `*SECRET*`,
 * `*PASSWORD*`, `Authorization`), or any value that starts with a known
 * token prefix (`ghp_`, `github_pat_`, `sk-`, `xox…`) or is a URL with a
 * password in it. Names that say "where", not "what" (`KEY_PATH`,
 * `TOKEN_URL`), and values that are paths, variable references, numbers or
 * booleans stay plain. Pure.
 *
 * @module
 */

/** Prefixes of well-known tokens (GitHub, OpenAI/Anthropic, Slack, …). */
export const TOKEN_PREFIXES: readonly string[] = [
  "ghp_",
  "gho_",
  "ghu_",
  "ghs_",
  "ghr_",
  "github_pat_",
  "glpat-",
  "sk-",
  "sk_live_",
  "rk_live_",
  "xoxb-",
  "xoxp-",
  "xoxa-",
  "xoxe-",
  "xapp-",
  "AKIA",
  "ya29.",
  "npm_",
  "pypi-",
  "lin_api_",
  "hf_",
];

/** Name segments that say a value is a credential. */
const SECRET_SEGMENTS = [
  "TOKEN",
  "KEY",
  "SECRET",
  "PASSWORD",
  "PASSWD",
  "PAT",
  "CREDENTIAL",
  "CREDENTIALS",
];

/** Last name segments that say where a credential is, not what it is. */
const WHERE_SEGMENTS = [
  "PATH",
  "FILE",
  "DIR",
  "URL",
  "URI",
  "HOST",
  "PORT",
  "NAME",
  "ID",
  "TYPE",
  "REGION",
  "ENV",
  "MODE",
  "LIMIT",
  "HEADER",
  "VAR",
];

/** True when an env variable's or header's name says it holds a secret. */
export function isCredentialName(name: string): boolean {
  const lower = name.toLowerCase();
  if (lower === "authorization" || lower === "proxy-authorization") {
    return true;
  }
  const segments = name.toUpperCase().split(/[^A-Z0-9]+/).filter(Boolean);
  const last = segments.at(-1) ?? "";
  if (WHERE_SEGMENTS.includes(last)) return false;
  return segments.some((segment) =>
    SECRET_SEGMENTS.includes(segment) ||
    /(TOKEN|KEY|SECRET|PASSWORD)$/.test(segment) && segment.length > 3
  );
}

/** True when a value itself looks like a token, whatever its name. */
export function looksLikeToken(value: string): boolean {
  const bare = value.replace(/^(Bearer|token|Basic)\s+/i, "");
  if (/\s/.test(bare)) return false;
  if (
    TOKEN_PREFIXES.some((prefix) =>
      bare.startsWith(prefix) && bare.length >= prefix.length + 8
    )
  ) {
    return true;
  }
  // A URL with a password: postgres://user:pass@host/db.
  return /^[a-z][a-z0-9+.-]*:\/\/[^/@\s:]*:[^/@\s]+@/i.test(bare);
}

/**
 * True when a value is plainly not a secret: empty, a path, a variable
 * reference (`${GITHUB_TOKEN}`, `$TOKEN`, `Bearer ${X}`), a number or a
 * boolean.
 */
export function isPlainValue(value: string): boolean {
  const bare = value.trim().replace(/^(Bearer|token|Basic)\s+/i, "");
  if (bare === "") return true;
  if (/^(~|\.{1,2})?\//.test(bare)) return true;
  if (/^\$\{?[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}?$/.test(bare)) return true;
  if (/^-?\d+(\.\d+)?$/.test(bare)) return true;
  return /^(true|false|yes|no|on|off)$/i.test(bare);
}

/** True when `name = value` (an env value, a header) is a credential. */
export function isCredential(name: string, value: string): boolean {
  if (looksLikeToken(value)) return true;
  return isCredentialName(name) && !isPlainValue(value);
}

/**
 * A credential split into the secret and the `[token] format` that writes
 * it back: `Bearer abc` is `abc` with `Bearer {token}`. Only an
 * `Authorization` header's scheme is split off; any other value is stored
 * whole.
 */
export function splitCredential(
  name: string,
  value: string,
): { secret: string; format: string } {
  const match = /^(Bearer|token|Basic)\s+(\S+)$/i.exec(value.trim());
  if (match !== null && /authorization$/i.test(name)) {
    return { secret: match[2], format: `${match[1]} {token}` };
  }
  return { secret: value, format: "{token}" };
}
