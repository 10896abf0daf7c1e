/**
 * The pure parts of the OAuth client (MCP authorization, 2025-11-25): where
 * metadata is looked for, what a challenge says, which scopes to ask for,
 * what metadata must hold, PKCE. No I/O here, so each rule is tested alone.
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

/**
 * The canonical URI of an MCP server (RFC 8707, the spec's "canonical
 * server URI"): lowercase scheme and host, no fragment, no trailing slash
 * unless the path is the root alone.
 */
export function canonicalResource(serverUrl: string): string {
  const url = new URL(serverUrl);
  url.hash = "";
  let text = url.href;
  if (url.pathname === "/" && url.search === "") text = text.slice(0, -1);
  return text;
}

/**
 * Where RFC 9728 metadata is looked for when no challenge names it: the
 * well-known URI with the server's path inserted, then at the root.
 */
export function protectedResourceMetadataUrls(serverUrl: string): string[] {
  const url = new URL(serverUrl);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  const urls = [`${url.origin}/.well-known/oauth-protected-resource${path}`];
  if (path !== "") {
    urls.push(`${url.origin}/.well-known/oauth-protected-resource`);
  }
  return urls;
}

/**
 * Where an authorization server's metadata is looked for, in order: RFC
 * 8414 with path insertion, OpenID discovery with path insertion, then
 * OpenID discovery appended to the issuer's path (the spec's order).
 */
export function authorizationServerMetadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  if (path === "") {
    return [
      `${url.origin}/.well-known/oauth-authorization-server`,
      `${url.origin}/.well-known/openid-configuration`,
    ];
  }
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}/.well-known/openid-configuration${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
}

/** The parts of RFC 9728 metadata the client uses. */
export interface ResourceMetadata {
  resource: string;
  authorizationServers: string[];
  scopesSupported?: string[];
}

/** Checks RFC 9728 metadata; returns a problem (one line) or the parts. */
export function readResourceMetadata(
  body: unknown,
  serverUrl: string,
): ResourceMetadata | string {
  if (!isRecord(body)) {
    return "the protected-resource metadata is not a JSON object";
  }
  const { resource, authorization_servers, scopes_supported } = body;
  if (typeof resource !== "string") {
    return "the protected-resource metadata has no resource";
  }
  // RFC 9728 §3.3: the metadata must be about the server asked.
  if (!sameOrParent(resource, serverUrl)) {
    return `the protected-resource metadata is for ${resource}, not ${serverUrl}`;
  }
  if (
    !Array.isArray(authorization_servers) ||
    authorization_servers.length === 0 ||
    !authorization_servers.every((server) => typeof server === "string")
  ) {
    return "the protected-resource metadata names no authorization server";
  }
  return {
    resource,
    authorizationServers: authorization_servers as string[],
    scopesSupported: stringList(scopes_supported),
  };
}

/** The parts of RFC 8414 metadata the client uses. */
export interface ServerMetadata {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  registrationEndpoint?: string;
  revocationEndpoint?: string;
  /** RFC 8628: where a device code is asked for. */
  deviceAuthorizationEndpoint?: string;
  /** `grant_types_supported`, when the metadata lists them. */
  grantTypesSupported?: string[];
  codeChallengeMethods: string[];
  scopesSupported?: string[];
  clientIdMetadataDocumentSupported: boolean;
  issParameterSupported: boolean;
}

/**
 * Checks RFC 8414 metadata fetched for `issuer`: the issuer must be the one
 * asked (§3.3), the endpoints present. Returns a problem or the parts.
 */
export function readServerMetadata(
  body: unknown,
  issuer: string,
): ServerMetadata | string {
  if (!isRecord(body)) {
    return "the authorization server's metadata is not a JSON object";
  }
  if (body.issuer !== issuer) {
    return `the authorization server's metadata names issuer ${
      String(body.issuer)
    }, not ${issuer}`;
  }
  const endpoint = (key: string) => {
    const value = body[key];
    if (typeof value !== "string") return undefined;
    try {
      const url = new URL(value);
      return url.protocol === "https:" || isLoopback(url) ? value : undefined;
    } catch {
      return undefined;
    }
  };
  const authorizationEndpoint = endpoint("authorization_endpoint");
  const tokenEndpoint = endpoint("token_endpoint");
  if (!authorizationEndpoint || !tokenEndpoint) {
    return "the authorization server's metadata lacks an https authorization or token endpoint";
  }
  return {
    issuer,
    authorizationEndpoint,
    tokenEndpoint,
    registrationEndpoint: endpoint("registration_endpoint"),
    revocationEndpoint: endpoint("revocation_endpoint"),
    deviceAuthorizationEndpoint: endpoint("device_authorization_endpoint"),
    grantTypesSupported: stringList(body.grant_types_supported),
    codeChallengeMethods: stringList(body.code_challenge_methods_supported) ??
      [],
    scopesSupported: stringList(body.scopes_supported),
    clientIdMetadataDocumentSupported:
      body.client_id_metadata_document_supported === true,
    issParameterSupported:
      body.authorization_response_iss_parameter_supported === true,
  };
}

/**
 * The scopes to ask for: the challenge's `scope`, else the resource's
 * `scopes_supported`, else the service's `scopes` (the spec's order).
 */
export function chooseScopes(
  options: {
    challenge?: string;
    supported?: readonly string[];
    configured?: readonly string[];
  },
): string[] {
  const fromChallenge = options.challenge?.split(" ").filter((s) => s) ?? [];
  if (fromChallenge.length > 0) return fromChallenge;
  if (options.supported && options.supported.length > 0) {
    return [...options.supported];
  }
  return [...(options.configured ?? [])];
}

/**
 * What is wrong with an authorization response (the redirect's query), or
 * its code. RFC 9207: an `iss` must equal the issuer; when the server
 * advertises `iss`, it must be there.
 */
export function checkAuthorizationResponse(
  query: URLSearchParams,
  expected: { state: string; issuer: string; issRequired: boolean },
): { code: string } | { problem: string } {
  const iss = query.get("iss");
  if (iss !== null && iss !== expected.issuer) {
    return {
      problem:
        `the authorization response came from issuer ${iss}, not ${expected.issuer} (RFC 9207); refused`,
    };
  }
  if (iss === null && expected.issRequired) {
    return {
      problem:
        "the authorization response lacks the iss its server advertises (RFC 9207); refused",
    };
  }
  if (query.get("state") !== expected.state) {
    return {
      problem: "the authorization response's state does not match; refused",
    };
  }
  const error = query.get("error");
  if (error !== null) {
    const description = query.get("error_description");
    return {
      problem: `the authorization server answered ${oneLine(error)}${
        description ? `: ${oneLine(description)}` : ""
      }`,
    };
  }
  const code = query.get("code");
  if (!code) return { problem: "the authorization response has no code" };
  return { code };
}

/** A PKCE pair (RFC 7636, S256). */
export async function pkcePair(): Promise<
  { verifier: string; challenge: string }
> {
  const verifier = randomString(32);
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(verifier),
  );
  return { verifier, challenge: encodeBase64Url(new Uint8Array(digest)) };
}

/** `bytes` random bytes, base64url: a state, a verifier, a flow id. */
export function randomString(bytes: number): string {
  return encodeBase64Url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** Printable text of at most 200 characters on one line. */
export function oneLine(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/[\u0000-\u001f\u007f]+/g, " ").slice(0, 200);
}

/** Base64url without padding (no @std/encoding here: see runtime/bytes.ts). */
function encodeBase64Url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(
    /=+$/,
    "",
  );
}

function sameOrParent(resource: string, serverUrl: string): boolean {
  try {
    const a = canonicalResource(resource);
    const b = canonicalResource(serverUrl);
    return b === a || b.startsWith(a.endsWith("/") ? a : `${a}/`);
  } catch {
    return false;
  }
}

function isLoopback(url: URL): boolean {
  return url.protocol === "http:" &&
    (url.hostname === "127.0.0.1" || url.hostname === "localhost" ||
      url.hostname === "[::1]");
}

function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((v) => typeof v === "string")
    ? value as string[]
    : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
