/**
 * A second witness: the MCP Inspector CLI as an operator's agent
 * (`agents.d/inspector.toml`, `--config <file>`), run as
 * `sherlock inspector --server probe --method tools/call --tool-name
 * whoami`. The Inspector calls the test server's tool through the config
 * sherlock rendered, and the tool's answer — the hash of the token the
 * server got — must be the broker's token's, inline and through the shim.
 *
 * @module
 */

import assert from "node:assert/strict";
import { sha256 } from "./harness.ts";
import { inspector } from "./recipes.ts";
import { runSherlockCase, SERVICE } from "./sherlock_case.ts";

for (
  const [delivery, source] of [
    ["inline", "secret"],
    ["shim", "command"],
  ] as const
) {
  Deno.test(`inspector via sherlock: whoami answers the broker's token (${delivery}, ${source})`, async () => {
    const { stdout, token, stop } = await runSherlockCase(inspector, {
      delivery,
      source,
    });
    assert.equal(stop.status.code, 0, "the inspector failed");
    const result = JSON.parse(stdout);
    assert.deepEqual(JSON.parse(result.content[0].text), {
      server: SERVICE,
      token_sha256: sha256(token),
    });
  });
}
