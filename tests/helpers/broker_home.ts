/**
 * A throwaway HOME with a broker of its own: sherlock run in it, logged in,
 * its credential helpers counting their runs, and its daemon stopped (and
 * checked for) when the test ends.
 *
 * ```ts
 * await using home = await createBrokerHome();
 * home.addAgent();
 * const helper = home.addHelperService("github", { expiresIn: 3600 });
 * await home.login();
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
import { join } from "node:path";
import type { Health } from "../../lib/broker/protocol.ts";
import {
  type AgentRecord,
  AgentRun,
  type AgentRunOptions,
  installFakeAgent,
} from "./agent.ts";
import { brokerDaemonPids } from "./daemon_processes.ts";
import { countLines } from "./files.ts";
import { createTestHome, type TestHome } from "./home.ts";
import { randomToken } from "./leaks.ts";
import { profileToml, tokenServiceToml } from "./profiles.ts";
import { sh } from "./shell.ts";
import {
  runSherlock,
  type SherlockOptions,
  type SherlockResult,
} from "./sherlock.ts";
import { brokerHealth } from "./socket_http.ts";
import { waitUntil } from "./wait.ts";

/** The passphrase the tests' stores are created with. */
export const PASSPHRASE = "correct horse battery staple";

/** The fake agent's profile name (and executable on PATH). */
export const AGENT = "fake";

/** A throwaway HOME with a broker of its own. */
export interface BrokerHome extends TestHome {
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
    options?: AgentRunOptions & {
      /** The agent's arguments. */
      args?: string[];
      /** sherlock's own options, before the agent's name (`--strict`). */
      runOptions?: string[];
      /** Variables added to sherlock's environment (the operator's shell). */
      env?: Record<string, string>;
    },
  ): Promise<{ result: SherlockResult; record?: AgentRecord }>;
  /** Writes an executable /bin/sh script into `bin/`; returns its path. */
  writeScript(name: string, body: string): string;
  /** A credential helper that counts its runs (see {@linkcode TokenHelper}). */
  tokenHelper(name: string, options?: TokenHelperOptions): TokenHelper;
  /**
   * Writes the `command` service `name` (a stdio server) whose helper is a
   * {@linkcode BrokerHome.tokenHelper}; returns the helper.
   */
  addHelperService(name: string, options?: TokenHelperOptions): TokenHelper;
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
      const result = await sherlock([
        "run",
        ...(options.runOptions ?? []),
        AGENT,
        ...(options.args ?? []),
      ], {
        env: { ...options.env, ...agent.env },
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
    addHelperService(name, options) {
      const helper = broker.tokenHelper(name, options);
      home.writeService(
        name,
        tokenServiceToml({ name, command: [helper.path] }),
      );
      return helper;
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
