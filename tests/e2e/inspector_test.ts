/**
 * MCP Inspector CLI against the test server, from a `{"mcpServers": …}`
 * file: calls the `whoami` tool and prints the server's answer, which
 * carries the hash of the token in the entry's env.
 *
 * @module
 */

import assert from "node:assert/strict";
import { TOKEN_ENV } from "./handshake_case.ts";
import {
  findRecord,
  installClis,
  makeSandbox,
  readRecords,
  sha256,
  startCli,
  stopCli,
  testServer,
} from "./harness.ts";
import { inspectorCall } from "./recipes.ts";

Deno.test("inspector: --cli --config calls a tool on the test server", async () => {
  const { inspector } = await installClis(["inspector"]);
  const sandbox = await makeSandbox("inspector");
  try {
    const token = `e2e-token-${crypto.randomUUID()}`;
    const server = testServer({
      record: sandbox.record,
      name: "probe",
      tokenEnv: TOKEN_ENV,
      env: { [TOKEN_ENV]: token },
    });
    const recipe = inspectorCall("probe", "whoami");
    const invocation = await recipe.prepare(sandbox, { probe: server });
    const cli = startCli(inspector, invocation);
    let status;
    try {
      // It exits by itself; the hang guard only stops a stuck one.
      const exited = await Promise.race([
        cli.status.then(() => true),
        new Promise<false>((resolve) => {
          const timer = setTimeout(() => resolve(false), 60_000);
          cli.exit.finally(() => clearTimeout(timer));
        }),
      ]);
      assert.ok(exited, "the inspector did not exit");
      status = await cli.status;
    } finally {
      await stopCli(cli, { signal: null });
    }
    assert.equal(status.code, 0, cli.output());
    const call = findRecord(
      await readRecords(sandbox.record),
      "tools/call",
      "probe",
    );
    assert.equal(call?.tool, "whoami");
    // The answer is the tool result, as JSON on stdout.
    const result = JSON.parse(cli.stdout());
    assert.deepEqual(JSON.parse(result.content[0].text), {
      server: "probe",
      token_sha256: sha256(token),
    });
  } finally {
    await sandbox.cleanup();
  }
});
