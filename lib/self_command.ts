/**
 * How to run sherlock again as a child (the broker daemon, the token shim):
 * the compiled binary's own path, or, when running from source, the Deno
 * executable with this program's main module and permission flags. So it
 * works without sherlock on PATH.
 *
 * @module
 */

import { fromFileUrl, join } from "./runtime/path.ts";

/** The argv prefix that starts this sherlock; append a command and its args. */
export function selfCommand(): string[] {
  if (Deno.build.standalone) return [Deno.execPath()];
  // This module's folder as a path already (a file: module's): no URL to
  // build and decode on the launch path, which every session plans with.
  const main = import.meta.dirname === undefined
    ? fromFileUrl(new URL("../main.ts", import.meta.url))
    : join(import.meta.dirname, "..", "main.ts");
  // --allow-all: sherlock starts arbitrary agents and helpers, so any
  // narrower set would be a promise it could not keep.
  return [Deno.execPath(), "run", "--allow-all", "--quiet", main];
}
