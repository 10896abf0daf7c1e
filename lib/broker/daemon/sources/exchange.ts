/**
 * `[token] source = "exchange"`: a token for the service from the SSO
 * login (`[login] provider = "oidc"`). Token exchange (RFC 8693) at the
 * provider's token endpoint, the login's access token (or ID token:
 * `subject = "id_token"`) as `subject_token`, with the service's
 * `audience`, `resource`, `scopes` and `requested_token_type`. Where the
 * provider's discovery does not list the token-exchange grant, a
 * refresh-token grant with the service's `resource` (RFC 8707) instead;
 * `mode` overrides the choice. The broker caches the token until shortly
 * before expiry, one fetch for all waiting requests, and audits it.
 *
 * @module
 */

import type { Service } from "../../../services/loader.ts";
import type { TokenSpec } from "../../../services/schema.ts";
import { failed, type JsonAnswer, origin } from "../oauth/http.ts";
import { exchangeMode, TOKEN_EXCHANGE_GRANT } from "../oauth/oidc_login.ts";
import { requestGrant } from "../oauth/token_endpoint.ts";
import { oneLine, redactTokens } from "../oauth/rules.ts";
import { BrokerRequestError } from "../request_error.ts";
import type { Token } from "../token_cache.ts";
import { systemClock } from "../clock.ts";
import type { SourceContext, TokenSource } from "./token_source.ts";

/** The token from the SSO login, exchanged (or refreshed) for the service. */
export const exchangeSource: TokenSource = { fetchToken: exchangedToken };

/** RFC 8693 §3: the token types sherlock names. */
export const TOKEN_TYPES = {
  access_token: "urn:ietf:params:oauth:token-type:access_token",
  id_token: "urn:ietf:params:oauth:token-type:id_token",
} as const;

/** The lifetime assumed for an issued token that states none. */
const ASSUMED_LIFETIME_S = 300;

/** The form of the RFC 8693 request for `token`, without the client id. */
export function exchangeForm(
  token: Pick<
    TokenSpec,
    "subject" | "audience" | "resource" | "scopes" | "requested_token_type"
  >,
  subjectToken: string,
): Record<string, string> {
  const form: Record<string, string> = {
    grant_type: TOKEN_EXCHANGE_GRANT,
    subject_token: subjectToken,
    subject_token_type: TOKEN_TYPES[token.subject ?? "access_token"],
    requested_token_type: token.requested_token_type ??
      TOKEN_TYPES.access_token,
  };
  return { ...form, ...targetForm(token) };
}

/** `audience`, `resource` and `scope` as the service names them. */
export function targetForm(
  token: Pick<TokenSpec, "audience" | "resource" | "scopes">,
): Record<string, string> {
  const form: Record<string, string> = {};
  if (token.audience !== undefined) form.audience = token.audience;
  if (token.resource !== undefined) form.resource = token.resource;
  if (token.scopes !== undefined && token.scopes.length > 0) {
    form.scope = token.scopes.join(" ");
  }
  return form;
}

/**
 * The token in the provider's answer, or the error to throw: a refusal
 * (a 4xx with an OAuth `error`) is `exchange_refused` naming the service
 * and the provider's `error` and `error_description`; anything else
 * `oauth_failed`. No part of the answer that could be a token is quoted.
 * `refuser` and `asked` word the refusal for another server or token
 * (`the provider ISSUER` and `a token` by default).
 */
export function readIssued(
  answer: JsonAnswer,
  context: {
    service: string;
    issuer: string;
    endpoint: string;
    now: number;
    refuser?: string;
    asked?: string;
  },
): Token | BrokerRequestError {
  const json = answer.json as Record<string, unknown> | undefined;
  if (answer.status >= 400 && answer.status < 500 && json?.error) {
    const description = typeof json.error_description === "string"
      ? redactTokens(oneLine(json.error_description))
      : "";
    return new BrokerRequestError({
      code: "exchange_refused",
      message: `${
        context.refuser ?? `the provider ${context.issuer}`
      } refused ${context.asked ?? "a token"} for service ${context.service}: ${
        redactTokens(oneLine(String(json.error)))
      }${description ? ` (${description})` : ""}`,
    });
  }
  if (answer.status !== 200) {
    return failed(
      `the token endpoint at ${
        origin(context.endpoint)
      } answered HTTP ${answer.status} for service ${context.service}`,
    );
  }
  if (typeof json?.access_token !== "string" || json.access_token === "") {
    return failed(
      `the token endpoint at ${
        origin(context.endpoint)
      } answered no token for service ${context.service}`,
    );
  }
  const lifetime = typeof json.expires_in === "number" && json.expires_in > 0
    ? json.expires_in
    : ASSUMED_LIFETIME_S;
  return { token: json.access_token, expiresAt: context.now + lifetime * 1000 };
}

async function exchangedToken(
  service: Service,
  context: SourceContext,
): Promise<Token> {
  const name = service.service.name;
  const oidc = context.oidc;
  const provider = oidc?.provider();
  const config = oidc?.config();
  if (!oidc || !provider || !config) {
    throw new BrokerRequestError({
      code: "not_logged_in",
      message:
        `service ${name} takes its token from the SSO login, and nobody is logged in at the provider`,
    });
  }
  const { metadata } = provider;
  const token = service.token;
  let answer: JsonAnswer;
  if (exchangeMode(token, metadata) === "exchange") {
    const subject = token.subject === "id_token"
      ? await oidc.idToken()
      : await oidc.accessToken();
    answer = await requestGrant({
      server: metadata,
      client: { clientId: config.clientId },
      grantType: TOKEN_EXCHANGE_GRANT,
      parameters: exchangeForm(token, subject.token),
    });
  } else {
    answer = await oidc.refreshGrant(targetForm(token));
  }
  const issued = readIssued(answer, {
    service: name,
    issuer: metadata.issuer,
    endpoint: metadata.tokenEndpoint,
    now: (context.clock ?? systemClock).now(),
  });
  if (issued instanceof BrokerRequestError) throw issued;
  return issued;
}
