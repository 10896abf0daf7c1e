/**
 * `--dry-run` can be trusted: the config it prints is the one the real run
 * renders, values redacted. A real broker, a real session and the fake
 * agent, which records the config it was given; a shim entry and an inline
 * one (stdio servers whose helper gives the token) and a bridge entry (a
 * remote server, never contacted: the fake agent does not start servers).
 */

import assert from "node:assert/strict";
import { AGENT, createBrokerHome } from "../helpers/broker_home.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";

const CAPABILITY_ENV = "SHERLOCK_SESSION_CAPABILITY";
const REDACTED = "<redacted>";
const MARKER = "--- rendered config (tokens redacted) ---\n";

type Servers = Record<
  string,
  { args?: string[]; env?: Record<string, string> }
>;

/** The servers with the session id (new each run) made a placeholder. */
function withoutSessionId(servers: Servers): Servers {
  return Object.fromEntries(
    Object.entries(servers).map(([name, entry]) => {
      const args = entry.args?.map((arg, index, all) =>
        all[index - 1] === "--session" ? "<session>" : arg
      );
      return [name, { ...entry, ...(args ? { args } : {}) }];
    }),
  );
}

Deno.test("--dry-run prints the config the real run renders: the session capability in each shim's and bridge's env, redacted", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  const notes = home.tokenHelper("notes");
  home.writeService(
    "notes",
    tokenServiceToml({
      name: "notes",
      command: [notes.path],
      delivery: "shim",
    }),
  );
  const wiki = home.addHelperService("wiki");
  const docs = home.tokenHelper("docs");
  home.writeService(
    "docs",
    tokenServiceToml({
      name: "docs",
      command: [docs.path],
      url: "http://127.0.0.1:9/mcp",
    }),
  );
  await home.login();

  const dryRun = await home.sherlock(["run", "--dry-run", AGENT]);
  assert.equal(dryRun.code, 0, dryRun.stderr);
  const at = dryRun.stdout.indexOf(MARKER);
  assert.ok(at >= 0, dryRun.stdout);
  const dryServers: Servers =
    JSON.parse(dryRun.stdout.slice(at + MARKER.length)).mcpServers;
  assert.deepEqual(Object.keys(dryServers).sort(), ["docs", "notes", "wiki"]);
  // The bridge's and the shim's entries: the capability where the real run
  // puts it. The inline one gets the token itself and no capability.
  assert.equal(dryServers.docs.env?.[CAPABILITY_ENV], REDACTED);
  assert.equal(dryServers.notes.env?.[CAPABILITY_ENV], REDACTED);
  assert.deepEqual(dryServers.wiki.env, { WIKI_TOKEN: REDACTED });

  const { result, record } = await home.runAgent();
  assert.equal(result.code, 0, result.stderr);
  assert.ok(record?.config?.text, "the agent saw no rendered config");
  const realServers: Servers = JSON.parse(record.config.text).mcpServers;
  // The real values, redacted as the dry run shows them.
  for (const name of ["docs", "notes"]) {
    const env = realServers[name].env!;
    assert.ok(env[CAPABILITY_ENV] && env[CAPABILITY_ENV] !== REDACTED, name);
    env[CAPABILITY_ENV] = REDACTED;
  }
  assert.equal(realServers.wiki.env!.WIKI_TOKEN, wiki.token);
  realServers.wiki.env!.WIKI_TOKEN = REDACTED;
  assert.deepEqual(
    withoutSessionId(dryServers),
    withoutSessionId(realServers),
  );
});

Deno.test("run -v renders each bridge entry with --verbose (the bridge then says which MCP revision its server speaks); without -v, not", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  const docs = home.tokenHelper("docs");
  home.writeService(
    "docs",
    tokenServiceToml({
      name: "docs",
      command: [docs.path],
      url: "http://127.0.0.1:9/mcp",
    }),
  );
  await home.login();
  for (const [flags, verbose] of [[["-v"], true], [[], false]] as const) {
    const dryRun = await home.sherlock(["run", "--dry-run", ...flags, AGENT]);
    assert.equal(dryRun.code, 0, dryRun.stderr);
    const at = dryRun.stdout.indexOf(MARKER);
    const servers: Servers =
      JSON.parse(dryRun.stdout.slice(at + MARKER.length)).mcpServers;
    assert.equal(servers.docs.args?.includes("--verbose"), verbose);
  }
});
