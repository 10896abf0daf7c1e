/**
 * The tokens of one session: which services need one, how each is
 * delivered (inline in the rendered config, or through the token shim),
 * and fetching the inline ones from the broker.
 *
 * @module
 */

import { ConfigError, NoPermissionError } from "../errors.ts";
import { importLazily } from "../runtime/lazy_import.ts";
import type { TokenDelivery } from "../render/servers.ts";
import { tokenDelivery } from "../render/servers.ts";
import { needsToken, type Service } from "../services/loader.ts";

/** How each service of a session gets its token. */
export interface TokenPlan {
  /** The services that need a token, by name. */
  needing: string[];
  /** Those whose token is written into the rendered config. */
  inline: string[];
  /** The delivery of any service. */
  delivery: (service: Service) => TokenDelivery;
}

/**
 * Decides each service's delivery. `forceShimBecause` names why the
 * profile's format cannot hold a token (it ends up in argv, or in a file
 * the operator owns); a remote service with a token cannot use the shim
 * (the agent connects to it directly), so it is refused with one line.
 */
export function planTokens(
  options: {
    services: readonly Service[];
    configured: TokenDelivery;
    forceShimBecause?: string;
    agent: string;
  },
): TokenPlan {
  const forceShim = options.forceShimBecause !== undefined;
  const delivery = (service: Service) =>
    tokenDelivery({ service, configured: options.configured, forceShim });
  const needing = options.services.filter(needsToken);
  for (const service of needing) {
    if (forceShim && !("command" in service.server)) {
      throw new ConfigError(
        `service ${service.service.name} is a remote server with a token, and agent ${options.agent} ` +
          `would ${options.forceShimBecause}; use a stdio server for it, or another agent`,
      );
    }
  }
  return {
    needing: needing.map((service) => service.service.name),
    inline: needing.filter((service) => delivery(service) === "inline")
      .map((service) => service.service.name),
    delivery,
  };
}

/**
 * Makes sure the broker is up and the operator logged in (not logged in →
 * exit 77 with what to do), then fetches the inline tokens, all at once —
 * one round trip when the broker is already running. Does nothing when no
 * service needs a token.
 */
export async function fetchSessionTokens(
  options: { plan: TokenPlan; socket: string; session: string; agent: string },
): Promise<Map<string, string>> {
  const { needing, inline } = options.plan;
  if (needing.length === 0) return new Map();
  // Only sessions with tokens load the broker client.
  const { fetchTokens, NotLoggedInError } = await importLazily<
    typeof import("../broker/client.ts")
  >(new URL("../broker/client.ts", import.meta.url));
  try {
    // With no inline service, this only checks the login (for the shims).
    return await fetchTokens({
      socket: options.socket,
      services: inline,
      session: options.session,
      agent: options.agent,
    });
  } catch (error) {
    if (!(error instanceof NotLoggedInError)) throw error;
    throw new NoPermissionError(
      `not logged in to the broker (${
        needing.length === 1
          ? `service ${needing[0]} needs a token`
          : `services ${needing.join(", ")} need tokens`
      }); run "sherlock login"`,
    );
  }
}
