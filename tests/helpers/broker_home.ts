/**
 * Helpers for the broker's tests: a throwaway HOME whose daemon is stopped
 * (and checked for) at the end, counting daemon processes, services whose
 * tokens come from credential helpers or the secret store, and raw socket
 * clients.
 *
 * ```ts
 * await using home = await createBrokerHome();
 * await home.login();
 * const helper = home.tokenHelper("github", { expiresIn: 3600 });
 * home.writeService("github", tokenServiceToml({ name: "github", command: [helper.path] }));
 * const { result, record } = await home.runAgent();
 * ```
 *
 * Everything here starts real processes (sherlock from source, the fake
 * agent, /bin/sh helpers) and waits on files, sockets and processes with
 * generous hang guards, never on fixed sleeps.
 *
 * @module
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import type { Health } from "../../lib/broker/protocol.ts";
import { unixHttpRequest } from "../../lib/runtime/unix_http.ts";
import {
  type AgentRecord,
  AgentRun,
  type AgentRunOptions,
  installFakeAgent,
} from "./agent.ts";
import { createTestHome, type TestHome } from "./home.ts";
import { profileToml } from "./profiles.ts";
import {
  assertNoStackTrace,
  HANG_GUARD_MS,
  runSherlock,
  sherlockCommand,
  type SherlockOptions,
  type SherlockResult,
} from "./sherlock.ts";
import { waitUntil } from "./wait.ts";

/** The passphrase the tests' stores are created with. */
export const PASSPHRASE = "correct horse battery staple";

/** The fake agent's profile name (and executable on PATH). */
export const AGENT = "fake";

/** A throwaway HOME with a broker of its own. */
export interface BrokerHome extends TestHome {
  /** The broker's socket. */
  socket: string;
  /** Runs sherlock with this HOME's environment (plus `options.env`). */
  sherlock(
    args: readonly string[],
    options?: Partial<SherlockOptions>,
  ): Promise<SherlockResult>;
  /** `sherlock login` with the passphrase on stdin; asserts exit 0. */
  login(passphrase?: string): Promise<SherlockResult>;
  /** The daemon's health, or undefined when nothing answers. */
  health(): Promise<Health | undefined>;
  /** The live `broker serve` processes of this HOME's runtime folder. */
  daemonPids(): number[];
  /** Installs the fake agent as {@linkcode AGENT} (env-var mode). */
  addAgent(): void;
  /**
   * Runs `sherlock run fake` with a fake agent run that records the
   * rendered config; `record` is undefined when the agent never started.
   */
  runAgent(
    options?: AgentRunOptions & { args?: string[] },
  ): Promise<{ result: SherlockResult; record?: AgentRecord }>;
  /** Writes an executable /bin/sh script into `bin/`; returns its path. */
  writeScript(name: string, body: string): string;
  /** A credential helper that counts its runs (see {@linkcode TokenHelper}). */
  tokenHelper(name: string, options?: TokenHelperOptions): TokenHelper;
  /** Kills the pid in `path` (if any) at the end: for helpers' leftovers. */
  killAtEnd(pidFile: string): void;
}

/** How a {@linkcode TokenHelper} behaves. */
export interface TokenHelperOptions {
  /** The token (default: a random `tok_…`); kept in a file under scratch. */
  token?: string;
  /** Print JSON with `expires_at` this many seconds ahead. */
  expiresIn?: number;
  /** Shell lines run after counting and before printing. */
  before?: string;
}

/** A credential helper script and the files a test reads. */
export interface TokenHelper {
  /** The script. */
  path: string;
  /** The token it prints. */
  token: string;
  /** One line is appended here per run. */
  counter: string;
  /** How many times it ran. */
  runs(): number;
}

/**
 * Creates a throwaway HOME. Disposing it stops its daemon with
 * `sherlock broker stop`, waits for every daemon process of its runtime
 * folder to exit, kills what {@linkcode BrokerHome.killAtEnd} named, and
 * fails the test when a daemon was left running.
 */
export async function createBrokerHome(): Promise<BrokerHome> {
  const home = await createTestHome();
  const socket = join(home.runtimeDir, "broker.sock");
  const pidFiles: string[] = [];
  const sherlock = (
    args: readonly string[],
    options: Partial<SherlockOptions> = {},
  ) =>
    runSherlock(args, {
      ...options,
      cwd: options.cwd ?? home.work,
      env: { ...home.env, ...options.env },
    });
  const broker: BrokerHome = {
    ...home,
    socket,
    sherlock,
    async login(passphrase = PASSPHRASE) {
      const result = await sherlock(["login"], { stdin: `${passphrase}\n` });
      assert.equal(result.code, 0, `login failed: ${result.stderr}`);
      return result;
    },
    health: () => brokerHealth(socket),
    daemonPids: () => brokerDaemonPids(home.runtimeHome),
    addAgent() {
      installFakeAgent(join(home.bin, AGENT));
      home.writeProfile(AGENT, profileToml({ name: AGENT, executable: AGENT }));
    },
    async runAgent(options = {}) {
      using agent = new AgentRun(home.scratch, {
        config: "env:SHERLOCK_MCP_CONFIG",
        ...options,
      });
      const result = await sherlock(["run", AGENT, ...(options.args ?? [])], {
        env: agent.env,
      });
      return {
        result,
        record: agent.hasStarted ? agent.record() : undefined,
      };
    },
    writeScript(name, body) {
      const path = join(home.bin, name);
      Deno.writeTextFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
      Deno.chmodSync(path, 0o755);
      return path;
    },
    tokenHelper(name, options = {}) {
      const token = options.token ?? randomToken();
      const tokenFile = join(home.scratch, `${name}.token`);
      const counter = join(home.scratch, `${name}.runs`);
      Deno.writeTextFileSync(tokenFile, token);
      const print = options.expiresIn === undefined
        ? `cat ${sh(tokenFile)}; echo`
        : `printf '{"token": "%s", "expires_at": "%s"}\\n' "$(cat ${
          sh(tokenFile)
        })" "$(date -u -d '+${options.expiresIn} seconds' +%Y-%m-%dT%H:%M:%SZ)"`;
      const path = broker.writeScript(
        `${name}-helper`,
        [`echo run >> ${sh(counter)}`, options.before ?? "", print].join("\n"),
      );
      return { path, token, counter, runs: () => countLines(counter) };
    },
    killAtEnd(pidFile) {
      pidFiles.push(pidFile);
    },
    async [Symbol.asyncDispose]() {
      let leaked: number[] = [];
      try {
        if (broker.daemonPids().length > 0) {
          await sherlock(["broker", "stop"]).catch(() => {});
          leaked = await waitForNoDaemon(home.runtimeHome);
        }
      } finally {
        for (const pid of [...leaked, ...pidsIn(pidFiles)]) {
          try {
            Deno.kill(pid, "SIGKILL");
          } catch {
            // Already gone.
          }
        }
        await home[Symbol.asyncDispose]();
      }
      if (leaked.length > 0) {
        throw new Error(
          `broker daemon(s) ${leaked.join(", ")} still ran after "broker stop"`,
        );
      }
    },
  };
  return broker;
}

/**
 * Waits until no daemon of `runtimeHome` is left; returns the pids still
 * running when the hang guard ran out.
 */
async function waitForNoDaemon(runtimeHome: string): Promise<number[]> {
  try {
    await waitUntil(
      () => brokerDaemonPids(runtimeHome).length === 0,
      "the broker daemon to exit",
    );
    return [];
  } catch {
    return brokerDaemonPids(runtimeHome);
  }
}

function pidsIn(files: readonly string[]): number[] {
  const pids: number[] = [];
  for (const file of files) {
    try {
      for (const line of Deno.readTextFileSync(file).split("\n")) {
        if (/^\d+$/.test(line.trim())) pids.push(Number(line.trim()));
      }
    } catch {
      // The helper never wrote it.
    }
  }
  return pids;
}

/** The daemon's health over its socket, or undefined. */
export async function brokerHealth(
  socket: string,
): Promise<Health | undefined> {
  try {
    const response = await unixHttpRequest({
      socket,
      method: "GET",
      path: "/v1/health",
      timeoutMs: 30_000,
    });
    return response.status === 200 ? response.body as Health : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The pids of the live (not zombie) `sherlock broker serve` processes whose
 * environment has `XDG_RUNTIME_DIR=<runtimeHome>`, found by scanning /proc.
 */
export function brokerDaemonPids(runtimeHome: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const folder = `/proc/${entry.name}`;
    try {
      const argv = Deno.readTextFileSync(`${folder}/cmdline`).split("\0");
      const index = argv.indexOf("broker");
      if (index === -1 || argv[index + 1] !== "serve") continue;
      if (processState(Number(entry.name)) === "Z") continue;
      const environ = Deno.readTextFileSync(`${folder}/environ`).split("\0");
      if (environ.includes(`XDG_RUNTIME_DIR=${runtimeHome}`)) {
        pids.push(Number(entry.name));
      }
    } catch {
      // The process ended while we looked.
    }
  }
  return pids.sort((a, b) => a - b);
}

/** A process's state letter (R, S, Z…), or undefined when it is gone. */
export function processState(pid: number): string | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0];
  } catch {
    return undefined;
  }
}

/** True while `pid` exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  const state = processState(pid);
  return state !== undefined && state !== "Z";
}

/** A service whose token the broker gets. */
export interface TokenServiceSpec {
  /** The service's name (and file name). */
  name: string;
  /** Default `command` when `command` is given, else `secret`. */
  source?: "command" | "secret";
  /** The helper's argv. */
  command?: string[];
  /** A remote server's URL; otherwise a stdio server (never started). */
  url?: string;
  /** The remote server's header (default `Authorization`). */
  header?: string;
  /** The stdio server's variable (default `<NAME>_TOKEN`). */
  env?: string;
  /** `[token] ttl`. */
  ttl?: number;
  /** `[token] timeout`. */
  timeout?: number;
}

/** The TOML of a service with a token. */
export function tokenServiceToml(spec: TokenServiceSpec): string {
  const lines = ["[service]", `name = ${JSON.stringify(spec.name)}`, ""];
  lines.push("[server]");
  if (spec.url) lines.push(`url = ${JSON.stringify(spec.url)}`);
  else lines.push(`command = ${JSON.stringify(`mcp-server-${spec.name}`)}`);
  lines.push("", "[token]");
  const source = spec.source ?? (spec.command ? "command" : "secret");
  lines.push(`source = ${JSON.stringify(source)}`);
  if (spec.command) lines.push(`command = ${JSON.stringify(spec.command)}`);
  if (spec.url) {
    lines.push(`header = ${JSON.stringify(spec.header ?? "Authorization")}`);
  } else {
    const variable = spec.env ??
      `${spec.name.toUpperCase().replaceAll("-", "_")}_TOKEN`;
    lines.push(`env = ${JSON.stringify(variable)}`);
  }
  if (spec.ttl !== undefined) lines.push(`ttl = ${spec.ttl}`);
  if (spec.timeout !== undefined) lines.push(`timeout = ${spec.timeout}`);
  return lines.join("\n") + "\n";
}

/** The servers of a rendered `{"mcpServers": …}` config. */
export function renderedServers(
  record: AgentRecord | undefined,
): Record<
  string,
  { env?: Record<string, string>; headers?: Record<string, string> }
> {
  assert.ok(record, "the agent did not start");
  assert.ok(record.config?.text, "the agent saw no rendered config");
  return JSON.parse(record.config.text).mcpServers;
}

/** A random, token-looking string that no file contains by chance. */
export function randomToken(prefix = "tok"): string {
  return `${prefix}_${crypto.randomUUID().replaceAll("-", "")}`;
}

/** The number of lines in a file (0 when it does not exist). */
export function countLines(path: string): number {
  try {
    return Deno.readTextFileSync(path).split("\n").filter((line) => line)
      .length;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return 0;
    throw error;
  }
}

/** Quotes a word for /bin/sh. */
export function sh(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** What a raw exchange on the socket got back. */
export interface RawAnswer {
  /** The HTTP status, or undefined when the answer was not HTTP. */
  status?: number;
  /** The body parsed as JSON, if it was JSON. */
  json?: unknown;
  /** Everything the daemon sent. */
  text: string;
}

/**
 * Sends `request` as it is on a new connection (a write the daemon refuses
 * is not an error), with `closeWrite` shuts the sending side (the daemon
 * sees the end of the request), and reads until the daemon closes (hang
 * guard: 60 s).
 */
export async function rawExchange(
  socket: string,
  request: string | Uint8Array,
  options: { closeWrite?: boolean } = {},
): Promise<RawAnswer> {
  const connection = await Deno.connect({ transport: "unix", path: socket });
  const guard = setTimeout(() => connection.close(), 60_000);
  const chunks: Uint8Array[] = [];
  try {
    const bytes = typeof request === "string"
      ? new TextEncoder().encode(request)
      : request;
    try {
      let written = 0;
      while (written < bytes.length) {
        written += await connection.write(bytes.subarray(written));
      }
      if (options.closeWrite) await connection.closeWrite();
    } catch {
      // The daemon answered early and closed; read what it said.
    }
    const buffer = new Uint8Array(16 * 1024);
    while (true) {
      let count: number | null;
      try {
        count = await connection.read(buffer);
      } catch {
        break; // Reset after the answer: the daemon closed with unread data.
      }
      if (count === null) break;
      chunks.push(buffer.slice(0, count));
    }
  } finally {
    clearTimeout(guard);
    try {
      connection.close();
    } catch {
      // Closed by the guard.
    }
  }
  const text = new TextDecoder().decode(
    new Uint8Array(chunks.flatMap((chunk) => [...chunk])),
  );
  const status = /^HTTP\/1\.[01] (\d{3}) /.exec(text)?.[1];
  const body = text.slice(text.indexOf("\r\n\r\n") + 4);
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status: status ? Number(status) : undefined, json, text };
}

/** How sherlock ended when started with stdin from /dev/null. */
export interface NullStdinResult extends SherlockResult {
  /** True when the hang guard had to kill it. */
  hung: boolean;
}

/**
 * Runs sherlock with stdin from /dev/null (no terminal, nothing to read),
 * killing it after `guardMs`.
 */
export async function runSherlockNullStdin(
  args: readonly string[],
  options: { env: Record<string, string>; cwd?: string; guardMs: number },
): Promise<NullStdinResult> {
  const [program, ...rest] = sherlockCommand(args);
  const child = new Deno.Command(program, {
    args: rest,
    env: options.env,
    clearEnv: true,
    cwd: options.cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let hung = false;
  const guard = setTimeout(() => {
    hung = true;
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }, options.guardMs);
  const output = await child.output();
  clearTimeout(guard);
  const stderr = new TextDecoder().decode(output.stderr);
  assertNoStackTrace(stderr);
  return {
    code: output.signal ? null : output.code,
    signal: output.signal,
    stdout: new TextDecoder().decode(output.stdout),
    stderr,
    hung,
  };
}

/** One step of a terminal dialog: wait for `expect`, then type `send`. */
export interface PtyStep {
  /** What must appear on the terminal first. */
  expect: RegExp;
  /** What to type then. */
  send: string;
}

/**
 * Runs sherlock on a real pseudo-terminal (util-linux `script`), typing
 * each step's text once its prompt shows. Returns the exit code and
 * everything the terminal displayed (what sherlock printed, and what the
 * terminal echoed).
 */
export async function runSherlockOnPty(
  args: readonly string[],
  options: { env: Record<string, string>; steps: PtyStep[] },
): Promise<{ code: number | null; screen: string }> {
  const command = sherlockCommand(args).map(sh).join(" ");
  const child = spawn("script", ["-qefc", command, "/dev/null"], {
    env: options.env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let screen = "";
  child.stdout!.setEncoding("utf8").on("data", (text) => screen += text);
  child.stderr!.setEncoding("utf8").on("data", (text) => screen += text);
  const exited = new Promise<number | null>((resolve) =>
    child.on("close", (code) => resolve(code))
  );
  const guard = setTimeout(() => child.kill("SIGKILL"), HANG_GUARD_MS);
  try {
    let seen = 0;
    for (const step of options.steps) {
      await waitUntil(() => {
        const match = step.expect.exec(screen.slice(seen));
        if (!match) return undefined;
        seen += match.index + match[0].length;
        return true;
      }, `the prompt ${step.expect}`);
      child.stdin!.write(step.send);
    }
    const code = await exited;
    return { code, screen };
  } finally {
    clearTimeout(guard);
    child.stdin!.end();
    child.kill("SIGKILL");
    await exited;
  }
}

/**
 * Every regular file under `root` (recursively) whose name or bytes contain
 * one of `needles`, except below the folders in `skip`.
 */
export function filesContaining(
  root: string,
  needles: readonly string[],
  skip: readonly string[] = [],
): string[] {
  const found: string[] = [];
  const encoder = new TextEncoder();
  const patterns = needles.map((needle) => encoder.encode(needle));
  const walk = (folder: string) => {
    for (const entry of Deno.readDirSync(folder)) {
      const path = join(folder, entry.name);
      if (skip.includes(path)) continue;
      if (needles.some((needle) => entry.name.includes(needle))) {
        found.push(path);
      }
      if (entry.isDirectory) walk(path);
      else if (entry.isFile) {
        const bytes = Deno.readFileSync(path);
        if (patterns.some((pattern) => indexOfBytes(bytes, pattern) !== -1)) {
          found.push(path);
        }
      }
    }
  };
  walk(root);
  return found;
}

function indexOfBytes(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) continue outer;
    }
    return i;
  }
  return -1;
}

/** The lines of the audit log, parsed. */
export function auditEntries(home: TestHome): Record<string, unknown>[] {
  try {
    return Deno.readTextFileSync(
      join(home.stateHome, "sherlock", "audit.log"),
    ).split("\n").filter((line) => line).map((line) => JSON.parse(line));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

/** The file's permission bits. */
export function modeOf(path: string): number {
  return (Deno.lstatSync(path).mode ?? 0) & 0o777;
}
