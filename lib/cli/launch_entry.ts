/**
 * The launch path in one file: what `deno task bundle` turns into
 * `lib/cli/launch_bundle.js`, which `main.ts` imports for `sherlock run` and
 * its aliases. Deno pays per module it loads from source (resolution, its
 * caches, one compilation each); the ~55 modules of a launch cost as much
 * CPU again as the rest of `sherlock run`, and one bundled file cuts the
 * launch by about a fifth (docs/BENCHMARKS.md, the fourth round).
 *
 * The modules the launch imports lazily come in the bundle too, registered
 * under their paths so that `importLazily` returns these copies: loaded
 * from source beside the bundle they would be second copies with classes
 * of their own. What stays lazy and outside (zod's schemas on a cold
 * validation cache, the help texts) returns values, never sherlock's errors.
 *
 * @module
 */

import * as run from "./run.ts";
import * as brokerClient from "../broker/client.ts";
import * as tomlParser from "../config/toml_parser.ts";
import * as suggestion from "../config/suggestion.ts";
import * as profileLoader from "../profiles/loader.ts";
import { registerBundledModule } from "../runtime/lazy_import.ts";

export { main } from "./main.ts";

/** The lazily imported modules the bundle holds, by path from the root. */
export const BUNDLED_LAZY_MODULES: Readonly<Record<string, unknown>> = {
  "lib/cli/run.ts": run,
  "lib/broker/client.ts": brokerClient,
  "lib/config/toml_parser.ts": tomlParser,
  "lib/config/suggestion.ts": suggestion,
  "lib/profiles/loader.ts": profileLoader,
};

for (const [path, module] of Object.entries(BUNDLED_LAZY_MODULES)) {
  registerBundledModule(path, module);
}
