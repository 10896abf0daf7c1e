/**
 * Operator files that are not small regular files (issue 9, item 5): a FIFO
 * (which blocks whoever opens it), a symlink to /dev/zero (endless), a huge
 * sparse file. sherlock refuses each at once with one line naming it —
 * skipped like a malformed file in a listing, exit 78 when it is needed —
 * and never reads more than the cap; the validation cache forgets files
 * that are gone. Each process has a 10 s hang guard: the behaviour before
 * was to block forever or to read for seconds.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { addFakeAgent, AgentRun } from "../helpers/agent.ts";
import { createTestHome, type TestHome } from "../helpers/home.ts";
import { measurePeakMemory } from "../helpers/peak_memory.ts";
import { stdioServiceToml } from "../helpers/profiles.ts";
import {
  lines,
  runSherlock,
  sherlockCommand,
  type SherlockResult,
} from "../helpers/sherlock.ts";

/** Longer than a refusal takes, shorter than a blocked read. */
const HANG_GUARD_MS = 10_000;

function sherlock(
  home: TestHome,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<SherlockResult> {
  return runSherlock(args, {
    env: { ...home.env, ...env },
    cwd: home.work,
    timeoutMs: HANG_GUARD_MS,
  });
}

function mkfifo(path: string): void {
  const made = new Deno.Command("mkfifo", { args: [path] }).outputSync();
  assert.equal(made.code, 0, new TextDecoder().decode(made.stderr));
}

/** A home with the fake agent and one good service. */
async function homeWithGoodService(): Promise<TestHome> {
  const home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  home.writeService(
    "good",
    stdioServiceToml("good", { command: "good-server" }),
  );
  return home;
}

Deno.test("a FIFO in services.d, agents.d or at config.toml: refused at once, naming it", async () => {
  await using home = await homeWithGoodService();
  const service = join(home.servicesDir, "stuck.toml");
  const profile = join(home.agentsDir, "stuck.toml");
  mkfifo(service);
  mkfifo(profile);
  const fifo = "cannot read it: it is a FIFO, not a regular file";

  const dryRun = await sherlock(home, ["run", "--dry-run", "fake"]);
  assert.equal(dryRun.code, 0, dryRun.stderr);
  assert.deepEqual(lines(dryRun.stderr), [
    `sherlock: skipped malformed service ${service}: ${fifo}`,
  ]);
  assert.match(dryRun.stdout, /good-server/);

  const listed = await sherlock(home, ["agents"]);
  assert.equal(listed.code, 78);
  assert.match(listed.stdout, /^fake /m);
  assert.deepEqual(lines(listed.stderr), [
    `sherlock: skipped malformed profile ${profile}: ${fifo}`,
  ]);

  using agent = new AgentRun(home.scratch);
  const stuck = await sherlock(home, ["stuck"], agent.env);
  assert.equal(stuck.code, 78);
  assert.deepEqual(lines(stuck.stderr), [`sherlock: ${profile}: ${fifo}`]);
  assert.equal(agent.hasStarted, false);

  const config = join(home.configHome, "sherlock", "config.toml");
  mkfifo(config);
  const run = await sherlock(home, ["fake"], agent.env);
  assert.equal(run.code, 78);
  assert.deepEqual(lines(run.stderr), [`sherlock: ${config}: ${fifo}`]);
  assert.equal(agent.hasStarted, false);
});

Deno.test("a symlink to /dev/zero in agents.d or services.d: refused at once", async () => {
  await using home = await homeWithGoodService();
  const service = join(home.servicesDir, "zero.toml");
  const profile = join(home.agentsDir, "zero.toml");
  Deno.symlinkSync("/dev/zero", service);
  Deno.symlinkSync("/dev/zero", profile);
  const device = "cannot read it: it is a character device, not a regular file";

  const dryRun = await sherlock(home, ["run", "--dry-run", "fake"]);
  assert.equal(dryRun.code, 0, dryRun.stderr);
  assert.deepEqual(lines(dryRun.stderr), [
    `sherlock: skipped malformed service ${service}: ${device}`,
  ]);

  const listed = await sherlock(home, ["agents"]);
  assert.equal(listed.code, 78);
  assert.deepEqual(lines(listed.stderr), [
    `sherlock: skipped malformed profile ${profile}: ${device}`,
  ]);

  const zero = await sherlock(home, ["run", "--dry-run", "zero"]);
  assert.equal(zero.code, 78);
  assert.deepEqual(lines(zero.stderr), [`sherlock: ${profile}: ${device}`]);
});

Deno.test("a 100 MB service or profile: refused with one line, never read into memory", async () => {
  await using home = await homeWithGoodService();
  // Valid TOML up front; the rest is a hole (sparse: no disk used).
  const service = home.writeService(
    "huge",
    stdioServiceToml("huge", { command: "/opt/huge" }),
  );
  Deno.truncateSync(service, 100 * 1024 * 1024);
  const profile = join(home.agentsDir, "huge.toml");
  Deno.copyFileSync(join(home.agentsDir, "fake.toml"), profile);
  Deno.truncateSync(profile, 100 * 1024 * 1024);

  const measured = await measurePeakMemory(
    sherlockCommand(["run", "--dry-run", "fake"]),
    { env: home.env, cwd: home.work, timeoutMs: 60_000 },
  );
  assert.equal(measured.code, 0, measured.stderr);
  assert.deepEqual(lines(measured.stderr), [
    `sherlock: skipped malformed service ${service}: larger than 1 MiB; a service is a few KiB`,
  ]);
  // Deno itself takes some tens of MiB; reading the file took over 1 GiB.
  assert.ok(
    measured.peakKiB < 256 * 1024,
    `peak memory ${measured.peakKiB} KiB`,
  );

  const huge = await sherlock(home, ["run", "--dry-run", "huge"]);
  assert.equal(huge.code, 78);
  assert.deepEqual(lines(huge.stderr), [
    `sherlock: ${profile}: larger than 1 MiB; a profile is a few KiB`,
  ]);
});

Deno.test("the validation cache forgets a file that is gone on the next run", async () => {
  await using home = await homeWithGoodService();
  const gone = home.writeService(
    "gone",
    stdioServiceToml("gone", { command: "/opt/gone" }),
  );
  const cacheFile = join(home.cacheHome, "sherlock", "validated.json");
  // The files' entries: not where the servers' commands were found.
  const cachedPaths = () =>
    Object.keys(JSON.parse(Deno.readTextFileSync(cacheFile)).entries)
      .filter((key) => !key.startsWith("note:"))
      .map((key) => key.split("\0")[1]);

  assert.equal((await sherlock(home, ["run", "--dry-run", "fake"])).code, 0);
  assert.ok(cachedPaths().includes(gone), "cached while it is there");
  Deno.removeSync(gone);
  assert.equal((await sherlock(home, ["run", "--dry-run", "fake"])).code, 0);
  assert.deepEqual(
    cachedPaths().filter((path) => !path.startsWith("built-in:")).sort(),
    [join(home.agentsDir, "fake.toml"), join(home.servicesDir, "good.toml")],
  );
});

/** `[a.a.a…]`: a table header `levels` tables deep (2 bytes a level). */
function nestedHeader(levels: number): string {
  return `[${Array(levels).fill("a").join(".")}]\n`;
}

/** Runs the fake agent through sherlock; returns the servers it was given. */
async function runSession(
  home: TestHome,
): Promise<{ result: SherlockResult; servers: string[] }> {
  using agent = new AgentRun(home.scratch, {
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const result = await sherlock(home, ["fake"], agent.env);
  const text = agent.hasStarted ? agent.record().config?.text : undefined;
  const servers = text ? Object.keys(JSON.parse(text).mcpServers ?? {}) : [];
  return { result, servers };
}

function assertNoStackTrace(result: SherlockResult): void {
  assert.doesNotMatch(result.stderr, /internal error|RangeError|\n\s+at /);
}

Deno.test("a services file with a header nested 20 000 levels deep: that service is skipped with file and line, the session runs (issue 17, item 12)", async () => {
  await using home = await homeWithGoodService();
  const deep = home.writeService(
    "deep",
    stdioServiceToml("deep", { command: "deep-server" }) + nestedHeader(20_000),
  );
  assert.ok(Deno.statSync(deep).size > 40_000);
  const line = Deno.readTextFileSync(deep).split("\n").length - 1;
  const refusal = new RegExp(
    `^sherlock: skipped malformed service ${deep}:${line}: a\\.a\\.[a.]+…?: ` +
      "tables or arrays nested more than 32 levels deep; " +
      "sherlock's files nest a few at most: remove the nesting$",
  );

  const { result, servers } = await runSession(home);
  assertNoStackTrace(result);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(lines(result.stderr).length, 1, result.stderr);
  assert.match(lines(result.stderr)[0], refusal);
  assert.deepEqual(servers, ["good"]);

  const listed = await sherlock(home, ["services"]);
  assertNoStackTrace(listed);
  assert.match(listed.stdout, /^good /m);
});

Deno.test("a profile or config.toml nested 20 000 levels deep: one line with file and line, exit 78 (issue 17, item 12)", async () => {
  await using home = await homeWithGoodService();
  const profile = join(home.agentsDir, "deep.toml");
  Deno.writeTextFileSync(
    profile,
    Deno.readTextFileSync(join(home.agentsDir, "fake.toml")) +
      nestedHeader(20_000),
  );
  const profileLine = Deno.readTextFileSync(profile).split("\n").length - 1;
  const deep = await sherlock(home, ["run", "--dry-run", "deep"]);
  assertNoStackTrace(deep);
  assert.equal(deep.code, 78, deep.stderr);
  assert.equal(lines(deep.stderr).length, 1, deep.stderr);
  assert.match(
    deep.stderr,
    new RegExp(`^sherlock: ${profile}:${profileLine}: a\\.a\\.[a.]+…?: tables`),
  );

  const config = join(home.configHome, "sherlock", "config.toml");
  Deno.writeTextFileSync(config, `# mine\n${nestedHeader(20_000)}`);
  using agent = new AgentRun(home.scratch);
  const run = await sherlock(home, ["fake"], agent.env);
  assertNoStackTrace(run);
  assert.equal(run.code, 78, run.stderr);
  assert.equal(lines(run.stderr).length, 1, run.stderr);
  assert.match(run.stderr, new RegExp(`^sherlock: ${config}:2: a\\.a\\.`));
  assert.equal(agent.hasStarted, false);
});

Deno.test("an unknown key of 900 K characters: one short line, the service skipped, no suggestion measured (issue 17, item 13)", async () => {
  await using home = await homeWithGoodService();
  const long = home.writeService(
    "long",
    stdioServiceToml("long", { command: "long-server" }).replace(
      "[server]\n",
      `[server]\n${"k".repeat(900_000)} = 1\n`,
    ),
  );
  assert.ok(Deno.statSync(long).size < 1024 * 1024, "under the read limit");
  const line = Deno.readTextFileSync(long).split("\n")
    .findIndex((text) => text.startsWith("kkk")) + 1;

  const { result, servers } = await runSession(home);
  assertNoStackTrace(result);
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: skipped malformed service ${long}:${line}: server.${
      "k".repeat(57)
    }…: unknown key (allowed here: command, args, env, url, transport, headers)`,
  ]);
  assert.deepEqual(servers, ["good"]);

  // The suggestion's edit distance built a 900 K × n matrix per candidate:
  // ~750 MB. Memory, not time, is what the test can hold it to.
  const measured = await measurePeakMemory(
    sherlockCommand(["run", "--dry-run", "fake"]),
    { env: home.env, cwd: home.work, timeoutMs: 60_000 },
  );
  assert.equal(measured.code, 0, measured.stderr);
  assert.ok(
    measured.peakKiB < 256 * 1024,
    `peak memory ${measured.peakKiB} KiB`,
  );
});

Deno.test("sherlock agents with a profile holding a 900 K-character key: its row and its line quote a short start (issue 17, item 13)", async () => {
  await using home = await homeWithGoodService();
  const profile = join(home.agentsDir, "long.toml");
  Deno.writeTextFileSync(
    profile,
    Deno.readTextFileSync(join(home.agentsDir, "fake.toml"))
      .replace('name = "fake"', 'name = "long"') +
      `\n[argv]\n${"k".repeat(900_000)} = 1\n`,
  );
  const listed = await sherlock(home, ["agents"]);
  assertNoStackTrace(listed);
  assert.equal(listed.code, 78, listed.stderr);
  assert.ok(
    listed.stdout.length + listed.stderr.length < 10_000,
    `${listed.stdout.length + listed.stderr.length} characters printed`,
  );
  assert.match(listed.stdout, /^long .*argv\.k{59}…: unknown key/m);
  assert.match(
    listed.stderr,
    new RegExp(
      `^sherlock: skipped malformed profile ${profile}:\\d+: argv\\.k{59}…: unknown key`,
    ),
  );
});
