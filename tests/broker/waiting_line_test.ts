/**
 * The waiting line of `sherlock run`: while the broker fetches a session's
 * tokens for over two seconds (a slow credential helper), a line on the
 * terminal says so with the seconds so far, and is cleared before the
 * agent starts (and `sherlock services test`'s, before the server starts).
 * Never through a pipe, and never for a fast helper. A real
 * daemon, real helper scripts, a real pseudo-terminal (util-linux
 * `script`).
 */

import assert from "node:assert/strict";
import { AgentRun } from "../helpers/agent.ts";
import {
  AGENT,
  type BrokerHome,
  createBrokerHome,
  type TokenHelperOptions,
} from "../helpers/broker_home.ts";
import { runSherlockOnPty } from "../helpers/terminal.ts";

const WAITING = "sherlock: waiting for the services' tokens… ";

/**
 * `sherlock run` of the fake agent on a terminal, in a HOME with one
 * service whose helper behaves as `helper` says; returns the screen.
 */
async function runOnTerminal(
  home: BrokerHome,
  helper: TokenHelperOptions,
): Promise<string> {
  home.addAgent();
  await home.login();
  home.addHelperService("github", helper);
  using agent = new AgentRun(home.scratch, {
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const terminal = await runSherlockOnPty(["run", AGENT], {
    env: { ...home.env, ...agent.env },
    steps: [],
  });
  assert.equal(terminal.code, 0, terminal.screen);
  assert.ok(agent.hasStarted, terminal.screen);
  return terminal.screen;
}

/** True when the last waiting line on `screen` was blanked out. */
function cleared(screen: string, waiting: string): boolean {
  const last = screen.lastIndexOf(waiting);
  const width = screen.indexOf("s", last + waiting.length) + 1 - last;
  return screen.slice(last).includes(`\r${" ".repeat(width)}\r`);
}

Deno.test("a credential helper past 2 s: a waiting line with its seconds on the terminal, cleared when the tokens came; none through a pipe", async () => {
  await using home = await createBrokerHome();
  const screen = await runOnTerminal(home, { before: "sleep 4" });
  assert.ok(screen.includes(`${WAITING}2s`), JSON.stringify(screen));
  assert.ok(screen.includes(`${WAITING}3s`), "the seconds go on");
  assert.ok(!screen.includes(`${WAITING}0s`), "not before 2 s");
  assert.ok(cleared(screen, WAITING), JSON.stringify(screen));

  const piped = await home.runAgent();
  assert.equal(piped.result.code, 0, piped.result.stderr);
  assert.ok(piped.record !== undefined);
  assert.ok(!piped.result.stderr.includes("waiting"), piped.result.stderr);
});

Deno.test("a fast credential helper: no waiting line on the terminal", async () => {
  await using home = await createBrokerHome();
  const screen = await runOnTerminal(home, {});
  assert.ok(!screen.includes("waiting"), screen);
});

Deno.test("services test: the same waiting line while a slow helper runs", async () => {
  await using home = await createBrokerHome();
  await home.login();
  home.addHelperService("github", { before: "sleep 3" });
  // The installed server never answers: what matters here is before it.
  const terminal = await runSherlockOnPty(
    ["services", "test", "--timeout", "1", "github"],
    { env: home.env, steps: [] },
  );
  const waiting = "sherlock: waiting for the token… ";
  assert.ok(terminal.screen.includes(`${waiting}2s`), terminal.screen);
  assert.ok(cleared(terminal.screen, waiting), terminal.screen);
  assert.match(terminal.screen, /no answer to initialize within 1 s/);
});
