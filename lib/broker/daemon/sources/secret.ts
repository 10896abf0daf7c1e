/**
 * `[token] source = "secret"`: the value `sherlock secret set <service>`
 * stored in the unlocked secret store.
 *
 * @module
 */

import type { Service } from "../../../services/loader.ts";
import { BrokerRequestError } from "../request_error.ts";
import type { Token } from "../token_cache.ts";
import {
  requireStore,
  type SourceContext,
  type TokenSource,
} from "./token_source.ts";

/** The stored secret of the service; it never expires, so is not cached. */
export const secretSource: TokenSource = { fetchToken: storedSecret };

function storedSecret(
  service: Service,
  context: SourceContext,
): Promise<Token> {
  const name = service.service.name;
  let value: string | undefined;
  try {
    value = requireStore(service, context).get(name);
  } catch (error) {
    return Promise.reject(error);
  }
  if (value === undefined) {
    return Promise.reject(
      new BrokerRequestError({
        code: "no_secret",
        message:
          `no secret stored for service ${name}; run "sherlock secret set ${name}"`,
      }),
    );
  }
  return Promise.resolve({ token: value });
}
