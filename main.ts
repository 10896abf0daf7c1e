/**
 * sherlock: launches AI coding-agent CLIs with a per-session MCP config
 * whose credentials come from a local broker. See README.md.
 *
 * A launch (`sherlock run`, an alias) loads the launch path as one bundled
 * file, `lib/cli/launch_bundle.js`; every other command loads its modules
 * from source (`lib/cli/launch_route.ts` decides, docs/architecture.md).
 *
 * @module
 */

import {
  LAUNCH_BUNDLE,
  launchesSession,
  SOURCE_ENTRY,
} from "./lib/cli/launch_route.ts";

if (import.meta.main) {
  // Built at run time: Deno would load both entries at start-up if either
  // were a literal (lib/runtime/lazy_import.ts). scripts/build.ts compiles
  // both in.
  const entry = launchesSession(Deno.args) ? LAUNCH_BUNDLE : SOURCE_ENTRY;
  const { main } = await import(
    new URL(entry, import.meta.url).href
  ) as typeof import("./lib/cli/main.ts");
  Deno.exit(await main(Deno.args));
}
