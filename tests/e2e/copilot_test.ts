/**
 * GitHub Copilot CLI through sherlock's built-in `copilot` profile
 * (`--additional-mcp-config @<file>`), with the token inline and through
 * the shim. Its npm launcher does not pass SIGTERM on: sherlock signals the
 * native binary in the agent's process group as well.
 *
 * @module
 */

import assert from "node:assert/strict";
import { PARENT_CANARY, runSherlockCase } from "./sherlock_case.ts";
import { copilot } from "./recipes.ts";

Deno.test("copilot via sherlock: inline token from the secret store", async () => {
  const { start } = await runSherlockCase(copilot, {
    delivery: "inline",
    source: "secret",
  });
  const names = start.env_names as string[];
  assert.ok(names.includes(PARENT_CANARY), "parent env did not reach server");
  // Its BYOK provider settings are kept from servers.
  assert.ok(!names.includes("COPILOT_PROVIDER_API_KEY"));
});

Deno.test("copilot via sherlock: token shim ([token] delivery), credential helper", async () => {
  await runSherlockCase(copilot, {
    delivery: "shim",
    shimVia: "service",
    source: "command",
  });
});
