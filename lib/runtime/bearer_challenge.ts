/**
 * What a `WWW-Authenticate: Bearer …` challenge says (RFC 6750, RFC 9728):
 * read by the broker's OAuth client (a 401's metadata URL and scope) and by
 * the bridge (a 403's `insufficient_scope`). Pure, and light enough for the
 * bridge's start.
 *
 * @module
 */

/** What a `WWW-Authenticate: Bearer …` challenge says (RFC 6750, RFC 9728). */
export interface BearerChallenge {
  /** RFC 9728 §5.1: where the protected-resource metadata is. */
  resourceMetadata?: string;
  /** The scopes the resource wants. */
  scope?: string;
  /** `invalid_token`, `insufficient_scope`… */
  error?: string;
}

/**
 * Parses the Bearer challenge of a `WWW-Authenticate` header; undefined
 * when there is none. Quoted strings may hold commas and escaped quotes.
 */
export function parseBearerChallenge(
  header: string | null,
): BearerChallenge | undefined {
  if (header === null) return undefined;
  const match = /(?:^|,\s*)Bearer(?:\s+|$)/i.exec(header);
  if (!match) return undefined;
  const rest = header.slice(match.index + match[0].length);
  const parameters = new Map<string, string>();
  const pattern =
    /\s*([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*(?:,|$)/y;
  let found: RegExpExecArray | null;
  while ((found = pattern.exec(rest)) !== null) {
    const key = found[1].toLowerCase();
    const value = found[2] !== undefined
      ? found[2].replace(/\\(.)/g, "$1")
      : found[3];
    if (!parameters.has(key)) parameters.set(key, value);
    if (pattern.lastIndex >= rest.length) break;
  }
  return {
    resourceMetadata: parameters.get("resource_metadata"),
    scope: parameters.get("scope"),
    error: parameters.get("error"),
  };
}
