/**
 * What every command needs from the process, handed to it rather than read
 * from globals: its environment, sherlock's locations computed from it, and
 * the streams it prints to. A test builds one with buffers for streams and
 * runs the command in-process.
 *
 * @module
 */

import {
  type Env,
  type SherlockPaths,
  sherlockPaths,
} from "../config/sherlock_paths.ts";
import type { Writer } from "./output.ts";

/** The process's view of the world, read once per command. */
export interface CommandContext {
  /** The operator's environment. */
  env: Env;
  /** sherlock's locations. */
  paths: SherlockPaths;
  /** Where the command's output goes. */
  stdout: Writer;
  /** Where its warnings and errors go. */
  stderr: Writer;
}

/**
 * The process's context: its environment, the locations computed from it
 * and its own stdout and stderr; `env` given, that environment instead.
 */
export function commandContext(
  options: { env?: Env; stdout?: Writer; stderr?: Writer } = {},
): CommandContext {
  const env = options.env ?? Deno.env.toObject();
  return {
    env,
    paths: sherlockPaths(env),
    stdout: options.stdout ?? Deno.stdout,
    stderr: options.stderr ?? Deno.stderr,
  };
}
