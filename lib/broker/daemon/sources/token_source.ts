/**
 * What a token source is: how the broker gets a fresh token for a service
 * whose `[token] source` names it. The broker keeps the cache, the
 * single-flight, the login checks and the audit log above every source.
 *
 * @module
 */

import type { Service } from "../../../services/loader.ts";
import type { Clock } from "../clock.ts";
import type { OAuthClient } from "../oauth/client.ts";
import type { EnterpriseAuthorization } from "../oauth/ema.ts";
import type { OidcLogin } from "../oauth/oidc_login.ts";
import { BrokerRequestError } from "../request_error.ts";
import type { SecretStore } from "../secret_store.ts";
import type { Token } from "../token_cache.ts";

/** One way of getting a token; registered by name in `registry.ts`. */
export interface TokenSource {
  /**
   * Gets a new token for `service`: the broker calls this only when its
   * cache has none, once for all the requests waiting for it. A token
   * without `expiresAt` is served but not cached. Throws
   * {@linkcode BrokerRequestError} with a message that holds no secret.
   */
  fetchToken(service: Service, context: SourceContext): Promise<Token>;
}

/**
 * What a source may use besides the service. Sources to come add what they
 * need here (the login's identity for a token exchange, a forced refresh for
 * OAuth) rather than reaching into the daemon.
 */
export interface SourceContext {
  /**
   * The unlocked secret store, or undefined when only the OIDC login is
   * held (see {@linkcode requireStore}). The broker checked the login
   * before the call, and checks it again before serving the token. A
   * source keeps what must outlive the daemon (an OAuth grant) here.
   */
  store?: SecretStore;
  /** The folder credential helpers run in; the daemon's own when unset. */
  helperCwd?: string;
  /** The daemon's OAuth client (`source = "oauth"`): grants, refreshes. */
  oauth?: OAuthClient;
  /** The OIDC login (`source = "exchange"`): its tokens, its provider. */
  oidc?: OidcLogin;
  /** Enterprise-Managed Authorization for `oauth` services (`ema.ts`). */
  ema?: EnterpriseAuthorization;
  /** The daemon's clock, which expiries are computed on (the system's when unset). */
  clock?: Clock;
}

/**
 * The unlocked store, for a source that reads it; `not_logged_in` naming
 * `sherlock login --local` when only the OIDC login is held.
 */
export function requireStore(
  service: Service,
  context: SourceContext,
): SecretStore {
  if (context.store) return context.store;
  throw new BrokerRequestError({
    code: "not_logged_in",
    message:
      `service ${service.service.name} reads the local store, which is locked: run "sherlock login --local"`,
  });
}
