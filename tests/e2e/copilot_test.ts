/**
 * GitHub Copilot CLI, driven directly with a hand-written
 * `--additional-mcp-config @<file>`: starts the configured stdio server,
 * completes the handshake, hands it the entry's token, and passes its own
 * environment on to servers except its provider settings.
 *
 * @module
 */

import assert from "node:assert/strict";
import { PARENT_CANARY, runHandshakeCase } from "./handshake_case.ts";
import { copilot } from "./recipes.ts";

Deno.test("copilot: --additional-mcp-config @<file> starts the stdio server with the entry's token", async () => {
  const { start } = await runHandshakeCase(copilot);
  const names = start.env_names as string[];
  assert.ok(names.includes(PARENT_CANARY), "parent env did not reach server");
  // Its BYOK provider settings are kept from servers.
  assert.ok(!names.includes("COPILOT_PROVIDER_API_KEY"));
  assert.ok(!names.includes("COPILOT_OFFLINE"));
});
