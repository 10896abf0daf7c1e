/**
 * The client-credentials grant (OAuth 2.1 §4.2; MCP's extension SEP-1046):
 * for CI and servers, where no person is there to authorize. The broker
 * logs in as the client itself — `[token] grant = "client_credentials"`
 * with `client_id` and, in the store, its `client_secret` (sent by
 * `client_secret_basic` or `client_secret_post`, as the server's metadata
 * names) or its `client_key` (a private key that signs a `private_key_jwt`
 * assertion, RFC 7523). No browser, no `sherlock auth`, no refresh token:
 * an access token that expires is fetched anew. The request and the
 * client's authentication are oauth4webapi's (`clientCredentialsGrantRequest`,
 * `PrivateKeyJwt`), over the daemon's bounded fetch.
 *
 * @module
 */

import {
  type ClientAuth,
  clientCredentialsGrantRequest,
  modifyAssertion,
  PrivateKeyJwt,
} from "oauth4webapi";
import type { Service } from "../../../services/loader.ts";
import { BrokerRequestError } from "../request_error.ts";
import type { SecretStore } from "../secret_store.ts";
import { type JsonAnswer, readJsonAnswer } from "./http.ts";
import { chooseClientAuthMethod, type ServerMetadata } from "./rules.ts";
import {
  authorizationServer,
  BOUNDED_HTTP,
  clientAuth,
} from "./token_endpoint.ts";

/** The grant type of a token request with no person. */
export const CLIENT_CREDENTIALS_GRANT = "client_credentials";

/**
 * One token request with `grant_type=client_credentials` at `metadata`'s
 * token endpoint, with the RFC 8707 `resource` (unless null) and the
 * `scopes`; the token endpoint's answer (client.ts's `tokenAnswer` reads
 * it). Throws `no_secret` when the client's secret or key is not
 * stored, `oauth_unsupported` when the server takes none of the client's
 * methods, `oauth_failed` when it refuses.
 */
export async function requestClientCredentials(
  options: {
    service: Service;
    store: SecretStore;
    metadata: ServerMetadata;
    scopes: readonly string[];
    resource: string | null;
    /** ms since the epoch: the assertion's `iat`. */
    now: number;
  },
): Promise<JsonAnswer> {
  const { service, metadata } = options;
  const name = service.service.name;
  const authentication = await authenticate(options);
  const parameters: Record<string, string> = {};
  if (options.resource !== null) parameters.resource = options.resource;
  if (options.scopes.length > 0) parameters.scope = options.scopes.join(" ");
  const response = await clientCredentialsGrantRequest(
    authorizationServer({
      issuer: metadata.issuer,
      tokenEndpoint: metadata.tokenEndpoint,
    }),
    { client_id: service.token.client_id as string },
    authentication,
    parameters,
    BOUNDED_HTTP,
  );
  const answer = await readJsonAnswer(response);
  const json = answer.json as Record<string, unknown> | undefined;
  if (answer.status === 401 || json?.error === "invalid_client") {
    throw new BrokerRequestError({
      code: "oauth_failed",
      message:
        `the authorization server ${metadata.issuer} refused service ${name}'s client ${service.token.client_id} (invalid_client); check [token] client_id in services.d/${name}.toml and the stored client ${
          service.token.client_key ? "key" : "secret"
        }`,
    });
  }
  return answer;
}

/** How the client authenticates: its secret, or an assertion its key signs. */
async function authenticate(
  options: {
    service: Service;
    store: SecretStore;
    metadata: ServerMetadata;
    now: number;
  },
): Promise<ClientAuth> {
  const { service, store, metadata } = options;
  const name = service.service.name;
  const clientId = service.token.client_id as string;
  const keyName = service.token.client_key;
  const secretName = service.token.client_secret as string;
  const stored = store.get(keyName ?? secretName);
  if (stored === undefined) {
    const what = keyName ? "key" : "secret";
    throw new BrokerRequestError({
      code: "no_secret",
      message:
        `service ${name}'s client ${what} is not stored; run "sherlock secret set ${
          keyName ?? secretName
        }"`,
    });
  }
  const methods = metadata.tokenEndpointAuthMethods;
  if (keyName !== undefined) {
    if (methods !== undefined && !methods.includes("private_key_jwt")) {
      throw unsupported(
        `the authorization server ${metadata.issuer} does not take private_key_jwt at its token endpoint; use [token] client_secret instead of client_key in services.d/${name}.toml`,
      );
    }
    const { key, algorithm } = await importClientKey(stored, {
      service: name,
      keyName,
    });
    const algorithms = metadata.tokenEndpointAuthSigningAlgorithms;
    if (algorithms !== undefined && !algorithms.includes(algorithm)) {
      throw unsupported(
        `the authorization server ${metadata.issuer} takes ${
          algorithms.join(", ")
        } assertions, and service ${name}'s client key signs ${algorithm}; store a key of a type it takes`,
      );
    }
    // `aud` is the issuer (RFC 7523 §3; MCP's client-credentials extension
    // names it), as oauth4webapi sets it; the times come from the daemon's
    // clock, which a test may move.
    const iat = Math.floor(options.now / 1000);
    return PrivateKeyJwt(key, {
      [modifyAssertion]: (header, payload) => {
        header.typ = "JWT";
        payload.iat = iat;
        payload.nbf = iat;
        payload.exp = iat + ASSERTION_LIFETIME_S;
      },
    });
  }
  const method = chooseClientAuthMethod(methods);
  if (method === undefined) {
    throw unsupported(
      `the authorization server ${metadata.issuer} takes neither client_secret_basic nor client_secret_post at its token endpoint${
        methods?.includes("private_key_jwt")
          ? "; it takes private_key_jwt: set [token] client_key instead of client_secret"
          : ""
      } in services.d/${name}.toml`,
    );
  }
  return clientAuth({ clientId, clientSecret: stored, method });
}

/** How long an assertion is valid: the token request follows at once. */
const ASSERTION_LIFETIME_S = 60;

/**
 * The key of a PKCS#8 PEM, RSA or P-256, and the algorithm it signs with
 * (RS256, ES256). Read here, not by `jose`'s `importPKCS8`: that one takes
 * a PEM with its line breaks and needs the algorithm first, while
 * `sherlock secret set` stores one line (the PEM's breaks removed, or its
 * base64 body alone) and the key's type picks the algorithm. Throws
 * `invalid_config`, never quoting the key.
 */
async function importClientKey(
  pem: string,
  names: { service: string; keyName: string },
): Promise<{ key: CryptoKey; algorithm: "RS256" | "ES256" }> {
  const match =
    /^\s*(?:-----BEGIN PRIVATE KEY-----)?([A-Za-z0-9+/=\s]+?)(?:-----END PRIVATE KEY-----)?\s*$/
      .exec(pem);
  const der = match ? decodeBase64(match[1].replace(/\s+/g, "")) : undefined;
  if (der !== undefined) {
    const tries = [
      ["ES256", { name: "ECDSA", namedCurve: "P-256" }],
      ["RS256", { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }],
    ] as const;
    for (const [algorithm, params] of tries) {
      try {
        const key = await crypto.subtle.importKey("pkcs8", der, params, false, [
          "sign",
        ]);
        return { key, algorithm };
      } catch {
        // Not this type: try the next.
      }
    }
  }
  throw new BrokerRequestError({
    code: "invalid_config",
    message:
      `service ${names.service}'s client key "${names.keyName}" is not a PKCS#8 PEM private key (RSA or P-256 EC, "-----BEGIN PRIVATE KEY-----"); store one with "tr -d '\\n' < key.pem | sherlock secret set ${names.keyName}" (convert another form with "openssl pkcs8 -topk8 -nocrypt")`,
  });
}

function decodeBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

function unsupported(message: string): BrokerRequestError {
  return new BrokerRequestError({ code: "oauth_unsupported", message });
}
