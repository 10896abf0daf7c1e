/**
 * Discovery: where an MCP server's authorization server is and what it
 * offers — RFC 9728 protected-resource metadata (from the server's 401
 * challenge, else its well-known URIs), then RFC 8414 / OpenID metadata of
 * the issuer it names, both tried in the MCP spec's order; the 2025-03-26
 * fallbacks for a server without resource metadata (metadata at its
 * origin, then default endpoints); and an OpenID provider's metadata for
 * `sherlock login`. The well-known requests are oauth4webapi's
 * (`discoveryRequest`, `resourceDiscoveryRequest`) over the daemon's
 * bounded fetch, and an issuer's metadata is checked by its
 * `processDiscoveryResponse`; sherlock's readers then apply its own rules:
 * the issuer exactly as asked (no normalisation), https endpoints, what
 * the client uses.
 *
 * @module
 */

import {
  discoveryRequest,
  processDiscoveryResponse,
  resourceDiscoveryRequest,
} from "oauth4webapi";
import type { LegacyDiscovery } from "../../protocol.ts";
import { parseBearerChallenge } from "../../../runtime/bearer_challenge.ts";
import { BrokerRequestError } from "../request_error.ts";
import {
  boundedFetch,
  failed,
  type JsonAnswer,
  origin,
  readJsonAnswer,
  requestJson,
} from "./http.ts";
import {
  canonicalResource,
  isHttpsOrLoopback,
  oneLine,
  type ServerMetadata,
} from "./rules.ts";
import { BOUNDED_HTTP } from "./token_endpoint.ts";

/** What discovery found for a server URL. */
export interface Discovered {
  metadata: ServerMetadata;
  challengeScope?: string;
  scopesSupported?: string[];
  /**
   * The protected-resource metadata's `resource`, verbatim (the same as the
   * server's URL or a parent of it): what `requestedResource` sends. Unset
   * for a server without that metadata.
   */
  resource?: string;
  /** Set when the server publishes no protected-resource metadata. */
  legacy?: LegacyDiscovery;
}

/**
 * Discovery: an unauthenticated request to the server, whose 401 may name
 * the resource metadata; else the well-known URIs; then the authorization
 * server's metadata (RFC 8414, then OpenID discovery). A server that asks
 * for authorization but publishes no resource metadata gets the 2025-03-26
 * discovery (`discoverLegacy`).
 */
export async function discover(serverUrl: string): Promise<Discovered> {
  const probe = await requestJson(serverUrl, {
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "sherlock", version: "0" },
      },
    }),
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
    },
  });
  const challenge = probe.status === 401
    ? parseBearerChallenge(probe.headers.get("www-authenticate"))
    : undefined;
  const candidates = challenge?.resourceMetadata
    ? [named(challenge.resourceMetadata)]
    : resourceMetadataRequests(serverUrl);
  let resource: ReturnType<typeof readResourceMetadata> | undefined;
  for (const request of candidates) {
    const answer = await send(request);
    if (answer.status !== 200) continue;
    resource = readResourceMetadata(answer.json, serverUrl);
    break;
  }
  if (resource === undefined) {
    // No RFC 9728 metadata: a server of the 2025-03-26 authorization, if
    // it asks for authorization at all.
    if (probe.status !== 401) {
      throw unsupported(
        `${serverUrl} publishes no protected-resource metadata (RFC 9728) and answered ${probe.status}, not 401, without a token; it does not speak MCP authorization`,
      );
    }
    return await discoverLegacy(serverUrl, challenge?.scope);
  }
  if (typeof resource === "string") throw failed(resource);
  const issuer = resource.authorizationServers[0];
  let problem = `${
    origin(issuer)
  } publishes no authorization server metadata for ${issuer}`;
  for (const request of issuerMetadataRequests(issuer)) {
    const answer = await send(request, issuer);
    if (answer.status !== 200) continue;
    if (answer.notJson) {
      problem = `${
        origin(request.url)
      } answered its metadata with something that is not JSON`;
      continue;
    }
    const metadata = issuerMetadata(answer, issuer);
    if (typeof metadata === "string") throw failed(metadata);
    return {
      metadata,
      challengeScope: challenge?.scope,
      scopesSupported: resource.scopesSupported,
      resource: resource.resource,
    };
  }
  throw failed(problem);
}

/**
 * Discovery as the 2025-03-26 authorization had it, for a server with no
 * protected-resource metadata: RFC 8414 metadata at the server's origin
 * (then OpenID discovery there); when the RFC 8414 URL answers 404 and no
 * OpenID metadata is there either, the default endpoints at the origin.
 * Any other answer to the RFC 8414 URL is a failure, not a reason to
 * guess endpoints. No issuer is known beforehand, so the answer is not
 * `processDiscoveryResponse`'s: {@linkcode readLegacyServerMetadata} says
 * which issuers are the server's.
 */
async function discoverLegacy(
  serverUrl: string,
  challengeScope: string | undefined,
): Promise<Discovered> {
  const base = new URL(authorizationBaseUrl(serverUrl));
  const [rfc8414, openid] = legacyServerMetadataUrls(serverUrl);
  const requests: MetadataRequest[] = [
    { url: rfc8414, send: () => discoveryRequest(base, OAUTH2) },
    { url: openid, send: () => discoveryRequest(base, OPENID) },
  ];
  for (const { url, send: request } of requests) {
    const answer = await send({ url, send: request });
    if (answer.status !== 200) {
      if (url !== rfc8414 || answer.status === 404) continue;
      throw failed(
        `${serverUrl} publishes no protected-resource metadata (RFC 9728) and ${url} answered ${answer.status}, not its metadata nor 404`,
      );
    }
    if (answer.notJson) {
      throw failed(
        `${origin(url)} answered its metadata with something that is not JSON`,
      );
    }
    const metadata = readLegacyServerMetadata(answer.json, serverUrl);
    if (typeof metadata === "string") throw failed(metadata);
    return {
      metadata,
      challengeScope,
      legacy: { via: "server_metadata", issuer: metadata.issuer },
    };
  }
  const metadata = defaultEndpoints(serverUrl);
  return {
    metadata,
    challengeScope,
    legacy: { via: "default_endpoints", issuer: metadata.issuer },
  };
}

/** What discovery found at the provider. */
export interface OidcProvider {
  metadata: ServerMetadata;
  jwksUri: string;
}

/**
 * The provider's metadata: OpenID discovery (the issuer's path with
 * `/.well-known/openid-configuration` appended), then RFC 8414. The
 * metadata must name the configured issuer, and a `jwks_uri`.
 */
export async function discoverProvider(issuer: string): Promise<OidcProvider> {
  // OpenID's appended path (the last of the spec's order) first.
  const requests = issuerMetadataRequests(issuer);
  for (const request of [requests.at(-1)!, ...requests.slice(0, -1)]) {
    const answer = await send(request, issuer);
    if (answer.status !== 200 || answer.notJson) continue;
    const metadata = issuerMetadata(answer, issuer);
    if (typeof metadata === "string") {
      throw new BrokerRequestError({
        code: "oauth_unsupported",
        message: `${metadata}; check [login] issuer in config.toml`,
      });
    }
    const jwksUri = (answer.json as Record<string, unknown>).jwks_uri;
    if (typeof jwksUri !== "string") {
      throw new BrokerRequestError({
        code: "oauth_unsupported",
        message:
          `the provider ${issuer} publishes no jwks_uri: it is not an OpenID provider`,
      });
    }
    return { metadata, jwksUri };
  }
  throw new BrokerRequestError({
    code: "oauth_unsupported",
    message: `${
      origin(issuer)
    } publishes no OpenID configuration for ${issuer}; check [login] issuer in config.toml`,
  });
}

/** One metadata GET: the URL (for messages) and how it is sent. */
interface MetadataRequest {
  url: string;
  send: () => Promise<Response>;
}

/** A metadata answer, with oauth4webapi's verdict on an issuer's. */
interface MetadataAnswer extends JsonAnswer {
  /** `processDiscoveryResponse`'s refusal, one line, when it refused. */
  refused?: string;
}

const OAUTH2 = { algorithm: "oauth2", ...BOUNDED_HTTP } as const;
const OPENID = { algorithm: "oidc", ...BOUNDED_HTTP } as const;

/**
 * The requests for an issuer's metadata in the spec's order
 * ({@linkcode authorizationServerMetadataUrls}): RFC 8414 with the path
 * inserted and OpenID's appended path are oauth4webapi's
 * `discoveryRequest`; OpenID with the path inserted (the MCP spec's second
 * URL) is built here, since no algorithm of oauth4webapi builds it.
 */
function issuerMetadataRequests(issuer: string): MetadataRequest[] {
  const identifier = new URL(issuer);
  const urls = authorizationServerMetadataUrls(issuer);
  return urls.map((url, index) => ({
    url,
    send: index === 0
      ? () => discoveryRequest(identifier, OAUTH2)
      : index === urls.length - 1
      ? () => discoveryRequest(identifier, OPENID)
      : named(url).send,
  }));
}

/**
 * The requests for RFC 9728 metadata when no challenge names it
 * ({@linkcode protectedResourceMetadataUrls}): oauth4webapi's
 * `resourceDiscoveryRequest` for the server's URL without its query and
 * trailing slash (as the spec inserts it), then for its origin.
 */
function resourceMetadataRequests(serverUrl: string): MetadataRequest[] {
  const url = new URL(serverUrl);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  const identifiers = [new URL(`${url.origin}${path}`), new URL(url.origin)];
  return protectedResourceMetadataUrls(serverUrl).map((metadataUrl, index) => ({
    url: metadataUrl,
    send: () => resourceDiscoveryRequest(identifiers[index], BOUNDED_HTTP),
  }));
}

/** A GET of a URL given whole (a challenge's `resource_metadata`). */
function named(url: string): MetadataRequest {
  return {
    url,
    send: () => boundedFetch(url, { headers: { accept: "application/json" } }),
  };
}

/**
 * Sends `request` and reads its answer, whatever its status. With
 * `issuer`, a 200 answer also goes through oauth4webapi's
 * `processDiscoveryResponse` (a JSON object naming that issuer).
 */
async function send(
  request: MetadataRequest,
  issuer?: string,
): Promise<MetadataAnswer> {
  const response = await request.send();
  const answer: MetadataAnswer = await readJsonAnswer(response.clone());
  if (issuer === undefined || answer.status !== 200 || answer.notJson) {
    return answer;
  }
  try {
    await processDiscoveryResponse(new URL(issuer), response);
  } catch (error) {
    answer.refused = oneLine(
      error instanceof Error ? error.message : String(error),
    );
  }
  return answer;
}

/**
 * An issuer's metadata: sherlock's reader (the issuer exactly as asked —
 * oauth4webapi compares them as URLs, so `https://as` and `https://as/`
 * match there, not here — and https endpoints), then oauth4webapi's
 * verdict. Returns a problem or the parts.
 */
function issuerMetadata(
  answer: MetadataAnswer,
  issuer: string,
): ServerMetadata | string {
  const metadata = readServerMetadata(answer.json, issuer);
  if (typeof metadata === "string") return metadata;
  if (answer.refused !== undefined) {
    return `the authorization server's metadata was refused: ${answer.refused}`;
  }
  return metadata;
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

/**
 * Checks RFC 9728 metadata; returns a problem (one line) or the parts.
 * Not oauth4webapi's `processResourceDiscoveryResponse`: it takes only a
 * `resource` equal to the URL asked, and sherlock also takes one that is a
 * parent of the server's URL (servers publish their origin).
 */
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
  // RFC 9728 §2, and RFC 8707 for the `resource` sent: no fragment.
  if (resource.includes("#")) {
    return "the protected-resource metadata's resource has a fragment (#), which no resource identifier may have (RFC 9728)";
  }
  if (
    !Array.isArray(authorization_servers) ||
    authorization_servers.length === 0 ||
    !authorization_servers.every((server) => typeof server === "string")
  ) {
    return "the protected-resource metadata names no authorization server";
  }
  // A remote server's words: each is fetched, and is where tokens go.
  const insecure = (authorization_servers as string[]).find((server) =>
    !isHttpsOrLoopback(server)
  );
  if (insecure !== undefined) {
    return `the protected-resource metadata names authorization server ${
      oneLine(insecure).slice(0, 100)
    }, which is not an https URL (nor http on a loopback host); refused`;
  }
  return {
    resource,
    authorizationServers: authorization_servers as string[],
    scopesSupported: stringList(scopes_supported),
  };
}

/**
 * The authorization base URL of a server of the 2025-03-26 authorization
 * (no protected-resource metadata): its URL with the path discarded.
 */
export function authorizationBaseUrl(serverUrl: string): string {
  return new URL(serverUrl).origin;
}

/**
 * Where a 2025-03-26 server's own metadata is looked for: RFC 8414 at its
 * origin (that revision's rule), then OpenID discovery there.
 */
export function legacyServerMetadataUrls(serverUrl: string): string[] {
  const base = authorizationBaseUrl(serverUrl);
  return [
    `${base}/.well-known/oauth-authorization-server`,
    `${base}/.well-known/openid-configuration`,
  ];
}

/**
 * Checks the metadata a 2025-03-26 server publishes at its origin. That
 * revision named no issuer rule and its servers name an issuer with a
 * path (`https://host/oauth`), so any issuer of the server's own origin is
 * taken; one of another origin is refused (it was not the server's to
 * name). Returns a problem (one line) or the parts.
 */
export function readLegacyServerMetadata(
  body: unknown,
  serverUrl: string,
): ServerMetadata | string {
  const base = authorizationBaseUrl(serverUrl);
  const issuer = isRecord(body) ? body.issuer : undefined;
  if (typeof issuer !== "string") {
    return `the authorization server metadata at ${base} names no issuer`;
  }
  let sameOrigin = false;
  try {
    sameOrigin = new URL(issuer).origin === base;
  } catch {
    // Not a URL: refused below.
  }
  if (!sameOrigin) {
    return `the authorization server metadata at ${base} names issuer ${
      oneLine(issuer)
    }, not one of ${base}`;
  }
  return readServerMetadata(body, issuer);
}

/**
 * The default endpoints of a 2025-03-26 server that publishes no metadata
 * at all: `/authorize`, `/token` and `/register` at its origin. PKCE S256
 * is taken as offered: that revision required it of every server.
 */
export function defaultEndpoints(serverUrl: string): ServerMetadata {
  const base = authorizationBaseUrl(serverUrl);
  return {
    issuer: base,
    authorizationEndpoint: `${base}/authorize`,
    tokenEndpoint: `${base}/token`,
    registrationEndpoint: `${base}/register`,
    codeChallengeMethods: ["S256"],
    clientIdMetadataDocumentSupported: false,
    issParameterSupported: false,
  };
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
      return isHttpsOrLoopback(value) ? value : undefined;
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
    tokenEndpointAuthMethods: stringList(
      body.token_endpoint_auth_methods_supported,
    ),
    tokenEndpointAuthSigningAlgorithms: stringList(
      body.token_endpoint_auth_signing_alg_values_supported,
    ),
    grantProfilesSupported: stringList(
      body.authorization_grant_profiles_supported,
    ),
  };
}

/** `oauth_unsupported`: the server does not speak what sherlock needs. */
function unsupported(message: string): BrokerRequestError {
  return new BrokerRequestError({ code: "oauth_unsupported", message });
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

function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((v) => typeof v === "string")
    ? value as string[]
    : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
