/**
 * The daemon against a hostile process of the same user and against floods:
 * its memory is not readable, logins are serialized and slowed after
 * failures, open connections are bounded, and its logs are rotated.
 * Real daemons on real sockets, checked as an operator would.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type BrokerHome,
  createBrokerHome,
  PASSPHRASE,
} from "../helpers/broker_home.ts";
import { lines, sherlockCommand } from "../helpers/sherlock.ts";
import { modeOf } from "../helpers/files.ts";
import { appendAudit } from "../../lib/broker/daemon/audit_log.ts";
import { brokerLogWriter } from "../../lib/broker/daemon/serve.ts";
import type { Whoami } from "../../lib/broker/protocol.ts";
import { unixHttpRequest } from "../../lib/runtime/unix_http.ts";

/**
 * The argv prefix that runs a command as a process of this user without
 * capabilities: as root, `setpriv` drops them (a root process with
 * CAP_SYS_PTRACE reads any process's memory, so only a capability-less one
 * shows what another process of the same user can do); otherwise nothing.
 */
function withoutCapabilities(): string[] {
  return Deno.uid() === 0
    ? ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]
    : [];
}

Deno.test({
  name: "the daemon's /proc/<pid>/environ is not readable by the same user",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    await using home = await createBrokerHome();
    // The daemon inherits the starter's capabilities: start it as a plain
    // process of this user would.
    const [command, ...args] = [
      ...withoutCapabilities(),
      ...sherlockCommand(["broker", "start"]),
    ];
    const started = await new Deno.Command(command, {
      args,
      env: home.env,
      clearEnv: true,
      cwd: home.work,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(started.code, 0, new TextDecoder().decode(started.stderr));
    const health = await home.health();
    assert.ok(health, "the broker answers");
    await home.login();

    // What `cat /proc/<pid>/environ` (or a debugger, or /proc/<pid>/mem)
    // run by another process of this user gets.
    const [reader, ...readerArgs] = [
      ...withoutCapabilities(),
      "cat",
      `/proc/${health.pid}/environ`,
    ];
    const read = await new Deno.Command(reader, {
      args: readerArgs,
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.notEqual(read.code, 0, "another process read the daemon's environ");
    assert.match(new TextDecoder().decode(read.stderr), /Permission denied/);
  },
});

Deno.test("without config.toml, the store locks after an hour without use", async () => {
  await using home = await createBrokerHome();
  const login = await home.login();
  assert.match(login.stdout, /locks when idle at \d{4}-/);
  const who = await unixHttpRequest({
    socket: home.socket,
    method: "GET",
    path: "/v1/whoami",
    timeoutMs: 30_000,
  });
  const { since, locksAt } = who.body as Whoami;
  assert.ok(since && locksAt, JSON.stringify(who.body));
  const seconds = (Date.parse(locksAt) - Date.parse(since)) / 1000;
  assert.ok(Math.abs(seconds - 3600) < 5, `locks after ${seconds} s`);
});

/** A POST /v1/login straight to the socket; the answer's status. */
async function rawLogin(home: BrokerHome, passphrase: string): Promise<number> {
  const answer = await unixHttpRequest({
    socket: home.socket,
    method: "POST",
    path: "/v1/login",
    body: { passphrase },
    timeoutMs: 120_000,
  });
  return answer.status;
}

/** A field of /proc/<pid>/status in KiB (VmHWM: the peak resident size). */
function statusKib(pid: number, field: string): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
  assert.ok(match, `no ${field} in /proc/${pid}/status`);
  return Number(match[1]);
}

Deno.test({
  name: "concurrent logins derive keys one at a time: the peak memory stays",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    await using home = await createBrokerHome();
    await home.login();
    const pid = (await home.health())!.pid;
    // One derivation (scrypt, 128 MiB) is in the peak already.
    const before = statusKib(pid, "VmHWM");
    const statuses = await Promise.all(
      Array.from({ length: 6 }, () => rawLogin(home, PASSPHRASE)),
    );
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200]);
    const grownMib = (statusKib(pid, "VmHWM") - before) / 1024;
    // Six at once would add five more derivations' 640 MiB.
    assert.ok(grownMib < 256, `the peak grew by ${grownMib.toFixed(0)} MiB`);
  },
});

Deno.test("after wrong passphrases the next login waits, longer each time", async () => {
  await using home = await createBrokerHome();
  await home.login();
  // Three wrong ones in a row: the next waits 4 s after the third.
  for (let failure = 0; failure < 3; failure++) {
    assert.equal(await rawLogin(home, "wrong passphrase"), 401);
  }
  const afterThird = Date.now();
  assert.equal(await rawLogin(home, PASSPHRASE), 200);
  const waited = Date.now() - afterThird;
  assert.ok(waited >= 3900, `the fourth login came after ${waited} ms`);
});

Deno.test("600 idle connections: the daemon keeps at most 256 open and still answers", async () => {
  await using home = await createBrokerHome();
  await home.sherlock(["broker", "start"]);
  const idle: Deno.UnixConn[] = [];
  try {
    for (let index = 0; index < 600; index++) {
      idle.push(await Deno.connect({ transport: "unix", path: home.socket }));
    }
    const health = await home.health();
    assert.ok(health, "the broker answers /v1/health");
    // Writing to a connection the daemon closed fails at once (EPIPE).
    let open = 0;
    for (const connection of idle) {
      try {
        await connection.write(new TextEncoder().encode("G"));
        open++;
      } catch {
        // Closed by the daemon.
      }
    }
    assert.ok(open <= 256, `${open} idle connections are still open`);
    assert.ok(await home.health(), "the broker still answers");
  } finally {
    for (const connection of idle) {
      try {
        connection.close();
      } catch {
        // Already closed.
      }
    }
  }
});

Deno.test("the audit log is rotated by size, three kept, and `broker log -n` reads across them", async () => {
  await using home = await createBrokerHome();
  const stateDir = join(home.stateHome, "sherlock");
  for (let index = 0; index < 60; index++) {
    appendAudit(stateDir, {
      event: "token",
      agent: "fake",
      session: `session${String(index).padStart(2, "0")}`,
      service: "github",
      source: "command",
    }, { maxBytes: 1000 });
  }
  const names = [...Deno.readDirSync(stateDir)].map((entry) => entry.name)
    .filter((name) => name.startsWith("audit.log")).sort();
  assert.deepEqual(names, [
    "audit.log",
    "audit.log.1",
    "audit.log.2",
    "audit.log.3",
  ]);
  for (const name of names) {
    const path = join(stateDir, name);
    assert.equal(modeOf(path), 0o600, name);
    assert.ok(Deno.statSync(path).size <= 1000, `${name} is too large`);
  }

  const log = await home.sherlock(["broker", "log", "-n", "12"]);
  assert.equal(log.code, 0, log.stderr);
  const sessions = lines(log.stdout).slice(1).map((row) =>
    /session\d\d/.exec(row)?.[0]
  );
  assert.deepEqual(
    sessions,
    Array.from({ length: 12 }, (_, index) => `session${48 + index}`),
  );
});

Deno.test("the daemon's broker.log is rotated by size too", () => {
  const folder = Deno.makeTempDirSync();
  try {
    const path = join(folder, "broker.log");
    const log = brokerLogWriter(path, { maxBytes: 200, keep: 2 });
    for (let index = 0; index < 40; index++) log(`line ${index}`);
    const names = [...Deno.readDirSync(folder)].map((entry) => entry.name)
      .sort();
    assert.deepEqual(names, ["broker.log", "broker.log.1", "broker.log.2"]);
    for (const name of names) {
      assert.equal(modeOf(join(folder, name)), 0o600, name);
      assert.ok(Deno.statSync(join(folder, name)).size <= 200, name);
    }
    assert.match(Deno.readTextFileSync(path), /line 39\n$/);
  } finally {
    Deno.removeSync(folder, { recursive: true });
  }
});

Deno.test("a broker.log message cannot forge an entry or reach the reader's terminal", () => {
  const folder = Deno.makeTempDirSync();
  try {
    const path = join(folder, "broker.log");
    const log = brokerLogWriter(path);
    log("service a\\n\nfake 2026-01-01T00:00:00Z entry\x1b[31m\tend");
    const text = Deno.readTextFileSync(path);
    assert.equal(text.split("\n").length, 2, "one entry, one line");
    assert.match(
      text,
      / service a\\\\n\\nfake 2026-01-01T00:00:00Z entry\\x1b\[31m\\tend\n$/,
    );
    assert.ok(!text.includes("\x1b"), "no raw escape character");
  } finally {
    Deno.removeSync(folder, { recursive: true });
  }
});
