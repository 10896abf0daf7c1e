/**
 * `[token] source = "oauth"`: an access token of the grant `sherlock auth
 * <service>` made, refreshed by the daemon's OAuth client
 * (`../oauth/client.ts`). Without a live grant, where the service's server
 * offers Enterprise-Managed Authorization, one from the SSO login
 * (`../oauth/ema.ts`); else `needs_authorization`.
 *
 * @module
 */

import type { Service } from "../../../services/loader.ts";
import { readGrant } from "../oauth/grants.ts";
import type { Token } from "../token_cache.ts";
import {
  requireStore,
  type SourceContext,
  type TokenSource,
} from "./token_source.ts";

/** The service's access token, from memory, one refresh, or EMA. */
export const oauthSource: TokenSource = { fetchToken: oauthToken };

async function oauthToken(
  service: Service,
  context: SourceContext,
): Promise<Token> {
  const oauth = context.oauth;
  if (oauth === undefined) throw new Error("the daemon gave no OAuth client");
  const store = context.store;
  // No person: the broker logs in as the client, with no grant to keep.
  if (service.token.grant === "client_credentials") {
    return await oauth.clientCredentialsToken(
      service,
      requireStore(service, context),
    );
  }
  const grant = store && readGrant(store, service.service.name);
  // A grant the operator made with `sherlock auth` wins over EMA.
  if (grant && !grant.needsAuthorization) {
    return await oauth.token(service, store);
  }
  // Discovery only with an SSO login (EMA needs one; others keep their
  // old answer without a request to the server), or what an earlier one
  // found: then the answer is "sherlock login". A server that cannot be
  // discovered offers no EMA: "sherlock auth", as before.
  const discovered = await context.ema?.offered(service, {
    discover: context.oidc?.loggedIn === true,
  }).catch(() => undefined);
  if (discovered && context.ema) {
    return await context.ema.token(service, discovered, {
      oidc: context.oidc,
      oauth,
      store,
      now: context.clock?.now,
    });
  }
  return await oauth.token(service, requireStore(service, context));
}
