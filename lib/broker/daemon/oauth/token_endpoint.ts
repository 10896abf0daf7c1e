/**
 * The authorization-code grant with PKCE (RFC 6749 §4.1, RFC 7636), the
 * refresh-token grant and revocation (RFC 6749 §6, RFC 7009) as
 * `oauth4webapi` sends them: its request builders, with its client
 * authentication (`client_secret_post`, or a public client's `client_id`)
 * and sherlock's `client_secret_basic` (both parts form-encoded, RFC 6749
 * §2.3.1, as the form serializer does), over {@linkcode boundedFetch} — so the daemon's scheme,
 * redirect, time and size rules hold for these requests as for its own.
 * Token answers are read by the caller (`tokenAnswer`, `readIssued`):
 * every grant's answer goes through one reader, lenient where servers are
 * known to differ (GitHub's errors with HTTP 200, comma-separated scopes).
 *
 * @module
 */

import {
  allowInsecureRequests,
  authorizationCodeGrantRequest,
  type AuthorizationServer,
  type Client,
  type ClientAuth,
  ClientSecretPost,
  customFetch,
  genericTokenEndpointRequest,
  None,
  processRevocationResponse,
  refreshTokenGrantRequest,
  revocationRequest,
  validateAuthResponse,
} from "oauth4webapi";
import {
  boundedFetch,
  failed,
  type JsonAnswer,
  readJsonAnswer,
} from "./http.ts";
import {
  clientAuthentication,
  type ClientAuthMethod,
  oneLine,
} from "./rules.ts";

/** Who the client is at an authorization server, and how it proves it. */
export interface TokenClient {
  clientId: string;
  /** The secret's value; absent for a public client. */
  clientSecret?: string;
  /** How the secret is sent; absent for a public client. */
  method?: ClientAuthMethod;
}

/**
 * A client's part of a request as rules.ts `clientAuthentication` builds
 * it: `client_id` (and a secret) in the form, or an `Authorization: Basic`
 * header.
 */
export interface ClientCredentials {
  form: Record<string, string>;
  headers: Record<string, string>;
}

/** The authorization server a request goes to. */
export interface TokenServer {
  issuer: string;
  tokenEndpoint?: string;
  revocationEndpoint?: string;
}

/**
 * Exchanges the code of an authorization response for tokens (PKCE's
 * verifier, the redirect URI the request named) and returns the answer,
 * whatever its status, for the caller to read. The response is checked
 * first (`checkAuthorizationResponse`: state, RFC 9207's `iss` against the
 * issuer recorded with the verifier, unnormalised); oauth4webapi checks it
 * again before it sends the code. `parameters`: more form fields
 * (`resource`).
 */
export async function requestCode(options: {
  server: TokenServer & { issParameterSupported?: boolean };
  client: TokenClient;
  response: URLSearchParams;
  state: string;
  redirectUri: string;
  verifier: string;
  parameters?: URLSearchParams | Record<string, string>;
}): Promise<JsonAnswer> {
  const { server, client } = options;
  const as: AuthorizationServer = {
    ...authorizationServer(server),
    authorization_response_iss_parameter_supported:
      server.issParameterSupported,
  };
  let callback: URLSearchParams;
  try {
    callback = validateAuthResponse(
      as,
      { client_id: client.clientId },
      options.response,
      options.state,
    );
  } catch (error) {
    throw failed(
      `the authorization response was refused: ${
        oneLine(error instanceof Error ? error.message : String(error))
      }`,
    );
  }
  const response = await authorizationCodeGrantRequest(
    as,
    { client_id: client.clientId },
    clientAuth(client),
    callback,
    options.redirectUri,
    options.verifier,
    { additionalParameters: options.parameters, ...BOUNDED_HTTP },
  );
  return await readJsonAnswer(response);
}

/**
 * Sends a refresh-token grant and returns the answer, whatever its status,
 * for the caller to read. `parameters`: more form fields (`resource`,
 * `scope`, `audience`; a key may repeat).
 */
export async function requestRefresh(options: {
  server: TokenServer;
  client: TokenClient;
  refreshToken: string;
  parameters?: URLSearchParams | Record<string, string>;
}): Promise<JsonAnswer> {
  const { server, client } = options;
  const response = await refreshTokenGrantRequest(
    authorizationServer(server),
    { client_id: client.clientId },
    clientAuth(client),
    options.refreshToken,
    { additionalParameters: options.parameters, ...BOUNDED_HTTP },
  );
  return await readJsonAnswer(response);
}

/**
 * Sends a grant of `grantType` — token exchange (RFC 8693), JWT bearer
 * (RFC 7523) — with `parameters` (a `grant_type` among them is replaced)
 * and returns the answer, whatever its status, for the caller to read:
 * not oauth4webapi's `processGenericTokenEndpointResponse`, which refuses
 * a `token_type` other than Bearer or DPoP (an ID-JAG's is `N_A`), and
 * whose errors would replace sherlock's refusals (which name the service
 * and redact what the server quotes).
 */
export async function requestGrant(options: {
  server: TokenServer;
  client: TokenClient | ClientCredentials;
  grantType: string;
  parameters: URLSearchParams | Record<string, string>;
}): Promise<JsonAnswer> {
  const { client, auth } = "form" in options.client
    ? formClient(options.client)
    : {
      client: { client_id: options.client.clientId },
      auth: clientAuth(options.client),
    };
  const response = await genericTokenEndpointRequest(
    authorizationServer(options.server),
    client,
    auth,
    options.grantType,
    options.parameters,
    BOUNDED_HTTP,
  );
  return await readJsonAnswer(response);
}

/**
 * Revokes `token` at the server's revocation endpoint (RFC 7009). True
 * when the server answered 200; false when it has no endpoint, refused,
 * or could not be reached — the caller forgets the grant all the same.
 */
export async function revokeToken(options: {
  server: TokenServer;
  client: TokenClient;
  token: string;
  hint: "refresh_token" | "access_token";
}): Promise<boolean> {
  if (!options.server.revocationEndpoint) return false;
  try {
    const response = await revocationRequest(
      authorizationServer(options.server),
      { client_id: options.client.clientId },
      clientAuth(options.client),
      options.token,
      {
        additionalParameters: { token_type_hint: options.hint },
        ...BOUNDED_HTTP,
      },
    );
    await processRevocationResponse(response);
    return true;
  } catch {
    return false;
  }
}

/**
 * The HTTP options of every oauth4webapi request of the daemon: its
 * bounded fetch, which also decides the scheme (https, or http on a
 * loopback host), so oauth4webapi's own https-only check is turned off.
 */
export const BOUNDED_HTTP = {
  [customFetch]: (url: string, init: RequestInit) =>
    boundedFetch(url, {
      method: init.method,
      headers: init.headers,
      body: init.body,
    }),
  [allowInsecureRequests]: true,
} as const;

/** The authorization server as oauth4webapi takes it. */
export function authorizationServer(
  server: TokenServer,
): AuthorizationServer {
  return {
    issuer: server.issuer,
    token_endpoint: server.tokenEndpoint,
    revocation_endpoint: server.revocationEndpoint,
  };
}

/**
 * The client's authentication as oauth4webapi applies it to a request: a
 * public client's `client_id`, or its secret by the method chosen.
 */
export function clientAuth(client: TokenClient): ClientAuth {
  if (client.clientSecret === undefined || client.method === undefined) {
    return None();
  }
  if (client.method === "client_secret_post") {
    return ClientSecretPost(client.clientSecret);
  }
  // Not oauth4webapi's ClientSecretBasic: it also escapes `-`, `.`, `_`
  // and `*` (%2D…), which servers that compare the header's client_id
  // without decoding refuse (the MCP conformance suite's pre-registration
  // scenario); the form serializer's encoding leaves them, as before.
  const { headers } = clientAuthentication({
    clientId: client.clientId,
    clientSecret: client.clientSecret,
    method: "client_secret_basic",
  });
  return (_as, _client, _body, requestHeaders) => {
    requestHeaders.set("authorization", headers.Authorization);
  };
}

/**
 * A client's {@linkcode ClientCredentials} as oauth4webapi takes them: the client (its
 * `client_id` from the form, or from the Basic header of a confidential
 * client) and an authentication that adds the same fields and headers.
 */
export function formClient(
  credentials: ClientCredentials,
): { client: Client; auth: ClientAuth } {
  let clientId: string | undefined = credentials.form.client_id;
  const basic = /^Basic (.+)$/.exec(
    credentials.headers.Authorization ?? credentials.headers.authorization ??
      "",
  );
  if (clientId === undefined && basic) {
    try {
      // The user part, form-encoded (RFC 6749 §2.3.1).
      const user = atob(basic[1]).split(":")[0];
      clientId = new URLSearchParams(`v=${user}`).get("v") ?? undefined;
    } catch {
      // Left undefined: oauth4webapi refuses it below.
    }
  }
  const auth: ClientAuth = (_as, _client, body, headers) => {
    for (const [key, value] of Object.entries(credentials.form)) {
      body.set(key, value);
    }
    for (const [key, value] of Object.entries(credentials.headers)) {
      headers.set(key, value);
    }
  };
  return { client: { client_id: clientId ?? "" }, auth };
}
