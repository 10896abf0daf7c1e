/**
 * Qwen Code through sherlock's built-in `qwen` profile
 * (`--mcp-config <file>`), with the token inline and through the shim. It
 * relaunches itself, and the launcher ignores SIGTERM: sherlock signals the
 * relaunched child in the agent's process group too.
 *
 * @module
 */

import assert from "node:assert/strict";
import { PARENT_CANARY, runSherlockCase } from "./sherlock_case.ts";
import { qwen } from "./recipes.ts";

Deno.test("qwen via sherlock: inline token from the secret store", async () => {
  const { start } = await runSherlockCase(qwen, {
    delivery: "inline",
    source: "secret",
  });
  const names = start.env_names as string[];
  assert.ok(names.includes(PARENT_CANARY), "parent env did not reach server");
});

Deno.test("qwen via sherlock: token shim ([render] tokens), credential helper", async () => {
  await runSherlockCase(qwen, {
    delivery: "shim",
    source: "command",
  });
});
