/**
 * Issue 19, item 5: real agent CLIs (Claude Code, Codex), which speak the
 * 2025 revisions on stdio, list and call a tool of a server that serves
 * only MCP 2026-07-28 (tests/helpers/modern_server.ts, on the SDK v2's
 * `createMcpHandler(factory, { legacy: "reject" })`), through the
 * `sherlock bridge` entry sherlock renders for a remote service with a
 * token. The model is a scripted endpoint on loopback (as in
 * remote_bridge_test.ts: the real APIs cannot be reached here) that
 * answers with a call of the server's `whoami`, then with a final text once
 * the tool's result came back.
 *
 * Checked: the server never saw `initialize` or a session, and every
 * request carried the revision's headers; the tool ran once with the
 * broker's token and its answer reached the model; the CLI printed the
 * final text; no process had the token in its argv or environment, no
 * rendered file or output holds it, and nothing is left running.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { listNames } from "../helpers/home.ts";
import { filesContaining } from "../helpers/leaks.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { sherlockCommand } from "../helpers/sherlock.ts";
import {
  MODERN_REVISION,
  sha256,
  startModernServer,
} from "../helpers/modern_server.ts";
import { CLI_PINS, delay, installClis, startCli, stopCli } from "./harness.ts";
import { watchProcesses } from "./process_watch.ts";
import {
  callingToolRecipe,
  claudeCallingTool,
  codexCallingTool,
  type ToolCallingAgent,
} from "./recipes.ts";

const SERVICE = "remote";

async function runModernCallingCase(agent: ToolCallingAgent): Promise<void> {
  const key = agent.base.cli;
  const name = agent.base.agent;
  const { [key]: cliPath } = await installClis([key]);
  const secret = `e2e_${crypto.randomUUID().replaceAll("-", "")}`;
  await using server = await startModernServer({ token: secret });
  const whoami = { server: SERVICE, tool: "whoami" };
  const finalText = `the modern answer came back ${crypto.randomUUID()}`;
  await using model = agent.startModel({
    pickTool: (names) => names.find((tool) => tool.endsWith(whoami.tool)),
    finalText,
  });
  const recipe = callingToolRecipe(agent, { ...whoami, modelUrl: model.url });
  await using home = await createBrokerHome();
  home.env.TERM = "dumb";
  Deno.symlinkSync(cliPath, join(home.bin, CLI_PINS[key].bin));
  await home.login();
  home.writeService(
    SERVICE,
    tokenServiceToml({ name: SERVICE, source: "secret", url: server.url }),
  );
  const set = await home.sherlock(["secret", "set", SERVICE], {
    stdin: secret,
  });
  assert.equal(set.code, 0, set.stderr);
  const seeded =
    await recipe.seed?.(home, join(home.scratch, "operator.jsonl")) ?? [];
  const env = { ...home.env, ...recipe.env(home) };
  const [deno, ...args] = sherlockCommand([name, ...recipe.args]);
  const cli = startCli(deno, { args, env, cwd: home.work });
  const watch = watchProcesses({
    root: cli.pid,
    token: secret,
    moreTokens: () => [secret],
    files: () => [
      ...listNames(home.runtimeDir).filter((file) =>
        file.startsWith(`${name}.`) && file.endsWith(".mcp.json")
      ).map((file) => join(home.runtimeDir, file)),
      ...seeded,
    ],
  });
  let stop;
  try {
    const deadline = performance.now() + 120_000;
    while (!cli.exited()) {
      if (performance.now() > deadline) {
        throw new Error(
          `${name} did not finish; the server saw ${
            JSON.stringify(server.counts.methods)
          }\n${cli.output().slice(-4000)}`,
        );
      }
      await delay(50);
    }
  } finally {
    stop = await stopCli(cli, {
      signal: "SIGTERM",
      graceMs: 20_000,
      settleMs: 15_000,
    });
    watch.stop();
  }
  const output = cli.output();
  const { counts } = server;

  // The 2026-07-28 server was reached through the bridge, as the revision
  // wants, with the broker's token.
  assert.ok((counts.methods["server/discover"] ?? 0) >= 1, output);
  assert.equal(counts.methods["initialize"], undefined);
  assert.ok((counts.methods["tools/list"] ?? 0) >= 1);
  assert.equal(counts.methods["tools/call"], 1, output);
  assert.equal(counts.unauthorized, 0);
  for (const seen of counts.seen) {
    assert.equal(seen.httpMethod, "POST");
    assert.equal(seen.sessionId, null);
    assert.equal(seen.protocolVersion, MODERN_REVISION);
    assert.equal(seen.mcpMethod, seen.method);
    assert.ok(!seen.url.includes(secret));
  }
  assert.equal(model.calledTool, agent.toolName(whoami));
  const answer = sha256(secret);
  const results = model.toolResults();
  assert.ok(
    results.some((text) => text.includes(answer)),
    `the tool's answer did not reach the model: ${results}`,
  );
  assert.ok(cli.stdout().includes(finalText), `${name} printed: ${output}`);

  // No token anywhere but the broker and the bridge's memory.
  const sightings = [...watch.sightings.values()];
  assert.ok(
    sightings.some((s) => s.cmdlines.some((line) => /\bbridge\b/.test(line))),
    "no bridge process was seen",
  );
  assert.deepEqual(
    sightings.filter((s) => s.tokenInEnviron || s.tokenInCmdline)
      .map((s) => s.cmdlines.join(" | ")),
    [],
  );
  assert.ok(!output.includes(secret), "sherlock printed the token");
  assert.deepEqual(
    filesContaining(home.root, [secret], [home.scratch]),
    [],
    "files under the throwaway tree hold the token",
  );
  assert.deepEqual(stop.leftovers, [], `${name} left processes behind`);
  console.log(
    `${name} ${
      CLI_PINS[key].version
    } via sherlock bridge to a ${MODERN_REVISION}-only server: ${
      JSON.stringify(counts.methods)
    }`,
  );
}

Deno.test("modern bridge: claude lists and calls a tool of a 2026-07-28-only server through sherlock bridge (scripted model endpoint)", async () => {
  await runModernCallingCase(claudeCallingTool);
});

Deno.test("modern bridge: codex lists and calls a tool of a 2026-07-28-only server through sherlock bridge (scripted model endpoint)", async () => {
  await runModernCallingCase(codexCallingTool);
});
