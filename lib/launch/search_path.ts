/**
 * The `PATH` an agent's executable is looked up on outside a session
 * (`sherlock agents`, `sherlock doctor`): the one its session would get.
 *
 * @module
 */

import type { ExpandContext } from "../config/expand.ts";
import { ConfigError } from "../errors.ts";
import type { LoadedProfile } from "../profiles/loader.ts";
import { buildEnv } from "./plan.ts";

/**
 * The PATH the agent is looked up on when it runs: the operator's, or the
 * profile's `[env] PATH` when it sets one. A profile whose `[env]` cannot
 * be expanded here is looked up on the operator's (running it says why).
 */
export function agentSearchPath(
  loaded: LoadedProfile,
  context: ExpandContext,
): string | undefined {
  try {
    return buildEnv({ loaded, configPath: undefined, context }).env.PATH;
  } catch (error) {
    if (error instanceof ConfigError) return context.env.PATH;
    throw error;
  }
}
