/**
 * The optional CLIs (not sherlock built-ins): Amp, opencode and Qwen Code,
 * each driven directly with a hand-written config. Run with
 * `SHERLOCK_E2E_OPTIONAL=1`; otherwise ignored, and not installed.
 *
 * @module
 */

import { runHandshakeCase } from "./handshake_case.ts";
import { optionalClisWanted } from "./install_clis.ts";
import { OPTIONAL_RECIPES } from "./recipes.ts";

for (const recipe of Object.values(OPTIONAL_RECIPES)) {
  Deno.test({
    name:
      `${recipe.key} (optional): starts the stdio server with the entry's token`,
    ignore: !optionalClisWanted(),
    fn: async () => {
      await runHandshakeCase(recipe);
    },
  });
}
