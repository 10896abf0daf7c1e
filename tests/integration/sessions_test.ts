/**
 * Sessions side by side and after a crash: each session's own rendered
 * file, removal at the end whatever the end, the sweep after sherlock was
 * killed, and config-file paths that are taken.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { addFakeAgent, AgentRun } from "../helpers/agent.ts";
import { createTestHome, listNames } from "../helpers/home.ts";
import { lines, runSherlock, startSherlock } from "../helpers/sherlock.ts";
import { exists } from "../helpers/wait.ts";

Deno.test("two sessions of one agent: each its own file; neither removes the other's", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  using first = new AgentRun(home.scratch, {
    wait: true,
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  using second = new AgentRun(home.scratch, {
    wait: true,
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const one = startSherlock(["fake"], { env: { ...home.env, ...first.env } });
  const two = startSherlock(["fake"], { env: { ...home.env, ...second.env } });
  const [a, b] = [await first.started(), await second.started()];
  assert.notEqual(a.config!.path, b.config!.path);
  assert.equal(a.config!.mode, 0o600);
  assert.equal(b.config!.mode, 0o600);
  assert.equal(home.sessionRecords().length, 2);

  first.release();
  assert.equal((await one.result).code, 0);
  assert.equal(exists(a.config!.path), false);
  // The second session's file is still there, unchanged.
  assert.equal(Deno.readTextFileSync(b.config!.path), b.config!.text);
  assert.equal(home.sessionRecords().length, 1);

  second.release();
  assert.equal((await two.result).code, 0);
  assert.deepEqual(home.runtimeFiles(), []);
  assert.deepEqual(home.sessionRecords(), []);
});

Deno.test("sherlock SIGKILLed while the agent runs: the file stays; the next run sweeps it", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  using orphan = new AgentRun(home.scratch, {
    wait: true,
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const killed = startSherlock(["fake"], {
    env: { ...home.env, ...orphan.env },
  });
  const started = await orphan.started();
  const stale = started.config!.path;
  const [staleRecord] = home.sessionRecords();
  killed.kill("SIGKILL");
  assert.equal((await killed.exited).signal, "SIGKILL");
  // Nothing could clean up: the file and the record are still there.
  assert.equal(Deno.readTextFileSync(stale), started.config!.text);
  assert.deepEqual(home.sessionRecords(), [staleRecord]);

  // The next session (of any agent) sweeps them before it starts.
  addFakeAgent(home, { name: "other", executable: "fake" });
  using next = new AgentRun(home.scratch);
  const result = await runSherlock(["other"], {
    env: { ...home.env, ...next.env },
  });
  assert.equal(result.code, 0);
  assert.equal(exists(stale), false);
  assert.deepEqual(home.sessionRecords(), []);
  assert.deepEqual(home.runtimeFiles(), []);

  orphan.release();
  await killed.result;
});

Deno.test("a dry run neither sweeps nor writes anything", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  using orphan = new AgentRun(home.scratch, { wait: true });
  const killed = startSherlock(["fake"], {
    env: { ...home.env, ...orphan.env },
  });
  await orphan.started();
  killed.kill("SIGKILL");
  await killed.exited;
  const files = home.runtimeFiles();
  const records = home.sessionRecords();
  const result = await runSherlock(["run", "--dry-run", "fake"], {
    env: home.env,
  });
  assert.equal(result.code, 0);
  assert.deepEqual(home.runtimeFiles(), files);
  assert.deepEqual(home.sessionRecords(), records);
  orphan.release();
  await killed.result;
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
  using orphan = new AgentRun(home.scratch, { wait: true });
  const killed = startSherlock(["fake"], {
    env: { ...home.env, ...orphan.env },
  });
  await orphan.started();
  killed.kill("SIGKILL");
  await killed.exited;
  assert.ok(exists(path));
  orphan.release();
  await killed.result;

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
  using first = new AgentRun(home.scratch, { wait: true });
  const running = startSherlock(["fake"], {
    env: { ...home.env, ...first.env },
  });
  await first.started();
  const [record] = home.sessionRecords();
  const session = record.replace(/\.json$/, "");
  const text = Deno.readTextFileSync(path);

  using second = new AgentRun(home.scratch);
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...second.env },
  });
  assert.equal(result.code, 73);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: ${path} is in use by sherlock session ${session} (fake, pid ${running.pid}); wait for it to end`,
  ]);
  assert.equal(second.hasStarted, false);
  // The first session's file and record are untouched.
  assert.equal(Deno.readTextFileSync(path), text);
  assert.deepEqual(home.sessionRecords(), [record]);

  first.release();
  assert.equal((await running.result).code, 0);
  assert.equal(exists(path), false);
  assert.deepEqual(home.sessionRecords(), []);
});

Deno.test("without XDG_RUNTIME_DIR: a private per-user folder in TMPDIR", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  const env = { ...home.env };
  delete (env as Record<string, string | undefined>).XDG_RUNTIME_DIR;
  using agent = new AgentRun(home.scratch, {
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const result = await runSherlock(["fake"], { env: { ...env, ...agent.env } });
  assert.equal(result.code, 0, result.stderr);
  const folder = join(env.TMPDIR, `sherlock-${Deno.uid()}`);
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
  const folder = join(env.TMPDIR, `sherlock-${Deno.uid()}`);
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
