/**
 * The body shared by the e2e tests that run a real agent CLI through
 * sherlock: a throwaway HOME with its XDG folders, runtime folder and
 * TMPDIR; a broker logged into from stdin; the test MCP server as a
 * services.d entry whose token comes from the secret store or a credential
 * helper; `sherlock <agent> <the agent's own offline args…>` as a real
 * process; then, per run:
 *
 * 1. the server started under the real CLI and completed the MCP handshake
 *    (`initialize`, `notifications/initialized`, `tools/list`);
 * 2. the token it got (its SHA-256, recorded by the server) is the one the
 *    broker issued, delivered inline (it is in the rendered config) or by
 *    the shim (the config holds no token and the server was `sherlock shim`
 *    before the shim exec'd it, or, where the shim spawns, is its child),
 *    as configured or as the agent's format forces;
 * 3. no process of sherlock's tree or process group but the server itself
 *    has the token in its environment (the agent's included), and none has
 *    it in its command line — read from /proc while they run;
 * 4. once sherlock was sent SIGTERM (or SIGKILLed, and the next
 *    `sherlock run` swept up after it), nothing is left running, no
 *    rendered file and no session record is left, no file under the
 *    throwaway tree holds the token, sherlock's output does not show it,
 *    and the operator's files the agent reads (Gemini's settings) are back
 *    byte for byte, with their mode;
 * 5. the real operator's agent files (`~/.copilot`, `~/.claude.json`, …)
 *    did not change (size and mtime, never read).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { type BrokerHome, createBrokerHome } from "../helpers/broker_home.ts";
import { listNames, type TestHome } from "../helpers/home.ts";
import { profileToml } from "../helpers/profiles.ts";
import { sherlockCommand } from "../helpers/sherlock.ts";
import {
  CLI_PINS,
  compareSnapshots,
  delay,
  findRecord,
  groupMembers,
  installClis,
  operatorAgentPaths,
  type ServerRecord,
  sha256,
  type Snapshot,
  snapshotFiles,
  startCli,
  stopCli,
  type StopResult,
  TEST_SERVER_PATH,
  testServer,
  waitForRecords,
} from "./harness.ts";
import {
  type ProcessWatch,
  type Sighting,
  watchProcesses,
} from "./process_watch.ts";
import type { AgentRecipe } from "./recipes.ts";

/** The variable the test server reads its token from. */
export const TOKEN_ENV = "GITHUB_PERSONAL_ACCESS_TOKEN";

/**
 * A variable put in the operator's environment (so in sherlock's and the
 * agent's), to see whether the agent passes its environment on to servers.
 */
export const PARENT_CANARY = "SHERLOCK_E2E_PARENT_CANARY";

/** The service's name, and the server's label in the records. */
export const SERVICE = "probe";

/** How one run is set up. */
export interface CaseOptions {
  /** The delivery asked for (a format may force the shim regardless). */
  delivery: "inline" | "shim";
  /**
   * Where the shim is asked for: config.toml's `[render] tokens` (default)
   * or the service's `[token] delivery`.
   */
  shimVia?: "config" | "service";
  /** Where the broker gets the token. */
  source: "secret" | "command";
  /** More variables for the operator's environment. */
  env?: Record<string, string>;
  /**
   * SIGKILL sherlock alone mid-session (a crash), then run another
   * `sherlock run`, which must sweep up after it; then stop what is left.
   */
  crash?: boolean;
  /** Hang guard for the handshake (default 120 s). */
  timeoutMs?: number;
}

/** What one run saw. */
export interface CaseOutcome {
  /** Everything the test server(s) recorded. */
  records: ServerRecord[];
  /** The probe server's `start` record. */
  start: ServerRecord;
  /** The delivery the config actually used. */
  delivery: "inline" | "shim";
  /** Milliseconds from starting sherlock until the handshake was complete. */
  handshakeMs: number;
  /** How stopping went. */
  stop: StopResult;
  /** The processes seen. */
  watch: ProcessWatch;
  /** What sherlock (so the agent) printed on stdout. */
  stdout: string;
  /** The broker's token (for assertions on the agent's output). */
  token: string;
}

/** Runs `recipe` through sherlock and checks everything the module lists. */
export async function runSherlockCase(
  recipe: AgentRecipe,
  options: CaseOptions,
): Promise<CaseOutcome> {
  const { agent, cli: key } = recipe;
  const { [key]: cliPath } = await installClis([key]);
  // Byte for byte (SHA-256 of every file; the hashes stay in memory and
  // only a difference is ever printed, as a path and two hashes).
  const operator = operatorAgentPaths();
  const operatorBefore = await snapshotFiles(operator);

  await using home = await createBrokerHome();
  home.env.TERM = "dumb";
  const bin = CLI_PINS[key].bin;
  Deno.symlinkSync(cliPath, join(home.bin, bin));
  if (recipe.profile) home.writeProfile(agent, recipe.profile(bin));
  const token = `e2e_${crypto.randomUUID().replaceAll("-", "")}`;
  const record = join(home.scratch, "record.jsonl");
  await home.login();
  const service: ServiceSpec = { record, source: options.source };
  if (options.source === "secret") {
    const set = await home.sherlock(["secret", "set", SERVICE], {
      stdin: token,
    });
    assert.equal(set.code, 0, `secret set failed: ${set.stderr}`);
  } else {
    service.helper = home.tokenHelper(SERVICE, { token }).path;
  }
  const shimVia = options.shimVia ?? "config";
  if (options.delivery === "shim" && shimVia === "service") {
    service.delivery = "shim";
  }
  home.writeService(SERVICE, serviceToml(service));
  if (options.delivery === "shim" && shimVia === "config") {
    Deno.writeTextFileSync(
      join(home.configHome, "sherlock", "config.toml"),
      '[render]\ntokens = "shim"\n',
    );
  }
  const seeded = await recipe.seed?.(home, record) ?? [];
  const seededBefore = await snapshotFiles(seeded);
  const env = {
    ...home.env,
    ...recipe.env(home),
    [PARENT_CANARY]: "parent",
    ...options.env,
  };

  const [deno, ...sherlockArgs] = sherlockCommand([agent, ...recipe.args]);
  const cli = startCli(deno, { args: sherlockArgs, env, cwd: home.work });
  const watch = watchProcesses({
    root: cli.pid,
    token,
    files: () => renderedFiles(home, agent, seeded),
  });
  const servers = [SERVICE, ...(recipe.otherServers ?? [])];
  const events = recipe.events ?? HANDSHAKE;
  let records: ServerRecord[];
  let handshakeMs: number;
  let stop: StopResult;
  try {
    records = await waitForRecords(
      record,
      (records) =>
        servers.every((name) =>
          events.every((event) => findRecord(records, event, name))
        ),
      { cli, timeoutMs: options.timeoutMs ?? 120_000 },
    );
    handshakeMs = performance.now() - cli.startedAt;
    if (options.crash) {
      await crashAndSweep(home, cli, seeded, seededBefore, env, token);
    }
    if (recipe.awaitExit) await exitWithin(cli, options.timeoutMs ?? 120_000);
  } finally {
    // After a crash, what is left of the group (the orphaned agent and its
    // servers) is SIGKILLed.
    stop = await stopCli(cli, {
      signal: options.crash ? null : "SIGTERM",
      graceMs: 20_000,
      // Copilot may start a server while it shuts down; that one exits
      // when it finds its stdin closed, which a shim's start delays.
      settleMs: 15_000,
    });
    watch.stop();
  }
  const output = cli.output();

  // 1. The handshake, under the real CLI.
  const start = findRecord(records, "start", SERVICE)!;
  const initialize = findRecord(records, "initialize", SERVICE)!;
  assert.equal(initialize.client_name, recipe.clientName);
  assert.equal(
    initialize.client_version,
    recipe.clientVersion ?? CLI_PINS[key].version,
  );

  // 2. The broker's token, delivered as configured or forced.
  for (const started of records.filter((r) => r.event === "start")) {
    if (started.name !== SERVICE) continue;
    assert.equal(started.token_env, TOKEN_ENV);
    assert.equal(
      started.token_sha256,
      sha256(token),
      "the server got another token than the broker's",
    );
  }
  const delivery = recipe.shimForced ? "shim" : options.delivery;
  const rendered = renderedText(watch, agent, seeded);
  assert.ok(rendered !== undefined, `never saw ${agent}'s rendered config`);
  // The shim replaces itself with the server (exec), so the server's own
  // pid was seen running `sherlock shim` when the watch looked during the
  // shim's start; where the shim spawns instead, it is the server's parent.
  const viaShim = [start.pid, start.ppid].some((pid) =>
    watch.sightings.get(pid as number)?.cmdlines.some(isShim) ?? false
  );
  if (delivery === "inline") {
    assert.ok(rendered.includes(token), "inline: no token in the config");
    assert.ok(!isShim(rendered), "inline: the config runs the shim");
    assert.ok(!viaShim, "inline: the server was started by a shim");
  } else {
    assert.ok(!rendered.includes(token), "shim: the config holds the token");
    assert.ok(isShim(rendered), "shim: the config does not run the shim");
    assert.ok(
      viaShim,
      "shim: the server neither was nor ran under sherlock shim",
    );
  }

  // 3. No token in any environment but the server's, nor in any argv.
  // Some CLIs start a server more than once (Copilot does): each instance
  // is the server itself, recognized by its command line.
  const sightings = [...watch.sightings.values()];
  const isServer = (s: Sighting) =>
    s.cmdlines.some((line) => line.includes(TEST_SERVER_PATH));
  assert.ok(
    sightings.some((s) => isServer(s) && s.tokenInEnviron),
    "no server's environment was seen with the token (the check would be blind)",
  );
  const leaks = sightings.filter((s) => !isServer(s) && s.tokenInEnviron)
    .map((s) => `${s.pid}: ${s.cmdlines.join(" | ")}`);
  assert.deepEqual(leaks, [], "the token is in these processes' environment");
  const argvLeaks = sightings.filter((s) => s.tokenInCmdline)
    .map((s) => `${s.pid}: ${s.cmdlines.join(" | ")}`);
  assert.deepEqual(argvLeaks, [], "the token is in these command lines");
  const agentProcesses = sightings.filter((s) =>
    s.ppid === cli.pid && s.environRead
  );
  assert.ok(agentProcesses.length > 0, "the agent's environment was not read");

  // 4. Stopped and cleaned up: no process, file or output keeps the token.
  if (!options.crash) {
    assert.deepEqual(stop.leftovers, [], `${agent} left processes behind`);
    assert.ok(
      stop.exitedInGrace || !stop.signalled,
      `sherlock ${agent} did not exit after SIGTERM`,
    );
    if (!recipe.endsByItself) {
      assert.ok(stop.signalled, `${agent} exited before it was stopped`);
    }
  }
  assert.ok(!output.includes(token), "sherlock's output shows the token");
  assert.deepEqual(sessionRecords(home), [], "session records left behind");
  assert.deepEqual(
    listNames(home.runtimeDir).filter((name) => name.endsWith(".mcp.json")),
    [],
    "rendered files left behind",
  );
  assert.deepEqual(
    filesContaining(home.root, token, [home.scratch]),
    [],
    "files under the throwaway tree hold the token",
  );
  assert.deepEqual(
    compareSnapshots(seededBefore, await snapshotFiles(seeded)),
    [],
    "the operator's own file is not back byte for byte",
  );

  // 5. The real operator's agent files.
  assert.deepEqual(
    compareSnapshots(
      operatorBefore,
      await snapshotFiles(operator),
    ),
    [],
    "the operator's own agent files changed",
  );

  console.log(
    `${agent} ${CLI_PINS[key].version} via sherlock, ${delivery}${
      delivery !== options.delivery ? " (forced)" : ""
    }, ${options.source}: handshake ${Math.round(handshakeMs)} ms, ${
      options.crash
        ? "SIGKILLed, swept by the next run"
        : stop.signalled
        ? `stopped by SIGTERM to sherlock in ${Math.round(stop.ms)} ms (exit ${
          exitOf(stop.status)
        })`
        : `exited by itself (${exitOf(stop.status)})`
    }${
      stop.lingeredMs > 0 && !options.crash
        ? `; servers outlived it by ${Math.round(stop.lingeredMs)} ms`
        : ""
    }`,
  );
  return {
    records,
    start,
    delivery,
    handshakeMs,
    stop,
    watch,
    stdout: cli.stdout(),
    token,
  };
}

/**
 * SIGKILLs sherlock alone (its agent and servers go on, orphaned), checks
 * that its session record and the merged file are still there, runs
 * another session (of an agent that exits at once), which must leave them
 * while the orphaned agent runs, then SIGKILLs what is left of sherlock's
 * process group and runs another, which must sweep up.
 */
async function crashAndSweep(
  home: BrokerHome,
  cli: { pid: number; exit: Promise<Deno.CommandStatus> },
  seeded: string[],
  seededBefore: Snapshot,
  env: Record<string, string>,
  token: string,
): Promise<void> {
  Deno.kill(cli.pid, "SIGKILL");
  await cli.exit;
  assert.equal(
    sessionRecords(home).length,
    1,
    "a SIGKILLed session should leave its record for the next sherlock",
  );
  if (seeded.length > 0) {
    assert.notDeepEqual(
      compareSnapshots(seededBefore, await snapshotFiles(seeded)),
      [],
      "the operator's file should still hold the merged servers",
    );
  }
  home.writeProfile("noop", profileToml({ name: "noop", executable: "true" }));
  const early = await home.sherlock(["run", "noop"], { env });
  assert.equal(early.code, 0, `sherlock run noop: ${early.stderr}`);
  assert.equal(
    sessionRecords(home).length,
    1,
    "a session whose agent still runs should be left alone",
  );
  try {
    Deno.kill(-cli.pid, "SIGKILL");
  } catch {
    // The group is gone already.
  }
  while (groupMembers(cli.pid).length > 0) await delay(50);
  const next = await home.sherlock(["run", "noop"], { env });
  assert.equal(next.code, 0, `sherlock run noop: ${next.stderr}`);
  assert.ok(!`${next.stdout}${next.stderr}`.includes(token));
}

/** The session records (not the merge lock beside them). */
function sessionRecords(home: TestHome): string[] {
  return home.sessionRecords().filter((name) => name.endsWith(".json"));
}

function exitOf(status: Deno.CommandStatus): string {
  return status.signal ?? String(status.code);
}

/** The events of a complete handshake, `tools/list` included. */
const HANDSHAKE = ["start", "initialize", "initialized", "tools/list"];

/** Waits for a CLI that exits by itself; throws after `ms`. */
async function exitWithin(
  cli: { exit: Promise<Deno.CommandStatus> },
  ms: number,
): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    const exited = await Promise.race([cli.exit.then(() => true), guard]);
    assert.ok(exited, "the agent did not exit by itself");
  } finally {
    clearTimeout(timer);
  }
}

/** Whether a command line or config runs `sherlock shim`. */
function isShim(text: string): boolean {
  return /main\.ts"?,?\s*"?shim\b/.test(text);
}

/** The files in which sherlock's config for `agent` may show. */
function renderedFiles(
  home: TestHome,
  agent: string,
  seeded: string[],
): string[] {
  return [
    ...listNames(home.runtimeDir).filter((name) =>
      name.startsWith(`${agent}.`) && name.endsWith(".mcp.json")
    ).map((name) => join(home.runtimeDir, name)),
    ...seeded,
  ];
}

/**
 * The config sherlock rendered, as seen while the agent ran: the rendered
 * file, the operator's file merged into, or (Codex) the agent's argv.
 */
function renderedText(
  watch: ProcessWatch,
  agent: string,
  seeded: string[],
): string | undefined {
  for (const [path, texts] of watch.files) {
    // A seeded file is the operator's; sherlock's text has its server.
    const text = texts.find((text) =>
      !seeded.includes(path) || text.includes(`"${SERVICE}"`)
    );
    if (text !== undefined) return text;
  }
  const argv = [...watch.sightings.values()].flatMap((s) => s.cmdlines)
    .find((line) => line.includes(`mcp_servers.${SERVICE}=`));
  return agent === "codex" ? argv : undefined;
}

/** What the probe service looks like. */
interface ServiceSpec {
  record: string;
  source: "secret" | "command";
  helper?: string;
  delivery?: "shim";
}

/** The probe service: the test MCP server, its token from the broker. */
function serviceToml(spec: ServiceSpec): string {
  const server = testServer({
    record: spec.record,
    name: SERVICE,
    tokenEnv: TOKEN_ENV,
  });
  const lines = [
    "[service]",
    `name = "${SERVICE}"`,
    'description = "sherlock e2e test server"',
    "",
    "[server]",
    `command = ${JSON.stringify(server.command)}`,
    `args = ${JSON.stringify(server.args)}`,
    "",
    "[token]",
    `source = "${spec.source}"`,
    `env = "${TOKEN_ENV}"`,
  ];
  if (spec.helper) lines.push(`command = ${JSON.stringify([spec.helper])}`);
  if (spec.delivery) lines.push(`delivery = "${spec.delivery}"`);
  return lines.join("\n") + "\n";
}

/**
 * Every regular file under `root` (recursively, symlinks not followed)
 * whose bytes or name contain `needle`, except below `skip`.
 */
export function filesContaining(
  root: string,
  needle: string,
  skip: readonly string[] = [],
): string[] {
  const found: string[] = [];
  const pattern = new TextEncoder().encode(needle);
  const walk = (folder: string) => {
    for (const entry of Deno.readDirSync(folder)) {
      const path = join(folder, entry.name);
      if (skip.includes(path)) continue;
      if (entry.name.includes(needle)) found.push(path);
      if (entry.isDirectory) walk(path);
      else if (entry.isFile && contains(Deno.readFileSync(path), pattern)) {
        found.push(path);
      }
    }
  };
  walk(root);
  return found;
}

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  let at = haystack.indexOf(needle[0]);
  while (at !== -1 && at + needle.length <= haystack.length) {
    let match = true;
    for (let i = 1; i < needle.length; i++) {
      if (haystack[at + i] !== needle[i]) {
        match = false;
        break;
      }
    }
    if (match) return true;
    at = haystack.indexOf(needle[0], at + 1);
  }
  return false;
}
