/**
 * OpenAI Codex CLI through sherlock's built-in `codex` profile: each server
 * is a `-c mcp_servers.<name>={…}` override, which sherlock puts before the
 * agent's own arguments (`codex -c … exec …`). The overrides are in argv,
 * so the token always goes through the shim, whatever is configured.
 *
 * @module
 */

import assert from "node:assert/strict";
import { PARENT_CANARY, runSherlockCase } from "./sherlock_case.ts";
import { codex } from "./recipes.ts";

Deno.test("codex via sherlock: inline asked, shim forced (argv), secret store", async () => {
  const { start } = await runSherlockCase(codex, {
    delivery: "inline",
    source: "secret",
  });
  // Codex passes servers only a whitelist of its environment; the shim
  // needs none of it.
  const names = start.env_names as string[];
  assert.ok(!names.includes(PARENT_CANARY), "parent env reached the server");
});

Deno.test("codex via sherlock: token shim ([render] tokens), credential helper", async () => {
  await runSherlockCase(codex, { delivery: "shim", source: "command" });
});
