/**
 * Installing the fake agent (`fake_agent.ts`) as a real executable, and
 * controlling one run of it from a test.
 *
 * ```ts
 * installFakeAgent(join(home.bin, "fake"));
 * const agent = new AgentRun(home.scratch, { exit: 3 });
 * const result = await runSherlock(["run", "fake"], {
 *   env: { ...home.env, ...agent.env },
 * });
 * const record = agent.record(); // argv, env, cwd, rendered config …
 * ```
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { isProcessRunning } from "../../lib/os/processes.ts";
import type { AgentRecord } from "./fake_agent.ts";
import type { TestHome } from "./home.ts";
import { type ProfileSpec, profileToml } from "./profiles.ts";
import { sh } from "./shell.ts";
import { type RunningSherlock, startSherlock } from "./sherlock.ts";
import { waitUntil } from "./wait.ts";

export type { AgentRecord, ConfigSeen, ServerRun } from "./fake_agent.ts";

/** The fake agent program. */
export const FAKE_AGENT_TS: string = fileURLToPath(
  new URL("./fake_agent.ts", import.meta.url),
);

/**
 * Writes an executable `/bin/sh` script at `path` that runs the fake agent
 * with the absolute path of the Deno running the tests. Returns `path`.
 */
export function installFakeAgent(path: string): string {
  const script = [
    "#!/bin/sh",
    `exec ${sh(Deno.execPath())} run --allow-all --quiet --no-config ` +
    `--no-lock ${sh(FAKE_AGENT_TS)} "$0" "$@"`,
    "",
  ].join("\n");
  Deno.writeTextFileSync(path, script, { mode: 0o755 });
  Deno.chmodSync(path, 0o755);
  return path;
}

/**
 * Adds an agent to a test HOME: the fake agent as `bin/<executable>` (on
 * PATH) and its profile in `agents.d/<name>.toml`. The profile defaults to
 * env-var mode with `SHERLOCK_MCP_CONFIG`. Returns the profile's path.
 */
export function addFakeAgent(
  home: TestHome,
  spec: Partial<ProfileSpec> & { name: string },
): string {
  const executable = spec.executable ?? spec.name;
  if (!executable.includes("/")) installFakeAgent(join(home.bin, executable));
  return home.writeProfile(spec.name, profileToml({ ...spec, executable }));
}

/** How one run of the fake agent should behave. */
export interface AgentRunOptions {
  /** Wait until {@linkcode AgentRun.release} before exiting. */
  wait?: boolean;
  /** Signals that are recorded but do not end a waiting agent. */
  survive?: Deno.Signal[];
  /** The exit code. */
  exit?: number;
  /** A signal to kill itself with (after waiting, if it waits). */
  kill?: Deno.Signal;
  /** Where the rendered config is: `env:VAR`, `path:/abs` or `arg:regex`. */
  config?: string;
  /** Text to print on stdout. */
  stdout?: string;
  /** Read stdin to its end and record it. */
  readStdin?: boolean;
  /**
   * Start each stdio server of the rendered config with this text on its
   * stdin, and record what it printed (see `fake_agent.ts`).
   */
  runServers?: string;
}

let runs = 0;

/** One run of the fake agent: the variables that steer it and its record. */
export class AgentRun {
  /** Where the agent writes its record. */
  readonly recordPath: string;
  /** The file whose creation lets a waiting agent go on. */
  readonly releasePath: string;
  /** The variables to add to sherlock's environment for this run. */
  readonly env: Record<string, string>;

  /** Prepares a run whose files live in `folder`. */
  constructor(folder: string, options: AgentRunOptions = {}) {
    const id = `agent-${Deno.pid}-${++runs}`;
    this.recordPath = join(folder, `${id}.json`);
    this.releasePath = join(folder, `${id}.release`);
    const env: Record<string, string> = { FAKE_AGENT_RECORD: this.recordPath };
    if (options.wait) env.FAKE_AGENT_WAIT_FOR = this.releasePath;
    if (options.survive) env.FAKE_AGENT_SURVIVE = options.survive.join(",");
    if (options.exit !== undefined) env.FAKE_AGENT_EXIT = String(options.exit);
    if (options.kill) env.FAKE_AGENT_KILL = options.kill;
    if (options.config) env.FAKE_AGENT_CONFIG = options.config;
    if (options.stdout !== undefined) env.FAKE_AGENT_STDOUT = options.stdout;
    if (options.readStdin) env.FAKE_AGENT_READ_STDIN = "1";
    if (options.runServers !== undefined) {
      env.FAKE_AGENT_RUN_SERVERS = options.runServers;
    }
    this.env = env;
  }

  /** True once the agent has started (its first record exists). */
  get hasStarted(): boolean {
    return this.#read() !== undefined;
  }

  /** Waits until the agent has started, and returns its first record. */
  async started(): Promise<AgentRecord> {
    return await waitUntil(() => this.#read(), "the fake agent to start");
  }

  /** Waits until the agent has recorded `count` signals. */
  async signalled(count = 1): Promise<AgentRecord> {
    return await waitUntil(() => {
      const record = this.#read();
      return record && record.signals.length >= count ? record : undefined;
    }, `the fake agent to record ${count} signal(s)`);
  }

  /** Lets a waiting agent go on. */
  release(): void {
    Deno.writeTextFileSync(this.releasePath, "");
  }

  /** The record; throws when the agent never started. */
  record(): AgentRecord {
    const record = this.#read();
    if (record === undefined) {
      throw new Error(`the fake agent never started (${this.recordPath})`);
    }
    return record;
  }

  #read(): AgentRecord | undefined {
    try {
      return JSON.parse(Deno.readTextFileSync(this.recordPath));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return undefined;
      throw error;
    }
  }

  /** Releases the agent, so that nothing is left waiting after a test. */
  [Symbol.dispose](): void {
    try {
      this.release();
    } catch {
      // The folder is already gone.
    }
  }
}

/** A sherlock session whose fake agent runs until it is released. */
export interface WaitingSession {
  /** The agent's run: release it, read its record. */
  agent: AgentRun;
  /** The sherlock process. */
  sherlock: RunningSherlock;
  /** The agent's first record: its argv, env and rendered config. */
  started: AgentRecord;
  /** Releases the agent and waits until sherlock's output is complete. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts `sherlock <args…>` in `home` with a fake agent that waits, and
 * returns once the agent runs. `detached` starts sherlock as its own
 * process group (see `startSherlock`).
 */
export async function startWaitingSession(
  home: TestHome,
  args: readonly string[],
  options: Omit<AgentRunOptions, "wait"> & { detached?: boolean } = {},
): Promise<WaitingSession> {
  const agent = new AgentRun(home.scratch, { ...options, wait: true });
  const sherlock = startSherlock(args, {
    env: { ...home.env, ...agent.env },
    detached: options.detached,
  });
  const started = await Promise.race([
    agent.started(),
    sherlock.exited.then((status) => {
      throw new Error(
        `sherlock exited (${JSON.stringify(status)}) before the agent started`,
      );
    }),
  ]);
  return {
    agent,
    sherlock,
    started,
    async [Symbol.asyncDispose]() {
      agent[Symbol.dispose]();
      await sherlock.result.catch(() => {});
    },
  };
}

/**
 * SIGKILLs the agent of a session whose sherlock was killed (the agent is
 * an orphan then) and waits until it no longer runs: from then on the
 * session is dead, and the next sherlock sweeps it.
 */
export async function killOrphanedAgent(
  session: WaitingSession,
): Promise<void> {
  const pid = session.started.pid;
  try {
    Deno.kill(pid, "SIGKILL");
  } catch {
    // Already gone.
  }
  await waitUntil(
    () => !isProcessRunning(pid) || undefined,
    `the orphaned agent ${pid} to end`,
  );
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
