/** config.toml's schema and its problems (lib/config/settings_schema.ts). */

import assert from "node:assert/strict";
import { parse } from "smol-toml";
import { formatProblem } from "../../lib/config/toml_files.ts";
import { validateSettings } from "../../lib/config/settings_schema.ts";

function validate(text: string) {
  return validateSettings(parse(text), text);
}

Deno.test("settings: idle_timeout up to 7 days", () => {
  const result = validate("[broker]\nidle_timeout = 604800\n");
  assert.ok(result.ok);
  assert.equal(result.value.broker.idle_timeout, 604800);
});

Deno.test("settings problems: an idle_timeout too large for a timer", () => {
  const result = validate("[broker]\nidle_timeout = 2200000\n");
  assert.ok(!result.ok, "the settings should be invalid");
  assert.equal(
    formatProblem({ path: "config.toml", ...result.problem }),
    "config.toml:2: broker.idle_timeout: must be at most 604800 seconds (7 days)",
  );
});
