/**
 * How to run sherlock again as a child (the broker daemon, the token shim):
 * the compiled binary's own path, or, when running from source, the Deno
 * executable with this program's main module and permission flags. So it
 * works without sherlock on PATH.
 *
 * @module
 */

import { fromFileUrl } from "./runtime/path.ts";
import { SOURCE_ROOT } from "./runtime/lazy_import.ts";

/** The argv prefix that starts this sherlock; append a command and its args. */
export function selfCommand(): string[] {
  if (Deno.build.standalone) return [Deno.execPath()];
  // From the root, not from this module: bundled, this module's URL is the
  // launch bundle's (lib/runtime/lazy_import.ts).
  const main = fromFileUrl(new URL("main.ts", SOURCE_ROOT));
  // --allow-all: sherlock starts arbitrary agents and helpers, so any
  // narrower set would be a promise it could not keep.
  return [Deno.execPath(), "run", "--allow-all", "--quiet", main];
}
