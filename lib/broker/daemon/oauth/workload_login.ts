/**
 * The login of a CI runner: `sherlock login --subject-token-file PATH` (or
 * `--subject-token-env VAR`) exchanges a workload identity token — the one
 * a CI platform issues to a job — for the operator's access token at the
 * OpenID provider (RFC 8693), with no human, no browser and no passphrase.
 * The pure parts: the request's form, what
 * a refusal says (never the token), and whose claims `whoami` shows.
 * `oidc_login.ts` sends the request and holds what comes back.
 *
 * @module
 */

import { SUBJECT_TOKEN_TYPES } from "../../protocol.ts";
import { BrokerRequestError } from "../request_error.ts";
import type { JsonAnswer } from "./http.ts";
import { type IdTokenClaims, unverifiedClaims } from "./id_token.ts";
import { oneLine, redactTokens } from "./rules.ts";

/** Whose claims `whoami` shows for a workload login. */
export type ClaimsSource = "id_token" | "access_token" | "subject_token";

/**
 * The RFC 8693 request's form: the configured public client, its scopes
 * and audience, an access token asked for.
 */
export function workloadExchangeForm(
  config: { clientId: string; scopes: readonly string[]; audience?: string },
  subject: { token: string; type: string },
): Record<string, string> {
  return {
    grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
    client_id: config.clientId,
    subject_token: subject.token,
    subject_token_type: subject.type,
    requested_token_type: SUBJECT_TOKEN_TYPES.access_token,
    ...(config.scopes.length > 0 ? { scope: config.scopes.join(" ") } : {}),
    ...(config.audience !== undefined ? { audience: config.audience } : {}),
  };
}

/**
 * The error for a provider's refusal (a 4xx with an OAuth `error`), or
 * undefined when the answer is none. A grant the client may not use is
 * the provider's configuration (`oauth_unsupported`, 78); any other
 * refusal — a subject token expired, for another audience, from an issuer
 * not trusted — is `exchange_refused` (77). Token-like runs of the
 * provider's text are redacted: it may quote what it refused.
 */
export function workloadRefusal(
  answer: JsonAnswer,
  context: { issuer: string; clientId: string },
): BrokerRequestError | undefined {
  const json = answer.json as Record<string, unknown> | undefined;
  if (answer.status < 400 || answer.status >= 500 || !json?.error) {
    return undefined;
  }
  const error = redactTokens(oneLine(String(json.error)));
  const description = typeof json.error_description === "string"
    ? redactTokens(oneLine(json.error_description))
    : "";
  const said = `${error}${description ? ` (${description})` : ""}`;
  if (error === "unsupported_grant_type" || error === "unauthorized_client") {
    return new BrokerRequestError({
      code: "oauth_unsupported",
      message:
        `the provider ${context.issuer} does not let client ${context.clientId} exchange tokens: ${said}; allow the token-exchange grant (RFC 8693) for it at the provider`,
    });
  }
  return new BrokerRequestError({
    code: "exchange_refused",
    message:
      `the provider ${context.issuer} refused the workload token: ${said}`,
  });
}

/**
 * Who a workload login is, for `whoami`: the claims of the issued access
 * token when it is a JWT, else those of the subject token (the CI
 * platform's) when it is one — decoded, not verified: they name, they do
 * not authorize. Undefined when neither is a JWT with a `sub`.
 */
export function workloadClaims(
  tokens: { accessToken: string; subjectToken: string },
): { claims: IdTokenClaims; from: ClaimsSource } | undefined {
  for (
    const [token, from] of [
      [tokens.accessToken, "access_token"],
      [tokens.subjectToken, "subject_token"],
    ] as const
  ) {
    const claims = unverifiedClaims(token);
    if (typeof claims?.sub === "string" && typeof claims.iss === "string") {
      return { claims: claims as IdTokenClaims, from };
    }
  }
  return undefined;
}

/**
 * The claims of an ID token handed in (`sherlock login --id-token-file`),
 * checked to be the `[login]`'s: `iss` its issuer, `aud` its client id,
 * `exp` in the future. Decoded, not verified (the provider may publish no
 * keys): sherlock only presents the token back to its issuer, which
 * verifies it (ext-auth EMA §4.1), and shows the claims as such. Throws
 * `invalid_config` (78) for another issuer or client, `not_logged_in` (77)
 * for an expired one; never quotes the token.
 */
export function heldIdTokenClaims(
  token: string,
  context: { issuer: string; clientId: string; now: number },
): IdTokenClaims {
  const claims = unverifiedClaims(token);
  const refuse = (problem: string) =>
    new BrokerRequestError({
      code: "invalid_config",
      message:
        `the ID token handed to sherlock login ${problem}; it must be one the provider ${context.issuer} issued to [login] client_id ${context.clientId}`,
    });
  if (
    !claims || typeof claims.sub !== "string" || typeof claims.exp !== "number"
  ) {
    throw refuse("is not a JWT with sub and exp");
  }
  if (claims.iss !== context.issuer) {
    throw refuse(
      `was issued by ${
        redactTokens(oneLine(String(claims.iss)))
      }, not by [login] issuer`,
    );
  }
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(context.clientId)) {
    throw refuse("is for another client");
  }
  if (claims.exp * 1000 <= context.now) {
    throw new BrokerRequestError({
      code: "not_logged_in",
      message:
        `the ID token handed to sherlock login has expired; run "sherlock login --id-token-file PATH" (or --id-token-env VAR) with a fresh one`,
    });
  }
  return claims as IdTokenClaims;
}
