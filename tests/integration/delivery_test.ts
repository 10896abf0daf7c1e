/**
 * How the rendered MCP config reaches a real agent process, in every mode:
 * the argv the agent gets, its environment and cwd, and the file it reads
 * (content and mode). sherlock and the agents run as real processes.
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import {
  addFakeAgent,
  type AgentRecord,
  AgentRun,
  type AgentRunOptions,
  installFakeAgent,
} from "../helpers/agent.ts";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { createTestHome, type TestHome } from "../helpers/home.ts";
import { filesContaining, randomToken } from "../helpers/leaks.ts";
import {
  remoteServiceToml,
  stdioServiceToml,
  tokenServiceToml,
} from "../helpers/profiles.ts";
import { sh } from "../helpers/shell.ts";
import {
  lines,
  runSherlock,
  type SherlockResult,
} from "../helpers/sherlock.ts";
import { exists } from "../helpers/wait.ts";

/** The runtime file name of a session of `agent`. */
const RUNTIME_FILE = (agent: string) =>
  new RegExp(`^${agent}\\.[0-9a-f]{12}\\.mcp\\.json$`);

/** Runs sherlock once with a fake agent run; returns both ends. */
async function launch(
  home: TestHome,
  args: string[],
  options: AgentRunOptions & { env?: Record<string, string>; cwd?: string } =
    {},
): Promise<{ result: SherlockResult; record: AgentRecord }> {
  using agent = new AgentRun(home.scratch, options);
  const result = await runSherlock(args, {
    env: { ...home.env, ...agent.env, ...options.env },
    cwd: options.cwd ?? home.work,
  });
  assert.equal(result.stderr, "", "sherlock printed nothing of its own");
  return { result, record: agent.record() };
}

/** Checks what every session must leave behind: nothing. */
function assertCleanedUp(home: TestHome): void {
  assert.deepEqual(home.runtimeFiles(), [], "rendered files left behind");
  assert.deepEqual(home.sessionRecords(), [], "session records left behind");
}

Deno.test("cli-flag: flag and path are two words, after the prefix, before the user's args", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, {
    name: "fake",
    mcp: { mode: "cli-flag", flag: "--mcp-config" },
    prefix: ["--pre", "p v"],
    suffix: ["--post"],
  });
  const { result, record } = await launch(home, ["fake", "one", "two"], {
    config: "arg:^(/.*\\.mcp\\.json)$",
  });
  assert.equal(result.code, 0);
  assert.equal(record.argv0, join(home.bin, "fake"));
  const path = record.config!.path;
  assert.equal(dirname(path), home.runtimeDir);
  assert.match(path.slice(home.runtimeDir.length + 1), RUNTIME_FILE("fake"));
  assert.deepEqual(record.args, [
    "--pre",
    "p v",
    "--mcp-config",
    path,
    "one",
    "two",
    "--post",
  ]);
  assert.equal(record.config!.text, '{\n  "mcpServers": {}\n}\n');
  assert.equal(record.config!.mode, 0o600);
  assert.equal(record.config!.dirMode, 0o700);
  assertCleanedUp(home);
});

Deno.test("cli-flag joined: --flag=path is ONE argv word", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, {
    name: "fake",
    mcp: { mode: "cli-flag", flag: "--mcp-config", joined: true },
  });
  const { record } = await launch(home, ["fake", "--strict-mcp-config"], {
    config: "arg:^--mcp-config=(.*)$",
  });
  const path = record.config!.path;
  assert.deepEqual(record.args, [
    `--mcp-config=${path}`,
    "--strict-mcp-config",
  ]);
  assert.match(path, /\/sherlock\/fake\.[0-9a-f]{12}\.mcp\.json$/);
  assert.equal(record.config!.text, '{\n  "mcpServers": {}\n}\n');
  assert.equal(record.config!.mode, 0o600);
  assertCleanedUp(home);
});

Deno.test("cli-flag value template: @{path}", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, {
    name: "fake",
    mcp: {
      mode: "cli-flag",
      flag: "--additional-mcp-config",
      value: "@{path}",
    },
  });
  const { record } = await launch(home, ["fake", "-p", "hi"], {
    config: "arg:^@(.*)$",
  });
  const path = record.config!.path;
  assert.deepEqual(record.args, [
    "--additional-mcp-config",
    `@${path}`,
    "-p",
    "hi",
  ]);
  assert.equal(record.config!.mode, 0o600);
  assert.equal(JSON.parse(record.config!.text!).mcpServers !== undefined, true);
});

Deno.test("env-var: the variable holds the path; argv is untouched", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, {
    name: "fake",
    mcp: { mode: "env-var", var: "AGENT_MCP_CONFIG" },
    prefix: ["pre"],
    suffix: ["post"],
  });
  const { record } = await launch(home, ["fake", "u"], {
    config: "env:AGENT_MCP_CONFIG",
  });
  assert.deepEqual(record.args, ["pre", "u", "post"]);
  const path = record.env.AGENT_MCP_CONFIG;
  assert.equal(dirname(path), home.runtimeDir);
  assert.match(path.slice(home.runtimeDir.length + 1), RUNTIME_FILE("fake"));
  assert.equal(record.config!.text, '{\n  "mcpServers": {}\n}\n');
  assert.equal(record.config!.mode, 0o600);
  assert.equal(record.config!.dirMode, 0o700);
  assertCleanedUp(home);
});

Deno.test("config-file: ${XDG_CONFIG_HOME} unset means $HOME/.config", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, {
    name: "fake",
    mcp: {
      mode: "config-file",
      path: "${XDG_CONFIG_HOME}/fake-agent/sherlock.mcp.json",
    },
  });
  const expected = join(
    home.home,
    ".config",
    "fake-agent",
    "sherlock.mcp.json",
  );
  const env = { ...home.env };
  delete env.XDG_CONFIG_HOME; // the agents.d folder is at the default too
  using agent = new AgentRun(home.scratch, { config: `path:${expected}` });
  const result = await runSherlock(["fake", "x"], {
    env: { ...env, ...agent.env },
    cwd: home.work,
  });
  assert.equal(result.code, 0, result.stderr);
  const record = agent.record();
  assert.deepEqual(record.args, ["x"]);
  assert.equal(record.config!.text, '{\n  "mcpServers": {}\n}\n');
  assert.equal(record.config!.mode, 0o600);
  // The folder sherlock created for it is private; the file is gone after.
  assert.equal(record.config!.dirMode, 0o700);
  assert.equal(exists(expected), false);
  assert.deepEqual(home.sessionRecords(), []);
});

Deno.test("config-file: ~ is $HOME; an existing folder of the operator keeps its mode", async () => {
  await using home = await createTestHome();
  const folder = join(home.home, ".fake");
  Deno.mkdirSync(folder, { mode: 0o755 });
  Deno.chmodSync(folder, 0o755);
  addFakeAgent(home, {
    name: "fake",
    mcp: { mode: "config-file", path: "~/.fake/mcp.json" },
  });
  const path = join(folder, "mcp.json");
  const { result, record } = await launch(home, ["fake"], {
    config: `path:${path}`,
  });
  assert.equal(result.code, 0);
  assert.equal(record.config!.text, '{\n  "mcpServers": {}\n}\n');
  assert.equal(record.config!.mode, 0o600);
  assert.equal(record.config!.dirMode, 0o755);
  assert.equal(exists(path), false);
  assert.deepEqual(Deno.readDirSync(folder).toArray(), []);
});

Deno.test("mcp-json: the agent reads every valid service, stdio and remote", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  home.writeService(
    "files",
    stdioServiceToml("files", {
      command: "mcp-files",
      args: ["--root", "/srv/data"],
      env: { LOG_LEVEL: "debug" },
    }),
  );
  home.writeService(
    "docs",
    remoteServiceToml("docs", {
      url: "https://mcp.example.com/mcp",
      headers: { "X-Team": "platform" },
    }),
  );
  home.writeService(
    "events",
    remoteServiceToml("events", {
      url: "http://127.0.0.1:9/sse",
      transport: "sse",
    }),
  );
  const { record } = await launch(home, ["fake"], {
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  assert.deepEqual(JSON.parse(record.config!.text!), {
    mcpServers: {
      docs: {
        type: "http",
        url: "https://mcp.example.com/mcp",
        headers: { "X-Team": "platform" },
      },
      events: { type: "sse", url: "http://127.0.0.1:9/sse", headers: {} },
      files: {
        type: "stdio",
        command: "mcp-files",
        args: ["--root", "/srv/data"],
        env: { LOG_LEVEL: "debug" },
      },
    },
  });
});

Deno.test("the agent gets exactly the operator's environment, its cwd and the terminal's stdio", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  using agent = new AgentRun(home.scratch, {
    stdout: "hello from the agent\n",
    readStdin: true,
  });
  const cwd = join(home.work, "project dir");
  Deno.mkdirSync(cwd);
  const env = { ...home.env, ...agent.env, OPERATOR_VAR: "kept as is" };
  const result = await runSherlock(["fake"], {
    env,
    cwd,
    stdin: "typed by the operator\n",
  });
  assert.equal(result.code, 0);
  assert.equal(result.stdout, "hello from the agent\n");
  const record = agent.record();
  assert.equal(record.cwd, cwd);
  assert.equal(record.stdin, "typed by the operator\n");
  // Nothing added but the config's variable (and PWD, which /bin/sh sets).
  assert.deepEqual(record.env, {
    ...env,
    SHERLOCK_MCP_CONFIG: record.env.SHERLOCK_MCP_CONFIG,
    PWD: cwd,
  });
});

Deno.test("built-in claude: --mcp-config=<path> as one word", async () => {
  await using home = await createTestHome();
  installFakeAgent(join(home.bin, "claude"));
  const { result, record } = await launch(home, ["claude", "-p", "hi"], {
    config: "arg:^--mcp-config=(.*)$",
  });
  assert.equal(result.code, 0);
  assert.equal(record.argv0, join(home.bin, "claude"));
  const path = record.config!.path;
  assert.deepEqual(record.args, [`--mcp-config=${path}`, "-p", "hi"]);
  assert.equal(dirname(path), home.runtimeDir);
  assert.match(path.slice(home.runtimeDir.length + 1), RUNTIME_FILE("claude"));
  assert.equal(record.config!.text, '{\n  "mcpServers": {}\n}\n');
  assert.equal(record.config!.mode, 0o600);
  assertCleanedUp(home);
});

Deno.test("built-in copilot: --additional-mcp-config @<path> as two words", async () => {
  await using home = await createTestHome();
  installFakeAgent(join(home.bin, "copilot"));
  const { result, record } = await launch(home, [
    "run",
    "copilot",
    "--allow-all-tools",
  ], {
    config: "arg:^@(.*)$",
  });
  assert.equal(result.code, 0);
  const path = record.config!.path;
  assert.deepEqual(record.args, [
    "--additional-mcp-config",
    `@${path}`,
    "--allow-all-tools",
  ]);
  assert.match(path.slice(home.runtimeDir.length + 1), RUNTIME_FILE("copilot"));
  assert.equal(record.config!.text, '{\n  "mcpServers": {}\n}\n');
  assertCleanedUp(home);
});

Deno.test("arguments reach the agent verbatim: spaces, quotes, --, --help, empty", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  const user = [
    "--help",
    "two words",
    `"double" and 'single'`,
    "",
    "--",
    "--dry-run",
    "-h",
    "$HOME",
    "*",
    "line\nbreak",
    "--version",
  ];
  for (const args of [["fake", ...user], ["run", "fake", ...user]]) {
    const { result, record } = await launch(home, args);
    assert.equal(result.code, 0);
    assert.equal(result.stdout, "", "sherlock printed no help of its own");
    assert.deepEqual(record.args, user);
  }
});

Deno.test("sherlock claude --help reaches claude, not sherlock's help", async () => {
  await using home = await createTestHome();
  installFakeAgent(join(home.bin, "claude"));
  const { result, record } = await launch(home, ["claude", "--help"]);
  assert.equal(result.code, 0);
  assert.equal(result.stdout, "");
  // --help is in the built-in's [argv] no_session: no --mcp-config.
  assert.deepEqual(record.args, ["--help"]);
});

Deno.test("sherlock's own options go before the agent's name; -- ends them", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  const { record } = await launch(home, ["run", "--", "fake", "--dry-run"]);
  assert.deepEqual(record.args, ["--dry-run"]);
});

Deno.test("config-file: a service's secret goes through the shim, never into the file on disk", async () => {
  await using home = await createBrokerHome();
  // The operator's folder, as an agent's own dotfolder is: 0755.
  const folder = join(home.home, ".fake");
  Deno.mkdirSync(folder, { mode: 0o755 });
  Deno.chmodSync(folder, 0o755);
  const path = join(folder, "mcp.json");
  addFakeAgent(home, {
    name: "fake",
    mcp: { mode: "config-file", path: "~/.fake/mcp.json" },
  });
  const out = join(home.scratch, "api-server.token");
  const server = home.writeScript(
    "api-server",
    `printf '%s' "$API_TOKEN" > ${sh(out)}\nexec cat`,
  );
  home.writeService(
    "api",
    tokenServiceToml({ name: "api", source: "secret", env: "API_TOKEN" })
      .replace(
        'command = "mcp-server-api"',
        `command = ${JSON.stringify(server)}`,
      ),
  );
  const secret = randomToken("sec");
  await home.login();
  const set = await home.sherlock(["secret", "set", "api"], { stdin: secret });
  assert.equal(set.code, 0, set.stderr);

  using agent = new AgentRun(home.scratch, {
    config: `path:${path}`,
    runServers: "ping\n",
  });
  const result = await home.sherlock(["fake"], { env: agent.env });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  const record = agent.record();
  // The file on disk, as the agent read it: the shim, not the secret.
  const text = record.config!.text!;
  assert.equal(text.includes(secret), false, text);
  const api = JSON.parse(text).mcpServers.api;
  assert.ok(api.args.includes("shim"), text);
  // Only the session's capability, for the shim: no token.
  assert.deepEqual(Object.keys(api.env), ["SHERLOCK_SESSION_CAPABILITY"]);
  assert.match(api.env.SHERLOCK_SESSION_CAPABILITY, /^[0-9a-f]{64}$/);
  // The server, started through the shim, got it.
  assert.deepEqual(record.servers!.api, {
    code: 0,
    stdout: "ping\n",
    stderr: "",
  });
  assert.equal(Deno.readTextFileSync(out), secret);
  assert.equal(exists(path), false);
  assert.deepEqual(
    filesContaining(home.root, [secret], [home.scratch]),
    [],
  );

  // A remote service with its token asked inline: left out with one line;
  // with --strict, refused, exit 78.
  home.writeService(
    "docs",
    tokenServiceToml({
      name: "docs",
      source: "secret",
      url: "https://docs.example.com/mcp",
      delivery: "inline",
    }),
  );
  const reason =
    `service docs is a remote server with a token, and agent fake would write it into ${path}, on disk outside sherlock's private runtime folder; remove its [token] delivery = "inline" (the bridge carries it), or use another agent`;
  using without = new AgentRun(home.scratch, { config: `path:${path}` });
  const second = await home.sherlock(["fake"], { env: without.env });
  assert.equal(second.code, 0, second.stderr);
  assert.deepEqual(lines(second.stderr), [
    `sherlock: ${reason}; starting the session without service docs`,
  ]);
  assert.deepEqual(
    Object.keys(JSON.parse(without.record().config!.text!).mcpServers),
    ["api"],
  );
  assert.equal(exists(path), false);
  using refused = new AgentRun(home.scratch);
  const strict = await home.sherlock(["--strict", "fake"], {
    env: refused.env,
  });
  assert.equal(strict.code, 78);
  assert.deepEqual(lines(strict.stderr), [`sherlock: ${reason}`]);
  assert.equal(refused.hasStarted, false);
  assert.equal(exists(path), false);
});
