/**
 * Sessions side by side and after a crash: each session's own rendered
 * file, removal at the end whatever the end, the sweep after sherlock was
 * killed, and config-file paths that are taken.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  addFakeAgent,
  AgentRun,
  killOrphanedAgent,
  startWaitingSession,
  type WaitingSession,
} from "../helpers/agent.ts";
import { createTestHome, listNames, type TestHome } from "../helpers/home.ts";
import { lines, runSherlock } from "../helpers/sherlock.ts";
import { exists } from "../helpers/wait.ts";

/**
 * A session whose sherlock was SIGKILLed while its agent runs: the agent
 * is orphaned, and nothing could clean up. Disposing releases the agent.
 */
async function crashedSession(home: TestHome): Promise<WaitingSession> {
  const session = await startWaitingSession(home, ["fake"], {
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  session.sherlock.kill("SIGKILL");
  assert.equal((await session.sherlock.exited).signal, "SIGKILL");
  return session;
}

Deno.test("two sessions of one agent: each its own file; neither removes the other's", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  const config = "env:SHERLOCK_MCP_CONFIG";
  await using one = await startWaitingSession(home, ["fake"], { config });
  await using two = await startWaitingSession(home, ["fake"], { config });
  const [a, b] = [one.started.config!, two.started.config!];
  assert.notEqual(a.path, b.path);
  assert.equal(a.mode, 0o600);
  assert.equal(b.mode, 0o600);
  assert.equal(home.sessionRecords().length, 2);

  one.agent.release();
  assert.equal((await one.sherlock.result).code, 0);
  assert.equal(exists(a.path), false);
  // The second session's file is still there, unchanged.
  assert.equal(Deno.readTextFileSync(b.path), b.text);
  assert.equal(home.sessionRecords().length, 1);

  two.agent.release();
  assert.equal((await two.sherlock.result).code, 0);
  assert.deepEqual(home.runtimeFiles(), []);
  assert.deepEqual(home.sessionRecords(), []);
});

Deno.test("sherlock SIGKILLed while the agent runs: the file stays while the agent runs; once it ends, the next run sweeps it", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  await using crashed = await crashedSession(home);
  const stale = crashed.started.config!;
  // Nothing could clean up: the file and the record are still there.
  assert.equal(Deno.readTextFileSync(stale.path), stale.text);
  assert.equal(home.sessionRecords().length, 1);

  // Another session while the orphaned agent still runs and reads its
  // config: the session is not over, so its file stays.
  addFakeAgent(home, { name: "other", executable: "fake" });
  using next = new AgentRun(home.scratch);
  const result = await runSherlock(["other"], {
    env: { ...home.env, ...next.env },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(Deno.readTextFileSync(stale.path), stale.text);
  assert.equal(home.sessionRecords().length, 1);

  // Once the agent is gone too, the next session (of any agent) sweeps
  // them before it starts.
  await killOrphanedAgent(crashed);
  using last = new AgentRun(home.scratch);
  const swept = await runSherlock(["other"], {
    env: { ...home.env, ...last.env },
  });
  assert.equal(swept.code, 0, swept.stderr);
  assert.equal(exists(stale.path), false);
  assert.deepEqual(home.sessionRecords(), []);
  assert.deepEqual(home.runtimeFiles(), []);
});

Deno.test("a dry run neither sweeps nor writes anything", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  await using _crashed = await crashedSession(home);
  const files = home.runtimeFiles();
  const records = home.sessionRecords();
  assert.equal(files.length, 1);
  assert.equal(records.length, 1);
  const result = await runSherlock(["run", "--dry-run", "fake"], {
    env: home.env,
  });
  assert.equal(result.code, 0);
  assert.deepEqual(home.runtimeFiles(), files);
  assert.deepEqual(home.sessionRecords(), records);
});

Deno.test("config-file: a foreign file at the path is left byte for byte; exit 73, one line", async () => {
  await using home = await createTestHome();
  const path = join(home.home, ".fake", "mcp.json");
  addFakeAgent(home, { name: "fake", mcp: { mode: "config-file", path } });
  Deno.mkdirSync(join(home.home, ".fake"));
  const bytes = new TextEncoder().encode('{"mcpServers": {"mine": {}}}\n');
  Deno.writeFileSync(path, bytes, { mode: 0o644 });
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 73);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: ${path} exists and sherlock did not write it; move it away or change the profile's [mcp] path`,
  ]);
  assert.equal(agent.hasStarted, false);
  assert.deepEqual(Deno.readFileSync(path), bytes);
  assert.equal((Deno.statSync(path).mode ?? 0) & 0o777, 0o644);
  assert.deepEqual(listNames(join(home.home, ".fake")), ["mcp.json"]);
  assert.deepEqual(home.sessionRecords(), []);
});

Deno.test("config-file: a file left by a dead session is swept and replaced", async () => {
  await using home = await createTestHome();
  const path = join(home.home, ".fake", "mcp.json");
  addFakeAgent(home, { name: "fake", mcp: { mode: "config-file", path } });
  {
    await using crashed = await crashedSession(home);
    assert.ok(exists(path));
    await killOrphanedAgent(crashed);
  }

  using agent = new AgentRun(home.scratch, { config: `path:${path}` });
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  assert.equal(agent.record().config!.text, '{\n  "mcpServers": {}\n}\n');
  assert.equal(exists(path), false);
  assert.deepEqual(home.sessionRecords(), []);
});

Deno.test("config-file: a second live session gets exit 73 naming the first", async () => {
  await using home = await createTestHome();
  const path = join(home.home, ".fake", "mcp.json");
  addFakeAgent(home, { name: "fake", mcp: { mode: "config-file", path } });
  await using first = await startWaitingSession(home, ["fake"]);
  const [record] = home.sessionRecords();
  const session = record.replace(/\.json$/, "");
  const text = Deno.readTextFileSync(path);

  using second = new AgentRun(home.scratch);
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...second.env },
  });
  assert.equal(result.code, 73);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: ${path} is in use by sherlock session ${session} (fake, pid ${first.sherlock.pid}); wait for it to end`,
  ]);
  assert.equal(second.hasStarted, false);
  // The first session's file and record are untouched.
  assert.equal(Deno.readTextFileSync(path), text);
  assert.deepEqual(home.sessionRecords(), [record]);

  first.agent.release();
  assert.equal((await first.sherlock.result).code, 0);
  assert.equal(exists(path), false);
  assert.deepEqual(home.sessionRecords(), []);
});

Deno.test("without XDG_RUNTIME_DIR: a private folder in the state folder", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  const env = { ...home.env };
  delete (env as Record<string, string | undefined>).XDG_RUNTIME_DIR;
  using agent = new AgentRun(home.scratch, {
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const result = await runSherlock(["fake"], { env: { ...env, ...agent.env } });
  assert.equal(result.code, 0, result.stderr);
  const folder = join(home.stateHome, "sherlock", "run");
  const config = agent.record().config!;
  assert.equal(config.path.startsWith(`${folder}/fake.`), true, config.path);
  assert.equal(config.mode, 0o600);
  assert.equal(config.dirMode, 0o700);
  assert.deepEqual(listNames(folder), []);
});

Deno.test("without XDG_RUNTIME_DIR: a symlink planted as the folder is refused (73)", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  const env = { ...home.env };
  delete (env as Record<string, string | undefined>).XDG_RUNTIME_DIR;
  const target = join(home.root, "attacker");
  Deno.mkdirSync(target, { mode: 0o777 });
  const folder = join(home.stateHome, "sherlock", "run");
  Deno.mkdirSync(join(home.stateHome, "sherlock"), { mode: 0o700 });
  Deno.symlinkSync(target, folder);
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["fake"], { env: { ...env, ...agent.env } });
  assert.equal(result.code, 73);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: ${folder} is not a plain folder (a symlink or a file); remove it and try again`,
  ]);
  assert.equal(agent.hasStarted, false);
  assert.deepEqual(listNames(target), []);
  assert.deepEqual(home.sessionRecords(), []);
});

Deno.test("a file where sherlock's runtime or state folder should be: exit 73, one line", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });

  Deno.writeTextFileSync(home.runtimeDir, "in the way");
  using first = new AgentRun(home.scratch);
  const runtime = await runSherlock(["fake"], {
    env: { ...home.env, ...first.env },
  });
  assert.equal(runtime.code, 73);
  assert.deepEqual(lines(runtime.stderr), [
    `sherlock: ${home.runtimeDir} is not a plain folder (a symlink or a file); remove it and try again`,
  ]);
  assert.equal(first.hasStarted, false);
  assert.deepEqual(home.sessionRecords(), []);
  Deno.removeSync(home.runtimeDir);

  const state = join(home.stateHome, "sherlock");
  Deno.writeTextFileSync(state, "in the way");
  using second = new AgentRun(home.scratch);
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...second.env },
  });
  assert.equal(result.code, 73);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: cannot read folder ${state}/sessions: a part of its path is not a folder`,
  ]);
  assert.ok(!result.stderr.includes("internal error"), result.stderr);
  assert.equal(second.hasStarted, false);
  assert.deepEqual(home.runtimeFiles(), []);
});
