/**
 * opencode through sherlock's built-in `opencode` profile
 * (`OPENCODE_CONFIG=<file>`, `{"mcp": …}`), with the token inline and
 * through the shim. `opencode mcp list` connects every server and exits by
 * itself.
 *
 * @module
 */

import assert from "node:assert/strict";
import { PARENT_CANARY, runSherlockCase } from "./sherlock_case.ts";
import { opencode } from "./recipes.ts";

Deno.test("opencode via sherlock: inline token from the secret store", async () => {
  const { start } = await runSherlockCase(opencode, {
    delivery: "inline",
    source: "secret",
  });
  const names = start.env_names as string[];
  assert.ok(names.includes(PARENT_CANARY), "parent env did not reach server");
});

Deno.test("opencode via sherlock: token shim ([render] tokens), credential helper", async () => {
  await runSherlockCase(opencode, {
    delivery: "shim",
    source: "command",
  });
});
