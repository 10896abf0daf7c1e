/**
 * The token shim (lib/cli/shim.ts) as a real process against a real broker:
 * the server gets the token in its environment and nowhere else, stdio
 * passes through byte for byte (stdout is the MCP channel), exit codes and
 * signals pass through, and failures are one line on stderr. Then whole
 * sessions whose fake agent starts the rendered shim entries: with
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
  };
}

/** A logged-in broker home with the service `api` whose helper prints `token`. */
async function apiHome(token: string): Promise<BrokerHome> {
  const home = await createBrokerHome();
  try {
    const helper = home.tokenHelper("api", { token });
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

Deno.test("shim: the server gets the token in its variable, and only there", async () => {
  await using home = await apiHome(TOKEN);
  const server = writeServer(home, "api-server");
  const env = await shimSession(home);
  const result = await runShim(home, shimArgs(home, "api", [server]), {
    stdin: new TextEncoder().encode("ping\n"),
    env,
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(new TextDecoder().decode(result.stdout), "ping\n");
  assert.equal(result.stderr, "");
  const saw = serverSaw(home, "api-server");
  assert.equal(saw.token, TOKEN);
  // The shim's own argv and environment never hold it.
  assert.ok(saw.shimArgv.includes("shim"), saw.shimArgv.join(" "));
  assert.ok(saw.shimArgv.every((word) => !word.includes(TOKEN)));
  assert.ok(saw.shimEnv.length > 0);
  assert.ok(saw.shimEnv.every((entry) => !entry.includes(TOKEN)));
  assert.ok(!saw.shimEnv.some((entry) => entry.startsWith("API_TOKEN=")));
  // The session's capability is for the shim: the server does not get it.
  assert.equal(saw.capability, "");
});

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

Deno.test("shim: stdin and stdout pass through byte for byte, in both directions", async () => {
  await using home = await apiHome(TOKEN);
  const server = writeServer(home, "echo-server");
  // Every byte value, invalid UTF-8 included, and more than a pipe holds.
  const input = new Uint8Array(1024 * 1024 + 7);
  for (let index = 0; index < input.length; index++) {
    input[index] = (index * 7 + (index >> 8)) & 0xff;
  }
  const result = await runShim(home, shimArgs(home, "api", [server]), {
    stdin: input,
    env: await shimSession(home),
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  assert.equal(result.stdout.length, input.length);
  assert.ok(
    result.stdout.every((byte, index) => byte === input[index]),
    "stdout differs from stdin",
  );
});

Deno.test("shim: the server's arguments, stderr and exit code pass through", async () => {
  await using home = await apiHome(TOKEN);
  const server = writeServer(home, "exit-server", {
    body: [
      `printf '%s\\n' "$@"`,
      "echo 'a line on stderr' >&2",
      "exit 42",
    ].join("\n"),
  });
  const env = await shimSession(home);
  const result = await runShim(
    home,
    shimArgs(home, "api", [server, "--", "two words", "--token-env", ""]),
    { env },
  );
  assert.equal(result.code, 42);
  assert.equal(
    new TextDecoder().decode(result.stdout),
    "--\ntwo words\n--token-env\n\n",
  );
  assert.equal(result.stderr, "a line on stderr\n");

  // A server killed by a signal: 128+N, as a shell reports it.
  const killed = writeServer(home, "killed-server", { body: "kill -9 $$" });
  const dead = await runShim(home, shimArgs(home, "api", [killed]), { env });
  assert.equal(dead.code, 137);
  assert.equal(dead.stdout.length, 0);
});

Deno.test("shim: SIGTERM to the shim reaches the server; the shim exits with its code", async () => {
  await using home = await apiHome(TOKEN);
  const marker = join(home.scratch, "term-server.got");
  const server = writeServer(home, "term-server", {
    body: [
      `trap 'echo TERM > ${sh(marker)}; exit 143' TERM`,
      "while :; do sleep 0.05; done",
    ].join("\n"),
  });
  const child = spawnSherlock(
    home,
    shimArgs(home, "api", [server]),
    await shimSession(home),
  );
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
    const result of [down, locked, unknown, missing, usage, anonymous, forged]
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
  // A remote server cannot have a shim: its token still goes in its header.
  const remote = home.tokenHelper("docs", { token: "tok_remote" });
  home.writeService(
    "docs",
    tokenServiceToml({
      name: "docs",
      command: [remote.path],
      url: "https://docs.example.com/mcp",
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
