/**
 * `[token] source = "command"`: the service's credential helper prints the
 * token (`credential_helper.ts` runs it); `ttl` gives a lifetime to a token
 * printed without one, so that it can be cached.
 *
 * @module
 */

import type { Service } from "../../../services/loader.ts";
import { BrokerRequestError } from "../request_error.ts";
import type { Token } from "../token_cache.ts";
import { systemClock } from "../clock.ts";
import { HelperError, runCredentialHelper } from "./credential_helper.ts";
import type { SourceContext, TokenSource } from "./token_source.ts";

/** A token from the service's credential helper. */
export const commandSource: TokenSource = { fetchToken: helperToken };

async function helperToken(
  service: Service,
  context: SourceContext,
): Promise<Token> {
  const { token } = service;
  let fetched: Token;
  try {
    fetched = await runCredentialHelper({
      service: service.service.name,
      command: token.command ?? [],
      timeoutSeconds: token.timeout,
      cwd: context.helperCwd,
      now: (context.clock ?? systemClock).now,
    });
  } catch (error) {
    if (error instanceof HelperError) {
      throw new BrokerRequestError({
        code: "helper_failed",
        message: error.message,
      });
    }
    throw error;
  }
  if (fetched.expiresAt === undefined && token.ttl !== undefined) {
    const now = (context.clock ?? systemClock).now();
    return { token: fetched.token, expiresAt: now + token.ttl * 1000 };
  }
  return fetched;
}
