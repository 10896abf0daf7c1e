/**
 * `[token] source = "oauth"`: an access token of the grant `sherlock auth
 * <service>` made, refreshed by the daemon's OAuth client
 * (`../oauth/client.ts`). Without a live grant: `needs_authorization`.
 *
 * @module
 */

import type { Service } from "../../../services/loader.ts";
import type { Token } from "../token_cache.ts";
import {
  requireStore,
  type SourceContext,
  type TokenSource,
} from "./token_source.ts";

/** The service's access token, from memory or one refresh. */
export const oauthSource: TokenSource = { fetchToken: oauthToken };

function oauthToken(service: Service, context: SourceContext): Promise<Token> {
  if (context.oauth === undefined) {
    return Promise.reject(new Error("the daemon gave no OAuth client"));
  }
  try {
    return context.oauth.token(service, requireStore(service, context));
  } catch (error) {
    return Promise.reject(error);
  }
}
