/**
 * Every built-in agent's real CLI (Copilot, Claude Code, Codex, Gemini,
 * Qwen Code, Amp, opencode) reaches a remote MCP server with a token
 * through sherlock's bridge, the default delivery of a remote service with
 * a token: the
 * remote fixture (tests/fixtures/remote_mcp_server.ts, Streamable HTTP or
 * legacy SSE behind a bearer token) runs in this process; the service's
 * token is a stored secret; `sherlock <agent> …` renders a stdio entry that
 * runs `sherlock bridge`, and the real CLI starts it and lists the remote
 * server's tools (its model is a closed port, so nothing calls them).
 * Checked: the server got `initialize` and `tools/list` with the broker's
 * token (never a 401); the rendered config (file, the operator's merged
 * file, or Codex's argv) runs the bridge and holds no token; no process but
 * the bridge ever had the token, in its environment or argv (the bridge
 * holds it in memory only: it is in no environment at all); after SIGTERM
 * (or the CLI's own exit: Amp and opencode end by themselves) nothing is
 * left running and no file or output holds the token.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { listNames, type TestHome } from "../helpers/home.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { sherlockCommand } from "../helpers/sherlock.ts";
import { startRemoteMcpServer } from "../fixtures/remote_mcp_server.ts";
import {
  CLI_PINS,
  delay,
  installClis,
  startCli,
  stopCli,
  type StopResult,
} from "./harness.ts";
import { watchProcesses } from "./process_watch.ts";
import { filesContaining } from "./sherlock_case.ts";
import {
  type AgentRecipe,
  amp,
  claude,
  codex,
  copilot,
  gemini,
  opencode,
  qwen,
} from "./recipes.ts";

/** The remote service's name. */
const SERVICE = "remote";

/** Runs `recipe` with one remote service on `transport`; checks the module's list. */
async function runBridgeCase(
  recipe: AgentRecipe,
  transport: "http" | "sse",
): Promise<void> {
  const { agent, cli: key } = recipe;
  const { [key]: cliPath } = await installClis([key]);
  const token = `e2e_${crypto.randomUUID().replaceAll("-", "")}`;
  await using remote = await startRemoteMcpServer({ token });
  await using home = await createBrokerHome();
  home.env.TERM = "dumb";
  Deno.symlinkSync(cliPath, join(home.bin, CLI_PINS[key].bin));
  if (recipe.profile) {
    home.writeProfile(agent, recipe.profile(CLI_PINS[key].bin));
  }
  await home.login();
  const set = await home.sherlock(["secret", "set", SERVICE], {
    stdin: token,
  });
  assert.equal(set.code, 0, `secret set failed: ${set.stderr}`);
  const url = transport === "sse" ? remote.sseUrl : remote.url;
  home.writeService(
    SERVICE,
    tokenServiceToml({ name: SERVICE, source: "secret", url }).replace(
      "[token]",
      `transport = "${transport}"\n\n[token]`,
    ),
  );
  const seeded =
    await recipe.seed?.(home, join(home.scratch, "operator.jsonl")) ??
      [];
  const env = { ...home.env, ...recipe.env(home) };
  const [deno, ...args] = sherlockCommand([agent, ...recipe.args]);
  const cli = startCli(deno, { args, env, cwd: home.work });
  const watch = watchProcesses({
    root: cli.pid,
    token,
    files: () => [...renderedFiles(home, agent), ...seeded],
  });
  const listed = () => (remote.counts.methods["tools/list"] ?? 0) > 0;
  let stop: StopResult;
  try {
    const deadline = performance.now() + 120_000;
    while (!listed()) {
      if (cli.exited() || performance.now() > deadline) {
        throw new Error(
          `${agent} never listed the remote server's tools (${
            cli.exited() ? "it exited" : "timed out"
          }); counts ${JSON.stringify(remote.counts)}\n${
            cli.output().slice(-4000)
          }`,
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

  // The server was reached with the broker's token, through the bridge.
  assert.ok((remote.counts.methods.initialize ?? 0) >= 1);
  assert.equal(remote.counts.unauthorized, 0, "a request had a bad token");
  const rendered =
    [...watch.files.values()].flat().find((text) =>
      text.includes(`"${SERVICE}"`)
    ) ?? [...watch.sightings.values()].flatMap((s) => s.cmdlines)
      .find((line) => line.includes(`mcp_servers.${SERVICE}=`));
  assert.ok(rendered !== undefined, `never saw ${agent}'s rendered config`);
  assert.match(rendered, /main\.ts"?,?\s*"?bridge\b/, "no bridge entry");
  assert.ok(!rendered.includes(token), "the config holds the token");
  const sightings = [...watch.sightings.values()];
  assert.ok(
    sightings.some((s) => s.cmdlines.some((line) => /\bbridge\b/.test(line))),
    "no bridge process was seen",
  );
  const leaks = sightings.filter((s) => s.tokenInEnviron || s.tokenInCmdline)
    .map((s) => `${s.pid}: ${s.cmdlines.join(" | ")}`);
  assert.deepEqual(leaks, [], "the token is in these processes' env or argv");

  // Stopped and cleaned up.
  assert.deepEqual(stop.leftovers, [], `${agent} left processes behind`);
  assert.ok(!output.includes(token), "sherlock's output shows the token");
  assert.deepEqual(
    filesContaining(home.root, token, [home.scratch]),
    [],
    "files under the throwaway tree hold the token",
  );
  // Not asserted: whether the remote session was DELETEd depends on how the
  // agent ends its servers (a closed stdin or SIGTERM: yes; SIGKILL: no).
  const open = remote.openSessions();
  console.log(
    `${agent} ${CLI_PINS[key].version} via sherlock bridge (${transport}): ` +
      `${remote.counts.methods["tools/list"]} tools/list, ` +
      `${remote.counts.requests} requests, stopped in ${
        Math.round(stop.ms)
      } ms, ${open} remote session(s) left open`,
  );
}

/** The files in which sherlock's config for `agent` may show. */
function renderedFiles(home: TestHome, agent: string): string[] {
  return listNames(home.runtimeDir).filter((name) =>
    name.startsWith(`${agent}.`) && name.endsWith(".mcp.json")
  ).map((name) => join(home.runtimeDir, name));
}

Deno.test("remote bridge: codex lists a Streamable HTTP server's tools through sherlock bridge", async () => {
  await runBridgeCase(codex, "http");
});

Deno.test("remote bridge: codex reaches a legacy SSE server through the bridge", async () => {
  await runBridgeCase(codex, "sse");
});

Deno.test("remote bridge: claude lists a Streamable HTTP server's tools through sherlock bridge", async () => {
  await runBridgeCase(claude, "http");
});

Deno.test("remote bridge: gemini (merged settings) lists a remote server's tools through sherlock bridge", async () => {
  await runBridgeCase(gemini, "http");
});

Deno.test("remote bridge: copilot lists a Streamable HTTP server's tools through sherlock bridge", async () => {
  await runBridgeCase(copilot, "http");
});

Deno.test("remote bridge: qwen lists a Streamable HTTP server's tools through sherlock bridge", async () => {
  await runBridgeCase(qwen, "http");
});

Deno.test("remote bridge: amp lists a Streamable HTTP server's tools through sherlock bridge", async () => {
  await runBridgeCase(amp, "http");
});

Deno.test("remote bridge: opencode lists a Streamable HTTP server's tools through sherlock bridge", async () => {
  await runBridgeCase(opencode, "http");
});
