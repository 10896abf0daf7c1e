/**
 * What every command needs from the process: its environment, the user id,
 * and sherlock's locations computed from them.
 *
 * @module
 */

import {
  currentUid,
  type Env,
  type SherlockPaths,
  sherlockPaths,
} from "../config/sherlock_paths.ts";

/** The process's view of the world, read once per command. */
export interface CommandContext {
  /** The operator's environment. */
  env: Env;
  /** The operator's user id. */
  uid: number;
  /** sherlock's locations. */
  paths: SherlockPaths;
}

/** Reads the environment and computes the locations. */
export function commandContext(): CommandContext {
  const env = Deno.env.toObject();
  const uid = currentUid();
  return { env, uid, paths: sherlockPaths(env) };
}
