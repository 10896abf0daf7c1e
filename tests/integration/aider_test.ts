/**
 * The built-in `aider` profile (`[mcp] mode = "none"`): Aider has no MCP
 * client, so sherlock starts it with no MCP config, no services and no
 * broker, only `[env]` and `[forbid]`. Aider installs only from PyPI, which
 * is not reachable here: a stand-in (the fake agent, tests/helpers/agent.ts)
 * is installed as `aider` on the PATH and records what it was started with.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { AgentRun, installFakeAgent } from "../helpers/agent.ts";
import { createTestHome, type TestHome } from "../helpers/home.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { runSherlock } from "../helpers/sherlock.ts";

/** A service whose token needs the broker: a session that used it would fail. */
function writeTokenService(home: TestHome): void {
  home.writeService(
    "api",
    tokenServiceToml({ name: "api", source: "secret", env: "API_TOKEN" }),
  );
}

Deno.test("aider: started with the user's arguments only, no MCP config, no broker", async () => {
  await using home = await createTestHome();
  installFakeAgent(join(home.bin, "aider"));
  writeTokenService(home);
  using agent = new AgentRun(home.scratch, {});
  const args = ["--model", "gpt-4o", "file.py"];
  const result = await runSherlock(["aider", ...args], {
    env: { ...home.env, ...agent.env },
    cwd: home.work,
  });
  // No broker is running and no secret is set: a session with the api
  // service would have failed.
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  const record = agent.record();
  assert.equal(record.argv0, join(home.bin, "aider"));
  assert.deepEqual(record.args, args);
  // The home's own SHERLOCK_ variables (its test clock) pass through as
  // any of the operator's do; sherlock adds none.
  const given: Record<string, string> = { ...home.env, ...agent.env };
  const added = Object.keys(record.env).filter((name) =>
    name.startsWith("SHERLOCK_") && !(name in given)
  );
  assert.deepEqual(added, [], "sherlock put no variable of its own");
  assert.deepEqual(home.runtimeFiles(), [], "no rendered config");
  assert.deepEqual(home.sessionRecords(), [], "no session record");
});

Deno.test("aider: --dry-run says there is no config and no broker", async () => {
  await using home = await createTestHome();
  installFakeAgent(join(home.bin, "aider"));
  writeTokenService(home);
  const result = await runSherlock(["run", "--dry-run", "aider", "hi"], {
    env: home.env,
    cwd: home.work,
  });
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stdout,
    /services +\(none: the profile has \[mcp\] mode = "none"\)/,
  );
  assert.match(result.stdout, /config +\(none, and no broker\)/);
  assert.doesNotMatch(result.stdout, /rendered config/);
});

Deno.test("aider: an operator's override adds [env] and [forbid]", async () => {
  await using home = await createTestHome();
  installFakeAgent(join(home.bin, "aider"));
  home.writeProfile(
    "aider",
    [
      "[agent]",
      'name = "aider"',
      'executable = "aider"',
      "",
      "[mcp]",
      'mode = "none"',
      "",
      "[env]",
      'AIDER_CHECK_UPDATE = "false"',
      "",
      "[forbid]",
      'env = ["OPENAI_API_KEY"]',
    ].join("\n") + "\n",
  );
  using agent = new AgentRun(home.scratch, {});
  const result = await runSherlock(["aider"], {
    env: { ...home.env, ...agent.env, OPENAI_API_KEY: "sk-operator" },
    cwd: home.work,
  });
  assert.equal(result.code, 0, result.stderr);
  const record = agent.record();
  assert.equal(record.env.AIDER_CHECK_UPDATE, "false");
  assert.equal(record.env.OPENAI_API_KEY, undefined);
  assert.deepEqual(record.args, []);
});

Deno.test('aider: mode = "none" with a flag is one clear line, exit 78', async () => {
  await using home = await createTestHome();
  installFakeAgent(join(home.bin, "aider"));
  const path = home.writeProfile(
    "aider",
    [
      "[agent]",
      'name = "aider"',
      'executable = "aider"',
      "",
      "[mcp]",
      'mode = "none"',
      'flag = "--mcp"',
    ].join("\n") + "\n",
  );
  const result = await runSherlock(["aider"], {
    env: home.env,
    cwd: home.work,
  });
  assert.equal(result.code, 78);
  assert.equal(
    result.stderr.trim(),
    `sherlock: ${path}:7: mcp.flag: not used with mode = "none"; remove it`,
  );
});
