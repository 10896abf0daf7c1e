/**
 * The client-credentials grant (OAuth 2.1 §4.2; MCP's extension SEP-1046):
 * for CI and servers, where no person is there to authorize. The broker
 * logs in as the client itself — `[token] grant = "client_credentials"`
 * with `client_id` and, in the store, its `client_secret` (sent by
 * `client_secret_basic` or `client_secret_post`, as the server's metadata
 * names) or its `client_key` (a private key that signs a `private_key_jwt`
 * assertion, RFC 7523). No browser, no `sherlock auth`, no refresh token:
 * an access token that expires is fetched anew.
 *
 * @module
 */

import type { Service } from "../../../services/loader.ts";
import { BrokerRequestError } from "../request_error.ts";
import type { SecretStore } from "../secret_store.ts";
import { JWT_ASSERTION_TYPE, signClientAssertion } from "./client_assertion.ts";
import { type JsonAnswer, requestJson } from "./http.ts";
import {
  chooseClientAuthMethod,
  clientAuthentication,
  type ServerMetadata,
} from "./rules.ts";

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
  const client = await authenticate(options);
  const form: Record<string, string> = {
    grant_type: CLIENT_CREDENTIALS_GRANT,
    ...client.form,
  };
  if (options.resource !== null) form.resource = options.resource;
  if (options.scopes.length > 0) form.scope = options.scopes.join(" ");
  const answer = await requestJson(metadata.tokenEndpoint, {
    form,
    headers: client.headers,
  });
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

/** The form fields and headers that authenticate the client. */
async function authenticate(
  options: {
    service: Service;
    store: SecretStore;
    metadata: ServerMetadata;
    now: number;
  },
): Promise<{ form: Record<string, string>; headers: Record<string, string> }> {
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
    const signed = await signClientAssertion({
      clientId,
      audience: metadata.issuer,
      pem: stored,
      service: name,
      keyName,
      now: options.now,
    });
    const algorithms = metadata.tokenEndpointAuthSigningAlgorithms;
    if (algorithms !== undefined && !algorithms.includes(signed.algorithm)) {
      throw unsupported(
        `the authorization server ${metadata.issuer} takes ${
          algorithms.join(", ")
        } assertions, and service ${name}'s client key signs ${signed.algorithm}; store a key of a type it takes`,
      );
    }
    return clientAuthentication({
      clientId,
      assertion: { type: JWT_ASSERTION_TYPE, value: signed.assertion },
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
  return clientAuthentication({ clientId, clientSecret: stored, method });
}

function unsupported(message: string): BrokerRequestError {
  return new BrokerRequestError({ code: "oauth_unsupported", message });
}
