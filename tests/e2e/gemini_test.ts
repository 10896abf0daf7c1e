/**
 * Gemini CLI, driven directly with a hand-written
 * `<cwd>/.gemini/settings.json` in a trusted folder: starts the configured
 * stdio server, completes the handshake, hands it the entry's token (whose
 * name it would strip from its own environment), and passes its own
 * environment on minus secret-looking names.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  PARENT_CANARY,
  runHandshakeCase,
  TOKEN_ENV,
} from "./handshake_case.ts";
import { gemini } from "./recipes.ts";

Deno.test("gemini: <cwd>/.gemini/settings.json starts the stdio server with the entry's token", async () => {
  const { start } = await runHandshakeCase(gemini);
  const names = start.env_names as string[];
  // PARENT_CANARY contains no secret-looking word, so it passes; its API
  // key does not (*KEY*), while the entry's *TOKEN* variable does.
  assert.ok(names.includes(PARENT_CANARY), "parent env did not reach server");
  assert.ok(!names.includes("GEMINI_API_KEY"));
  assert.ok(names.includes(TOKEN_ENV));
});
