/**
 * Serving `POST /v1/token`: to a registered session only (`sessions.ts`),
 * for one of its services only; read the service's file (fresh, so an edit
 * takes effect at once), get its token through the cache from its source
 * (`sources/registry.ts`), and write the audit log with the session and
 * agent as registered.
 *
 * @module
 */

import { InvalidFileError } from "../../config/toml_files.ts";
import type { SherlockPaths } from "../../config/sherlock_paths.ts";
import { sha256Hex } from "../../private_files.ts";
import {
  loadService,
  loadServices,
  type Service,
} from "../../services/loader.ts";
import type { ValidationCache } from "../../config/validation_cache.ts";
import type { TokenResponse } from "../protocol.ts";
import { appendAudit } from "./audit_log.ts";
import { type Clock, systemClock } from "./clock.ts";
import type { LoginState } from "./login_state.ts";
import { BrokerRequestError } from "./request_error.ts";
import { OAuthClient } from "./oauth/client.ts";
import { EnterpriseAuthorization } from "./oauth/ema.ts";
import { tokenSource } from "./sources/registry.ts";
import { type Token, TokenCache } from "./token_cache.ts";
import { TokenHandoffs } from "./token_handoff.ts";
import { type RegisteredSession, SessionTable } from "./sessions.ts";

// handler.ts imports the error from here; it lives in request_error.ts.
export { BrokerRequestError } from "./request_error.ts";

/** What the token broker works with. */
export interface TokenBrokerOptions {
  /** sherlock's locations (services.d, the audit log). */
  paths: SherlockPaths;
  /** The daemon's login. */
  login: LoginState;
  /** The clock of every expiry (the system's when unset). */
  clock?: Clock;
  /** The daemon's validation cache for service files. */
  validationCache: ValidationCache;
  /** The folder helpers run in. */
  helperCwd?: string;
}

/** Serves tokens for one daemon. */
export class TokenBroker {
  #options: TokenBrokerOptions;
  #cache: TokenCache;
  #handoffs = new TokenHandoffs();
  /** The live sessions, the only ones served. */
  readonly sessions: SessionTable = new SessionTable({
    onForget: (key) => this.#handoffs.forget(key),
  });

  /** The OAuth client: `sherlock auth`'s flows, grants, access tokens. */
  readonly oauth: OAuthClient;

  /** Enterprise-Managed Authorization: what discovery found per service. */
  readonly ema: EnterpriseAuthorization = new EnterpriseAuthorization();

  /** Creates the broker with an empty cache. */
  constructor(options: TokenBrokerOptions) {
    this.#options = options;
    const clock = options.clock ?? systemClock;
    this.#cache = new TokenCache({ now: clock.now });
    this.oauth = new OAuthClient({ clock });
    // A new or revoked grant: no token of the old one is served again.
    this.oauth.onGrantChange = (service) => this.#cache.forget(`${service}\0`);
  }

  /** How many tokens are cached. */
  get cachedCount(): number {
    return this.#cache.size;
  }

  /** Drops every cached token and every token kept for a shim (logout, idle lock). */
  clear(): void {
    this.#cache.clear();
    this.#handoffs.clear();
    this.oauth.clear();
  }

  /**
   * Serves one token request of a registered session (resolve its
   * capability with {@linkcode TokenBroker.sessions} first). Throws
   * {@linkcode BrokerRequestError}: `service_not_in_session` for a service
   * the session did not register. With `deferIfContains`, a token that
   * holds one of those strings is kept for the session's shim instead (see
   * `token_handoff.ts`): answered as deferred, and audited when the shim
   * takes it. With `refused` (a token's SHA-256 a server refused), that
   * token is dropped if still held and one is fetched anew (once for
   * concurrent requests); an OAuth grant whose only credential it was
   * needs `sherlock auth`.
   */
  async token(
    request: {
      service: string;
      session: RegisteredSession;
      deferIfContains?: readonly string[];
      /** The hex SHA-256 of a token the server refused: not served again. */
      refused?: string;
      /** `service` is one of the session's credentials (`[credentials]`). */
      credential?: boolean;
    },
  ): Promise<TokenResponse | { deferred: true }> {
    const { session, agent } = request.session;
    const credential = request.credential === true;
    const allowed = credential
      ? request.session.credentials
      : request.session.services;
    if (!allowed.has(request.service)) {
      const code = credential
        ? "credential_not_in_session"
        : "service_not_in_session";
      appendAudit(this.#options.paths.stateDir, {
        event: "token_failed",
        agent,
        session,
        service: request.service,
        ...(credential ? { credentials: true as const } : {}),
        reason: code,
      });
      throw new BrokerRequestError({
        code,
        message: credential
          ? `${request.service} is not one of session ${session}'s credentials (the profile's [credentials])`
          : `service ${request.service} is not one of session ${session}'s services`,
      });
    }
    if (!this.#options.login.loggedIn) throw notLoggedIn();
    // A credential names a service when one has that name, else a secret.
    const service = credential
      ? await this.#credentialService(request.service)
      : await this.#service(request.service);
    const { token } = service;
    if (token.source === "none") {
      throw new BrokerRequestError({
        code: "bad_request",
        message: `service ${request.service} needs no token (source = "none")`,
      });
    }
    // A changed [token] table must not reuse a token fetched the old way.
    const key = `${request.service}\0${sha256Hex(JSON.stringify(token))}`;
    const handoff = {
      session: request.session.key,
      service: request.service,
      tokenKey: key,
    };
    if (request.refused !== undefined) {
      const refused = request.refused;
      const matches = (value: string) => sha256Hex(value) === refused;
      this.#cache.forgetIf(key, matches);
      await this.oauth.forgetIf(
        request.service,
        matches,
        this.#options.login.store,
      );
    }
    try {
      const served = this.#handoffs.take(handoff) ??
        await this.#cache.get(key, () => this.#fetch(service));
      // A logout or idle lock while the helper ran: no token for anyone.
      if (!this.#options.login.loggedIn) throw notLoggedIn();
      this.#options.login.touch();
      if (
        request.deferIfContains?.some((part) => served.token.includes(part))
      ) {
        this.#handoffs.hold(handoff, served);
        return { deferred: true };
      }
      const expiresAt = served.expiresAt === undefined
        ? null
        : new Date(served.expiresAt).toISOString();
      appendAudit(this.#options.paths.stateDir, {
        event: "token",
        agent,
        session,
        service: request.service,
        source: token.source,
        expiresAt,
        cached: served.cached,
        ...(credential ? { credentials: true as const } : {}),
      });
      return { token: served.token, expiresAt };
    } catch (error) {
      appendAudit(this.#options.paths.stateDir, {
        event: "token_failed",
        agent,
        session,
        service: request.service,
        source: token.source,
        reason: error instanceof BrokerRequestError
          ? error.code
          : "helper_failed",
      });
      throw error;
    }
  }

  /**
   * Records a bridge's 403 `insufficient_scope` for one of its session's
   * services on the service's grant (see `OAuthClient`). Throws
   * `service_not_in_session` for another service, `not_logged_in` while
   * the store is locked.
   */
  async recordScopeChallenge(
    request: { service: string; session: RegisteredSession; scopes: string[] },
  ): Promise<{ recorded: boolean; scopesNeeded: string[] }> {
    const { session, agent } = request.session;
    if (!request.session.services.has(request.service)) {
      appendAudit(this.#options.paths.stateDir, {
        event: "oauth_scope_failed",
        agent,
        session,
        service: request.service,
        reason: "service_not_in_session",
      });
      throw new BrokerRequestError({
        code: "service_not_in_session",
        message:
          `service ${request.service} is not one of session ${session}'s services`,
      });
    }
    const store = this.#options.login.store;
    if (store === undefined) throw notLoggedIn();
    const answer = await this.oauth.recordScopeChallenge(
      request.service,
      request.scopes,
      store,
    );
    appendAudit(this.#options.paths.stateDir, {
      event: "oauth_scope_challenge",
      agent,
      session,
      service: request.service,
      scopes: request.scopes,
    });
    return answer;
  }

  /** The names of the services with `[token] source = "oauth"`, sorted. */
  async oauthServices(): Promise<{ services: string[] }> {
    const { services } = await loadServices({
      paths: this.#options.paths,
      cache: this.#options.validationCache,
    });
    return {
      services: services.filter((service) => service.token.source === "oauth")
        .map((service) => service.service.name),
    };
  }

  /** The valid services whose `[token] source` is `source`, freshly read. */
  async servicesWithSource(source: string): Promise<Service[]> {
    const { services } = await loadServices({
      paths: this.#options.paths,
      cache: this.#options.validationCache,
    });
    return services.filter((service) => service.token.source === source);
  }

  /** The service `name`, freshly read; `unknown_service` when there is none. */
  service(name: string): Promise<Service> {
    return this.#service(name);
  }

  async #service(name: string): Promise<Service> {
    let service: Service | undefined;
    try {
      service = await loadService(name, {
        paths: this.#options.paths,
        cache: this.#options.validationCache,
      });
    } catch (error) {
      if (error instanceof InvalidFileError) {
        throw new BrokerRequestError({
          code: "invalid_service",
          message: error.message,
        });
      }
      throw error;
    }
    if (service === undefined) {
      throw new BrokerRequestError({
        code: "unknown_service",
        message:
          `no service named ${name} in ${this.#options.paths.servicesDir}`,
      });
    }
    return service;
  }

  /**
   * The service a credential names: the service of that name, else a
   * stand-in whose token is the stored secret of that name (source
   * `secret` reads the secret named after the service).
   */
  async #credentialService(name: string): Promise<Service> {
    const service = await loadService(name, {
      paths: this.#options.paths,
      cache: this.#options.validationCache,
    }).catch((error) => {
      if (!(error instanceof InvalidFileError)) throw error;
      throw new BrokerRequestError({
        code: "invalid_service",
        message: error.message,
      });
    });
    return service ?? secretCredential(name);
  }

  #fetch(service: Service): Promise<Token> {
    const { source } = service.token;
    // token() refused "none" already; the store may have locked meanwhile.
    if (source === "none") throw new Error("source none has no token");
    if (!this.#options.login.loggedIn) throw notLoggedIn();
    return tokenSource(source).fetchToken(service, {
      store: this.#options.login.store,
      helperCwd: this.#options.helperCwd,
      oauth: this.oauth,
      oidc: this.#options.login.oidc,
      ema: this.ema,
      clock: this.#options.clock,
    });
  }
}

/**
 * A service-less credential: the stored secret of its name. Only its name
 * and `[token] source` are read (by the cache key and the secret source),
 * so it is not a whole service file's worth of fields.
 */
function secretCredential(name: string): Service {
  return {
    service: { name },
    token: { source: "secret" },
  } as unknown as Service;
}

function notLoggedIn(): BrokerRequestError {
  return new BrokerRequestError({
    code: "not_logged_in",
    message: "not logged in: the broker's store is locked",
  });
}
