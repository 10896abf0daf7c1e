/**
 * The agent's environment from a profile's [env] and [forbid]: what the
 * agent process really gets, and what happens when a variable is unset.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { addFakeAgent, AgentRun } from "../helpers/agent.ts";
import { createTestHome } from "../helpers/home.ts";
import { lines, runSherlock } from "../helpers/sherlock.ts";
import { exists } from "../helpers/wait.ts";

Deno.test("forbid strips an operator variable and one that [env] set", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, {
    name: "fake",
    env: { GH_TOKEN: "from the profile", KIND: "oauth" },
    forbid: ["ANTHROPIC_API_KEY", "GH_TOKEN"],
  });
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["fake"], {
    env: {
      ...home.env,
      ...agent.env,
      ANTHROPIC_API_KEY: "sk-ant-operator-secret",
      GH_TOKEN: "operator's token",
      UNRELATED: "stays",
    },
  });
  assert.equal(result.code, 0, result.stderr);
  const { env } = agent.record();
  assert.equal("ANTHROPIC_API_KEY" in env, false);
  assert.equal("GH_TOKEN" in env, false);
  assert.equal(env.KIND, "oauth");
  assert.equal(env.UNRELATED, "stays");
  // Neither value shows up anywhere in the agent's environment.
  for (const value of Object.values(env)) {
    assert.ok(!value.includes("sk-ant-operator-secret"));
    assert.ok(!value.includes("from the profile"));
  }
});

Deno.test("[env] values are expanded from the operator's environment and XDG defaults", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, {
    name: "fake",
    env: {
      AGENT_HOME: "${HOME}/.fake-agent",
      AGENT_CACHE: "${XDG_CACHE_HOME}/fake-agent",
      AGENT_DATA: "${XDG_DATA_HOME}/fake-agent",
      GREETING: "hello ${WHO}, cost $5",
    },
  });
  using agent = new AgentRun(home.scratch);
  const env: Record<string, string> = {
    ...home.env,
    ...agent.env,
    WHO: "operator",
  };
  delete env.XDG_DATA_HOME;
  const result = await runSherlock(["fake"], { env });
  assert.equal(result.code, 0, result.stderr);
  const record = agent.record();
  assert.equal(record.env.AGENT_HOME, `${home.home}/.fake-agent`);
  assert.equal(record.env.AGENT_CACHE, `${home.cacheHome}/fake-agent`);
  assert.equal(record.env.AGENT_DATA, `${home.home}/.local/share/fake-agent`);
  assert.equal(record.env.GREETING, "hello operator, cost $5");
  // The default was used for the agent's variable, not exported itself.
  assert.equal("XDG_DATA_HOME" in record.env, false);
});

Deno.test("an unset variable in [env]: exit 78 naming file, key and variable; nothing started or written", async () => {
  await using home = await createTestHome();
  const profile = addFakeAgent(home, {
    name: "fake",
    env: { TOKEN_FILE: "${NOPE}/token" },
  });
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 78);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: ${profile}: env.TOKEN_FILE: \${NOPE} is not set and has no default; set it or change the profile`,
  ]);
  assert.equal(result.stdout, "");
  assert.equal(agent.hasStarted, false);
  assert.equal(exists(home.runtimeDir), false);
  assert.deepEqual(home.sessionRecords(), []);
});

Deno.test("an unset variable in a config-file path: exit 78, nothing written", async () => {
  await using home = await createTestHome();
  const profile = addFakeAgent(home, {
    name: "fake",
    mcp: { mode: "config-file", path: "${FAKE_AGENT_DIR}/mcp.json" },
  });
  using agent = new AgentRun(home.scratch);
  const before = Deno.readDirSync(home.root).map((e) => e.name).toArray()
    .sort();
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 78);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: ${profile}: mcp.path: \${FAKE_AGENT_DIR} is not set and has no default; set it or change the profile`,
  ]);
  assert.equal(agent.hasStarted, false);
  assert.deepEqual(home.sessionRecords(), []);
  assert.equal(exists(join(home.root, "mcp.json")), false);
  assert.deepEqual(
    Deno.readDirSync(home.root).map((e) => e.name).toArray().sort(),
    before,
  );
});

Deno.test("the dry run reports the environment changes without starting anything", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, {
    name: "fake",
    env: { KIND: "oauth", SPACED: "a b" },
    forbid: ["SECRET_KEY", "NOT_SET"],
  });
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["run", "--dry-run", "fake"], {
    env: { ...home.env, ...agent.env, SECRET_KEY: "hunter2" },
  });
  assert.equal(result.code, 0, result.stderr);
  const out = lines(result.stdout);
  assert.ok(out.includes("env set      KIND=oauth"), result.stdout);
  assert.ok(out.includes("env set      SPACED='a b'"), result.stdout);
  assert.ok(
    out.some((line) =>
      /^env set +SHERLOCK_MCP_CONFIG=\/.*\.mcp\.json$/.test(line)
    ),
    result.stdout,
  );
  assert.ok(
    out.includes("env removed  SECRET_KEY (forbidden by the profile)"),
    result.stdout,
  );
  assert.ok(!result.stdout.includes("NOT_SET"));
  assert.ok(!result.stdout.includes("hunter2"));
  assert.equal(agent.hasStarted, false);
});
