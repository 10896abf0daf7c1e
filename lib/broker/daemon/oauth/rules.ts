/**
 * The pure parts of the OAuth client (MCP authorization, 2025-11-25):
 * which scopes to ask for, what metadata the client uses (read in
 * `discovery.ts`), the authorization response's checks, PKCE, how a
 * client secret is sent. No I/O here, so each rule is tested alone.
 *
 * @module
 */

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
 * The `resource` (RFC 8707) of a server's authorization, code, refresh and
 * token-exchange requests: null when the service says `send_resource =
 * false`; else the `resource` its protected-resource metadata (RFC 9728)
 * published, verbatim, when it published one; else the canonical form of
 * its URL. The server names itself there, and may name its origin rather
 * than its URL: its tokens must be for that identifier, exactly as written
 * (a parser's trailing `/` makes another one).
 */
export function requestedResource(
  options: { sendResource?: boolean; serverUrl: string; published?: string },
): string | null {
  if (options.sendResource === false) return null;
  return options.published ?? canonicalResource(options.serverUrl);
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
  /** `token_endpoint_auth_methods_supported`, when the metadata names it. */
  tokenEndpointAuthMethods?: string[];
  /**
   * `token_endpoint_auth_signing_alg_values_supported`, when the metadata
   * names it: the algorithms a `private_key_jwt` assertion may use.
   */
  tokenEndpointAuthSigningAlgorithms?: string[];
  /**
   * `authorization_grant_profiles_supported` (Enterprise-Managed
   * Authorization): {@linkcode ID_JAG_PROFILE} when the server redeems
   * ID-JAGs.
   */
  grantProfilesSupported?: string[];
}

/** The grant profile of a server that redeems ID-JAGs (`ema.ts`). */
export const ID_JAG_PROFILE = "urn:ietf:params:oauth:grant-profile:id-jag";

/** The JWT-bearer grant (RFC 7523), with which an ID-JAG is redeemed. */
export const JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/**
 * True when `metadata`'s server redeems ID-JAGs (Enterprise-Managed
 * Authorization): its `grant_types_supported` lists the JWT-bearer grant,
 * the one grant the ext-auth extension has the client use at the server
 * (its §5; the extension defines no metadata of its own), or its
 * `authorization_grant_profiles_supported` lists {@linkcode ID_JAG_PROFILE}
 * (the IETF draft's signal, which some servers send instead).
 */
export function redeemsIdJag(
  metadata: Pick<
    ServerMetadata,
    "grantTypesSupported" | "grantProfilesSupported"
  >,
): boolean {
  return (metadata.grantTypesSupported?.includes(JWT_BEARER_GRANT) ?? false) ||
    (metadata.grantProfilesSupported?.includes(ID_JAG_PROFILE) ?? false);
}

/** How a client with a secret authenticates at the token endpoint. */
export type ClientAuthMethod = "client_secret_basic" | "client_secret_post";

/**
 * How to send a client secret to a server whose metadata names
 * `supported` (`token_endpoint_auth_methods_supported`): HTTP Basic when
 * it takes it, else the form; undefined when it takes neither. Metadata
 * that names no methods means `client_secret_basic` (RFC 8414 §2).
 */
export function chooseClientAuthMethod(
  supported: readonly string[] | undefined,
): ClientAuthMethod | undefined {
  if (supported === undefined) return "client_secret_basic";
  if (supported.includes("client_secret_basic")) return "client_secret_basic";
  if (supported.includes("client_secret_post")) return "client_secret_post";
  return undefined;
}

/**
 * What identifies the client in a token-endpoint request (RFC 6749
 * §2.3.1): `client_id` in the form for a public client; with a secret,
 * an `Authorization: Basic` header of both, form-encoded first, or both
 * in the form (`private_key_jwt` is oauth4webapi's, client_credentials.ts).
 */
export function clientAuthentication(
  client: {
    clientId: string;
    clientSecret?: string;
    method?: ClientAuthMethod;
  },
): { form: Record<string, string>; headers: Record<string, string> } {
  const { clientId, clientSecret, method } = client;
  if (clientSecret === undefined || method === undefined) {
    return { form: { client_id: clientId }, headers: {} };
  }
  if (method === "client_secret_post") {
    return {
      form: { client_id: clientId, client_secret: clientSecret },
      headers: {},
    };
  }
  const pair = `${formEncode(clientId)}:${formEncode(clientSecret)}`;
  return { form: {}, headers: { Authorization: `Basic ${btoa(pair)}` } };
}

/**
 * The scopes of a token response's `scope`: RFC 6749 separates them with
 * spaces; GitHub with commas (`"repo,read:org"`), so both separate. Bounded
 * like every scope list a grant keeps ({@linkcode limitScopes}): a hostile
 * server's 200 KB `scope` would otherwise make the grant too large to store.
 */
export function readGrantedScopes(scope: string): string[] {
  return limitScopes(scope.split(/[ ,]+/).filter((one) => one));
}

/**
 * The scopes to ask for. The first authorization follows the spec's scope
 * selection: the challenge's `scope`, else the resource's
 * `scopes_supported`, else the service's `scopes`. A step-up (the grant
 * holds `held` and a server asked for `stepUp` with a 403
 * `insufficient_scope`) asks for the union of both, so that no scope
 * already granted is lost; without `held`, the first choice stands in.
 */
export function chooseScopes(
  options: {
    challenge?: string;
    supported?: readonly string[];
    configured?: readonly string[];
    held?: readonly string[];
    stepUp?: readonly string[];
    /**
     * The authorization server's `scopes_supported`, when its metadata
     * lists them: the remote server's words (challenge, its metadata's
     * scopes, a step-up) are kept only where the AS lists them.
     */
    serverSupported?: readonly string[];
  },
): string[] {
  const listed = options.serverSupported && options.serverSupported.length > 0
    ? new Set(options.serverSupported)
    : undefined;
  const remote = (scopes: readonly string[]) =>
    listed ? scopes.filter((scope) => listed.has(scope)) : [...scopes];
  const challenged = readChallengedScopes(options.challenge ?? "");
  const fromChallenge = typeof challenged === "string"
    ? []
    : remote(challenged);
  const fromResource = remote(options.supported ?? []);
  const first = fromChallenge.length > 0
    ? fromChallenge
    : fromResource.length > 0
    ? fromResource
    : [...(options.configured ?? [])];
  const stepUp = remote(options.stepUp ?? []);
  if (stepUp.length === 0) return limitScopes(first);
  const kept = options.held && options.held.length > 0 ? options.held : first;
  return limitScopes([...kept, ...stepUp]);
}

/**
 * `scopes` with `offline_access` added when the authorization server lists
 * it in `scopes_supported`: there it is how a client asks for a refresh
 * token. Not added to an empty list: a request that names no scope leaves
 * `scope` out (the server's default), and one word would change that.
 */
export function withOfflineAccess(
  scopes: readonly string[],
  serverSupported: readonly string[] | undefined,
): string[] {
  if (
    scopes.length === 0 || scopes.includes(OFFLINE_ACCESS) ||
    !serverSupported?.includes(OFFLINE_ACCESS)
  ) {
    return [...scopes];
  }
  return limitScopes([...scopes, OFFLINE_ACCESS]);
}

/** The scope that asks for a refresh token (OpenID Connect Core §11). */
export const OFFLINE_ACCESS = "offline_access";

/**
 * The most scopes a grant keeps (held and needed together), and the
 * longest they may be joined by spaces: the next authorization URL carries
 * them, and servers answer 414 to URLs of a few KiB.
 */
export const MAX_GRANT_SCOPES = 64;
/** See {@linkcode MAX_GRANT_SCOPES}. */
export const MAX_GRANT_SCOPE_CHARACTERS = 2048;

/**
 * `scopes` without repeats, cut after the first that would exceed
 * {@linkcode MAX_GRANT_SCOPES} or {@linkcode MAX_GRANT_SCOPE_CHARACTERS}.
 */
export function limitScopes(scopes: readonly string[]): string[] {
  const kept: string[] = [];
  let characters = 0;
  for (const scope of new Set(scopes)) {
    const after = characters + (kept.length > 0 ? 1 : 0) + scope.length;
    if (kept.length >= MAX_GRANT_SCOPES || after > MAX_GRANT_SCOPE_CHARACTERS) {
      break;
    }
    kept.push(scope);
    characters = after;
  }
  return kept;
}

/**
 * How many step-up challenges may add scopes to one grant between two
 * authorizations (the spec's step-up retry limit): a server that keeps
 * asking for new scopes gets nothing more recorded until the operator runs
 * `sherlock auth`.
 */
export const MAX_STEP_UPS = 3;

/** The most scopes a challenge may name, and the longest one. */
export const MAX_CHALLENGED_SCOPES = 32;
const MAX_SCOPE_LENGTH = 128;

/** RFC 6749 §3.3: a scope token is printable ASCII without space, `"` or `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/**
 * The scopes of an `insufficient_scope` challenge, or a problem (one
 * line) when they are not RFC 6749 scope tokens, none, or too many: a
 * remote server's words go into the store and the next authorization URL.
 */
export function readChallengedScopes(scope: string): string[] | string {
  const scopes = [...new Set(splitScopes(scope))];
  if (scopes.length === 0) return "the challenge names no scope";
  if (scopes.length > MAX_CHALLENGED_SCOPES) {
    return `the challenge names more than ${MAX_CHALLENGED_SCOPES} scopes`;
  }
  if (
    !scopes.every((one) =>
      one.length <= MAX_SCOPE_LENGTH && SCOPE_TOKEN.test(one)
    )
  ) {
    return "the challenge's scope is not a list of RFC 6749 scope tokens";
  }
  return scopes;
}

/** The scopes of `needed` that `held` lacks. */
export function missingScopes(
  needed: readonly string[],
  held: readonly string[],
): string[] {
  const have = new Set(held);
  return needed.filter((scope) => !have.has(scope));
}

function splitScopes(text: string | undefined): string[] {
  return text?.split(" ").filter((scope) => scope) ?? [];
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

/** `application/x-www-form-urlencoded` encoding of one value (ASCII). */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}

/** Printable text of at most 200 characters on one line. */
export function oneLine(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/[\u0000-\u001f\u007f]+/g, " ").slice(0, 200);
}

/**
 * `text` with every run that looks like a token (24 or more characters of
 * base64url, dots or hex) replaced: a provider may quote what it refused.
 */
export function redactTokens(text: string): string {
  return text.replace(/[A-Za-z0-9_\-.~+/=]{24,}/g, "[redacted]");
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

/**
 * True when `text` is a URL the OAuth client may send a request to: https,
 * or http on a loopback host (a local server, the test fixtures).
 */
export function isHttpsOrLoopback(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "https:" || isLoopback(url);
  } catch {
    return false;
  }
}

function isLoopback(url: URL): boolean {
  return url.protocol === "http:" &&
    (url.hostname === "127.0.0.1" || url.hostname === "localhost" ||
      url.hostname === "[::1]");
}
