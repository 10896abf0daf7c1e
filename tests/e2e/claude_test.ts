/**
 * Claude Code, driven directly with a hand-written `--mcp-config` file:
 * starts the configured stdio server, completes the handshake, hands it the
 * entry's token, and passes its own environment on to servers.
 *
 * @module
 */

import assert from "node:assert/strict";
import { PARENT_CANARY, runHandshakeCase } from "./handshake_case.ts";
import { claude } from "./recipes.ts";

Deno.test("claude: --mcp-config=<file> starts the stdio server with the entry's token", async () => {
  const { start } = await runHandshakeCase(claude);
  const names = start.env_names as string[];
  // Claude passes its whole environment to servers, its API key included.
  assert.ok(names.includes(PARENT_CANARY), "parent env did not reach server");
  assert.ok(names.includes("ANTHROPIC_API_KEY"));
});
