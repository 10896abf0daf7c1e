/**
 * Codex-style delivery end to end: a fake agent whose profile renders
 * `format = "codex-overrides"` into `-c` flag values. One `-c <value>` per
 * service, never a token in argv (tokens always go through the shim), and a
 * remote service with a token refused up front.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "smol-toml";
import {
  addFakeAgent,
  AgentRun,
  startWaitingSession,
} from "../helpers/agent.ts";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { createTestHome, type TestHome } from "../helpers/home.ts";
import {
  remoteServiceToml,
  stdioServiceToml,
  tokenServiceToml,
} from "../helpers/profiles.ts";
import { sh } from "../helpers/shell.ts";
import { HANG_GUARD_MS, lines, runSherlock } from "../helpers/sherlock.ts";

/** The fake agent's profile name. */
const AGENT = "cdx";

/** Adds the fake agent with Codex's delivery. */
function addCodexLikeAgent(home: TestHome): void {
  addFakeAgent(home, {
    name: AGENT,
    executable: "fake",
    mcp: { mode: "cli-flag", flag: "-c", format: "codex-overrides" },
    prefix: ["exec"],
  });
}

/** A `-c` value read back as Codex reads it. */
function readOverride(value: string): [string, Record<string, unknown>] {
  const document = JSON.parse(JSON.stringify(parse(value))) as {
    mcp_servers: Record<string, Record<string, unknown>>;
  };
  const [entry, ...more] = Object.entries(document.mcp_servers);
  assert.deepEqual(more, []);
  return entry;
}

Deno.test("codex-overrides: -c <value> per service, tokens behind the shim, none in argv", async () => {
  await using home = await createBrokerHome();
  addCodexLikeAgent(home);
  const helper = home.tokenHelper("api");
  const out = join(home.scratch, "api-server.token");
  const server = home.writeScript(
    "api-server",
    `printf '%s' "$API_TOKEN" > ${sh(out)}\nexec cat`,
  );
  home.writeService(
    "api",
    tokenServiceToml({ name: "api", command: [helper.path], env: "API_TOKEN" })
      .replace(
        'command = "mcp-server-api"',
        `command = ${JSON.stringify(server)}\nargs = ["two words", "ü\\\\x"]`,
      ),
  );
  home.writeService(
    "tools",
    stdioServiceToml("tools", {
      command: "tools-server",
      args: ['say "hi"'],
      env: { LEVEL: "3" },
    }),
  );
  home.writeService(
    "docs",
    remoteServiceToml("docs", {
      url: "https://docs.example.com/mcp",
      headers: { "X-Team": "platform" },
    }),
  );
  await home.login();

  // The agent waits, so that the entry below runs while the session lives
  // (the broker serves no token to an ended session).
  await using session = await startWaitingSession(home, [AGENT, "hi"]);
  const { args, env } = session.started;
  // exec, then -c <value> per service (by name), then the user's args.
  assert.equal(args.length, 8, args.join("\n"));
  assert.deepEqual(
    [args[0], args[1], args[3], args[5], args[7]],
    ["exec", "-c", "-c", "-c", "hi"],
  );
  const overrides = Object.fromEntries(
    [args[2], args[4], args[6]].map(readOverride),
  );
  assert.deepEqual(Object.keys(overrides), ["api", "docs", "tools"]);
  assert.deepEqual(overrides.docs, {
    url: "https://docs.example.com/mcp",
    http_headers: { "X-Team": "platform" },
  });
  assert.deepEqual(overrides.tools, {
    command: "tools-server",
    args: ['say "hi"'],
    env: { LEVEL: "3" },
  });
  const api = overrides.api as {
    command: string;
    args: string[];
    env: Record<string, string>;
  };
  const shim = api.args.indexOf("shim");
  assert.ok(shim >= 0, api.args.join(" "));
  assert.deepEqual(api.args.slice(api.args.indexOf("--")), [
    "--",
    server,
    "two words",
    "ü\\x",
  ]);
  // Only the session's capability, for the shim.
  assert.deepEqual(Object.keys(api.env), ["SHERLOCK_SESSION_CAPABILITY"]);
  assert.match(api.env.SHERLOCK_SESSION_CAPABILITY, /^[0-9a-f]{64}$/);
  // No token anywhere in the agent's argv or environment.
  assert.equal(JSON.stringify(args).includes(helper.token), false);
  assert.equal(JSON.stringify(env).includes(helper.token), false);
  assert.equal(helper.runs(), 0, "no token is fetched for the session itself");

  // Codex would start the entry as it reads it: the server gets the token.
  const child = new Deno.Command(api.command, {
    args: api.args,
    env: { ...home.env, ...api.env },
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const guard = setTimeout(() => child.kill("SIGKILL"), HANG_GUARD_MS);
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode("ping\n"));
  await writer.close();
  const output = await child.output();
  clearTimeout(guard);
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  assert.equal(new TextDecoder().decode(output.stdout), "ping\n");
  assert.equal(Deno.readTextFileSync(out), helper.token);
  session.agent.release();
  const result = await session.sherlock.result;
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
});

Deno.test("codex-overrides, --strict: a remote service with a token inline: exit 78, one line, nothing started", async () => {
  await using home = await createTestHome();
  addCodexLikeAgent(home);
  home.writeService(
    "docs",
    tokenServiceToml({
      name: "docs",
      source: "secret",
      url: "https://docs.example.com/mcp",
      delivery: "inline",
    }),
  );
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["--strict", AGENT], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 78);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: service docs is a remote server with a token, and agent ${AGENT} would put it in argv, ` +
    'which every local user can read; remove its [token] delivery = "inline" (the bridge carries it), ' +
    "or use another agent",
  ]);
  assert.equal(result.stdout, "");
  assert.equal(agent.hasStarted, false);
  assert.deepEqual(home.sessionRecords(), []);
  assert.deepEqual(home.runtimeFiles(), [], "no broker was started");
});

Deno.test("codex-overrides, --strict: an SSE server: exit 78, one line, nothing started", async () => {
  await using home = await createTestHome();
  addCodexLikeAgent(home);
  home.writeService(
    "events",
    remoteServiceToml("events", {
      url: "http://127.0.0.1:9/sse",
      transport: "sse",
    }),
  );
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["--strict", AGENT], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 78);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: service events is an SSE server, and Codex speaks only streamable HTTP ` +
    `(transport = "http"); agent ${AGENT} cannot use it`,
  ]);
  assert.equal(agent.hasStarted, false);
  assert.deepEqual(home.sessionRecords(), []);
});

Deno.test("codex-overrides: --dry-run prints the flag values, no token fetched", async () => {
  await using home = await createTestHome();
  addCodexLikeAgent(home);
  home.writeService(
    "api",
    tokenServiceToml({
      name: "api",
      command: ["/bin/false"],
      env: "API_TOKEN",
    }),
  );
  const result = await runSherlock(["--dry-run", AGENT], { env: home.env });
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stdout,
    /in argv \(codex-overrides; tokens always through the shim\)/,
  );
  const values = result.stdout.split(
    "--- flag values (tokens redacted) ---\n",
  )[1];
  const [value, ...more] = lines(values);
  assert.deepEqual(more, []);
  const [name, entry] = readOverride(value);
  assert.equal(name, "api");
  assert.ok((entry.args as string[]).includes("shim"));
  // No token; the session's capability, redacted, where the real run puts
  // it (the shim's env).
  assert.deepEqual(entry.env, { SHERLOCK_SESSION_CAPABILITY: "<redacted>" });
  assert.deepEqual(home.runtimeFiles(), []);
});

Deno.test("codex-overrides: an SSE server is left out with one line; the session starts with the others", async () => {
  await using home = await createTestHome();
  addCodexLikeAgent(home);
  home.writeService(
    "events",
    remoteServiceToml("events", {
      url: "http://127.0.0.1:9/sse",
      transport: "sse",
    }),
  );
  home.writeService("files", stdioServiceToml("files", { command: "files" }));
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock([AGENT], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: service events is an SSE server, and Codex speaks only streamable HTTP ` +
    `(transport = "http"); agent ${AGENT} cannot use it; starting the session without service events`,
  ]);
  const args = agent.record().args;
  assert.equal(args.some((arg) => arg.includes("events")), false);
  assert.equal(args.some((arg) => arg.startsWith("mcp_servers.files=")), true);
  assert.deepEqual(home.runtimeFiles(), [], "no broker was started");
});
