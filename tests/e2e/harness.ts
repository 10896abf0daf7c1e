/**
 * Helpers for the end-to-end tests that run the real agent CLIs: a
 * throwaway home per test, the test MCP server's command line, starting a
 * CLI in its own process group, waiting (with a hang guard, never a fixed
 * sleep) until the server has recorded the MCP handshake, stopping the CLI
 * with its whole process tree, and byte-for-byte snapshots of files (for
 * "the operator's ~/.copilot, ~/.claude.json, ~/.codex, ~/.gemini are
 * untouched").
 *
 * Linux is the supported platform (process trees are read from /proc).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import {
  lstat,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { COPILOT_PKG_CACHE, E2E_CACHE, REPO_ROOT } from "./install_clis.ts";

export {
  CLI_PINS,
  cliPath,
  E2E_CACHE,
  installClis,
  REPO_ROOT,
} from "./install_clis.ts";
export type { CliKey, CliPin } from "./install_clis.ts";

/** The test MCP server's source file. */
export const TEST_SERVER_PATH: string = join(
  REPO_ROOT,
  "tests",
  "e2e",
  "fixtures",
  "test_mcp_server.ts",
);

/**
 * Where the CLIs keep what is worth keeping between tests: Copilot's
 * unpacked package (about 235 MB, `COPILOT_PKG_CACHE_HOME`) and the Deno
 * cache the test server runs from (`DENO_DIR`).
 */
export const PERSISTENT_CACHES = {
  copilotPkg: COPILOT_PKG_CACHE,
  deno: join(E2E_CACHE, "deno"),
} as const;

/** The hex SHA-256 of `text` (what the test server records for tokens). */
export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

// ---------------------------------------------------------------------------
// Sandboxes

/** A throwaway folder tree for one test. */
export interface Sandbox {
  /** The folder holding everything below. */
  root: string;
  /** Used as `HOME` (and so `~/.copilot`, `~/.claude.json`, … of the CLI). */
  home: string;
  /** The CLI's working folder (Gemini reads `<cwd>/.gemini/settings.json`). */
  work: string;
  /** Used as `TMPDIR` (Claude Code keeps per-project files in `$TMPDIR/claude-<uid>`). */
  tmp: string;
  /** The JSON-lines file the test MCP server records to. */
  record: string;
  /** Removes the whole tree. */
  cleanup(): Promise<void>;
}

/** Makes a fresh sandbox under the system temp folder. */
export async function makeSandbox(label: string): Promise<Sandbox> {
  const root = await mkdtemp(join(tmpdir(), `sherlock-e2e-${label}-`));
  const home = join(root, "home");
  const work = join(root, "work");
  const tmp = join(root, "tmp");
  await Deno.mkdir(home, { mode: 0o700 });
  await Deno.mkdir(work);
  await Deno.mkdir(tmp, { mode: 0o700 });
  return {
    root,
    home,
    work,
    tmp,
    record: join(root, "record.jsonl"),
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
}

/**
 * The environment every CLI starts from: nothing of the operator's
 * environment but `PATH` (the CLIs' launchers need `node`) and a locale,
 * `HOME` and `TMPDIR` in the sandbox, and the persistent caches. Add each
 * CLI's own variables on top.
 */
export function baseEnv(sandbox: Sandbox): Record<string, string> {
  return {
    HOME: sandbox.home,
    TMPDIR: sandbox.tmp,
    PATH: Deno.env.get("PATH") ?? "/usr/local/bin:/usr/bin:/bin",
    LANG: "C.UTF-8",
    TERM: "dumb",
    NO_COLOR: "1",
    DENO_DIR: PERSISTENT_CACHES.deno,
  };
}

// ---------------------------------------------------------------------------
// The test MCP server

/** A stdio MCP server as a config document names it. */
export interface StdioServerSpec {
  /** The program. */
  command: string;
  /** Its arguments. */
  args: string[];
  /** Variables the entry adds to the server's environment. */
  env: Record<string, string>;
}

/** Options of {@linkcode testServer}. */
export interface TestServerOptions {
  /** The JSON-lines file it records to. */
  record: string;
  /** A label in its records, to tell several servers apart (default `test`). */
  name?: string;
  /** The variable holding its token; its SHA-256 (or `absent`) is recorded. */
  tokenEnv?: string;
  /** Variables for the entry's `env` (e.g. the token). */
  env?: Record<string, string>;
}

/** The command line of the test MCP server, run by this same Deno. */
export function testServer(options: TestServerOptions): StdioServerSpec {
  const args = [
    "run",
    "--allow-all",
    "--no-prompt",
    "--quiet",
    "--no-lock",
    "--config",
    join(REPO_ROOT, "deno.json"),
    TEST_SERVER_PATH,
    "--record",
    options.record,
    "--name",
    options.name ?? "test",
  ];
  if (options.tokenEnv) args.push("--token-env", options.tokenEnv);
  return { command: Deno.execPath(), args, env: { ...options.env } };
}

/** A test MCP server listening for streamable HTTP. */
export interface HttpTestServer {
  /** Its endpoint, `http://127.0.0.1:<port>/mcp`. */
  url: string;
  /** Stops it. */
  stop(): Promise<void>;
}

/**
 * Starts the test MCP server in streamable-HTTP mode on a free loopback
 * port. It records, for each `initialize`, the SHA-256 of the `header`
 * (default `authorization`) the client sent, whole (e.g. `Bearer …`).
 */
export async function startHttpTestServer(options: {
  record: string;
  name?: string;
  header?: string;
}): Promise<HttpTestServer> {
  const name = options.name ?? "remote";
  const spec = testServer({ record: options.record, name });
  spec.args.push("--http", "127.0.0.1:0");
  if (options.header) spec.args.push("--token-header", options.header);
  const child = new Deno.Command(spec.command, {
    args: spec.args,
    env: { DENO_DIR: PERSISTENT_CACHES.deno },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
    await child.status;
  };
  try {
    const records = await waitForRecords(
      options.record,
      (records) => findRecord(records, "listening", name) !== undefined,
      { timeoutMs: 30_000 },
    );
    return { url: findRecord(records, "listening", name)!.url as string, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** One line of the test server's record file. */
export interface ServerRecord {
  /** `start`, `initialize`, `initialized`, `tools/list`, `tools/call`, … */
  event: string;
  /** The server's `--name`. */
  name: string;
  /** The server's process id. */
  pid: number;
  /** Milliseconds since the epoch. */
  time: number;
  /** Event-specific fields (see test_mcp_server.ts). */
  [field: string]: unknown;
}

/** Reads the complete lines of a record file (none when it is missing). */
export async function readRecords(file: string): Promise<ServerRecord[]> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const lines = text.split("\n");
  lines.pop(); // "" after the last newline, or a line still being written
  return lines.map((line) => JSON.parse(line));
}

/** The first record of `event` from server `name`, or undefined. */
export function findRecord(
  records: readonly ServerRecord[],
  event: string,
  name = "test",
): ServerRecord | undefined {
  return records.find((r) => r.event === event && r.name === name);
}

// ---------------------------------------------------------------------------
// Running a CLI

/** How to start a CLI. */
export interface StartOptions {
  /** Its arguments. */
  args: string[];
  /** Its whole environment (nothing else is inherited). */
  env: Record<string, string>;
  /** Its working folder. */
  cwd: string;
}

/** A CLI started by {@linkcode startCli}. */
export interface RunningCli {
  /** The executable that was started. */
  path: string;
  /** Its process id, which is also its process group and session id. */
  pid: number;
  /** When it was started (`performance.now()`). */
  startedAt: number;
  /** Resolves when it has exited and its output has been read. */
  status: Promise<Deno.CommandStatus>;
  /** Resolves as soon as its own process has exited. */
  exit: Promise<Deno.CommandStatus>;
  /** Whether it has exited. */
  exited(): boolean;
  /** Its stdout and stderr so far, interleaved as read. */
  output(): string;
  /** Its stdout so far. */
  stdout(): string;
}

/**
 * Starts `path` in a new session and process group (so that the whole tree
 * can be stopped, whatever its launchers do with signals), with stdin from
 * /dev/null and its output collected.
 */
export function startCli(path: string, options: StartOptions): RunningCli {
  const child = new Deno.Command(path, {
    args: options.args,
    env: options.env,
    clearEnv: true,
    cwd: options.cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    detached: true,
  }).spawn();
  running.add(child.pid);
  const chunks: string[] = [];
  const stdout: string[] = [];
  const collect = async (
    stream: ReadableStream<Uint8Array>,
    also?: string[],
  ) => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      chunks.push(text);
      also?.push(text);
    }
  };
  const reading = Promise.allSettled([
    collect(child.stdout, stdout),
    collect(child.stderr),
  ]);
  let done = false;
  const exit = child.status.then((status) => {
    done = true;
    return status;
  });
  exit.finally(() => running.delete(child.pid));
  const status = exit.then(async (status) => {
    // A grandchild that escaped the group could hold the pipes open; do not
    // wait for it for long.
    await Promise.race([reading, delay(2000)]);
    return status;
  });
  return {
    path,
    pid: child.pid,
    startedAt: performance.now(),
    status,
    exit,
    exited: () => done,
    output: () => chunks.join(""),
    stdout: () => stdout.join(""),
  };
}

/**
 * Process groups of CLIs still running. They live in their own sessions, so
 * a test process that dies would otherwise leave them behind: they are
 * killed when it exits.
 */
const running = new Set<number>();
globalThis.addEventListener("unload", () => {
  for (const pid of running) kill(-pid, "SIGKILL");
});

/** Options of {@linkcode waitForRecords}. */
export interface WaitOptions {
  /** Hang guard: fail after this many milliseconds (default 60 000). */
  timeoutMs?: number;
  /** Fail early, with its output, when this CLI exits before the records. */
  cli?: RunningCli;
  /** How often to read the file (default 50 ms). */
  pollMs?: number;
}

/**
 * Polls `file` until `done(records)` is true and returns the records.
 * Throws when the hang guard fires or the CLI exits first; the error shows
 * the records so far and the end of the CLI's output.
 */
export async function waitForRecords(
  file: string,
  done: (records: ServerRecord[]) => boolean,
  options: WaitOptions = {},
): Promise<ServerRecord[]> {
  const deadline = performance.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const records = await readRecords(file);
    if (done(records)) return records;
    const cli = options.cli;
    // Read once more after an exit: the records may have landed meanwhile.
    if (cli?.exited()) {
      const last = await readRecords(file);
      if (done(last)) return last;
      const code = (await cli.status).code;
      throw new Error(waitFailure(`${cli.path} exited (${code})`, last, cli));
    }
    if (performance.now() > deadline) {
      throw new Error(waitFailure("timed out", records, cli));
    }
    await delay(options.pollMs ?? 50);
  }
}

function waitFailure(
  why: string,
  records: ServerRecord[],
  cli: RunningCli | undefined,
): string {
  const output = cli?.output() ?? "";
  return `waiting for the test MCP server's records: ${why}\n` +
    `records:\n${records.map((r) => JSON.stringify(r)).join("\n")}\n` +
    `CLI output (end):\n${output.slice(-4000)}`;
}

/**
 * Waits until server `name` has started and completed the MCP handshake:
 * `initialize` answered and `notifications/initialized` received, and, with
 * `tools` (the default), `tools/list` asked.
 */
export function waitForHandshake(
  file: string,
  options: WaitOptions & { name?: string; tools?: boolean } = {},
): Promise<ServerRecord[]> {
  const name = options.name ?? "test";
  const events = ["start", "initialize", "initialized"];
  if (options.tools ?? true) events.push("tools/list");
  return waitForRecords(
    file,
    (records) => events.every((event) => findRecord(records, event, name)),
    options,
  );
}

// ---------------------------------------------------------------------------
// Stopping a CLI and its process tree

/** A process that was still alive when it should not have been. */
export interface Leftover {
  /** Its process id. */
  pid: number;
  /** Its command line. */
  cmdline: string;
}

/** What {@linkcode stopCli} saw. */
export interface StopResult {
  /** Whether the signal was sent (false: the CLI had already exited). */
  signalled: boolean;
  /** Whether the CLI exited of its own accord within the grace period. */
  exitedInGrace: boolean;
  /** Milliseconds from the signal until the CLI exited. */
  ms: number;
  /** The CLI's exit status. */
  status: Deno.CommandStatus;
  /**
   * Processes of its tree (or group) still alive after it exited and a
   * short settling time; they were then killed with SIGKILL.
   */
  leftovers: Leftover[];
  /**
   * Milliseconds from the CLI's exit until the rest of its tree and group
   * had exited too (0: nothing outlived it; at most `settleMs`).
   */
  lingeredMs: number;
}

/** Options of {@linkcode stopCli}. */
export interface StopOptions {
  /**
   * The signal sent to the CLI's own process (not its group), as a user or
   * sherlock would; `null` skips straight to SIGKILL. Default SIGTERM.
   */
  signal?: Deno.Signal | null;
  /**
   * Whom `signal` goes to: the CLI's own `process` (default), or its whole
   * process `group`, as a terminal's job control would (needed when the
   * CLI's npm launcher does not pass signals on).
   */
  target?: "process" | "group";
  /** How long the CLI gets to exit (default 5000 ms). */
  graceMs?: number;
  /** How long its children get after it exited (default 1000 ms). */
  settleMs?: number;
}

/**
 * Stops a CLI: sends `signal` to its process, waits up to `graceMs`, then
 * SIGKILLs whatever is left of its process tree and process group. The
 * result says how long it took and which processes it had left behind.
 */
export async function stopCli(
  cli: RunningCli,
  options: StopOptions = {},
): Promise<StopResult> {
  const signal = options.signal === undefined ? "SIGTERM" : options.signal;
  const tree = new Set(processTree(cli.pid));
  const started = performance.now();
  const signalled = signal !== null && !cli.exited();
  if (signalled) {
    kill(options.target === "group" ? -cli.pid : cli.pid, signal);
  }
  const exitedInGrace = signal !== null &&
    await within(cli.exit, options.graceMs ?? 5000);
  const ms = performance.now() - started;
  // The children get a moment to notice that their parent is gone.
  let alive: number[] = [];
  const settleStart = performance.now();
  const settle = settleStart + (exitedInGrace ? options.settleMs ?? 1000 : 0);
  let lingeredMs = 0;
  do {
    for (const pid of processTree(cli.pid)) tree.add(pid);
    alive = [...new Set([...tree, ...groupMembers(cli.pid)])]
      .filter((pid) => pid !== cli.pid && isAlive(pid));
    if (alive.length === 0) break;
    await delay(50);
    lingeredMs = performance.now() - settleStart;
  } while (performance.now() < settle);
  const leftovers = alive.map((pid) => ({ pid, cmdline: cmdline(pid) }));
  kill(-cli.pid, "SIGKILL");
  for (const pid of [cli.pid, ...alive]) kill(pid, "SIGKILL");
  const status = await cli.status;
  return { signalled, exitedInGrace, ms, status, leftovers, lingeredMs };
}

/** `pid` and its descendants, read from /proc (just `pid` elsewhere). */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const [child, info] of readProcs()) {
    const list = children.get(info.ppid) ?? [];
    list.push(child);
    children.set(info.ppid, list);
  }
  const tree: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift()!;
    tree.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  return tree;
}

/** The live processes of process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  return [...readProcs()].filter(([, info]) => info.pgrp === pgid).map((
    [pid],
  ) => pid);
}

function readProcs(): Map<number, { ppid: number; pgrp: number }> {
  const procs = new Map<number, { ppid: number; pgrp: number }>();
  if (Deno.build.os !== "linux") return procs;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z") continue; // zombies are gone for our purposes
      procs.set(Number(entry.name), {
        ppid: Number(fields[1]),
        pgrp: Number(fields[2]),
      });
    } catch {
      // exited while we looked
    }
  }
  return procs;
}

/** Whether `pid` runs (a zombie does not count). Linux only. */
export function isAlive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !==
      "Z";
  } catch {
    return false;
  }
}

function cmdline(pid: number): string {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0").join(" ")
      .trim();
  } catch {
    return "?";
  }
}

function kill(pid: number, signal: Deno.Signal) {
  try {
    Deno.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** Resolves after `ms`, without leaving a timer behind when awaited. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Whether `promise` settles within `ms` (the timer is always cleared). */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------
// Byte-for-byte snapshots

/**
 * What a tree of files looked like: one entry per path (recursively for
 * folders) with its type, mode and, for files, size and the SHA-256 of its
 * bytes; `absent` for a path that does not exist. Modification times are
 * left out: "untouched" means same names, same modes, same bytes.
 */
export type Snapshot = Map<string, string>;

/** Options of {@linkcode snapshotFiles}. */
export interface SnapshotOptions {
  /**
   * Hash each file's bytes (default). With `false`, files are compared by
   * size and modification time only and never read: for trees that may
   * hold someone's real credentials, such as this machine's own `~/.claude`.
   */
  contents?: boolean;
}

/** Snapshots each of `paths` (files or folders, existing or not). */
export async function snapshotFiles(
  paths: readonly string[],
  options: SnapshotOptions = {},
): Promise<Snapshot> {
  const contents = options.contents ?? true;
  const snapshot: Snapshot = new Map();
  const visit = async (path: string) => {
    let info;
    try {
      info = await lstat(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        snapshot.set(path, "absent");
        return;
      }
      throw error;
    }
    const mode = (info.mode & 0o7777).toString(8);
    if (info.isSymbolicLink()) {
      snapshot.set(path, `symlink ${mode} -> ${await readlink(path)}`);
    } else if (info.isDirectory()) {
      snapshot.set(path, `dir ${mode}`);
      for (const name of (await readdir(path)).sort()) {
        await visit(join(path, name));
      }
    } else if (info.isFile()) {
      const identity = contents
        ? createHash("sha256").update(await readFile(path)).digest("hex")
        : `mtime ${info.mtimeMs}`;
      snapshot.set(path, `file ${mode} ${info.size} ${identity}`);
    } else {
      snapshot.set(path, `other ${mode}`);
    }
  };
  for (const path of paths) await visit(path);
  return snapshot;
}

/** The differences between two snapshots, one line each (empty: same). */
export function compareSnapshots(before: Snapshot, after: Snapshot): string[] {
  const differences: string[] = [];
  for (const [path, was] of before) {
    const is = after.get(path);
    if (is === undefined) differences.push(`removed: ${path} (${was})`);
    else if (is !== was) differences.push(`changed: ${path}: ${was} -> ${is}`);
  }
  for (const [path, is] of after) {
    if (!before.has(path)) differences.push(`added: ${path} (${is})`);
  }
  return differences;
}

/**
 * The operator's own agent configuration, which no test may change:
 * `~/.copilot`, `~/.claude.json`, `~/.claude`, `~/.codex`, `~/.gemini` of
 * the real `HOME` (and `$CODEX_HOME`, `$COPILOT_HOME`, `$GEMINI_CLI_HOME`
 * when set).
 */
export function operatorAgentPaths(): string[] {
  const home = Deno.env.get("HOME");
  const paths = home
    ? [".copilot", ".claude.json", ".claude", ".codex", ".gemini"].map((name) =>
      join(home, name)
    )
    : [];
  for (const name of ["CODEX_HOME", "COPILOT_HOME", "GEMINI_CLI_HOME"]) {
    const value = Deno.env.get(name);
    if (value) paths.push(value);
  }
  return paths;
}

/** Whether `path` exists (for skipping checks on optional files). */
export function exists(path: string): boolean {
  return existsSync(path);
}
