/**
 * Where tokens may go: only into the rendered config, while the agent runs.
 * A whole session with a `command` service, a `secret` service and a remote
 * service whose token goes in a header (inline); then every byte sherlock printed,
 * the argv and environment the agent got, the daemon's own argv and
 * environment, and every file left under HOME, the XDG folders, TMPDIR and
 * the runtime folder are searched for each token.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { renderedServers } from "../helpers/agent.ts";
import { AGENT, createBrokerHome } from "../helpers/broker_home.ts";
import { filesContaining, randomToken } from "../helpers/leaks.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import type { SherlockResult } from "../helpers/sherlock.ts";

Deno.test("tokens reach the rendered config and nothing else", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  const github = home.tokenHelper("github", { expiresIn: 3600 });
  const remote = home.tokenHelper("remote");
  const secret = randomToken("secret");
  const tokens = [github.token, remote.token, secret];
  home.writeService(
    "github",
    tokenServiceToml({ name: "github", command: [github.path] }),
  );
  home.writeService(
    "remote",
    tokenServiceToml({
      name: "remote",
      command: [remote.path],
      url: "https://mcp.example.com/mcp",
      delivery: "inline",
      header: "Authorization",
    }),
  );
  home.writeService(
    "api",
    tokenServiceToml({ name: "api", source: "secret", env: "API_KEY" }),
  );

  const printed: SherlockResult[] = [];
  const sherlock = async (args: string[], stdin?: string) => {
    const result = await home.sherlock(args, { stdin });
    printed.push(result);
    return result;
  };
  printed.push(await home.login());
  assert.equal((await sherlock(["secret", "set", "api"], secret)).code, 0);

  // The agent sees every token in its config, in the right place.
  const session = await home.runAgent();
  printed.push(session.result);
  assert.equal(session.result.code, 0, session.result.stderr);
  const record = session.record!;
  const servers = renderedServers(record);
  assert.deepEqual(servers.github.env, { GITHUB_TOKEN: github.token });
  assert.deepEqual(servers.api.env, { API_KEY: secret });
  assert.deepEqual(servers.remote.headers, {
    Authorization: `Bearer ${remote.token}`,
  });
  assert.equal(record.config!.mode, 0o600);
  assert.equal(record.config!.dirMode, 0o700);

  // …and nowhere else the agent got.
  const agentSaw = JSON.stringify({
    argv0: record.argv0,
    args: record.args,
    env: record.env,
    cwd: record.cwd,
  });
  for (const token of tokens) {
    assert.equal(agentSaw.includes(token), false, "argv or env of the agent");
  }
  // A second session from the cache, and every read-only command.
  const cached = await home.runAgent();
  printed.push(cached.result);
  assert.equal(cached.result.code, 0);
  for (
    const args of [
      ["whoami"],
      ["broker", "status"],
      ["broker", "log", "-n", "100"],
      ["secret", "ls"],
      ["agents"],
    ]
  ) {
    assert.equal((await sherlock(args)).code, 0, args.join(" "));
  }
  const dryRun = await sherlock(["--dry-run", AGENT]);
  assert.equal(dryRun.code, 0, dryRun.stderr);
  assert.equal(dryRun.stdout.match(/<redacted>/g)?.length, 3);
  assert.match(dryRun.stdout, /"Authorization": "Bearer <redacted>"/);

  // The daemon's own argv and environment.
  const [daemon] = home.daemonPids();
  assert.ok(daemon);
  for (const file of ["cmdline", "environ"]) {
    let text: string;
    try {
      text = Deno.readTextFileSync(`/proc/${daemon}/${file}`);
    } catch (error) {
      // The daemon is non-dumpable: only root reads its environ at all.
      if (file === "environ" && error instanceof Deno.errors.PermissionDenied) {
        continue;
      }
      throw error;
    }
    for (const token of tokens) assert.equal(text.includes(token), false);
  }

  const sweep = () =>
    filesContaining(home.root, tokens, [home.scratch]).map((path) =>
      path.slice(home.root.length)
    );
  assert.deepEqual(sweep(), [], "files left while the daemon runs");
  assert.deepEqual(
    home.runtimeFiles().filter((name) => name.endsWith(".json")),
    [],
    "the rendered configs are removed",
  );
  printed.push(await home.sherlock(["broker", "stop"]));
  assert.deepEqual(sweep(), [], "files left after the daemon stopped");

  for (const result of printed) {
    for (const token of tokens) {
      assert.equal(result.stdout.includes(token), false, "stdout");
      assert.equal(result.stderr.includes(token), false, "stderr");
    }
  }
  // The sweep looked at what matters.
  const state = join(home.stateHome, "sherlock");
  for (const file of ["audit.log", "broker.log"]) {
    assert.ok(Deno.statSync(join(state, file)).size > 0, file);
  }
});

Deno.test("--dry-run shows redaction markers and fetches nothing", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  const helper = home.addHelperService("github", { expiresIn: 3600 });
  home.writeService(
    "remote",
    tokenServiceToml({
      name: "remote",
      source: "secret",
      url: "https://mcp.example.com/mcp",
      header: "X-Api-Key",
    }),
  );
  // Logged out, no daemon: a dry run needs neither.
  const cold = await home.sherlock(["run", "--dry-run", AGENT]);
  assert.equal(cold.code, 0, cold.stderr);
  assert.match(cold.stdout, /"GITHUB_TOKEN": "<redacted>"/);
  // The remote service goes through the bridge: its entry holds no token,
  // not even a redacted one; only the session's capability, redacted, as
  // the real run renders it.
  assert.match(cold.stdout, /"bridge",\s*"--socket"/);
  assert.match(cold.stdout, /"--token-header",\s*"X-Api-Key"/);
  assert.deepEqual(redactedKeys(cold.stdout), [
    "GITHUB_TOKEN",
    "SHERLOCK_SESSION_CAPABILITY",
  ]);
  assert.deepEqual(home.daemonPids(), []);
  assert.equal(helper.runs(), 0);

  // Logged in with a cached token: still redacted.
  await home.login();
  assert.equal(
    (await home.sherlock(["secret", "set", "remote"], {
      stdin: "value-of-remote",
    })).code,
    0,
  );
  const run = await home.runAgent();
  assert.equal(run.result.code, 0, run.result.stderr);
  const warm = await home.sherlock(["run", "--dry-run", AGENT]);
  assert.equal(warm.code, 0);
  assert.equal(warm.stdout.includes(helper.token), false);
  assert.equal(warm.stdout.includes("value-of-remote"), false);
  assert.deepEqual(redactedKeys(warm.stdout), [
    "GITHUB_TOKEN",
    "SHERLOCK_SESSION_CAPABILITY",
  ]);
  assert.equal(helper.runs(), 1, "the dry run did not run the helper");
});

/** The keys whose value a dry run shows as `<redacted>`, sorted. */
function redactedKeys(stdout: string): string[] {
  const keys = [...stdout.matchAll(/"([^"]+)": "<redacted>"/g)].map((m) =>
    m[1]
  );
  assert.equal(
    keys.length,
    stdout.match(/<redacted>/g)?.length,
    "every <redacted> is a key's whole value",
  );
  return keys.sort();
}
