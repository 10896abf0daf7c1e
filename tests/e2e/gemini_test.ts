/**
 * Gemini CLI through sherlock's built-in `gemini` profile: sherlock merges
 * its server into the operator's `~/.gemini/settings.json` (pre-seeded here
 * with the auth choice and a server of the operator's), always through the
 * shim, and puts the file back byte for byte and with its mode — after a
 * SIGTERM, and after a SIGKILL once the next `sherlock run` swept up.
 * The folder is trusted by `GEMINI_CLI_TRUST_WORKSPACE=true` in the
 * operator's environment.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  PARENT_CANARY,
  runSherlockCase,
  SERVICE,
  TOKEN_ENV,
} from "./sherlock_case.ts";
import { findRecord } from "./harness.ts";
import { gemini } from "./recipes.ts";

Deno.test("gemini via sherlock: inline asked, shim forced (merged file), relaunching CLI stopped by SIGTERM", async () => {
  const { records, start } = await runSherlockCase(gemini, {
    delivery: "inline",
    source: "secret",
  });
  // The operator's server, beside sherlock's, got no token.
  assert.equal(
    findRecord(records, "start", "operator")?.token_sha256,
    undefined,
  );
  // Gemini strips secret-looking names from its own environment, not from
  // what the shim adds.
  const names = start.env_names as string[];
  assert.ok(names.includes(PARENT_CANARY), "parent env did not reach server");
  assert.ok(!names.includes("GEMINI_API_KEY"));
  assert.ok(names.includes(TOKEN_ENV));
  assert.equal(start.name, SERVICE);
});

Deno.test("gemini via sherlock: token shim ([token] delivery), credential helper, no relaunch", async () => {
  await runSherlockCase(gemini, {
    delivery: "shim",
    shimVia: "service",
    source: "command",
    env: { GEMINI_CLI_NO_RELAUNCH: "true" },
  });
});

Deno.test("gemini via sherlock: SIGKILLed mid-session, the next sherlock run restores the settings", async () => {
  await runSherlockCase(gemini, {
    delivery: "shim",
    source: "secret",
    env: { GEMINI_CLI_NO_RELAUNCH: "true" },
    crash: true,
  });
});
