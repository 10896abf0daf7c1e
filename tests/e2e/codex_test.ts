/**
 * OpenAI Codex CLI, driven directly with `-c mcp_servers.<name>={…}`
 * overrides: starts the configured stdio server, completes the handshake,
 * hands it the entry's token, and passes only a short whitelist of its own
 * environment to servers.
 *
 * @module
 */

import assert from "node:assert/strict";
import { PARENT_CANARY, runHandshakeCase } from "./handshake_case.ts";
import { codex } from "./recipes.ts";

Deno.test("codex: -c mcp_servers.<name>={…} starts the stdio server with the entry's token", async () => {
  const { start } = await runHandshakeCase(codex);
  const names = start.env_names as string[];
  assert.ok(!names.includes(PARENT_CANARY), "parent env reached the server");
  // Not on the whitelist: the test server must not depend on it.
  assert.ok(!names.includes("DENO_DIR"));
  assert.ok(names.includes("HOME") && names.includes("PATH"));
});
