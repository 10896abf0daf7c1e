/**
 * `sherlock services`, `services show` and `services test`, run as real
 * processes against real servers: the SDK stdio test server (the e2e
 * tests' fixture), the SDK remote server fixture behind a bearer token, and
 * broken servers (`tests/fixtures/broken_mcp_server.ts`) that crash at
 * start, never answer, or print garbage on stdout. Tokens come from a real
 * broker (a stored secret) through the session's own delivery: inline, the
 * shim, the bridge. Nothing is mocked.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BrokerHome, createBrokerHome } from "../helpers/broker_home.ts";
import { runInProcess } from "../helpers/in_process.ts";
import { filesContaining, randomToken } from "../helpers/leaks.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import {
  REMOTE_SERVER_NAME,
  startRemoteMcpServer,
} from "../fixtures/remote_mcp_server.ts";
import {
  SERVER_NAME,
  sha256,
  TOOL_NAME,
} from "../e2e/fixtures/test_mcp_server.ts";
import {
  MODERN_STDIO_SERVER_NAME,
  MODERN_STDIO_TOOL,
} from "../fixtures/modern_stdio_server.ts";
import {
  MODERN_REVISION,
  MODERN_SERVER_NAME,
  startModernServer,
} from "../helpers/modern_server.ts";

const TEST_SERVER = fileURLToPath(
  new URL("../e2e/fixtures/test_mcp_server.ts", import.meta.url),
);
const MODERN_STDIO_SERVER = fileURLToPath(
  new URL("../fixtures/modern_stdio_server.ts", import.meta.url),
);
const BROKEN_SERVER = fileURLToPath(
  new URL("../fixtures/broken_mcp_server.ts", import.meta.url),
);

/** A stdio service that runs `script args…` with Deno. */
function denoService(
  options: {
    name: string;
    script: string;
    args: string[];
    tokenEnv?: string;
    delivery?: "inline" | "shim";
  },
): string {
  const lines = [
    "[service]",
    `name = ${JSON.stringify(options.name)}`,
    "",
    "[server]",
    `command = ${JSON.stringify(Deno.execPath())}`,
    `args = ${
      JSON.stringify([
        "run",
        "--allow-all",
        "--quiet",
        options.script,
        ...options.args,
      ])
    }`,
  ];
  if (options.tokenEnv !== undefined) {
    lines.push(
      "",
      "[token]",
      'source = "secret"',
      `env = ${JSON.stringify(options.tokenEnv)}`,
    );
    if (options.delivery) lines.push(`delivery = "${options.delivery}"`);
  }
  return lines.join("\n") + "\n";
}

/** The test server's records (one JSON object a line). */
function records(path: string): Record<string, unknown>[] {
  return Deno.readTextFileSync(path).split("\n").filter((line) => line)
    .map((line) => JSON.parse(line));
}

/** A logged-in HOME with the secret of `name` stored. */
async function withSecret(name: string, token: string): Promise<BrokerHome> {
  const home = await createBrokerHome();
  await home.login();
  const set = await home.sherlock(["secret", "set", name], { stdin: token });
  assert.equal(set.code, 0, set.stderr);
  return home;
}

/** Adds the SDK stdio test server as `name`; returns its record file. */
function addTestServer(
  home: BrokerHome,
  name: string,
  tokenEnv?: string,
): string {
  const record = join(home.scratch, `${name}.jsonl`);
  home.writeService(
    name,
    denoService({
      name,
      script: TEST_SERVER,
      args: [
        "--record",
        record,
        ...(tokenEnv === undefined ? [] : ["--token-env", tokenEnv]),
      ],
      tokenEnv,
    }),
  );
  return record;
}

Deno.test("services test: the SDK stdio server with its stored secret inline answers initialize and tools/list; exit 0; the token is in no output", async () => {
  const token = randomToken("ghp");
  await using home = await withSecret("echo", token);
  const record = addTestServer(home, "echo", "ECHO_TOKEN");
  const result = await home.sherlock(["services", "test", "echo"]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /delivery inline/);
  assert.match(result.stdout, /broker\s+\d+ ms\s+session registered/);
  assert.match(
    result.stdout,
    new RegExp(`initialize\\s+\\d+ ms\\s+server ${SERVER_NAME} 1\\.0\\.0`),
  );
  assert.match(result.stdout, /tools\/list\s+\d+ ms\s+1 tool\n/);
  // A 2025-era server: the SDK v1 test server answers initialize only.
  assert.match(
    result.stdout,
    /^revision: MCP 2025-\d\d-\d\d \(2025 era: initialize handshake\)$/m,
  );
  assert.match(
    result.stdout,
    new RegExp(`^  ${TOOL_NAME}\\s+Answers with`, "m"),
  );
  // The server got the real token, through the session's delivery.
  const start = records(record).find((entry) => entry.event === "start");
  assert.equal(start?.token_sha256, sha256(token));
  assert.ok(records(record).some((entry) => entry.event === "tools/list"));
  assert.equal(result.stdout.includes(token), false);
  assert.equal(result.stderr.includes(token), false);
  // No file of sherlock's (rendered config, records, logs) holds it.
  assert.deepEqual(
    filesContaining(home.root, [token], [home.scratch, home.dataHome]),
    [],
  );
  // Nothing rendered is left in the runtime folder (only the broker's own).
  assert.deepEqual(
    home.runtimeFiles().filter((name) => !name.startsWith("broker.")),
    [],
  );
});

Deno.test("services test --agent codex: the stdio token goes through the shim, as a Codex session sends it", async () => {
  const token = randomToken("ghp");
  await using home = await withSecret("echo", token);
  const record = addTestServer(home, "echo", "ECHO_TOKEN");
  const result = await home.sherlock([
    "services",
    "test",
    "--agent",
    "codex",
    "echo",
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /delivery shim/);
  assert.match(result.stdout, /token left to the shim or bridge/);
  const start = records(record).find((entry) => entry.event === "start");
  assert.equal(start?.token_sha256, sha256(token));
  // The shim removes the capability from the server's environment.
  assert.equal(
    (start?.env_names as string[]).includes("SHERLOCK_SESSION_CAPABILITY"),
    false,
  );
  assert.equal(result.stdout.includes(token), false);
});

Deno.test("services test: a service only for codex is tested as codex's session starts it; --agent claude is a usage error (2)", async () => {
  const token = randomToken("ghp");
  await using home = await withSecret("echo", token);
  const record = addTestServer(home, "echo", "ECHO_TOKEN");
  const path = join(home.servicesDir, "echo.toml");
  Deno.writeTextFileSync(
    path,
    Deno.readTextFileSync(path).replace(
      'name = "echo"',
      'name = "echo"\nagents = ["codex"]',
    ),
  );
  const result = await home.sherlock(["services", "test", "echo"]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /delivery shim \(as agent codex's session/);
  const start = records(record).find((entry) => entry.event === "start");
  assert.equal(start?.token_sha256, sha256(token));
  const claude = await home.sherlock([
    "services",
    "test",
    "--agent",
    "claude",
    "echo",
  ]);
  assert.equal(claude.code, 2);
  assert.equal(
    claude.stderr,
    "sherlock: service echo is only for agents codex (its [service] agents), so no session of claude gets it; use --agent codex\n",
  );
});

Deno.test("services test: a remote server with a stored secret is reached through sherlock bridge with the real token", async () => {
  const token = randomToken();
  await using remote = await startRemoteMcpServer({ token });
  await using home = await withSecret("docs", token);
  home.writeService(
    "docs",
    tokenServiceToml({ name: "docs", source: "secret", url: remote.url }),
  );
  const result = await home.sherlock(["services", "test", "docs"]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /remote, token secret, delivery bridge/);
  assert.match(result.stdout, new RegExp(`server ${REMOTE_SERVER_NAME} `));
  assert.match(
    result.stdout,
    /^revision: MCP 2025-\d\d-\d\d \(2025 era: initialize handshake\)$/m,
  );
  assert.match(result.stdout, /^ {2}whoami\s/m);
  assert.match(result.stdout, /^ {2}echo\s/m);
  assert.equal(remote.counts.unauthorized, 0);
  assert.ok((remote.counts.methods["tools/list"] ?? 0) >= 1);
  assert.equal(result.stdout.includes(token), false);
  assert.equal(result.stderr.includes(token), false);
});

Deno.test("services test: a remote server with delivery = inline is reached by the SDK client itself, over Streamable HTTP and legacy SSE", async () => {
  const token = randomToken();
  await using remote = await startRemoteMcpServer({ token });
  await using home = await withSecret("docs", token);
  for (const url of [remote.url, remote.sseUrl]) {
    const text = tokenServiceToml({
      name: "docs",
      source: "secret",
      url,
      delivery: "inline",
    });
    home.writeService(
      "docs",
      url === remote.sseUrl
        ? text.replace("[token]", 'transport = "sse"\n\n[token]')
        : text,
    );
    const result = await home.sherlock(["services", "test", "docs"]);
    assert.equal(result.code, 0, `${url}: ${result.stderr}`);
    assert.match(result.stdout, /delivery inline/);
    assert.match(result.stdout, /^ {2}initialize\s+\d+ ms\s+server /m);
    assert.match(result.stdout, /^ {2}whoami\s/m);
    assert.match(result.stdout, /^revision: MCP 2025-\d\d-\d\d \(2025 era/m);
    if (url === remote.sseUrl) {
      // The deprecated transport is named, and what to do about it.
      assert.match(
        result.stdout,
        /legacy HTTP\+SSE transport, which is deprecated\)$/m,
      );
      assert.match(
        result.stderr,
        /^sherlock: service docs: the legacy HTTP\+SSE transport is deprecated; .*Streamable HTTP endpoint/,
      );
    } else {
      assert.doesNotMatch(result.stdout + result.stderr, /deprecated/);
    }
    assert.equal(result.stdout.includes(token), false);
    assert.equal(result.stderr.includes(token), false);
  }
  assert.equal(remote.counts.unauthorized, 0);
  assert.ok(remote.counts.sseStreams >= 1, "the SSE endpoint was used");
});

Deno.test("services test: a stdio server on the SDK v2 answers server/discover: the 2026-07-28 revision is printed, exit 0", async () => {
  await using home = await createBrokerHome();
  home.writeService(
    "modern",
    denoService({ name: "modern", script: MODERN_STDIO_SERVER, args: [] }),
  );
  const result = await home.sherlock(["services", "test", "modern"]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stdout,
    new RegExp(
      `^ {2}server/discover\\s+\\d+ ms\\s+server ${MODERN_STDIO_SERVER_NAME} 2\\.0\\.0$`,
      "m",
    ),
  );
  assert.match(
    result.stdout,
    /^revision: MCP 2026-07-28 \(stateless: server\/discover\)$/m,
  );
  assert.match(result.stdout, new RegExp(`^ {2}${MODERN_STDIO_TOOL}\\s`, "m"));
  assert.doesNotMatch(result.stdout, /initialize/);
});

// Inline only: the bridge speaks the 2026-07-28 revision in the bridge's
// own work (issue 19); its 401 is checked below, as it answers before any
// revision.
Deno.test("services test: a modern-only (2026-07-28) remote server: server/discover, no initialize, the revision printed; the token in no output", async () => {
  const token = randomToken();
  await using modern = await startModernServer({ token });
  await using home = await withSecret("docs", token);
  for (const delivery of ["inline"] as const) {
    home.writeService(
      "docs",
      tokenServiceToml({
        name: "docs",
        source: "secret",
        url: modern.url,
        delivery,
      }),
    );
    const result = await home.sherlock(["services", "test", "docs"]);
    assert.equal(result.code, 0, `${delivery}: ${result.stderr}`);
    assert.match(result.stdout, new RegExp(`delivery ${delivery}`));
    assert.match(
      result.stdout,
      new RegExp(
        `^ {2}server/discover\\s+\\d+ ms\\s+server ${MODERN_SERVER_NAME} `,
        "m",
      ),
    );
    assert.match(
      result.stdout,
      new RegExp(
        `^revision: MCP ${MODERN_REVISION} \\(stateless: server/discover\\)$`,
        "m",
      ),
    );
    assert.match(result.stdout, /^ {2}whoami\s/m);
    assert.equal(result.stdout.includes(token), false);
    assert.equal(result.stderr.includes(token), false);
  }
  assert.equal(modern.counts.methods["initialize"] ?? 0, 0);
  assert.ok((modern.counts.methods["server/discover"] ?? 0) >= 1);
  assert.ok((modern.counts.methods["tools/list"] ?? 0) >= 1);
  assert.equal(modern.counts.unauthorized, 0);
});

Deno.test("services test: a modern-only server that refuses the token (401): one line with what to do, exit 69; the token in no output", async () => {
  const good = randomToken();
  const stale = randomToken();
  await using modern = await startModernServer({ token: good });
  await using home = await withSecret("docs", stale);
  home.writeService(
    "docs",
    tokenServiceToml({
      name: "docs",
      source: "secret",
      url: modern.url,
      delivery: "inline",
    }),
  );
  const inline = await home.sherlock(["services", "test", "docs"]);
  assert.equal(inline.code, 69, inline.stderr);
  assert.match(inline.stdout, /^ {2}server\/discover\s+\d+ ms\s+failed$/m);
  assert.equal(
    inline.stderr,
    'sherlock: service docs: the server refused the token during server/discover (HTTP 401); store the right token with "sherlock secret set docs"\n',
  );
  // Through the bridge: the bridge's own line on the refusal.
  home.writeService(
    "docs",
    tokenServiceToml({ name: "docs", source: "secret", url: modern.url }),
  );
  const bridged = await home.sherlock(["services", "test", "docs"]);
  assert.equal(bridged.code, 69, bridged.stderr);
  assert.match(
    bridged.stderr,
    /^sherlock: service docs: .*refused its token \(HTTP 401, also after a refresh\)/,
  );
  for (const output of [inline, bridged]) {
    assert.equal(output.stdout.includes(stale), false);
    assert.equal(output.stderr.includes(stale), false);
  }
  assert.ok(modern.counts.unauthorized >= 2);
});

Deno.test("services test: a server that crashes at start: its stderr tail, one line on what to do, exit 69", async () => {
  await using home = await createBrokerHome();
  home.writeService(
    "crashy",
    denoService({ name: "crashy", script: BROKEN_SERVER, args: ["crash"] }),
  );
  const result = await home.sherlock(["services", "test", "crashy"]);
  assert.equal(result.code, 69, result.stderr);
  assert.match(result.stdout, /initialize\s+\d+ ms\s+failed/);
  assert.match(
    result.stdout,
    /stderr \(last lines\):\n {2}\| starting the server\n {2}\| fatal: config file \/etc\/broken\.conf not found\n/,
  );
  const errors = result.stderr.trim().split("\n");
  assert.equal(errors.length, 1, result.stderr);
  assert.match(
    errors[0],
    /^sherlock: service crashy: the server closed the connection during initialize .*; /,
  );
  assert.equal(home.daemonPids().length, 0, "no token: no broker");
});

Deno.test("services test: a crashing server that prints its token: the tail shows neither the token nor raw escape sequences", async (t) => {
  await using home = await createBrokerHome();
  const token = `svc_${crypto.randomUUID().replaceAll("-", "")}`;
  await home.login();
  // Inline, the token is a value of the entry; through the shim, it is in
  // no value sherlock sees, and only its shape gives it away.
  for (const delivery of ["inline", "shim"] as const) {
    await t.step(delivery, async () => {
      const name = `leaky-${delivery}`;
      home.writeService(
        name,
        denoService({
          name,
          script: BROKEN_SERVER,
          args: ["leak", "LEAKY_TOKEN"],
          tokenEnv: "LEAKY_TOKEN",
          delivery,
        }),
      );
      const set = await home.sherlock(["secret", "set", name], {
        stdin: token,
      });
      assert.equal(set.code, 0, set.stderr);
      const result = await home.sherlock(["services", "test", name]);
      assert.equal(result.code, 69, result.stderr);
      assert.match(
        result.stdout,
        /\| \\x1b\[31mcannot log in with \[redacted\]\n/,
      );
      for (const output of [result.stdout, result.stderr]) {
        assert.equal(output.includes(token), false, "the token is shown");
        assert.equal(output.includes("\x1b"), false, "a raw escape is shown");
      }
    });
  }
});

Deno.test("services test: a server that never answers times out (no hang); exit 69", async () => {
  await using home = await createBrokerHome();
  home.writeService(
    "silent",
    denoService({ name: "silent", script: BROKEN_SERVER, args: ["silent"] }),
  );
  const result = await home.sherlock([
    "services",
    "test",
    "--timeout",
    "2",
    "silent",
  ]);
  assert.equal(result.code, 69, result.stderr);
  assert.match(
    result.stderr,
    /^sherlock: service silent: no answer to initialize within 2 s; .*--timeout\n$/,
  );
});

Deno.test("services test: a server that prints garbage on stdout is named as such; exit 69", async () => {
  await using home = await createBrokerHome();
  home.writeService(
    "noisy",
    denoService({ name: "noisy", script: BROKEN_SERVER, args: ["garbage"] }),
  );
  const result = await home.sherlock([
    "services",
    "test",
    "--timeout",
    "2",
    "noisy",
  ]);
  assert.equal(result.code, 69, result.stderr);
  assert.match(result.stderr, /not JSON-RPC/);
  assert.match(result.stderr, /only JSON-RPC on stdout \(logs go to stderr\)/);
});

Deno.test("services test: a service with a secret when not logged in is exit 77 with what to do; an unknown one 78", async () => {
  await using home = await createBrokerHome();
  addTestServer(home, "echo", "ECHO_TOKEN");
  const locked = await home.sherlock(["services", "test", "echo"]);
  assert.equal(locked.code, 77, locked.stderr);
  assert.match(
    locked.stderr,
    /^sherlock: not logged in .*run "sherlock login"\n$/,
  );
  const unknown = await home.sherlock(["services", "test", "nope"]);
  assert.equal(unknown.code, 78);
  assert.match(
    unknown.stderr,
    /^sherlock: no service nope in .*services\.d; "sherlock services" lists them\n$/,
  );
  const usage = await home.sherlock(["services", "test"]);
  assert.equal(usage.code, 2);
});

Deno.test("services: one row per service with its kind, source, delivery, PATH and token availability; a malformed file is exit 78", async () => {
  await using home = await withSecret("stored", randomToken());
  home.writeService(
    "stored",
    tokenServiceToml({ name: "stored", source: "secret", env: "T" }),
  );
  // writeService installs a stand-in server; this one is not installed.
  Deno.removeSync(join(home.bin, "mcp-server-stored"));
  home.writeService(
    "unset",
    tokenServiceToml({
      name: "unset",
      source: "secret",
      url: "http://127.0.0.1:9/mcp",
    }),
  );
  home.addHelperService("helped");
  home.writeService("broken", "[service]\nname = 'broken'\n");
  // What it prints needs no process of its own: in-process.
  const result = await runInProcess(["services"], { env: home.env });
  assert.equal(result.code, 78, result.stderr);
  const rows = new Map(
    result.stdout.trim().split("\n").slice(1).map((line) => [
      line.split(/\s+/)[0],
      line,
    ]),
  );
  assert.deepEqual([...rows.keys()], ["helped", "stored", "unset"]);
  assert.match(
    rows.get("stored")!,
    /stdio\s+secret\s+inline\s+mcp-server-stored: not on PATH\s+secret stored$/,
  );
  assert.match(
    rows.get("unset")!,
    /remote \(http\)\s+secret\s+bridge\s+127\.0\.0\.1 resolves\s+no secret \(run "sherlock secret set unset"\)$/,
  );
  assert.match(
    rows.get("helped")!,
    /stdio\s+command\s+inline\s+.*helper present$/,
  );
  assert.match(result.stderr, /skipped malformed service .*broken\.toml/);
});

Deno.test("services show: the resolved service, defaults filled in, and its file", async () => {
  await using home = await createBrokerHome();
  const path = home.writeService(
    "docs",
    tokenServiceToml({
      name: "docs",
      source: "secret",
      url: "https://mcp.example.com/mcp",
    }),
  );
  const result = await runInProcess(["services", "show", "docs"], {
    env: home.env,
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout.split("\n")[0], `# ${path}`);
  assert.match(result.stdout, /transport = "http"/);
  assert.match(result.stdout, /format = "Bearer \{token\}"/);
  assert.match(result.stdout, /timeout = 30/);
});

Deno.test("services test: a command that is not installed is exit 69 with what to do", async () => {
  await using home = await createBrokerHome();
  home.writeService(
    "absent",
    '[service]\nname = "absent"\n\n[server]\ncommand = "no-such-mcp-server"\n',
  );
  // writeService installs a stand-in server; this one is not installed.
  Deno.removeSync(join(home.bin, "no-such-mcp-server"));
  const result = await home.sherlock(["services", "test", "absent"]);
  assert.equal(result.code, 69, result.stderr);
  assert.match(
    result.stderr,
    /^sherlock: service absent: could not start no-such-mcp-server: not found; install the server or fix \[server\] command in services\.d\/absent\.toml\n$/,
  );
});
