/**
 * Claude Code through sherlock's built-in `claude` profile
 * (`--mcp-config=<file>`), with the token inline and through the shim.
 *
 * @module
 */

import assert from "node:assert/strict";
import { PARENT_CANARY, runSherlockCase } from "./sherlock_case.ts";
import { claude } from "./recipes.ts";

Deno.test("claude via sherlock: inline token from the secret store", async () => {
  const { start } = await runSherlockCase(claude, {
    delivery: "inline",
    source: "secret",
  });
  // Claude passes its whole environment to servers, its API key included.
  const names = start.env_names as string[];
  assert.ok(names.includes(PARENT_CANARY), "parent env did not reach server");
  assert.ok(names.includes("ANTHROPIC_API_KEY"));
});

Deno.test("claude via sherlock: token shim ([render] tokens), credential helper", async () => {
  await runSherlockCase(claude, { delivery: "shim", source: "command" });
});
