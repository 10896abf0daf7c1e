/**
 * Continue CLI through sherlock's built-in `continue` profile
 * (`cn --mcp <file>`, a block of `mcpServers` added to the operator's
 * `~/.continue/config.yaml`, which must come back byte for byte), with the
 * token inline and through the shim. `cn -p` starts the servers, fails to
 * reach the model at a closed port and exits by itself.
 *
 * @module
 */

import assert from "node:assert/strict";
import { PARENT_CANARY, runSherlockCase } from "./sherlock_case.ts";
import { continueCli } from "./recipes.ts";

Deno.test("continue via sherlock: inline token from the secret store", async () => {
  const { start } = await runSherlockCase(continueCli, {
    delivery: "inline",
    source: "secret",
  });
  const names = start.env_names as string[];
  assert.ok(names.includes(PARENT_CANARY), "parent env did not reach server");
});

Deno.test("continue via sherlock: token shim ([render] tokens), credential helper", async () => {
  await runSherlockCase(continueCli, {
    delivery: "shim",
    source: "command",
  });
});
