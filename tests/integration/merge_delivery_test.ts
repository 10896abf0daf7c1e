/**
 * `merge = true` (Gemini CLI's delivery) end to end: a fake agent whose
 * profile merges sherlock's servers into a settings file inside the
 * throwaway HOME. The operator's file comes back byte for byte, mode
 * included, however the session ends — after a crash, at the next start;
 * a file changed during the session keeps the change; a file sherlock
 * cannot merge into is never touched; tokens never enter the file.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  addFakeAgent,
  AgentRun,
  killOrphanedAgent,
  startWaitingSession,
} from "../helpers/agent.ts";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { modeOf } from "../helpers/files.ts";
import { createTestHome, listNames, type TestHome } from "../helpers/home.ts";
import { filesContaining } from "../helpers/leaks.ts";
import { stdioServiceToml, tokenServiceToml } from "../helpers/profiles.ts";
import { sh } from "../helpers/shell.ts";
import { lines, runSherlock } from "../helpers/sherlock.ts";
import { exists } from "../helpers/wait.ts";

/** The fake agent's profile name. */
const AGENT = "gem";

/** Adds the merging fake agent and one service without a token. */
function setUp(home: TestHome): string {
  addFakeAgent(home, {
    name: AGENT,
    executable: "fake",
    mcp: {
      mode: "config-file",
      path: "~/.gemini/settings.json",
      format: "gemini",
      merge: true,
    },
  });
  home.writeService(
    "tools",
    stdioServiceToml("tools", {
      command: "tools-server",
      args: ["--flag"],
      env: { LEVEL: "3" },
    }),
  );
  return join(home.home, ".gemini", "settings.json");
}

/** sherlock's entry for the `tools` service in a gemini document. */
const TOOLS = {
  command: "tools-server",
  args: ["--flag"],
  env: { LEVEL: "3" },
};

/** An operator's file as people write it: not sherlock's formatting. */
const OPERATOR_TEXT =
  `{"theme":"dark",   "mcpServers": {"mine": {"command": "m"}},
\t"security": {"auth": {"selectedType": "gemini-api-key"}}, "ü": "✓"}`;

/** Writes the operator's file with a mode; returns its bytes. */
function writeOperatorFile(
  path: string,
  text = OPERATOR_TEXT,
  mode = 0o640,
): Uint8Array {
  Deno.mkdirSync(join(path, ".."), { recursive: true });
  const bytes = new TextEncoder().encode(text);
  Deno.writeFileSync(path, bytes);
  Deno.chmodSync(path, mode);
  return bytes;
}

/** The session records left (the merge lock beside them is not one). */
function records(home: TestHome): string[] {
  return home.sessionRecords().filter((name) => name.endsWith(".json"));
}

/** Asserts that the agent saw the operator's file with sherlock's server in it. */
function assertMergedSeen(text: string | null | undefined): void {
  assert.ok(text, "the agent saw no file");
  assert.deepEqual(JSON.parse(text), {
    theme: "dark",
    mcpServers: { mine: { command: "m" }, tools: TOOLS },
    security: { auth: { selectedType: "gemini-api-key" } },
    "ü": "✓",
  });
}

Deno.test("merge: the file comes back byte for byte, mode included, however the agent ends", async () => {
  await using home = await createTestHome();
  const path = setUp(home);
  const bytes = writeOperatorFile(path);
  const cases: {
    options: { exit?: number; kill?: Deno.Signal };
    code: number;
  }[] = [
    { options: { exit: 0 }, code: 0 },
    { options: { exit: 3 }, code: 3 },
    { options: { kill: "SIGTERM" }, code: 143 },
    { options: { kill: "SIGKILL" }, code: 137 },
  ];
  for (const { options, code } of cases) {
    using agent = new AgentRun(home.scratch, {
      ...options,
      config: `path:${path}`,
    });
    const result = await runSherlock([AGENT], {
      env: { ...home.env, ...agent.env },
    });
    assert.equal(result.code, code, result.stderr);
    assert.equal(result.stderr, "");
    assertMergedSeen(agent.record().config?.text);
    assert.equal(agent.record().config?.mode, 0o640);
    assert.deepEqual(Deno.readFileSync(path), bytes, JSON.stringify(options));
    assert.equal(modeOf(path), 0o640);
    assert.deepEqual(records(home), []);
  }
});

Deno.test("merge: SIGTERM to sherlock mid-session: exit 143, the file back", async () => {
  await using home = await createTestHome();
  const path = setUp(home);
  const bytes = writeOperatorFile(path, OPERATOR_TEXT, 0o600);
  await using session = await startWaitingSession(home, [AGENT], {
    config: `path:${path}`,
  });
  assertMergedSeen(session.started.config?.text);
  session.sherlock.kill("SIGTERM");
  const result = await session.sherlock.result;
  assert.equal(result.code, 143);
  assert.equal(result.stderr, "");
  assert.deepEqual(Deno.readFileSync(path), bytes);
  assert.equal(modeOf(path), 0o600);
  assert.deepEqual(records(home), []);
});

Deno.test("merge: no file before, none after (its folder may stay)", async () => {
  await using home = await createTestHome();
  const path = setUp(home);
  using agent = new AgentRun(home.scratch, { config: `path:${path}` });
  const result = await runSherlock([AGENT], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  const seen = agent.record().config!;
  assert.deepEqual(JSON.parse(seen.text!), { mcpServers: { tools: TOOLS } });
  assert.equal(seen.mode, 0o600);
  assert.equal(exists(path), false);
  assert.deepEqual(listNames(join(home.home, ".gemini")), []);
  assert.deepEqual(records(home), []);
});

Deno.test("merge: sherlock SIGKILLed mid-session; the next run puts the file back, quietly", async () => {
  await using home = await createTestHome();
  const path = setUp(home);
  const bytes = writeOperatorFile(path, OPERATOR_TEXT, 0o604);
  await using crashed = await startWaitingSession(home, [AGENT], {
    config: `path:${path}`,
  });
  crashed.sherlock.kill("SIGKILL");
  assert.equal((await crashed.sherlock.exited).signal, "SIGKILL");
  // Nothing could clean up: the merged file and the record are there.
  assertMergedSeen(Deno.readTextFileSync(path));
  assert.equal(records(home).length, 1);
  await killOrphanedAgent(crashed);

  // The next session, of any agent, puts it back before it starts.
  addFakeAgent(home, { name: "other", executable: "fake" });
  using next = new AgentRun(home.scratch);
  const result = await runSherlock(["other"], {
    env: { ...home.env, ...next.env },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "", "nothing alarming");
  assert.equal(result.stdout, "");
  assert.deepEqual(Deno.readFileSync(path), bytes);
  assert.equal(modeOf(path), 0o604);
  assert.deepEqual(records(home), []);

  // And a session of the merging agent itself still works afterwards.
  using again = new AgentRun(home.scratch, { config: `path:${path}` });
  const second = await runSherlock([AGENT], {
    env: { ...home.env, ...again.env },
  });
  assert.equal(second.code, 0, second.stderr);
  assertMergedSeen(again.record().config?.text);
  assert.deepEqual(Deno.readFileSync(path), bytes);
});

Deno.test("merge: sherlock SIGKILLed, its agent still runs: the merge stays, a second merge is refused", async () => {
  await using home = await createTestHome();
  const path = setUp(home);
  const bytes = writeOperatorFile(path);
  await using crashed = await startWaitingSession(home, [AGENT], {
    config: `path:${path}`,
  });
  crashed.sherlock.kill("SIGKILL");
  await crashed.sherlock.exited;
  const merged = Deno.readFileSync(path);

  // Another agent's session leaves the live agent's file alone…
  addFakeAgent(home, { name: "other", executable: "fake" });
  using next = new AgentRun(home.scratch);
  const other = await runSherlock(["other"], {
    env: { ...home.env, ...next.env },
  });
  assert.equal(other.code, 0, other.stderr);
  assert.deepEqual(Deno.readFileSync(path), merged);
  // …and a second merge into it waits for the agent, as for a live sherlock.
  using second = new AgentRun(home.scratch, { config: `path:${path}` });
  const refused = await runSherlock([AGENT], {
    env: { ...home.env, ...second.env },
  });
  assert.equal(refused.code, 73);
  assert.match(refused.stderr, /is in use by sherlock session/);
  assert.equal(second.hasStarted, false);
  assert.deepEqual(Deno.readFileSync(path), merged);
  assert.equal(records(home).length, 1);

  // The agent ends: the next run puts the file back.
  await killOrphanedAgent(crashed);
  using last = new AgentRun(home.scratch);
  const swept = await runSherlock(["other"], {
    env: { ...home.env, ...last.env },
  });
  assert.equal(swept.code, 0, swept.stderr);
  assert.deepEqual(Deno.readFileSync(path), bytes);
  assert.deepEqual(records(home), []);
});

Deno.test("merge: a crashed session's merge is put back before the next one merges", async () => {
  await using home = await createTestHome();
  const path = setUp(home);
  const bytes = writeOperatorFile(path);
  await using crashed = await startWaitingSession(home, [AGENT], {
    config: `path:${path}`,
  });
  crashed.sherlock.kill("SIGKILL");
  await crashed.sherlock.exited;
  await killOrphanedAgent(crashed);
  using agent = new AgentRun(home.scratch, { config: `path:${path}` });
  const result = await runSherlock([AGENT], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  // The new session merged into the operator's file, not the dead one's.
  assertMergedSeen(agent.record().config?.text);
  assert.deepEqual(Deno.readFileSync(path), bytes);
  assert.deepEqual(records(home), []);
});

Deno.test("merge: the operator's edit during the session stays; sherlock's servers go", async () => {
  await using home = await createTestHome();
  const path = setUp(home);
  writeOperatorFile(path, OPERATOR_TEXT, 0o640);
  await using session = await startWaitingSession(home, [AGENT], {
    config: `path:${path}`,
  });
  const during = JSON.parse(Deno.readTextFileSync(path));
  during.theme = "light";
  during.mcpServers.theirs = { command: "t" };
  Deno.writeTextFileSync(path, JSON.stringify(during, null, 4));
  session.agent.release();
  const result = await session.sherlock.result;
  assert.equal(result.code, 0);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: ${path} changed during the session; sherlock removed its servers and kept the other changes`,
  ]);
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(path)), {
    theme: "light",
    mcpServers: { mine: { command: "m" }, theirs: { command: "t" } },
    security: { auth: { selectedType: "gemini-api-key" } },
    "ü": "✓",
  });
  assert.equal(modeOf(path), 0o640);
  assert.deepEqual(records(home), []);
});

Deno.test("merge: a file with comments (JSONC) is refused: exit 73, one line, untouched", async () => {
  await using home = await createTestHome();
  const path = setUp(home);
  const bytes = writeOperatorFile(
    path,
    '{\n  // my settings\n  "theme": "dark",\n}\n',
    0o644,
  );
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock([AGENT], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 73);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: ${path} is not plain JSON (comments?); sherlock merges its servers only into a JSON file and left it untouched`,
  ]);
  assert.equal(result.stdout, "");
  assert.equal(agent.hasStarted, false);
  assert.deepEqual(Deno.readFileSync(path), bytes);
  assert.equal(modeOf(path), 0o644);
  assert.deepEqual(listNames(join(home.home, ".gemini")), ["settings.json"]);
  assert.deepEqual(records(home), []);
});

Deno.test("merge: a second live session is refused with exit 73 naming the first", async () => {
  await using home = await createTestHome();
  const path = setUp(home);
  const bytes = writeOperatorFile(path);
  await using first = await startWaitingSession(home, [AGENT], {
    config: `path:${path}`,
  });
  const [record] = records(home);
  const session = record.replace(/\.json$/, "");
  const merged = Deno.readFileSync(path);

  using second = new AgentRun(home.scratch);
  const result = await runSherlock([AGENT], {
    env: { ...home.env, ...second.env },
  });
  assert.equal(result.code, 73);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: ${path} is in use by sherlock session ${session} (${AGENT}, pid ${first.sherlock.pid}); wait for it to end`,
  ]);
  assert.equal(second.hasStarted, false);
  assert.deepEqual(Deno.readFileSync(path), merged);
  assert.deepEqual(records(home), [record]);

  first.agent.release();
  assert.equal((await first.sherlock.result).code, 0);
  assert.deepEqual(Deno.readFileSync(path), bytes);
  assert.deepEqual(records(home), []);
});

Deno.test("merge: a symlinked settings file stays a symlink; its target is merged and restored", async () => {
  await using home = await createTestHome();
  const path = setUp(home);
  const target = join(home.home, "dotfiles", "gemini.json");
  const bytes = writeOperatorFile(target, OPERATOR_TEXT, 0o600);
  Deno.mkdirSync(join(home.home, ".gemini"));
  Deno.symlinkSync("../dotfiles/gemini.json", path);
  using agent = new AgentRun(home.scratch, { config: `path:${path}` });
  const result = await runSherlock([AGENT], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  assertMergedSeen(agent.record().config?.text);
  assert.ok(Deno.lstatSync(path).isSymlink);
  assert.equal(Deno.readLinkSync(path), "../dotfiles/gemini.json");
  assert.deepEqual(Deno.readFileSync(target), bytes);
  assert.equal(modeOf(target), 0o600);
  assert.deepEqual(listNames(join(home.home, "dotfiles")), ["gemini.json"]);
});

Deno.test("merge: --dry-run shows sherlock's part and touches nothing", async () => {
  await using home = await createTestHome();
  const path = setUp(home);
  const bytes = writeOperatorFile(path);
  const result = await runSherlock(["--dry-run", AGENT], { env: home.env });
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stdout,
    new RegExp(`merged into ${path.replaceAll(".", "\\.")} \\(gemini;`),
  );
  assert.ok(
    result.stdout.endsWith(
      "--- sherlock's part of the merged config (tokens redacted) ---\n" +
        JSON.stringify({ mcpServers: { tools: TOOLS } }, null, 2) + "\n",
    ),
    result.stdout,
  );
  assert.deepEqual(Deno.readFileSync(path), bytes);
  assert.deepEqual(records(home), []);
});

Deno.test("merge: a service with a token is always behind the shim; no token in the file, ever", async () => {
  await using home = await createBrokerHome();
  const path = setUp(home);
  const bytes = writeOperatorFile(path);
  const helper = home.tokenHelper("api", { expiresIn: 3600 });
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
        `command = ${JSON.stringify(server)}`,
      ),
  );
  // Even when the service asks for inline delivery.
  Deno.writeTextFileSync(
    join(home.servicesDir, "api.toml"),
    Deno.readTextFileSync(join(home.servicesDir, "api.toml")) +
      'delivery = "inline"\n',
  );
  await home.login();

  using agent = new AgentRun(home.scratch, {
    config: `path:${path}`,
    runServers: "ping\n",
  });
  const result = await home.sherlock([AGENT], { env: agent.env });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  const record = agent.record();
  // What the agent read while it ran: the shim, not the token.
  const text = record.config!.text!;
  assert.equal(text.includes(helper.token), false);
  const api = JSON.parse(text).mcpServers.api;
  assert.ok(api.args.includes("shim"), text);
  assert.deepEqual(api.args.slice(api.args.indexOf("--")), ["--", server]);
  // Only the session's capability, for the shim.
  assert.deepEqual(Object.keys(api.env), ["SHERLOCK_SESSION_CAPABILITY"]);
  assert.match(api.env.SHERLOCK_SESSION_CAPABILITY, /^[0-9a-f]{64}$/);
  // The server, started through the shim, got it.
  assert.deepEqual(record.servers!.api, {
    code: 0,
    stdout: "ping\n",
    stderr: "",
  });
  assert.equal(Deno.readTextFileSync(out), helper.token);
  // Afterwards: the file is back, and no file holds the token.
  assert.deepEqual(Deno.readFileSync(path), bytes);
  assert.deepEqual(
    filesContaining(home.root, [helper.token], [home.scratch]),
    [],
  );
});
