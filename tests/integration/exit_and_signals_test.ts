/**
 * Exit codes and signals with real processes: the agent's code passes
 * through, a signal's death is 128+N, sherlock's own failures have their
 * codes, and signals reach the agent the way a terminal or a supervisor
 * sends them — while sherlock lives long enough to clean up.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  addFakeAgent,
  AgentRun,
  installFakeAgent,
  startWaitingSession,
} from "../helpers/agent.ts";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { createTestHome, type TestHome } from "../helpers/home.ts";
import { sh } from "../helpers/shell.ts";
import { profileToml } from "../helpers/profiles.ts";
import { lines, runSherlock, startSherlock } from "../helpers/sherlock.ts";
import { exists, waitUntil } from "../helpers/wait.ts";

function assertCleanedUp(home: TestHome): void {
  assert.deepEqual(home.runtimeFiles(), [], "rendered files left behind");
  assert.deepEqual(home.sessionRecords(), [], "session records left behind");
}

Deno.test("the agent's exit code passes through, and everything is cleaned up", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  for (const code of [0, 1, 2, 3, 42, 77, 78, 125, 255]) {
    using agent = new AgentRun(home.scratch, { exit: code });
    const result = await runSherlock(["fake"], {
      env: { ...home.env, ...agent.env },
    });
    assert.equal(result.code, code);
    assert.equal(result.stderr, "", "the agent's failure is not sherlock's");
    assert.ok(agent.hasStarted);
    assertCleanedUp(home);
  }
});

Deno.test("an agent killed by signal N: exit 128+N, cleaned up", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  for (
    const [signal, code] of [["SIGKILL", 137], ["SIGTERM", 143], [
      "SIGUSR1",
      138,
    ]] as const
  ) {
    using agent = new AgentRun(home.scratch, { kill: signal });
    const result = await runSherlock(["fake"], {
      env: { ...home.env, ...agent.env },
    });
    assert.equal(result.code, code, signal);
    assert.equal(result.signal, null, "sherlock itself exits normally");
    assert.equal(result.stderr, "");
    assertCleanedUp(home);
  }
});

Deno.test("executable missing: 127, one line, nothing left", async () => {
  await using home = await createTestHome();
  home.writeProfile(
    "fake",
    profileToml({ name: "fake", executable: "not-installed-agent" }),
  );
  const result = await runSherlock(["fake"], { env: home.env });
  assert.equal(result.code, 127);
  assert.deepEqual(lines(result.stderr), [
    "sherlock: not-installed-agent (agent fake) was not found on PATH; install the agent or put it on PATH",
  ]);
  assertCleanedUp(home);

  home.writeProfile(
    "abs",
    profileToml({
      name: "abs",
      executable: join(home.root, "nowhere", "agent"),
    }),
  );
  const absolute = await runSherlock(["abs"], { env: home.env });
  assert.equal(absolute.code, 127);
  assert.deepEqual(lines(absolute.stderr), [
    `sherlock: ${
      join(home.root, "nowhere", "agent")
    } (agent abs) does not exist; install the agent or fix the profile's executable`,
  ]);
  assertCleanedUp(home);
});

Deno.test("executable not executable (mode 644): 126, one line, nothing left", async () => {
  await using home = await createTestHome();
  const path = installFakeAgent(join(home.bin, "fake"));
  Deno.chmodSync(path, 0o644);
  home.writeProfile("fake", profileToml({ name: "fake", executable: "fake" }));
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 126);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: ${path} (agent fake) is not executable; chmod +x it or fix the profile's executable`,
  ]);
  assert.equal(agent.hasStarted, false);
  assertCleanedUp(home);
});

Deno.test("an executable whose interpreter is missing: 127, one line, nothing left", async () => {
  await using home = await createTestHome();
  const path = join(home.bin, "fake");
  Deno.writeTextFileSync(path, "#!/nonexistent/interpreter\n", { mode: 0o755 });
  Deno.chmodSync(path, 0o755);
  home.writeProfile("fake", profileToml({ name: "fake", executable: "fake" }));
  const result = await runSherlock(["fake"], { env: home.env });
  assert.equal(result.code, 127);
  assert.equal(lines(result.stderr).length, 1, result.stderr);
  assert.match(
    result.stderr,
    /^sherlock: .*\bfake \(agent fake\) could not be started/,
  );
  assertCleanedUp(home);
});

for (const [signal, code] of [["SIGTERM", 143], ["SIGHUP", 129]] as const) {
  Deno.test(`${signal} sent to sherlock is forwarded to the agent; exit ${code}, cleaned up`, async () => {
    await using home = await createTestHome();
    addFakeAgent(home, { name: "fake" });
    await using session = await startWaitingSession(home, ["fake"], {
      config: "env:SHERLOCK_MCP_CONFIG",
    });
    const { agent, sherlock, started } = session;
    // The file is there while the agent runs.
    assert.equal(
      Deno.readTextFileSync(started.config!.path),
      started.config!.text,
    );
    sherlock.kill(signal);
    const result = await sherlock.result;
    assert.equal(result.code, code);
    assert.equal(result.signal, null);
    assert.equal(result.stderr, "");
    assert.deepEqual(agent.record().signals, [signal]);
    assertCleanedUp(home);
  });
}

Deno.test("Ctrl-C: the agent gets one SIGINT; sherlock outlives it and cleans up", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  // The agent treats Ctrl-C like an interactive CLI: it keeps running.
  await using session = await startWaitingSession(home, ["fake"], {
    survive: ["SIGINT"],
    exit: 42,
    detached: true,
  });
  const { agent, sherlock } = session;
  // A terminal sends SIGINT to the whole foreground process group.
  sherlock.killGroup("SIGINT");
  await agent.signalled(1);
  agent.release();
  const result = await sherlock.result;
  // sherlock exits with the agent's own code: it was alive when the agent
  // exited (had SIGINT killed it, it would have died by the signal).
  assert.equal(result.signal, null);
  assert.equal(result.code, 42);
  assert.equal(result.stderr, "");
  assert.deepEqual(agent.record().signals, ["SIGINT"]);
  assertCleanedUp(home);
});

Deno.test("Ctrl-C that ends the agent: exit 130, cleaned up", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  await using session = await startWaitingSession(home, ["fake"], {
    detached: true,
  });
  const { agent, sherlock } = session;
  sherlock.killGroup("SIGINT");
  const result = await sherlock.result;
  assert.equal(result.signal, null);
  assert.equal(result.code, 130);
  assert.deepEqual(agent.record().signals, ["SIGINT"]);
  assertCleanedUp(home);
});

Deno.test("SIGTERM reaches what a launcher agent started, as a shell's job signal would", async () => {
  // Like the npm copilot launcher or Gemini's relauncher: the agent ignores
  // SIGTERM and waits for a child that does the work.
  await using home = await createTestHome();
  const marker = join(home.scratch, "child-got-term");
  const ready = join(home.scratch, "child-ready");
  const launcher = join(home.bin, "launcher");
  Deno.writeTextFileSync(
    launcher,
    `#!/bin/sh
/bin/sh -c 'trap "echo TERM > ${marker}; exit 0" TERM; echo > ${ready}; while :; do sleep 0.05; done' &
child=$!
trap '' TERM
wait $child
exit 5
`,
  );
  Deno.chmodSync(launcher, 0o755);
  home.writeProfile(
    "launcher",
    profileToml({ name: "launcher", executable: "launcher" }),
  );
  const sherlock = startSherlock(["launcher"], {
    env: home.env,
    detached: true,
  });
  try {
    await waitUntil(() => exists(ready), "the launcher's child to start");
    sherlock.kill("SIGTERM");
    await waitUntil(
      () => exists(marker),
      "the launcher's child to get SIGTERM",
    );
  } catch (error) {
    sherlock.killGroup("SIGKILL");
    throw error;
  }
  const result = await sherlock.result;
  assert.equal(Deno.readTextFileSync(marker).trim(), "TERM");
  assert.equal(result.code, 5, "the launcher exits once its child is gone");
  assertCleanedUp(home);
});

Deno.test("Ctrl-C while a token is fetched, before the agent starts: exit 130 at once, the agent never starts (issue 17, item 14)", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  // The credential helper blocks until the test releases it: sherlock is
  // then waiting in the last step before the agent's start.
  const fetching = join(home.scratch, "fetching");
  const release = join(home.scratch, "release");
  home.addHelperService("github", {
    before: `touch ${sh(fetching)}; ` +
      `while [ ! -e ${sh(release)} ]; do sleep 0.05; done`,
  });
  await home.login();
  using agent = new AgentRun(home.scratch, {
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const sherlock = startSherlock(["run", "fake"], {
    env: { ...home.env, ...agent.env },
    cwd: home.work,
    detached: true,
    timeoutMs: 60_000,
  });
  try {
    await waitUntil(() => exists(fetching), "the token fetch to start");
    // A terminal sends SIGINT to the whole foreground process group.
    sherlock.killGroup("SIGINT");
    // Not released yet: sherlock does not wait for the helper to finish.
    const result = await sherlock.result;
    assert.equal(result.signal, null, "sherlock exits, not killed by SIGINT");
    assert.equal(result.code, 130, result.stderr);
    assert.doesNotMatch(result.stderr, /internal error|\n\s+at /);
  } finally {
    Deno.writeTextFileSync(release, "");
  }
  assert.equal(agent.hasStarted, false, "the agent started after Ctrl-C");
  assert.deepEqual(home.sessionRecords(), []);
  assert.deepEqual(
    home.runtimeFiles().filter((name) => !name.startsWith("broker.")),
    [],
  );
});
