/**
 * Auggie through sherlock's built-in `auggie` profile (`--mcp-config
 * <file>`, mcp-json), with the token inline and through the shim. In print
 * mode with a session whose tenant is a closed port it starts its servers
 * and retries Augment until stopped. It starts stdio servers with their
 * own `env` only, not its environment (unlike most agents), so there is no
 * parent-environment check.
 *
 * @module
 */

import { runSherlockCase } from "./sherlock_case.ts";
import { auggie } from "./recipes.ts";

Deno.test("auggie via sherlock: inline token from the secret store", async () => {
  await runSherlockCase(auggie, {
    delivery: "inline",
    source: "secret",
  });
});

Deno.test("auggie via sherlock: token shim ([render] tokens), credential helper", async () => {
  await runSherlockCase(auggie, {
    delivery: "shim",
    source: "command",
  });
});
