/**
 * Amp through sherlock's built-in `amp` profile (`--mcp-config <file>`
 * holding a bare `{name: entry}` map), with the token inline and through
 * the shim. In execute mode it starts its servers, cannot reach its own
 * server and exits by itself.
 *
 * @module
 */

import assert from "node:assert/strict";
import { PARENT_CANARY, runSherlockCase } from "./sherlock_case.ts";
import { amp } from "./recipes.ts";

Deno.test("amp via sherlock: inline token from the secret store", async () => {
  const { start } = await runSherlockCase(amp, {
    delivery: "inline",
    source: "secret",
  });
  const names = start.env_names as string[];
  assert.ok(names.includes(PARENT_CANARY), "parent env did not reach server");
});

Deno.test("amp via sherlock: token shim ([token] delivery), credential helper", async () => {
  await runSherlockCase(amp, {
    delivery: "shim",
    shimVia: "service",
    source: "command",
  });
});
