/**
 * Kilo Code CLI through sherlock's built-in `kilo` profile
 * (`KILO_CONFIG=<file>`, `{"mcp": …}`), with the token inline and
 * through the shim. `kilo mcp list` connects every server and exits by
 * itself.
 *
 * @module
 */

import assert from "node:assert/strict";
import { PARENT_CANARY, runSherlockCase } from "./sherlock_case.ts";
import { kilo } from "./recipes.ts";

Deno.test("kilo via sherlock: inline token from the secret store", async () => {
  const { start } = await runSherlockCase(kilo, {
    delivery: "inline",
    source: "secret",
  });
  const names = start.env_names as string[];
  assert.ok(names.includes(PARENT_CANARY), "parent env did not reach server");
});

Deno.test("kilo via sherlock: token shim ([render] tokens), credential helper", async () => {
  await runSherlockCase(kilo, {
    delivery: "shim",
    source: "command",
  });
});
