/**
 * A runtime folder that is not the operator's alone: another user's folder
 * planted at the broker's path with a listening socket in it, a folder of
 * ours open to others, a symlinked folder, another user's socket in our
 * folder. Every client command and the daemon itself must refuse before
 * connecting, so the planted server (a real Unix-socket server that
 * records every connection) receives nothing: no passphrase, no secret,
 * not even a health check. Without `XDG_RUNTIME_DIR` the folder lives
 * under the operator's own state folder, where nobody else can plant it.
 *
 * The cases of "another user" chown to `nobody` (65534), which needs root.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { VERSION } from "../../lib/version.ts";
import {
  type BrokerHome,
  createBrokerHome,
  PASSPHRASE,
} from "../helpers/broker_home.ts";
import { modeOf } from "../helpers/files.ts";
import {
  lines,
  runSherlock,
  type SherlockResult,
} from "../helpers/sherlock.ts";
import { brokerHealth } from "../helpers/socket_http.ts";
import { exists, waitUntil } from "../helpers/wait.ts";

const IS_ROOT = Deno.uid() === 0;
const NOBODY = 65534;
const SECRET_VALUE = "sekrit-value-that-must-stay-home";

/**
 * A server on a Unix socket that answers like a broker (health, whoami,
 * login…) and records every connection and every byte it receives.
 */
class RecordingServer implements AsyncDisposable {
  /** Every connection's bytes, as text. */
  readonly received: string[] = [];
  readonly #listener: Deno.UnixListener;
  readonly #serving: Promise<void>;
  readonly #open = new Set<Promise<void>>();

  constructor(path: string) {
    this.#listener = Deno.listen({ transport: "unix", path });
    this.#serving = this.#serve();
  }

  async #serve(): Promise<void> {
    try {
      for await (const connection of this.#listener) {
        const index = this.received.push("") - 1;
        const handled = this.#answer(connection, index);
        this.#open.add(handled);
        handled.finally(() => this.#open.delete(handled));
      }
    } catch {
      // Closed.
    }
  }

  async #answer(connection: Deno.UnixConn, index: number): Promise<void> {
    const buffer = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const count = await connection.read(buffer);
        if (count === null) break;
        this.received[index] += new TextDecoder().decode(
          buffer.subarray(0, count),
        );
        const text = this.received[index];
        const end = text.indexOf("\r\n\r\n");
        if (end === -1) continue;
        const length = Number(/content-length: *(\d+)/i.exec(text)?.[1] ?? 0);
        if (text.length - end - 4 < length) continue;
        const body = JSON.stringify(answerFor(text));
        await connection.write(
          new TextEncoder().encode(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" +
              `Connection: close\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
          ),
        );
        break;
      }
    } catch {
      // The client went away.
    } finally {
      connection.close();
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#listener.close();
    await this.#serving;
    await Promise.all(this.#open);
  }
}

/** What a broker would answer, so that a client that trusts it goes on. */
function answerFor(request: string): unknown {
  const path = request.split(" ")[1];
  const who = { loggedIn: true, provider: "local", storeExists: true };
  if (path === "/v1/health") {
    return {
      ok: true,
      version: VERSION,
      pid: Deno.pid,
      started: new Date().toISOString(),
    };
  }
  if (path === "/v1/login") return { ...who, created: false };
  if (path === "/v1/secrets") return { secrets: [] };
  if (path === "/v1/token") return { token: "planted-token" };
  if (path === "/v1/tokens") return { results: [] };
  return who;
}

/** Every command that talks to the broker, and what it is given. */
function clientCommands(
  home: BrokerHome,
): { args: string[]; stdin?: string; env?: Record<string, string> }[] {
  return [
    { args: ["login"], stdin: `${PASSPHRASE}\n` },
    { args: ["logout"] },
    { args: ["whoami"] },
    { args: ["secret", "set", "planted"], stdin: `${SECRET_VALUE}\n` },
    { args: ["secret", "ls"] },
    { args: ["secret", "rm", "planted"] },
    { args: ["broker", "start"] },
    { args: ["broker", "status"] },
    { args: ["broker", "stop"] },
    { args: ["run", "fake"] },
    {
      args: [
        "shim",
        "--socket",
        home.socket,
        "--session",
        "s1",
        "--agent",
        "fake",
        "--token-env",
        "GITHUB_TOKEN",
        "github",
        "--",
        "/bin/true",
      ],
      // A shim presents a session's capability (from its entry's env).
      env: { SHERLOCK_SESSION_CAPABILITY: "0".repeat(64) },
    },
  ];
}

/** Asserts a refusal: exit 73, the one line expected, nothing secret. */
function assertRefused(
  result: SherlockResult,
  what: string,
  expected: string,
): void {
  assert.equal(result.code, 73, `${what}: ${result.stderr}`);
  assert.deepEqual(lines(result.stderr), [`sherlock: ${expected}`], what);
  assert.equal(result.stdout.includes(PASSPHRASE), false);
}

/**
 * Runs every client command against `home` and asserts that each refuses
 * with `expected` and that the planted server heard nothing.
 */
async function assertEveryCommandRefuses(
  home: BrokerHome,
  server: RecordingServer,
  expected: string,
): Promise<void> {
  home.addAgent();
  home.addHelperService("github");
  for (const command of clientCommands(home)) {
    const result = await home.sherlock(command.args, {
      stdin: command.stdin,
      env: command.env,
    });
    assertRefused(result, command.args.join(" "), expected);
  }
  assert.deepEqual(server.received, [], "the planted server heard nothing");
  assert.deepEqual(home.daemonPids(), [], "no daemon was started");
}

Deno.test({
  name:
    "another user's runtime folder with a listening socket: every command refuses, the passphrase never leaves",
  ignore: !IS_ROOT,
  async fn() {
    await using home = await createBrokerHome();
    Deno.mkdirSync(home.runtimeDir, { mode: 0o700 });
    await using server = new RecordingServer(home.socket);
    Deno.chownSync(home.socket, NOBODY, NOBODY);
    Deno.chownSync(home.runtimeDir, NOBODY, NOBODY);
    await assertEveryCommandRefuses(
      home,
      server,
      `${home.runtimeDir} belongs to another user (uid ${NOBODY}); remove it or set XDG_RUNTIME_DIR`,
    );
  },
});

Deno.test("a runtime folder of ours open to others (0755): every command refuses, nothing is sent", async () => {
  await using home = await createBrokerHome();
  Deno.mkdirSync(home.runtimeDir);
  Deno.chmodSync(home.runtimeDir, 0o755);
  await using server = new RecordingServer(home.socket);
  await assertEveryCommandRefuses(
    home,
    server,
    `${home.runtimeDir} is open to other users (mode 0755); run "chmod 700 ${home.runtimeDir}" if you made it, or remove it`,
  );
  assert.equal(modeOf(home.runtimeDir), 0o755, "left as it was");
});

Deno.test("a symlink as the runtime folder: every command refuses, nothing is sent", async () => {
  await using home = await createBrokerHome();
  const elsewhere = join(home.root, "elsewhere");
  Deno.mkdirSync(elsewhere, { mode: 0o700 });
  Deno.chmodSync(elsewhere, 0o700);
  Deno.symlinkSync(elsewhere, home.runtimeDir);
  await using server = new RecordingServer(join(elsewhere, "broker.sock"));
  await assertEveryCommandRefuses(
    home,
    server,
    `${home.runtimeDir} is not a plain folder (a symlink or a file); remove it and try again`,
  );
});

Deno.test({
  name:
    "another user's socket in our private folder: every command refuses, nothing is sent",
  ignore: !IS_ROOT,
  async fn() {
    await using home = await createBrokerHome();
    Deno.mkdirSync(home.runtimeDir, { mode: 0o700 });
    Deno.chmodSync(home.runtimeDir, 0o700);
    await using server = new RecordingServer(home.socket);
    Deno.chownSync(home.socket, NOBODY, NOBODY);
    await assertEveryCommandRefuses(
      home,
      server,
      `${home.socket} belongs to another user (uid ${NOBODY}); remove it`,
    );
  },
});

Deno.test({
  name:
    "the daemon refuses another user's socket in its folder instead of taking it for a broker",
  ignore: !IS_ROOT,
  async fn() {
    await using home = await createBrokerHome();
    Deno.mkdirSync(home.runtimeDir, { mode: 0o700 });
    Deno.chmodSync(home.runtimeDir, 0o700);
    await using server = new RecordingServer(home.socket);
    Deno.chownSync(home.socket, NOBODY, NOBODY);
    const serve = await home.sherlock(["broker", "serve"]);
    assert.equal(serve.code, 73, serve.stderr);
    assert.deepEqual(lines(serve.stderr), [
      `sherlock: ${home.socket} belongs to another user (uid ${NOBODY}); remove it`,
    ]);
    assert.deepEqual(server.received, [], "it did not even connect");
    assert.equal(Deno.lstatSync(home.socket).uid, NOBODY, "left in place");
  },
});

Deno.test({
  name: "the daemon refuses to listen in another user's folder",
  ignore: !IS_ROOT,
  async fn() {
    await using home = await createBrokerHome();
    Deno.mkdirSync(home.runtimeDir, { mode: 0o700 });
    Deno.chownSync(home.runtimeDir, NOBODY, NOBODY);
    const serve = await home.sherlock(["broker", "serve"]);
    assert.equal(serve.code, 73, serve.stderr);
    assert.equal(lines(serve.stderr).length, 1, serve.stderr);
    assert.match(serve.stderr, /belongs to another user \(uid 65534\)/);
    assert.equal(exists(home.socket), false);
  },
});

/** The environment of `home` without `XDG_RUNTIME_DIR`. */
function withoutRuntimeDir(home: BrokerHome): Record<string, string> {
  const env = { ...home.env };
  delete (env as Record<string, string | undefined>).XDG_RUNTIME_DIR;
  return env;
}

/** Runs sherlock in `home` with exactly `env`. */
function sherlockWith(
  home: BrokerHome,
  env: Record<string, string>,
  args: string[],
  stdin?: string,
): Promise<SherlockResult> {
  return runSherlock(args, { env, cwd: home.work, stdin });
}

Deno.test({
  name:
    "without XDG_RUNTIME_DIR: the broker lives under the state folder, and a folder planted in /tmp is never used",
  ignore: !IS_ROOT,
  async fn() {
    await using home = await createBrokerHome();
    const env = withoutRuntimeDir(home);
    // The folder the old fallback used, planted by another user.
    const planted = join(env.TMPDIR, `sherlock-${Deno.uid()}`);
    Deno.mkdirSync(planted, { mode: 0o700 });
    await using server = new RecordingServer(join(planted, "broker.sock"));
    Deno.chownSync(join(planted, "broker.sock"), NOBODY, NOBODY);
    Deno.chownSync(planted, NOBODY, NOBODY);

    const folder = join(home.stateHome, "sherlock", "run");
    const socket = join(folder, "broker.sock");
    try {
      const login = await sherlockWith(home, env, ["login"], `${PASSPHRASE}\n`);
      assert.equal(login.code, 0, login.stderr);
      const health = await brokerHealth(socket);
      assert.ok(health, "the daemon answers under the state folder");
      assert.equal(modeOf(folder), 0o700);
      assert.equal(modeOf(socket), 0o600);
      assert.equal(Deno.lstatSync(socket).uid, Deno.uid());
      const whoami = await sherlockWith(home, env, ["whoami"]);
      assert.equal(whoami.code, 0, whoami.stderr);
      assert.deepEqual(server.received, [], "the planted server heard nothing");
    } finally {
      const stop = await sherlockWith(home, env, ["broker", "stop"]);
      assert.equal(stop.code, 0, stop.stderr);
      await waitUntil(
        () => !exists(socket),
        "the daemon under the state folder to stop",
      );
    }
  },
});

Deno.test("without XDG_RUNTIME_DIR and a state folder too long for a socket: one line naming XDG_RUNTIME_DIR", async () => {
  await using home = await createBrokerHome();
  const env = withoutRuntimeDir(home);
  env.XDG_STATE_HOME = join(home.root, "s".repeat(100));
  const socket = join(env.XDG_STATE_HOME, "sherlock", "run", "broker.sock");
  const result = await sherlockWith(home, env, ["login"], `${PASSPHRASE}\n`);
  assert.equal(result.code, 69, result.stderr);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: the broker's socket path ${socket} is ${socket.length} bytes, longer than the 107 a Unix socket allows; set XDG_RUNTIME_DIR to a shorter folder`,
  ]);
  assert.equal(
    exists(join(env.XDG_STATE_HOME, "sherlock", "run")),
    false,
    "no folder, so no daemon was started",
  );
});
