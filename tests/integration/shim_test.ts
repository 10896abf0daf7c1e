/**
 * The token shim (lib/cli/shim.ts) as a real process against a real broker:
 * the server gets the token in its environment and nowhere else, stdio
 * passes through byte for byte (stdout is the MCP channel), exit codes and
 * signals pass through, and failures are one line on stderr. Each of these
 * twice: where the shim execs its server (it becomes the server: same pid,
 * the test as its parent, no Deno process left, a death by signal its
 * own), and with the spawn fallback (`SHERLOCK_SHIM_SPAWN=1`, as on
 * Windows: the shim stays as the server's parent). Then whole sessions
 * whose fake agent starts the rendered shim entries: with
 * `[render] tokens = "shim"`, and for a token with `$` in it.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { AgentRun, renderedServers } from "../helpers/agent.ts";
import {
  AGENT,
  auditEntries,
  type BrokerHome,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { registerSession } from "../../lib/broker/client.ts";
import { isAlive } from "../helpers/daemon_processes.ts";
import { descendantsInGroup } from "../../lib/os/processes.ts";
import { SHIM_SPAWN_VARIABLE } from "../../lib/launch/shim.ts";
import { filesContaining } from "../helpers/leaks.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { sh } from "../helpers/shell.ts";
import {
  assertNoStackTrace,
  HANG_GUARD_MS,
  lines,
  sherlockCommand,
} from "../helpers/sherlock.ts";
import { exists, waitUntil } from "../helpers/wait.ts";

/** The variable of a shim entry that holds the session's capability. */
const CAPABILITY_ENV = "SHERLOCK_SESSION_CAPABILITY";

/** What a stdio server started by the shim saw, written to scratch. */
interface ServerSaw {
  /** The value of its token variable. */
  token: string;
  /** The value of the capability variable in its own environment. */
  capability: string;
  /** The shim's argv (its parent), one word per element. */
  shimArgv: string[];
  /** The shim's environment. */
  shimEnv: string[];
  /** Its pid. */
  pid: number;
  /** Its parent's pid. */
  ppid: number;
}

/** How the shim starts its server: by exec where it can, or the fallback. */
type ShimMode = "exec" | "spawn";

const SHIM_MODES: readonly ShimMode[] = ["exec", "spawn"];

/** Makes every later run of sherlock in `home` use `mode`. */
function useMode(home: BrokerHome, mode: ShimMode): void {
  if (mode === "spawn") home.env[SHIM_SPAWN_VARIABLE] = "1";
  else delete home.env[SHIM_SPAWN_VARIABLE];
}

/**
 * Writes a stdio server (a /bin/sh script on PATH) that records its token
 * variable and its parent's (the shim's) argv and environment into
 * `scratch/<name>.*`, then runs `body` (default: echo stdin with cat).
 */
function writeServer(
  home: BrokerHome,
  name: string,
  options: { tokenEnv?: string; body?: string } = {},
): string {
  const out = join(home.scratch, name);
  const variable = options.tokenEnv ?? "API_TOKEN";
  return home.writeScript(
    name,
    [
      `printf '%s' "$${variable}" > ${sh(`${out}.token`)}`,
      `printf '%s' "$${CAPABILITY_ENV}" > ${sh(`${out}.capability`)}`,
      `cat /proc/$PPID/cmdline > ${sh(`${out}.shim-argv`)}`,
      `cat /proc/$PPID/environ > ${sh(`${out}.shim-env`)}`,
      `echo $PPID > ${sh(`${out}.ppid`)}`,
      `echo $$ > ${sh(`${out}.pid`)}`,
      options.body ?? "exec cat",
    ].join("\n"),
  );
}

/** What the server `name` recorded. */
function serverSaw(home: BrokerHome, name: string): ServerSaw {
  const out = join(home.scratch, name);
  const words = (file: string) =>
    Deno.readTextFileSync(file).split("\0").filter((word) => word !== "");
  return {
    token: Deno.readTextFileSync(`${out}.token`),
    capability: Deno.readTextFileSync(`${out}.capability`),
    shimArgv: words(`${out}.shim-argv`),
    shimEnv: words(`${out}.shim-env`),
    pid: Number(Deno.readTextFileSync(`${out}.pid`)),
    ppid: Number(Deno.readTextFileSync(`${out}.ppid`)),
  };
}

/**
 * A logged-in broker home with the service `api` whose helper prints
 * `token` (after running the shell lines `before`).
 */
async function apiHome(token: string, before?: string): Promise<BrokerHome> {
  const home = await createBrokerHome();
  try {
    const helper = home.tokenHelper("api", { token, before });
    home.writeService(
      "api",
      tokenServiceToml({
        name: "api",
        command: [helper.path],
        env: "API_TOKEN",
      }),
    );
    await home.login();
    return home;
  } catch (error) {
    await home[Symbol.asyncDispose]();
    throw error;
  }
}

/**
 * Registers a session with the home's broker as `sherlock run` does (this
 * process stands in for its sherlock) and returns the environment its
 * shim entries give the shim: the session's capability.
 */
async function shimSession(
  home: BrokerHome,
  services: string[] = ["api"],
): Promise<Record<string, string>> {
  const { capability } = await registerSession({
    socket: home.socket,
    session: crypto.randomUUID().replaceAll("-", "").slice(0, 12),
    agent: AGENT,
    services,
    pid: Deno.pid,
  });
  return { [CAPABILITY_ENV]: capability };
}

/**
 * Registers a session (see {@linkcode shimSession}) and puts its capability
 * into the home's environment, which every later run of sherlock gets.
 */
async function useSession(home: BrokerHome): Promise<void> {
  Object.assign(home.env, await shimSession(home));
}

/** The shim's argv for service `service` running `server…`. */
function shimArgs(
  home: BrokerHome,
  service: string,
  server: string[],
  more: string[] = [],
): string[] {
  return [
    "shim",
    "--socket",
    home.socket,
    "--session",
    "0123456789ab",
    "--agent",
    "fake",
    "--token-env",
    "API_TOKEN",
    ...more,
    service,
    "--",
    ...server,
  ];
}

/** How a shim run ended. */
interface ShimResult {
  /** The shim's pid (the server's, after an exec). */
  pid: number;
  code: number | null;
  signal: Deno.Signal | null;
  stdout: Uint8Array;
  stderr: string;
}

/**
 * Starts `sherlock <args>` with piped stdio and the HOME's environment
 * (plus `env`).
 */
function spawnSherlock(
  home: BrokerHome,
  args: string[],
  env: Record<string, string> = {},
): Deno.ChildProcess {
  const [program, ...rest] = sherlockCommand(args);
  return new Deno.Command(program, {
    args: rest,
    env: { ...home.env, ...env },
    clearEnv: true,
    cwd: home.work,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/**
 * Runs `sherlock <args>` to the end with `stdin` written (and closed) while
 * stdout is read, so that a large echo cannot deadlock; hang guard included.
 */
async function runShim(
  home: BrokerHome,
  args: string[],
  options: { stdin?: Uint8Array; env?: Record<string, string> } = {},
): Promise<ShimResult> {
  const stdin = options.stdin ?? new Uint8Array();
  const child = spawnSherlock(home, args, options.env);
  const guard = setTimeout(() => child.kill("SIGKILL"), HANG_GUARD_MS);
  try {
    const writing = (async () => {
      const writer = child.stdin.getWriter();
      try {
        await writer.write(stdin);
        await writer.close();
      } catch {
        // The shim exited without reading (a failure test).
      }
    })();
    const [output] = await Promise.all([child.output(), writing]);
    const stderr = new TextDecoder().decode(output.stderr);
    assertNoStackTrace(stderr);
    return {
      pid: child.pid,
      code: output.signal ? null : output.code,
      signal: output.signal,
      stdout: output.stdout,
      stderr,
    };
  } finally {
    clearTimeout(guard);
  }
}

const TOKEN = "tok_9f86d081884c7d659a2feaa0c55ad015";

for (const mode of SHIM_MODES) {
  Deno.test(`shim (${mode}): the server gets the token in its variable, and only there`, async () => {
    // The helper runs while the shim waits for the token: it records the
    // shim's argv and environment then, before any exec.
    const scratch = Deno.makeTempDirSync({ prefix: "shim-pid-" });
    const pidFile = join(scratch, "shim.pid");
    const saved = join(scratch, "shim");
    await using home = await apiHome(
      TOKEN,
      [
        `while [ ! -s ${sh(pidFile)} ]; do sleep 0.01; done`,
        `pid=$(cat ${sh(pidFile)})`,
        `cat /proc/$pid/cmdline > ${sh(`${saved}.argv`)}`,
        `cat /proc/$pid/environ > ${sh(`${saved}.env`)}`,
      ].join("\n"),
    );
    useMode(home, mode);
    await useSession(home);
    try {
      const server = writeServer(home, "api-server");
      const child = spawnSherlock(home, shimArgs(home, "api", [server]));
      Deno.writeTextFileSync(`${pidFile}.tmp`, `${child.pid}\n`);
      Deno.renameSync(`${pidFile}.tmp`, pidFile);
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode("ping\n"));
      await writer.close();
      const output = await child.output();
      const stderr = new TextDecoder().decode(output.stderr);
      assert.equal(output.code, 0, stderr);
      assert.equal(new TextDecoder().decode(output.stdout), "ping\n");
      assert.equal(stderr, "");
      const saw = serverSaw(home, "api-server");
      assert.equal(saw.token, TOKEN);
      // The session's capability is for the shim: the server does not get it.
      assert.equal(saw.capability, "");
      // The shim's own argv and environment never hold it.
      const words = (file: string) =>
        Deno.readTextFileSync(file).split("\0").filter((word) => word !== "");
      const shim = { argv: words(`${saved}.argv`), env: words(`${saved}.env`) };
      assert.ok(shim.argv.includes("shim"), shim.argv.join(" "));
      assert.ok(shim.argv.every((word) => !word.includes(TOKEN)));
      assert.ok(shim.env.length > 0);
      assert.ok(shim.env.every((entry) => !entry.includes(TOKEN)));
      assert.ok(!shim.env.some((entry) => entry.startsWith("API_TOKEN=")));
      if (mode === "spawn") {
        // The shim stays as the server's parent.
        assert.equal(saw.ppid, child.pid);
        assert.deepEqual(saw.shimArgv, shim.argv);
      } else {
        // The shim became the server: same pid, and its parent is the
        // agent (this test), whose argv and environment hold no token.
        assert.equal(saw.pid, child.pid);
        assert.equal(saw.ppid, Deno.pid);
        assert.ok(saw.shimArgv.every((word) => !word.includes(TOKEN)));
        assert.ok(saw.shimEnv.every((entry) => !entry.includes(TOKEN)));
      }
    } finally {
      Deno.removeSync(scratch, { recursive: true });
    }
  });
}

Deno.test("shim: --token-format writes the token into a template; $ patterns stay literal", async () => {
  const token = "a$$b$&c$1d$'e${HOME}f$`g";
  await using home = await apiHome(token);
  const server = writeServer(home, "fmt-server", { body: "exit 0" });
  const env = await shimSession(home);
  const result = await runShim(
    home,
    shimArgs(home, "api", [server], [
      "--token-format",
      "Bearer {token} ({token})",
    ]),
    { env },
  );
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout.length, 0);
  assert.equal(
    serverSaw(home, "fmt-server").token,
    `Bearer ${token} (${token})`,
  );

  // Without --token-format, the bare token.
  const bare = writeServer(home, "bare-server", { body: "exit 0" });
  const again = await runShim(home, shimArgs(home, "api", [bare]), { env });
  assert.equal(again.code, 0, again.stderr);
  assert.equal(serverSaw(home, "bare-server").token, token);
});

for (const mode of SHIM_MODES) {
  Deno.test(`shim (${mode}): stdin and stdout pass through byte for byte, in both directions`, async () => {
    await using home = await apiHome(TOKEN);
    useMode(home, mode);
    await useSession(home);
    const server = writeServer(home, "echo-server");
    // Every byte value, invalid UTF-8 included, and more than a pipe holds.
    const input = new Uint8Array(1024 * 1024 + 7);
    for (let index = 0; index < input.length; index++) {
      input[index] = (index * 7 + (index >> 8)) & 0xff;
    }
    const result = await runShim(home, shimArgs(home, "api", [server]), {
      stdin: input,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "");
    assert.equal(result.stdout.length, input.length);
    assert.ok(
      result.stdout.every((byte, index) => byte === input[index]),
      "stdout differs from stdin",
    );
  });
}

for (const mode of SHIM_MODES) {
  Deno.test(`shim (${mode}): the server's arguments, stderr and exit code pass through`, async () => {
    await using home = await apiHome(TOKEN);
    useMode(home, mode);
    await useSession(home);
    const server = writeServer(home, "exit-server", {
      body: [
        `printf '%s\\n' "$@"`,
        "echo 'a line on stderr' >&2",
        "exit 42",
      ].join("\n"),
    });
    const result = await runShim(
      home,
      shimArgs(home, "api", [server, "--", "two words", "--token-env", ""]),
    );
    assert.equal(result.code, 42);
    assert.equal(
      new TextDecoder().decode(result.stdout),
      "--\ntwo words\n--token-env\n\n",
    );
    assert.equal(result.stderr, "a line on stderr\n");

    const killed = writeServer(home, "killed-server", { body: "kill -9 $$" });
    const dead = await runShim(home, shimArgs(home, "api", [killed]));
    if (mode === "spawn") {
      // The shim reports it as 128+N, as a shell does.
      assert.equal(dead.code, 137);
    } else {
      // The server's own death by SIGKILL, as its parent sees it.
      assert.equal(dead.signal, "SIGKILL");
    }
    assert.equal(dead.stdout.length, 0);
  });
}

for (const mode of SHIM_MODES) {
  Deno.test(`shim (${mode}): SIGTERM to the shim reaches the server; the shim exits with its code`, async () => {
    await using home = await apiHome(TOKEN);
    useMode(home, mode);
    await useSession(home);
    const marker = join(home.scratch, "term-server.got");
    const server = writeServer(home, "term-server", {
      body: [
        `trap 'echo TERM > ${sh(marker)}; exit 143' TERM`,
        "while :; do sleep 0.05; done",
      ].join("\n"),
    });
    const child = spawnSherlock(home, shimArgs(home, "api", [server]));
    const guard = setTimeout(() => child.kill("SIGKILL"), HANG_GUARD_MS);
    try {
      const pidFile = join(home.scratch, "term-server.pid");
      const pid = Number(
        await waitUntil(() => {
          const text = exists(pidFile) ? Deno.readTextFileSync(pidFile) : "";
          return text.endsWith("\n") ? text.trim() : undefined;
        }, "the server to start"),
      );
      child.kill("SIGTERM");
      const output = await child.output();
      assert.equal(output.code, 143);
      assert.equal(output.stdout.length, 0);
      assert.equal(Deno.readTextFileSync(marker), "TERM\n");
      await waitUntil(() => !isAlive(pid), "the server to be gone");
    } finally {
      clearTimeout(guard);
    }
  });
}

/** The processes of the tree below `root` (included) that run `executable`. */
function treeRunning(root: number, executable: string): number[] {
  return [root, ...descendantsInGroup(root)].filter((pid) => {
    try {
      return Deno.realPathSync(`/proc/${pid}/exe`) === executable;
    } catch {
      return false; // gone
    }
  });
}

for (const mode of SHIM_MODES) {
  Deno.test(
    `shim (${mode}): ${
      mode === "exec"
        ? "the shim becomes the server: no Deno process stays, and a death by SIGTERM is the server's own"
        : "the fallback stays as the server's parent and reports its death as 128+N"
    }`,
    async () => {
      await using home = await apiHome(TOKEN);
      useMode(home, mode);
      await useSession(home);
      const server = writeServer(home, "resident-srv", {
        body: "while :; do sleep 0.05; done",
      });
      const child = spawnSherlock(home, shimArgs(home, "api", [server]));
      const guard = setTimeout(() => child.kill("SIGKILL"), HANG_GUARD_MS);
      try {
        const pidFile = join(home.scratch, "resident-srv.pid");
        const pid = Number(
          await waitUntil(() => {
            const text = exists(pidFile) ? Deno.readTextFileSync(pidFile) : "";
            return text.endsWith("\n") ? text.trim() : undefined;
          }, "the server to start"),
        );
        const deno = Deno.realPathSync(Deno.execPath());
        const shell = Deno.realPathSync("/bin/sh");
        const comm = Deno.readTextFileSync(`/proc/${child.pid}/comm`).trim();
        if (mode === "exec") {
          // What an operator sees in ps: the shim's pid runs the server.
          assert.equal(pid, child.pid);
          assert.equal(comm, "resident-srv");
          assert.equal(Deno.realPathSync(`/proc/${child.pid}/exe`), shell);
          assert.deepEqual(treeRunning(child.pid, deno), []);
        } else {
          assert.notEqual(pid, child.pid);
          assert.equal(comm, "deno");
          assert.deepEqual(treeRunning(child.pid, deno), [child.pid]);
        }
        child.kill("SIGTERM");
        const output = await child.output();
        if (mode === "exec") {
          assert.equal(output.signal, "SIGTERM");
        } else {
          assert.equal(output.signal, null);
          assert.equal(output.code, 143);
        }
        await waitUntil(() => !isAlive(pid), "the server to be gone");
      } finally {
        clearTimeout(guard);
      }
    },
  );

  Deno.test(`shim (${mode}): a token with $, quotes, backslashes and non-ASCII arrives exactly`, async () => {
    const token = "a$b$$c${HOME}$1`id`'q'\"d\"\\e\\\\f;|&*?[x]{y}~#%=é😀";
    await using home = await apiHome(token);
    useMode(home, mode);
    await useSession(home);
    const server = writeServer(home, "odd-server", { body: "exit 0" });
    const result = await runShim(home, shimArgs(home, "api", [server]));
    assert.equal(result.code, 0, result.stderr);
    assert.equal(serverSaw(home, "odd-server").token, token);
  });

  Deno.test(`shim (${mode}): the server starts with the signal state and stdio an agent gives it directly`, async () => {
    await using home = await apiHome(TOKEN);
    useMode(home, mode);
    await useSession(home);
    // What Deno changes in itself (SIGPIPE ignored, signals blocked in
    // some threads, stdio flags) must not reach the server: it reports its
    // ignored and blocked signals and its stdio's open flags (grep, exec'd
    // by the shell so that nothing forks in between) as it sees them, once
    // through the shim and once started by this test itself.
    const report = writeServer(home, "report-server", {
      body: "exec grep -H -E '^(SigBlk|SigIgn|flags)' /proc/self/status " +
        "/proc/self/fdinfo/0 /proc/self/fdinfo/1 /proc/self/fdinfo/2",
    });
    const viaShim = await runShim(home, shimArgs(home, "api", [report]));
    assert.equal(viaShim.code, 0, viaShim.stderr);
    const direct = await new Deno.Command(report, {
      env: { ...home.env, API_TOKEN: TOKEN },
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn().output();
    assert.equal(direct.code, 0);
    // Signals 1-31 only: glibc's own 32 and 33 are its spawn's business
    // (its posix_spawn ignores them in the child; an exec resets the
    // handler glibc installed to the default).
    const standard = (bytes: Uint8Array) =>
      new TextDecoder().decode(bytes).replace(
        /(Sig\w+:\s+)([0-9a-f]+)/g,
        (_, label, mask) =>
          `${label}${(BigInt(`0x${mask}`) & 0x7fffffffn).toString(16)}`,
      );
    assert.equal(standard(viaShim.stdout), standard(direct.stdout));
    assert.match(standard(direct.stdout), /SigBlk:\s+0\n/);
  });
}

/** Asserts one `sherlock: …` line on stderr and nothing on stdout. */
function assertOneLine(result: ShimResult, pattern: RegExp): void {
  assert.equal(result.stdout.length, 0, "stdout is the MCP channel");
  const [line, ...more] = lines(result.stderr);
  assert.deepEqual(more, [], result.stderr);
  assert.match(line, /^sherlock: /);
  assert.match(line, pattern);
}

Deno.test("shim failures: one line on stderr, nothing on stdout, the documented code, no server", async () => {
  await using home = await createBrokerHome();
  const helper = home.tokenHelper("api", { token: TOKEN });
  home.writeService(
    "api",
    tokenServiceToml({ name: "api", command: [helper.path], env: "API_TOKEN" }),
  );
  const server = writeServer(home, "never-server");
  const started = () => exists(join(home.scratch, "never-server.pid"));

  // No broker at all: 69, and the shim does not start one.
  const down = await runShim(home, shimArgs(home, "api", [server]), {
    env: { [CAPABILITY_ENV]: "0".repeat(64) },
  });
  assert.equal(down.code, 69);
  assertOneLine(down, /the broker does not answer on .*broker\.sock/);
  assert.deepEqual(home.daemonPids(), []);

  // A broker, but nobody logged in: 77.
  assert.equal((await home.sherlock(["broker", "start"])).code, 0);
  const env = await shimSession(home, ["api", "nope"]);
  const locked = await runShim(home, shimArgs(home, "api", [server]), { env });
  assert.equal(locked.code, 77);
  assertOneLine(locked, /not logged in.*run "sherlock login"$/);

  // Logged in, but no such service: 78.
  await home.login();
  const unknown = await runShim(home, shimArgs(home, "nope", [server]), {
    env,
  });
  assert.equal(unknown.code, 78);
  assertOneLine(unknown, /no service named nope in .*services\.d$/);
  assert.equal(helper.runs(), 0, "no token was fetched so far");

  // A server that does not exist: 127 (the token was fetched, and dropped).
  const missing = await runShim(
    home,
    shimArgs(home, "api", [join(home.bin, "no-such-server")]),
    { env },
  );
  assert.equal(missing.code, 127);
  assertOneLine(missing, /the server of service api .* was not found/);

  // A server file without an execute bit: 126.
  const plain = join(home.bin, "plain-server");
  Deno.writeTextFileSync(plain, "#!/bin/sh\nexit 0\n", { mode: 0o644 });
  const notExecutable = await runShim(home, shimArgs(home, "api", [plain]), {
    env,
  });
  assert.equal(notExecutable.code, 126);
  assertOneLine(
    notExecutable,
    /the server of service api .* is not executable/,
  );

  // Found, but execve refuses it: an interpreter that does not exist (127),
  // a file that is neither a script nor a binary (126).
  const orphan = join(home.bin, "orphan-server");
  Deno.writeTextFileSync(orphan, "#!/no/such/interpreter\n", { mode: 0o755 });
  const noInterpreter = await runShim(home, shimArgs(home, "api", [orphan]), {
    env,
  });
  assert.equal(noInterpreter.code, 127);
  assertOneLine(noInterpreter, /interpreter on its #! line was not found$/);
  const garbage = join(home.bin, "garbage-server");
  Deno.writeFileSync(garbage, new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 1, 2]), {
    mode: 0o755,
  });
  const notABinary = await runShim(home, shimArgs(home, "api", [garbage]), {
    env,
  });
  assert.equal(notABinary.code, 126);
  assertOneLine(notABinary, /is not executable \(no #! line/);

  // Usage: 2.
  const usage = await runShim(home, ["shim", "--socket", home.socket, "api"]);
  assert.equal(usage.code, 2);
  assertOneLine(usage, /shim needs -- followed by the server's command/);

  // No capability, or one the broker does not know: 77.
  const anonymous = await runShim(home, shimArgs(home, "api", [server]));
  assert.equal(anonymous.code, 77);
  assertOneLine(
    anonymous,
    /no session capability in SHERLOCK_SESSION_CAPABILITY/,
  );
  const forged = await runShim(home, shimArgs(home, "api", [server]), {
    env: { [CAPABILITY_ENV]: "0".repeat(64) },
  });
  assert.equal(forged.code, 77);
  assertOneLine(forged, /the broker knows no such session/);
  // A registered session, but not for this service: 77.
  const outside = await runShim(home, shimArgs(home, "api", [server]), {
    env: await shimSession(home, ["other"]),
  });
  assert.equal(outside.code, 77);
  assertOneLine(outside, /service api is not one of session \S+'s services/);

  assert.equal(started(), false, "no server was started");
  for (
    const result of [
      down,
      locked,
      unknown,
      missing,
      notExecutable,
      noInterpreter,
      notABinary,
      usage,
      anonymous,
      forged,
    ]
  ) {
    assert.equal(result.stderr.includes(TOKEN), false);
  }
});

Deno.test('session with [render] tokens = "shim": entries hold no token; the server gets it when the agent starts it', async () => {
  await using home = await apiHome(TOKEN);
  home.addAgent();
  Deno.writeTextFileSync(
    join(home.configHome, "sherlock", "config.toml"),
    '[render]\ntokens = "shim"\n',
  );
  const server = writeServer(home, "session-server");
  home.writeService(
    "api",
    tokenServiceToml({
      name: "api",
      command: [home.tokenHelper("api2", { token: TOKEN }).path],
      env: "API_TOKEN",
    }).replace(
      'command = "mcp-server-api"',
      `command = ${JSON.stringify(server)}`,
    ),
  );
  // A remote server asked inline cannot have a shim: its token still goes
  // in its header.
  const remote = home.tokenHelper("docs", { token: "tok_remote" });
  home.writeService(
    "docs",
    tokenServiceToml({
      name: "docs",
      command: [remote.path],
      url: "https://docs.example.com/mcp",
      delivery: "inline",
    }),
  );
  const { result, record } = await home.runAgent({ runServers: "hello\n" });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  assert.deepEqual(renderedServers(record).docs.headers, {
    Authorization: "Bearer tok_remote",
  });
  const entry = renderedServers(record).api as {
    command: string;
    args: string[];
    env: Record<string, string>;
  };
  assert.deepEqual(entry.args.slice(entry.args.indexOf("shim")), [
    "shim",
    "--socket",
    home.socket,
    "--session",
    entry.args[entry.args.indexOf("--session") + 1],
    "--agent",
    AGENT,
    "--token-env",
    "API_TOKEN",
    "api",
    "--",
    server,
  ]);
  // Only the session's capability, for the shim.
  assert.deepEqual(Object.keys(entry.env), [CAPABILITY_ENV]);
  assert.match(entry.env[CAPABILITY_ENV], /^[0-9a-f]{64}$/);
  // The rendered file, and the agent's argv and environment: no token.
  assert.equal(record!.config!.text!.includes(TOKEN), false);
  assert.equal(JSON.stringify(record!.args).includes(TOKEN), false);
  assert.equal(JSON.stringify(record!.env).includes(TOKEN), false);
  // The server, started by the agent through the shim, got it.
  assert.deepEqual(record!.servers, {
    api: { code: 0, stdout: "hello\n", stderr: "" },
  });
  assert.equal(serverSaw(home, "session-server").token, TOKEN);
  assert.equal(serverSaw(home, "session-server").capability, "");
  // Nothing holds it afterwards.
  assert.deepEqual(filesContaining(home.root, [TOKEN], [home.scratch]), []);
  assert.equal(result.stdout.includes(TOKEN), false);
});

Deno.test("the $ rule end to end: an inline token with $ reaches the server unchanged, through the shim", async () => {
  const token = "p$HOME$$x${PATH}$1$&";
  await using home = await apiHome(token);
  home.addAgent();
  const server = writeServer(home, "dollar-server");
  home.writeService(
    "api",
    tokenServiceToml({
      name: "api",
      command: [home.tokenHelper("api2", { token }).path],
      env: "API_TOKEN",
    }).replace(
      'command = "mcp-server-api"',
      `command = ${JSON.stringify(server)}`,
    ),
  );
  // A second service whose token has no $ stays inline.
  const plain = home.tokenHelper("plain", { token: TOKEN });
  home.writeService(
    "plain",
    tokenServiceToml({ name: "plain", command: [plain.path], env: "PLAIN" }),
  );
  using agent = new AgentRun(home.scratch, {
    config: "env:SHERLOCK_MCP_CONFIG",
    runServers: "",
  });
  const result = await home.sherlock(["run", AGENT], { env: agent.env });
  assert.equal(result.code, 0, result.stderr);
  const record = agent.record();
  const servers = renderedServers(record) as Record<
    string,
    { command: string; args: string[]; env: Record<string, string> }
  >;
  assert.ok(servers.api.args.includes("shim"), servers.api.args.join(" "));
  // Only the session's capability, for the shim.
  assert.deepEqual(Object.keys(servers.api.env), [CAPABILITY_ENV]);
  assert.match(servers.api.env[CAPABILITY_ENV], /^[0-9a-f]{64}$/);
  assert.equal(record.config!.text!.includes(token), false);
  assert.deepEqual(servers.plain.env, { PLAIN: TOKEN });
  assert.equal(serverSaw(home, "dollar-server").token, token);
  assert.equal(record.servers!.api.code, 0);
});

Deno.test("the $ rule fetches once: one helper run, one audit entry, the token handed to the session's shim", async () => {
  const token = "p$HOME$$x${PATH}$1$&";
  await using home = await createBrokerHome();
  home.addAgent();
  // No expiry and no ttl: nothing is cached, so a second fetch would run
  // the helper again.
  const helper = home.tokenHelper("dollar", { token });
  const server = writeServer(home, "dollar-server");
  home.writeService(
    "api",
    tokenServiceToml({ name: "api", command: [helper.path], env: "API_TOKEN" })
      .replace(
        'command = "mcp-server-api"',
        `command = ${JSON.stringify(server)}`,
      ),
  );
  await home.login();
  using agent = new AgentRun(home.scratch, {
    config: "env:SHERLOCK_MCP_CONFIG",
    runServers: "",
  });
  const result = await home.sherlock(["run", AGENT], { env: agent.env });
  assert.equal(result.code, 0, result.stderr);
  const record = agent.record();
  const entry = renderedServers(record).api as {
    args: string[];
    env: Record<string, string>;
  };
  assert.ok(entry.args.includes("shim"), entry.args.join(" "));
  // Only the session's capability, for the shim.
  assert.deepEqual(Object.keys(entry.env), [CAPABILITY_ENV]);
  assert.match(entry.env[CAPABILITY_ENV], /^[0-9a-f]{64}$/);
  assert.equal(record.config!.text!.includes(token), false);
  assert.equal(record.servers!.api.code, 0);
  assert.equal(serverSaw(home, "dollar-server").token, token);
  assert.equal(helper.runs(), 1, "the helper ran once");
  const served = auditEntries(home).filter((line) =>
    line.event === "token" && line.service === "api"
  );
  assert.equal(served.length, 1, JSON.stringify(served));
  assert.equal(
    served[0].session,
    entry.args[entry.args.indexOf("--session") + 1],
  );
});

Deno.test('a broker answer without a token: one line, exit 70, the server never starts with "undefined"', async () => {
  await using home = await createBrokerHome();
  // A fake daemon: 200 {} to everything, a token request included.
  const socket = join(home.runtimeHome, "fake-broker.sock");
  const requests: string[] = [];
  const fake = Deno.serve(
    { transport: "unix", path: socket, onListen: () => {} },
    async (request) => {
      await request.body?.cancel();
      requests.push(`${request.method} ${new URL(request.url).pathname}`);
      return Response.json({});
    },
  );
  try {
    const server = writeServer(home, "fooled-server");
    const result = await home.sherlock(
      shimArgs(home, "api", [server]).map((arg) =>
        arg === home.socket ? socket : arg
      ),
      { env: { [CAPABILITY_ENV]: "0".repeat(64) } },
    );
    assertNoStackTrace(result.stderr);
    // The version check's health request comes first (its answer is no
    // health, so the token request is left to tell).
    assert.deepEqual(
      requests.filter((request) => request !== "GET /v1/health"),
      ["POST /v1/token"],
    );
    assert.equal(result.code, 70, result.stderr);
    assert.deepEqual(lines(result.stderr), [
      'sherlock: broker: malformed answer to POST /v1/token; restart the broker ("sherlock broker stop", then try again)',
    ]);
    assert.equal(
      exists(join(home.scratch, "fooled-server.token")),
      false,
      "the server started",
    );
  } finally {
    await fake.shutdown();
  }
});
