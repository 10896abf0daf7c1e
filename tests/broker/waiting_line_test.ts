/**
 * The waiting line of `sherlock run`: while the broker fetches a session's
 * tokens for over two seconds (a slow credential helper), a line on the
 * terminal says so with the seconds so far, and is cleared before the
 * agent starts. Never through a pipe, and never for a fast helper. A real
 * daemon, real helper scripts, a real pseudo-terminal (util-linux
 * `script`).
 */

import assert from "node:assert/strict";
import { AgentRun } from "../helpers/agent.ts";
import { AGENT, createBrokerHome } from "../helpers/broker_home.ts";
import { runSherlockOnPty } from "../helpers/terminal.ts";

const WAITING = "sherlock: waiting for the services' tokens… ";

Deno.test("a credential helper past 2 s: a waiting line with its seconds on the terminal, cleared when the tokens came; none through a pipe", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  await home.login();
  home.addHelperService("slow", { before: "sleep 4" });

  using agent = new AgentRun(home.scratch, {
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const terminal = await runSherlockOnPty(["run", AGENT], {
    env: { ...home.env, ...agent.env },
    steps: [],
  });
  assert.equal(terminal.code, 0, terminal.screen);
  assert.ok(agent.hasStarted);
  const { screen } = terminal;
  assert.ok(screen.includes(`${WAITING}2s`), JSON.stringify(screen));
  assert.ok(screen.includes(`${WAITING}3s`), "the seconds go on");
  assert.ok(!screen.includes(`${WAITING}0s`), "not before 2 s");
  // Cleared: blanks over the line's last text, and back to its start.
  const last = screen.lastIndexOf(WAITING);
  const width = screen.indexOf("s", last + WAITING.length) + 1 - last;
  assert.ok(
    screen.slice(last).includes(`\r${" ".repeat(width)}\r`),
    JSON.stringify(screen.slice(last)),
  );

  const piped = await home.runAgent();
  assert.equal(piped.result.code, 0, piped.result.stderr);
  assert.ok(piped.record !== undefined);
  assert.ok(!piped.result.stderr.includes("waiting"), piped.result.stderr);
});

Deno.test("a fast credential helper: no waiting line on the terminal", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  await home.login();
  home.addHelperService("fast");
  using agent = new AgentRun(home.scratch, {
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const terminal = await runSherlockOnPty(["run", AGENT], {
    env: { ...home.env, ...agent.env },
    steps: [],
  });
  assert.equal(terminal.code, 0, terminal.screen);
  assert.ok(agent.hasStarted);
  assert.ok(!terminal.screen.includes("waiting"), terminal.screen);
});
