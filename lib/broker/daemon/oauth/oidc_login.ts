/**
 * `sherlock login` at an OpenID provider (`[login] provider = "oidc"`): the
 * authorization-code flow with PKCE and a nonce on a loopback listener, or
 * the device grant (RFC 8628), both run by `authorization_flow.ts`; the ID
 * token validated (`id_token.ts`); the provider's tokens kept in this
 * object's memory only — like ssh-agent, a broker restart, an idle lock or a
 * logout forgets them, and the next token request asks for `sherlock login`
 * in one line. One refresh at a time; the
 * rotated refresh token replaces the spent one before the new access token
 * is handed out. Logout revokes the refresh token (RFC 7009) where offered.
 * A CI runner logs in with a workload token instead (`workload_login.ts`):
 * exchanged at the token endpoint, held the same way.
 *
 * @module
 */

import type { OidcFinished, OidcLoginStatus } from "../../protocol.ts";
import { BrokerRequestError } from "../request_error.ts";
import { isFresh, type Token } from "../token_cache.ts";
import { type Clock, systemClock } from "../clock.ts";
import { type StartedFlow, tokenAnswer } from "./client.ts";
import {
  AUTHORIZATION_TIMEOUT_MS,
  AuthorizationFlows,
  type FlowMessages,
} from "./authorization_flow.ts";
import { failed, type JsonAnswer, origin, requestJson } from "./http.ts";
import {
  type GrantStorage,
  refreshGrant,
  rotatedRefreshToken,
} from "./refresher.ts";
import { requestGrant, revokeToken } from "./token_endpoint.ts";
import { discoverProvider, type OidcProvider } from "./discovery.ts";
import {
  type IdTokenClaims,
  IdTokenError,
  type Jwk,
  verifyIdToken,
} from "./id_token.ts";
import {
  type ClaimsSource,
  heldIdTokenClaims,
  workloadClaims,
  workloadExchangeForm,
  workloadRefusal,
} from "./workload_login.ts";
import type { ServerMetadata } from "./rules.ts";

// Discovery moved to discovery.ts; importers of oidc_login.ts keep working.
export { discoverProvider, type OidcProvider };

/** `[login]` of config.toml with `provider = "oidc"`, defaults applied. */
export interface OidcConfig {
  issuer: string;
  clientId: string;
  scopes: readonly string[];
  audience?: string;
}

/** The grant type RFC 8693 registers, as discovery lists it. */
export const TOKEN_EXCHANGE_GRANT =
  "urn:ietf:params:oauth:grant-type:token-exchange";

/**
 * How a `source = "exchange"` service's token is got: its `mode`, else
 * `exchange` when the provider's discovery lists the token-exchange grant,
 * else `refresh` (a refresh-token grant with its `resource`, RFC 8707).
 */
export function exchangeMode(
  token: { mode?: "exchange" | "refresh" },
  metadata: Pick<ServerMetadata, "grantTypesSupported">,
): "exchange" | "refresh" {
  if (token.mode) return token.mode;
  return metadata.grantTypesSupported?.includes(TOKEN_EXCHANGE_GRANT)
    ? "exchange"
    : "refresh";
}

/** The lifetime assumed for an access token that states none. */
const ASSUMED_LIFETIME_S = 300;

/** What a login under way is for. */
interface PendingLogin {
  config: OidcConfig;
  provider: OidcProvider;
}

/** The provider's tokens and who they are for: memory only. */
interface Held {
  config: OidcConfig;
  provider: OidcProvider;
  claims: IdTokenClaims;
  /** Absent when a workload login got none. */
  idToken?: string;
  accessToken: string;
  accessExpiresAt: number;
  accessFetchedAt: number;
  refreshToken?: string;
  since: Date;
  /** A workload login's: whose claims `claims` are. */
  workload?: { claimsFrom: ClaimsSource | "none"; held?: boolean };
}

/** The OIDC login of one daemon. */
export class OidcLogin {
  /** Every expiry and poll interval (injected by tests). */
  readonly #clock: Clock;
  #held: Held | undefined;
  /** The login under way: one at a time, a newer one replaces it. */
  readonly #flows: AuthorizationFlows<PendingLogin>;
  #refreshing: Promise<Held> | undefined;
  /** Every use of the refresh token, one after another (rotation). */
  #queue: Promise<unknown> = Promise.resolve();

  /** `clock`: the daemon's (the system clock when unset). */
  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#flows = new AuthorizationFlows({
      clock: this.#clock,
      unknown: "no login under way (it ended or timed out)",
    });
  }

  /** True while a login is held (its refresh may still fail). */
  get loggedIn(): boolean {
    return this.#held !== undefined;
  }

  /** Who is logged in, and until when; never a token. */
  status(): OidcLoginStatus | undefined {
    const held = this.#held;
    if (!held) return undefined;
    return {
      issuer: held.config.issuer,
      subject: held.claims.sub,
      ...(typeof held.claims.email === "string"
        ? { email: held.claims.email }
        : {}),
      since: held.since.toISOString(),
      accessTokenExpiresAt: new Date(held.accessExpiresAt).toISOString(),
      refreshToken: held.refreshToken !== undefined,
      tokenExchange: held.provider.metadata.grantTypesSupported?.includes(
        TOKEN_EXCHANGE_GRANT,
      ) ?? false,
      ...(held.workload
        ? {
          workload: {
            claimsFrom: held.workload.claimsFrom,
            ...(held.workload.held ? { held: true } : {}),
            ...(held.workload.claimsFrom === "none"
              ? {}
              : { claimsIssuer: held.claims.iss }),
          },
        }
        : {}),
    };
  }

  /**
   * Logs in with a workload identity token (a CI job's): exchanged at the
   * provider's token endpoint (RFC 8693) for the operator's access token,
   * which is held like a browser login's. The workload token is sent once
   * and not kept; no terminal, browser or passphrase takes part.
   */
  async loginWithWorkloadToken(
    config: OidcConfig,
    subject: { token: string; type: string },
  ): Promise<OidcLoginStatus> {
    const provider = await discoverProvider(config.issuer);
    const endpoint = provider.metadata.tokenEndpoint;
    const answer = await requestGrant({
      server: provider.metadata,
      client: { clientId: config.clientId },
      grantType: TOKEN_EXCHANGE_GRANT,
      parameters: workloadExchangeForm(config, subject),
    });
    const refused = workloadRefusal(answer, {
      issuer: config.issuer,
      clientId: config.clientId,
    });
    if (refused) throw refused;
    const tokens = tokenAnswer(answer, endpoint);
    const json = answer.json as Record<string, unknown>;
    let claims: IdTokenClaims;
    let claimsFrom: ClaimsSource | "none";
    let idToken: string | undefined;
    if (typeof json.id_token === "string") {
      claims = await validate(json.id_token, { config, provider });
      claimsFrom = "id_token";
      idToken = json.id_token;
    } else {
      const named = workloadClaims({
        accessToken: tokens.accessToken,
        subjectToken: subject.token,
      });
      claimsFrom = named?.from ?? "none";
      claims = named?.claims ?? {
        iss: config.issuer,
        sub: "(not named: no token issued is a JWT)",
        aud: config.clientId,
        exp: 0,
      };
    }
    return this.#hold({
      config,
      provider,
      claims,
      idToken,
      tokens,
      workload: { claimsFrom },
    });
  }

  /**
   * Holds an ID token handed in (`sherlock login --id-token-file`: one the
   * provider issued to the `[login] client_id` through another SSO
   * client) as the login: the identity assertion that Enterprise-Managed
   * Authorization exchanges for ID-JAGs. No access token, no refresh: the
   * login ends when the ID token expires.
   */
  async loginWithIdToken(
    config: OidcConfig,
    idToken: string,
  ): Promise<OidcLoginStatus> {
    const claims = heldIdTokenClaims(idToken, {
      issuer: config.issuer,
      clientId: config.clientId,
      now: Date.now(),
    });
    const provider = await discoverProvider(config.issuer);
    return this.#hold({
      config,
      provider,
      claims,
      idToken,
      // No access token; the login lasts as long as the ID token.
      tokens: {
        accessToken: "",
        expiresIn: (claims.exp * 1000 - Date.now()) / 1000,
      },
      workload: { claimsFrom: "subject_token", held: true },
    });
  }

  /**
   * Starts a login: discovery, then a loopback listener and the
   * authorization URL, or (`device`) a device code.
   */
  async start(
    config: OidcConfig,
    options: {
      device?: boolean;
      /**
       * The `exchange` services' `resource` and `mode`: the login asks for
       * the resources of those that will use refresh-token grants, since a
       * refresh may only narrow to resources granted (RFC 8707 §2.2).
       */
      exchanges?: { resource?: string; mode?: "exchange" | "refresh" }[];
    } = {},
  ): Promise<StartedFlow> {
    const provider = await discoverProvider(config.issuer);
    const { metadata } = provider;
    const extra = new URLSearchParams(
      config.audience ? { audience: config.audience } : {},
    );
    const resources = new Set(
      (options.exchanges ?? []).filter((service) =>
        service.resource !== undefined &&
        exchangeMode(service, metadata) === "refresh"
      ).map((service) => service.resource!),
    );
    for (const resource of resources) extra.append("resource", resource);
    const request = {
      key: "login",
      server: { ...metadata, issuer: config.issuer },
      clientId: config.clientId,
      scopes: config.scopes,
      authorizationParameters: extra,
      messages: LOGIN_MESSAGES,
      context: { config, provider },
    };
    if (options.device) {
      if (!metadata.deviceAuthorizationEndpoint) {
        throw new BrokerRequestError({
          code: "oauth_unsupported",
          message:
            `the provider ${config.issuer} offers no device authorization (no device_authorization_endpoint); run "sherlock login" on a machine with a browser, or without --device`,
        });
      }
      return await this.#flows.startDevice({
        ...request,
        messages: { ...LOGIN_MESSAGES, retry: "sherlock login --device" },
        client: { clientId: config.clientId },
      });
    }
    if (!metadata.codeChallengeMethods.includes("S256")) {
      throw new BrokerRequestError({
        code: "oauth_unsupported",
        message:
          `the provider ${config.issuer} does not advertise PKCE S256; sherlock refuses to sign in without it`,
      });
    }
    return await this.#flows.startBrowser({ ...request, nonce: true });
  }

  /**
   * Waits for flow `flowId` to end (the redirect, or the device approval),
   * validates the ID token and holds the tokens. Returns the new status.
   * When `signal` aborts (the `sherlock login` that waits is gone), the
   * flow ends at once.
   */
  async finish(flowId: string, signal?: AbortSignal): Promise<OidcFinished> {
    const { answer, ignored, nonce, context } = await this.#flows.finish(
      flowId,
      { signal },
    );
    const { config, provider } = context;
    const tokens = tokenAnswer(answer, provider.metadata.tokenEndpoint);
    const idToken = (answer.json as Record<string, unknown>).id_token;
    if (typeof idToken !== "string") {
      throw failed(
        `the provider ${config.issuer} answered no ID token; [login] scopes must include "openid"`,
      );
    }
    const claims = await validate(idToken, { config, provider, nonce });
    const status = this.#hold({ config, provider, claims, idToken, tokens });
    return ignored > 0 ? { ...status, ignoredRequests: ignored } : status;
  }

  /**
   * A fresh access token of the login: the one held, else one refresh — a
   * single one for all callers. Throws `not_logged_in` without a login or
   * when the provider ended it.
   */
  async accessToken(): Promise<Token> {
    const held = await this.#fresh();
    if (held.workload?.held) {
      throw new BrokerRequestError({
        code: "invalid_config",
        message:
          `the login from an ID token (sherlock login --id-token-file) holds no access token; a service that needs one needs another login`,
      });
    }
    return { token: held.accessToken, expiresAt: held.accessExpiresAt };
  }

  /** The ID token of the login (for `subject = "id_token"` exchanges). */
  async idToken(): Promise<Token> {
    const held = await this.#fresh();
    if (held.idToken === undefined) {
      throw new BrokerRequestError({
        code: "invalid_config",
        message:
          `the login from a workload token holds no ID token (the provider issued none); a service with subject = "id_token" cannot use it`,
      });
    }
    return { token: held.idToken, expiresAt: held.claims.exp * 1000 };
  }

  /** What discovery found, when logged in (the exchange's endpoint). */
  provider(): OidcProvider | undefined {
    return this.#held?.provider;
  }

  /** The `[login]` the login was made with, when logged in. */
  config(): OidcConfig | undefined {
    return this.#held?.config;
  }

  #fresh(): Promise<Held> {
    const held = this.#held;
    if (!held) return Promise.reject(notLoggedIn());
    const entry = {
      token: held.accessToken,
      expiresAt: held.accessExpiresAt,
      fetchedAt: held.accessFetchedAt,
    };
    if (isFresh(entry, this.#clock.now())) {
      return Promise.resolve(held);
    }
    this.#refreshing ??= this.#serial(() => this.#refresh()).finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  /**
   * A refresh-token grant with more parameters (`resource`, `scope`,
   * `audience`): the fallback of `source = "exchange"` where the provider
   * offers no token exchange. It waits its turn with every other use of the
   * refresh token, and keeps a rotated one. The answer is the caller's to
   * read; `invalid_grant` ends the login.
   */
  refreshGrant(form: Record<string, string>): Promise<JsonAnswer> {
    return this.#serial(async () => {
      const held = this.#held;
      if (!held) throw notLoggedIn();
      if (!held.refreshToken) {
        throw held.workload ? expired(held) : notLoggedIn(
          `the login at ${held.config.issuer} holds no refresh token ("offline_access" in [login] scopes)`,
        );
      }
      const outcome = await refreshGrant(this.#grantStorage(), {
        parameters: form,
      });
      if (outcome.kind === "dead") {
        throw notLoggedIn(`the login at ${held.config.issuer} has expired`);
      }
      if (outcome.kind === "none") throw notLoggedIn();
      return outcome.answer;
    });
  }

  /**
   * The login's grant, in memory, for the one refresh (`refresher.ts`):
   * read at its turn; a rotation kept only while the login is the one
   * refreshed (a logout or a new login meanwhile wins).
   */
  #grantStorage(): GrantStorage {
    return {
      read: () => {
        const held = this.#held;
        return Promise.resolve(
          held?.refreshToken
            ? {
              refreshToken: held.refreshToken,
              server: {
                issuer: held.config.issuer,
                tokenEndpoint: held.provider.metadata.tokenEndpoint,
              },
              client: { clientId: held.config.clientId },
            }
            : undefined,
        );
      },
      keep: (spent, answer) => {
        const held = this.#held;
        if (!held || held.refreshToken !== spent) return Promise.resolve(false);
        this.#held = {
          ...held,
          refreshToken: rotatedRefreshToken(answer, spent),
        };
        return Promise.resolve(true);
      },
      markDead: (spent) => {
        const held = this.#held;
        if (!held || held.refreshToken !== spent) return Promise.resolve(false);
        this.#held = undefined;
        return Promise.resolve(true);
      },
    };
  }

  /** Runs `task` after every earlier use of the refresh token. */
  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => {});
    return run;
  }

  async #refresh(): Promise<Held> {
    // Read at its turn: a fallback grant before it may have rotated it.
    const held = this.#held;
    if (!held) throw notLoggedIn();
    const { config, provider } = held;
    if (!held.refreshToken) {
      this.#forget(held);
      throw expired(held);
    }
    const outcome = await refreshGrant(this.#grantStorage());
    if (outcome.kind === "dead") throw expired(held);
    if (outcome.kind === "none") throw notLoggedIn();
    const { answer } = outcome;
    const tokens = tokenAnswer(answer, provider.metadata.tokenEndpoint);
    const json = answer.json as Record<string, unknown> | undefined;
    // The rotated refresh token is held already (`keep`): reusing a spent
    // one revokes the grant at many providers.
    const rotated = this.#held;
    if (!rotated) throw notLoggedIn();
    let { claims, idToken } = held;
    if (typeof json?.id_token === "string") {
      const renewed = await validate(json.id_token, { config, provider });
      // A workload login's first claims may be the CI platform's.
      const named = !held.workload || held.workload.claimsFrom === "id_token";
      if (named && renewed.sub !== held.claims.sub) {
        this.#forget(rotated);
        throw failed(
          `the provider ${config.issuer} renewed the login for another subject; run "sherlock login" again`,
        );
      }
      claims = renewed;
      idToken = json.id_token;
    }
    // A logout meanwhile: what came back is not kept.
    if (this.#held !== rotated) throw notLoggedIn();
    const next: Held = {
      ...rotated,
      claims,
      idToken,
      accessToken: tokens.accessToken,
      accessExpiresAt: expiry(tokens.expiresIn, this.#clock.now()),
      accessFetchedAt: this.#clock.now(),
      ...(held.workload && idToken !== held.idToken
        ? { workload: { claimsFrom: "id_token" as const } }
        : {}),
    };
    this.#held = next;
    return next;
  }

  /** Holds a new login's tokens (replacing any); its status. */
  #hold(
    login:
      & Pick<Held, "config" | "provider" | "claims" | "idToken" | "workload">
      & {
        tokens: ReturnType<typeof tokenAnswer>;
      },
  ): OidcLoginStatus {
    const { tokens, ...rest } = login;
    this.#refreshing = undefined;
    this.#held = {
      ...rest,
      accessToken: tokens.accessToken,
      accessExpiresAt: expiry(tokens.expiresIn, this.#clock.now()),
      accessFetchedAt: this.#clock.now(),
      refreshToken: tokens.refreshToken,
      since: new Date(),
    };
    return this.status()!;
  }

  #forget(held: Held): void {
    if (this.#held === held) this.#held = undefined;
  }

  /**
   * Revokes the refresh token at the provider (RFC 7009, when it offers a
   * revocation endpoint) and forgets the login.
   */
  async logout(): Promise<{ wasLoggedIn: boolean; revokedAtServer: boolean }> {
    const held = this.#held;
    this.clear();
    if (!held) return { wasLoggedIn: false, revokedAtServer: false };
    const revokedAtServer = await revokeToken({
      server: {
        issuer: held.config.issuer,
        revocationEndpoint: held.provider.metadata.revocationEndpoint,
      },
      client: { clientId: held.config.clientId },
      token: held.refreshToken ?? held.accessToken,
      hint: held.refreshToken ? "refresh_token" : "access_token",
    });
    return { wasLoggedIn: true, revokedAtServer };
  }

  /** Forgets the login and its tokens (idle lock, broker stop). */
  clear(): void {
    this.#held = undefined;
    this.#refreshing = undefined;
  }

  /** Ends every login under way (the daemon stops). */
  close(): void {
    this.#flows.close();
  }
}

/** The lines of `sherlock login`'s flow. */
const LOGIN_MESSAGES: FlowMessages = {
  unfinished: `the login ended unfinished; run "sherlock login" again`,
  received: "sherlock received the login; you can close this window.",
  timedOut: `no login arrived within ${
    AUTHORIZATION_TIMEOUT_MS / 1000
  } s; run "sherlock login" again`,
  replaced: `a newer "sherlock login" replaced this one`,
  interrupted: `the login was interrupted; run "sherlock login" again`,
  retry: "sherlock login",
};

/** The ID token's claims, its signature checked with the provider's JWKS. */
async function validate(
  idToken: string,
  options: { config: OidcConfig; provider: OidcProvider; nonce?: string },
): Promise<IdTokenClaims> {
  const { config, provider } = options;
  const answer = await requestJson(provider.jwksUri);
  const keys = (answer.json as { keys?: unknown } | undefined)?.keys;
  if (answer.status !== 200 || !Array.isArray(keys)) {
    throw failed(
      `the provider's JWKS at ${
        origin(provider.jwksUri)
      } answered HTTP ${answer.status} without keys`,
    );
  }
  try {
    return await verifyIdToken(idToken, keys as Jwk[], {
      issuer: config.issuer,
      clientId: config.clientId,
      nonce: options.nonce,
    });
  } catch (error) {
    if (error instanceof IdTokenError) {
      throw failed(
        `the ID token from ${config.issuer} was refused: ${error.message}`,
      );
    }
    throw error;
  }
}

function expiry(expiresIn: number | undefined, now: number): number {
  return now + (expiresIn ?? ASSUMED_LIFETIME_S) * 1000;
}

/** `not_logged_in`: the client adds `run "sherlock login"`. */
function notLoggedIn(
  message = "not logged in at the OpenID provider",
): BrokerRequestError {
  return new BrokerRequestError({ code: "not_logged_in", message });
}

/**
 * `not_logged_in` for a login that ended; a workload login's names its own
 * command, since `sherlock login` alone would open a browser on a runner.
 */
function expired(held: Held): BrokerRequestError {
  if (held.workload?.held) {
    return notLoggedIn(
      `the login at ${held.config.issuer} from an ID token has expired; run "sherlock login --id-token-file PATH" (or --id-token-env VAR) with a fresh one`,
    );
  }
  return held.workload
    ? notLoggedIn(
      `the login at ${held.config.issuer} from a workload token has expired; run "sherlock login --subject-token-file PATH" (or --subject-token-env VAR) with a fresh one`,
    )
    : notLoggedIn(`the login at ${held.config.issuer} has expired`);
}
