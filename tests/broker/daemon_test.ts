/**
 * The broker daemon's life: many clients starting it at once, a daemon
 * killed with SIGKILL, stale and foreign files at the socket's path,
 * `broker start|stop|status`. Real daemons on real sockets, each test with
 * its own HOME and runtime folder; every daemon is stopped at the end.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { createBrokerHome, PASSPHRASE } from "../helpers/broker_home.ts";
import { isAlive } from "../helpers/daemon_processes.ts";
import { modeOf } from "../helpers/files.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { lines, startSherlock } from "../helpers/sherlock.ts";
import { exists, waitUntil } from "../helpers/wait.ts";

Deno.test("20 clients at once on a fresh runtime folder: one daemon, all succeed, private socket", async () => {
  await using home = await createBrokerHome();
  assert.equal(exists(home.runtimeDir), false);
  const clients = Array.from(
    { length: 20 },
    (_, index) =>
      index % 2 === 0
        ? home.sherlock(["broker", "start"])
        : home.sherlock(["login"], { stdin: `${PASSPHRASE}\n` }),
  );
  const results = await Promise.all(clients);
  for (const [index, result] of results.entries()) {
    assert.equal(result.code, 0, `client ${index}: ${result.stderr}`);
    assert.equal(result.stderr, "");
  }
  const health = await home.health();
  assert.ok(health, "the daemon answers");
  // Every `broker start` names the same daemon.
  const pids = new Set(
    results.filter((_, index) => index % 2 === 0).map((result) =>
      /pid (\d+)/.exec(result.stdout)?.[1]
    ),
  );
  assert.deepEqual([...pids], [String(health.pid)]);
  // A daemon that lost the race leaves by itself; two serving never do.
  await waitUntil(
    () => home.daemonPids().length === 1,
    "exactly one broker daemon",
  );
  assert.deepEqual(home.daemonPids(), [health.pid]);
  // One store, created once; every login unlocked it.
  const created = results.filter((result) =>
    result.stdout.startsWith("created the store")
  );
  assert.equal(created.length, 1, "exactly one login created the store");
  assert.equal(Deno.lstatSync(home.socket).isSocket, true);
  assert.equal(modeOf(home.socket), 0o600);
  assert.equal(modeOf(home.runtimeDir), 0o700);
  const store = join(home.dataHome, "sherlock", "secrets.enc");
  assert.equal(modeOf(store), 0o600);
  assert.equal(modeOf(join(home.dataHome, "sherlock")), 0o700);
  const whoami = await home.sherlock(["whoami"]);
  assert.equal(whoami.code, 0);
});

Deno.test("a daemon killed with SIGKILL mid-session: the next run starts a new one and says to log in", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  home.addHelperService("github", { expiresIn: 3600 });
  await home.login();
  const before = await home.health();
  assert.ok(before);

  // A session is running when the daemon dies.
  const { AgentRun } = await import("../helpers/agent.ts");
  using agent = new AgentRun(home.scratch, {
    wait: true,
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const session = startSherlock(["run", "fake"], {
    env: { ...home.env, ...agent.env },
    cwd: home.work,
  });
  await agent.started();
  Deno.kill(before.pid, "SIGKILL");
  await waitUntil(() => !isAlive(before.pid), "the daemon to die");
  assert.equal(exists(home.socket), true, "a stale socket is left behind");
  agent.release();
  const ended = await session.result;
  assert.equal(ended.code, 0, "the running session is not affected");

  const next = await home.runAgent();
  assert.equal(next.result.code, 77, next.result.stderr);
  assert.equal(next.record, undefined, "the agent is not started");
  assert.equal(lines(next.result.stderr).length, 1);
  assert.match(next.result.stderr, /not logged in/);
  assert.match(next.result.stderr, /sherlock login/);
  const after = await home.health();
  assert.ok(after, "a new daemon answers");
  assert.notEqual(after.pid, before.pid);
  assert.deepEqual(home.daemonPids(), [after.pid]);
  assert.equal(modeOf(home.socket), 0o600);
});

Deno.test("a stale socket that nobody listens on is replaced", async () => {
  await using home = await createBrokerHome();
  Deno.mkdirSync(home.runtimeDir, { mode: 0o700 });
  // A process that listened and died without cleaning up.
  const listener = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `Deno.listen({ transport: "unix", path: ${
        JSON.stringify(home.socket)
      } }); setInterval(() => {}, 1000);`,
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  await waitUntil(() => exists(home.socket), "the socket to appear");
  listener.kill("SIGKILL");
  await listener.status;
  assert.equal(Deno.lstatSync(home.socket).isSocket, true);
  assert.equal(await home.health(), undefined, "nobody answers on it");

  const result = await home.sherlock(["broker", "start"]);
  assert.equal(result.code, 0, result.stderr);
  const health = await home.health();
  assert.ok(health, "the new daemon answers on the replaced socket");
  assert.equal(modeOf(home.socket), 0o600);
  assert.deepEqual(home.daemonPids(), [health.pid]);
});

Deno.test("a daemon stopping while a request runs never removes its successor's socket", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  const release = join(home.scratch, "release");
  const helper = home.tokenHelper("slow", {
    expiresIn: 3600,
    before: `while [ ! -e ${release} ]; do sleep 0.05; done`,
  });
  home.writeService(
    "slow",
    tokenServiceToml({ name: "slow", command: [helper.path], timeout: 120 }),
  );
  await home.login();
  const first = await home.health();
  assert.ok(first);
  // A session waits for its token while the daemon is asked to stop.
  const { AgentRun } = await import("../helpers/agent.ts");
  using agent = new AgentRun(home.scratch);
  const session = startSherlock(["run", "fake"], {
    env: { ...home.env, ...agent.env },
    cwd: home.work,
  });
  await waitUntil(() => helper.runs() === 1, "the helper to start");
  const stop = await home.sherlock(["broker", "stop"]);
  assert.equal(stop.code, 0, stop.stderr);
  assert.equal(isAlive(first.pid), true, "the old daemon finishes its request");
  // A new daemon takes over the path meanwhile.
  const start = await home.sherlock(["broker", "start"]);
  assert.equal(start.code, 0, start.stderr);
  const second = await home.health();
  assert.ok(second);
  assert.notEqual(second.pid, first.pid);
  Deno.writeTextFileSync(release, "");
  const ended = await session.result;
  assert.equal(ended.code, 0, `the open request completes: ${ended.stderr}`);
  assert.equal(agent.record().state, "exited");
  await waitUntil(() => !isAlive(first.pid), "the old daemon to exit");
  assert.deepEqual(await home.health(), second, "the new daemon still answers");
  assert.deepEqual(home.daemonPids(), [second.pid]);
});

Deno.test("a regular file at the socket's path: a clear error at once, the file untouched", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  home.writeService(
    "github",
    tokenServiceToml({ name: "github", command: ["/bin/false"] }),
  );
  Deno.mkdirSync(home.runtimeDir, { mode: 0o700 });
  Deno.writeTextFileSync(home.socket, "precious\n", { mode: 0o640 });

  for (const args of [["broker", "start"], ["run", "fake"], ["login"]]) {
    const result = await home.sherlock(args, { stdin: "passphrase\n" });
    assert.equal(result.code, 69, `${args.join(" ")}: ${result.stderr}`);
    assert.equal(lines(result.stderr).length, 1, result.stderr);
    assert.match(result.stderr, /broker\.sock exists and is not a socket/);
    assert.equal(Deno.readTextFileSync(home.socket), "precious\n");
    assert.equal(modeOf(home.socket), 0o640);
  }
  // Started by hand, the daemon refuses too, and says why.
  const serve = await home.sherlock(["broker", "serve"]);
  assert.equal(serve.code, 73, serve.stderr);
  assert.match(serve.stderr, /exists and is not a socket/);
  assert.equal(Deno.readTextFileSync(home.socket), "precious\n");
  assert.deepEqual(home.daemonPids(), []);
});

Deno.test("a runtime folder too long for a Unix socket: a clear error at once", async () => {
  await using home = await createBrokerHome();
  const deep = join(home.runtimeHome, "x".repeat(120));
  Deno.mkdirSync(deep, { mode: 0o700 });
  const result = await home.sherlock(["broker", "start"], {
    env: { XDG_RUNTIME_DIR: deep },
  });
  assert.equal(result.code, 69, result.stderr);
  assert.equal(lines(result.stderr).length, 1);
  assert.match(result.stderr, /longer than the 107 a Unix socket allows/);
  assert.match(result.stderr, /XDG_RUNTIME_DIR/);
  assert.deepEqual(home.daemonPids(), []);
});

Deno.test("broker status, stop and start: exit codes and what they say", async () => {
  await using home = await createBrokerHome();
  const down = await home.sherlock(["broker", "status"]);
  assert.equal(down.code, 69);
  assert.match(down.stdout, /broker is not running/);
  const stopDown = await home.sherlock(["broker", "stop"]);
  assert.equal(stopDown.code, 0);
  assert.match(stopDown.stdout, /broker is not running/);

  const start = await home.sherlock(["broker", "start"]);
  assert.equal(start.code, 0, start.stderr);
  const health = await home.health();
  assert.ok(health);
  assert.match(start.stdout, new RegExp(`pid ${health.pid}`));
  const again = await home.sherlock(["broker", "start"]);
  assert.equal(again.code, 0);
  assert.match(again.stdout, new RegExp(`pid ${health.pid}`));

  const status = await home.sherlock(["broker", "status"]);
  assert.equal(status.code, 0, status.stderr);
  assert.match(status.stdout, new RegExp(`running, pid ${health.pid}`));
  assert.match(status.stdout, /no local store yet/);

  const stop = await home.sherlock(["broker", "stop"]);
  assert.equal(stop.code, 0, stop.stderr);
  assert.match(
    stop.stdout,
    new RegExp(`broker stopped \\(was pid ${health.pid}\\)`),
  );
  await waitUntil(() => !isAlive(health.pid), "the daemon to exit");
  assert.equal(exists(home.socket), false, "the socket is removed");
  assert.deepEqual(home.daemonPids(), []);
  const log = Deno.readTextFileSync(
    join(home.stateHome, "sherlock", "broker.log"),
  );
  assert.match(log, /broker serving on/);
  assert.match(log, /broker stopped/);
});
