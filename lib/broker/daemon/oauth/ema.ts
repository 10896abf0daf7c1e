/**
 * Enterprise-Managed Authorization (the MCP ext-auth extension) for a
 * remote `source = "oauth"` service: where the service's authorization
 * server redeems ID-JAGs — its `grant_types_supported` lists the
 * JWT-bearer grant ({@linkcode JWT_BEARER_GRANT}), the grant the extension
 * has the client use there (the extension names no metadata of its own),
 * or `authorization_grant_profiles_supported` lists
 * {@linkcode ID_JAG_PROFILE} — and the operator is logged in at an OpenID
 * provider (`sherlock login`), no browser is needed. The
 * daemon exchanges the login's ID token at the provider for an ID-JAG
 * (draft-ietf-oauth-identity-assertion-authz-grant: RFC 8693 with
 * `requested_token_type` {@linkcode ID_JAG_TOKEN_TYPE}, `audience` = the
 * server's issuer, `resource` = the MCP server), then redeems it at the
 * server with the JWT-bearer grant (RFC 7523) as the service's client.
 * The ID-JAG lives only for that redemption; the access token is served
 * through the broker's cache (one exchange and one redemption for all
 * waiting requests) and fetched the same way again once it expires: no
 * refresh token is kept. Only for an issuer the service's `[token]
 * ema_audiences` names (none by default: a server's metadata must not pick
 * who the provider vouches for the operator to); `[token] ema = false`
 * opts a service out; a grant made with `sherlock auth` comes first
 * (`../sources/oauth.ts`).
 *
 * @module
 */

import type { Service } from "../../../services/loader.ts";
import { BrokerRequestError } from "../request_error.ts";
import type { SecretStore } from "../secret_store.ts";
import { readIssued, TOKEN_TYPES } from "../sources/exchange.ts";
import type { Token } from "../token_cache.ts";
import type { OAuthClient } from "./client.ts";
import { discover, type Discovered } from "./discovery.ts";
import { failed, origin } from "./http.ts";
import { requestGrant } from "./token_endpoint.ts";
import type { OidcLogin } from "./oidc_login.ts";
import { TOKEN_EXCHANGE_GRANT } from "./oidc_login.ts";
import {
  chooseScopes,
  ID_JAG_PROFILE,
  JWT_BEARER_GRANT,
  redeemsIdJag,
  requestedResource,
  type ServerMetadata,
} from "./rules.ts";

export { ID_JAG_PROFILE, JWT_BEARER_GRANT };

/** The token type of an ID-JAG (the draft's RFC 8693 registration). */
export const ID_JAG_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id-jag";

/**
 * True when the service's `[token] ema_audiences` names `issuer`: the only
 * audiences an ID-JAG is asked for (exact match, as RFC 8414 compares
 * issuers).
 */
export function audienceAllowed(service: Service, issuer: string): boolean {
  return service.token.ema_audiences?.includes(issuer) ?? false;
}

/**
 * True when `metadata`'s server redeems ID-JAGs: the JWT-bearer grant in
 * its `grant_types_supported` (the signal of the ext-auth extension), or
 * the ID-JAG grant profile ({@linkcode redeemsIdJag}).
 */
export function offersEma(
  metadata: Pick<
    ServerMetadata,
    "grantTypesSupported" | "grantProfilesSupported"
  >,
): boolean {
  return redeemsIdJag(metadata);
}

/**
 * The token-exchange form that asks the provider for an ID-JAG, without
 * the client id: the ID token as the subject, the server's issuer as the
 * audience, the MCP server as the resource.
 */
export function idJagForm(
  request: {
    idToken: string;
    issuer: string;
    resource: string | null;
    scopes: readonly string[];
  },
): Record<string, string> {
  const form: Record<string, string> = {
    grant_type: TOKEN_EXCHANGE_GRANT,
    requested_token_type: ID_JAG_TOKEN_TYPE,
    subject_token: request.idToken,
    subject_token_type: TOKEN_TYPES.id_token,
    audience: request.issuer,
  };
  if (request.resource !== null) form.resource = request.resource;
  if (request.scopes.length > 0) form.scope = request.scopes.join(" ");
  return form;
}

/** What a service's token request may use. */
export interface EmaContext {
  /** The OIDC login; EMA needs one held. */
  oidc?: OidcLogin;
  /** The OAuth client: the service's client at the server. */
  oauth: OAuthClient;
  /** The unlocked store, for a registered client or a secret. */
  store?: SecretStore;
  /** The clock of the tokens' expiries (the system's when unset). */
  now?: () => number;
}

/**
 * The EMA state of one daemon: what discovery found per server URL. It
 * holds no secret and outlives a logout, so that a token request after
 * one still knows the server wants the SSO login.
 */
export class EnterpriseAuthorization {
  #discovered = new Map<string, Promise<Discovered>>();

  /**
   * What discovery found for `service` when its server offers EMA with an
   * issuer the service's `ema_audiences` names (and it does not opt out,
   * `ema = false`); else undefined. Without `ema_audiences`, no discovery:
   * the server's metadata must not choose the audience of an ID-JAG.
   * Discovery runs once per server URL (a failed one again next time); with
   * `discover: false`, only what an earlier discovery found counts.
   */
  async offered(
    service: Service,
    options: { discover?: boolean } = {},
  ): Promise<Discovered | undefined> {
    const server = service.server;
    if (
      service.token.ema === false || !("url" in server) ||
      !service.token.ema_audiences?.length
    ) {
      return undefined;
    }
    let discovered = this.#discovered.get(server.url);
    if (!discovered && options.discover === false) return undefined;
    if (!discovered) {
      discovered = discover(server.url);
      this.#discovered.set(server.url, discovered);
      discovered.catch(() => {
        if (this.#discovered.get(server.url) === discovered) {
          this.#discovered.delete(server.url);
        }
      });
    }
    const found = await discovered;
    return offersEma(found.metadata) &&
        audienceAllowed(service, found.metadata.issuer)
      ? found
      : undefined;
  }

  /**
   * An access token for `service` by EMA (the server offers it, as
   * {@linkcode EnterpriseAuthorization.offered} found): an ID-JAG from the
   * provider, redeemed at the server. Throws `not_logged_in` without an
   * OIDC login, `exchange_refused` when the provider or the server refuses.
   */
  async token(
    service: Service,
    discovered: Discovered,
    context: EmaContext,
  ): Promise<Token> {
    try {
      return await this.#token(service, discovered, context);
    } catch (error) {
      // The server may have moved (another issuer, endpoint): discover anew.
      if (
        !(error instanceof BrokerRequestError && error.code === "not_logged_in")
      ) {
        const url = (service.server as { url: string }).url;
        this.#discovered.delete(url);
      }
      throw error;
    }
  }

  async #token(
    service: Service,
    discovered: Discovered,
    context: EmaContext,
  ): Promise<Token> {
    const name = service.service.name;
    const { metadata } = discovered;
    const oidc = context.oidc;
    const provider = oidc?.provider();
    const config = oidc?.config();
    if (!oidc || !provider || !config) {
      throw new BrokerRequestError({
        code: "not_logged_in",
        message:
          `service ${name}'s authorization server ${metadata.issuer} takes the SSO login (Enterprise-Managed Authorization), and nobody is logged in at the provider: run "sherlock login" (or "sherlock auth ${name}" to authorize it in a browser)`,
      });
    }
    // Checked again where the ID token is spent: only an allowed audience.
    if (!audienceAllowed(service, metadata.issuer)) {
      throw new BrokerRequestError({
        code: "oauth_unsupported",
        message:
          `service ${name}'s authorization server ${metadata.issuer} is not in [token] ema_audiences of services.d/${name}.toml; add it there if your provider may vouch for you to it, or run "sherlock auth ${name}"`,
      });
    }
    const server = service.server as { url: string };
    const resource = requestedResource({
      sendResource: service.token.send_resource,
      serverUrl: server.url,
      published: discovered.resource,
    });
    const scopes = chooseScopes({
      challenge: discovered.challengeScope,
      supported: discovered.scopesSupported,
      configured: service.token.scopes,
      serverSupported: metadata.scopesSupported,
    });
    // The client first: a registration or a missing secret fails before
    // the provider issues anything.
    const client = await context.oauth.authenticationAt(
      service,
      metadata,
      context.store,
    );
    const idToken = await oidc.idToken();
    const exchanged = await requestGrant({
      server: provider.metadata,
      client: { clientId: config.clientId },
      grantType: TOKEN_EXCHANGE_GRANT,
      parameters: idJagForm({
        idToken: idToken.token,
        issuer: metadata.issuer,
        resource,
        scopes,
      }),
    });
    const idJag = readIssued(exchanged, {
      service: name,
      issuer: provider.metadata.issuer,
      endpoint: provider.metadata.tokenEndpoint,
      now: (context.now ?? Date.now)(),
      asked: "an ID-JAG",
    });
    if (idJag instanceof BrokerRequestError) throw idJag;
    const type = (exchanged.json as Record<string, unknown>).issued_token_type;
    if (type !== ID_JAG_TOKEN_TYPE) {
      throw failed(
        `the provider ${provider.metadata.issuer} answered another token type than an ID-JAG for service ${name}`,
      );
    }
    const redeemed = await requestGrant({
      server: metadata,
      client,
      grantType: JWT_BEARER_GRANT,
      parameters: {
        assertion: idJag.token,
        ...(scopes.length > 0 ? { scope: scopes.join(" ") } : {}),
      },
    });
    const issued = readIssued(redeemed, {
      service: name,
      issuer: metadata.issuer,
      endpoint: metadata.tokenEndpoint,
      now: (context.now ?? Date.now)(),
      refuser: `the authorization server ${metadata.issuer}`,
      asked: "the ID-JAG",
    });
    if (issued instanceof BrokerRequestError) throw issued;
    const tokenType = (redeemed.json as Record<string, unknown>).token_type;
    if (typeof tokenType !== "string" || tokenType.toLowerCase() !== "bearer") {
      throw failed(
        `the token endpoint at ${
          origin(metadata.tokenEndpoint)
        } answered no bearer token for service ${name}`,
      );
    }
    return issued;
  }
}
