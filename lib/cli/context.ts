/**
 * What every command needs from the process: its environment and
 * sherlock's locations computed from it.
 *
 * @module
 */

import {
  type Env,
  type SherlockPaths,
  sherlockPaths,
} from "../config/sherlock_paths.ts";

/** The process's view of the world, read once per command. */
export interface CommandContext {
  /** The operator's environment. */
  env: Env;
  /** sherlock's locations. */
  paths: SherlockPaths;
}

/** Reads the environment and computes the locations. */
export function commandContext(): CommandContext {
  const env = Deno.env.toObject();
  return { env, paths: sherlockPaths(env) };
}
