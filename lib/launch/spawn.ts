/**
 * Starting a child (the agent, or the shim's server): finding its executable
 * the way a shell would (so that a missing or non-executable agent is
 * reported before anything is written, and `sherlock agents` can say whether
 * each agent is installed), starting it with inherited stdio, relaying
 * signals to it, and mapping a failed start to an exit code.
 *
 * Deno cannot exec, so sherlock stays as the agent's parent. The agent's
 * rules ({@linkcode AGENT_RELAY}):
 * - SIGTERM and SIGHUP sent to sherlock are forwarded to the agent and to
 *   the processes it started in its process group.
 * - SIGINT and SIGQUIT are ignored by sherlock while the agent runs: the
 *   terminal sends them to the whole foreground process group, so the agent
 *   already gets Ctrl-C (once), and sherlock must outlive it to clean up.
 * - sherlock exits with the agent's code, or 128+N when signal N killed it.
 * - A signal that comes before the agent exists (any of the four, caught
 *   from the start of the session) means 128+N and no agent: a step being
 *   awaited ends at once ({@linkcode SignalRelay.unlessSignalled}), and
 *   {@linkcode SignalRelay.spawn} first waits until every signal caught so
 *   far has reached its listener.
 *
 * @module
 */

import {
  ConfigError,
  ExecutableNotFoundError,
  NotExecutableError,
} from "../errors.ts";
import { delimiter, isAbsolute, join } from "../runtime/path.ts";
import { descendantsInGroup } from "../os/processes.ts";
import { sentinelSignal } from "../os/signal_mask.ts";

/**
 * The numbers of the signals sherlock catches: the same on Linux and macOS.
 * (`node:os`'s table would start Deno's Node compatibility layer on the
 * launch path, which costs more than the rest of sherlock's start-up.)
 */
const SIGNAL_NUMBERS: Readonly<Record<string, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGTERM: 15,
};

/** The signals sherlock forwards to the agent. */
export const FORWARDED_SIGNALS: readonly Deno.Signal[] = ["SIGTERM", "SIGHUP"];

/** The signals sherlock ignores while the agent runs. */
export const IGNORED_SIGNALS: readonly Deno.Signal[] = ["SIGINT", "SIGQUIT"];

/** How a {@linkcode SignalRelay} treats the signals it catches. */
export interface RelayRules {
  /**
   * The signals passed on to the child while it runs; the others of
   * {@linkcode FORWARDED_SIGNALS} and {@linkcode IGNORED_SIGNALS} are
   * caught and ignored.
   */
  forwarded: readonly Deno.Signal[];
  /** Also signal the processes the child started in its process group. */
  toGroup: boolean;
  /**
   * A signal that arrives before the child starts: `keep` it in
   * {@linkcode SignalRelay.pending} (the caller exits 128+N instead of
   * starting the child), or `deliver` it to the child once it runs.
   */
  early: "keep" | "deliver";
}

/** The agent's rules: see the module's documentation. */
export const AGENT_RELAY: RelayRules = {
  forwarded: FORWARDED_SIGNALS,
  toGroup: true,
  early: "keep",
};

/** How the child is started. */
export interface SpawnOptions {
  /** The executable: a path, or a name Deno looks up on PATH. */
  path: string;
  /** The arguments after it. */
  args: string[];
  /** The child's whole environment (nothing else is inherited)… */
  env: Record<string, string>;
  /** …unless this is true: then `env` is added to sherlock's own. */
  inheritEnv?: boolean;
  /** Called with the child's pid as soon as it runs. */
  onSpawn?: (pid: number) => void;
}

/**
 * Thrown by {@linkcode SignalRelay.unlessSignalled} when a signal arrives
 * before the child starts: the caller cleans up and exits 128+N without
 * starting it.
 */
export class SignalledBeforeStart extends Error {
  /** The signal that arrived. */
  readonly signal: Deno.Signal;

  /** Creates the error for `signal`. */
  constructor(signal: Deno.Signal) {
    super(`${signal} before the child started`);
    this.name = "SignalledBeforeStart";
    this.signal = signal;
  }
}

/** How long {@linkcode signalsDelivered} waits for its own signal at most. */
const SENTINEL_WAIT_MS = 1000;

/**
 * Resolves once every signal that reached this process before the call
 * has reached its listeners. A caught signal reaches its listener only
 * when the event loop turns, through the runtime's signal thread: one turn
 * was not enough (about 1 in 100 was still on its way). So this process
 * sends itself a signal that does nothing ({@linkcode sentinelSignal}: a
 * terminal's resize, unless the parent blocked it) and waits for that
 * one's listener; the runtime hands every pending signal over together, so
 * the earlier ones come no later. When every such signal is blocked, it
 * does not wait: a signal still on its way then reaches the relay once the
 * agent runs (forwarded or ignored by the rules), not before.
 */
async function signalsDelivered(): Promise<void> {
  const signal = sentinelSignal();
  if (signal === undefined) return;
  let seen = () => {};
  const sentinel = new Promise<void>((resolve) => seen = resolve);
  // Listeners do not keep the event loop alive; this deadline does, and
  // ends the wait should the signal never come. AbortSignal.timeout rather
  // than setTimeout: a process's first setTimeout is dear
  // (docs/BENCHMARKS.md). It cannot be cleared: a process that does not
  // end with Deno.exit (sherlock's main does) lives until it fires.
  const deadline = AbortSignal.timeout(SENTINEL_WAIT_MS);
  const timeout = new Promise<void>((resolve) =>
    deadline.addEventListener("abort", () => resolve(), { once: true })
  );
  try {
    Deno.addSignalListener(signal, seen);
    try {
      Deno.kill(Deno.pid, signal);
      await Promise.race([sentinel, timeout]);
    } finally {
      Deno.removeSignalListener(signal, seen);
    }
  } catch {
    // No such signal here (Windows): nothing to wait for.
  }
}

/**
 * Catches signals from before the child exists (while the agent's files
 * are written, or the server's token fetched) until it has exited, so that
 * sherlock always gets to clean up, and relays them by its
 * {@linkcode RelayRules} (default {@linkcode AGENT_RELAY}). Create it, then
 * {@linkcode SignalRelay.spawn}, then {@linkcode SignalRelay.close}.
 */
export class SignalRelay {
  #rules: RelayRules;
  #early: Deno.Signal[] = [];
  #child: Deno.ChildProcess | undefined;
  #handlers = new Map<Deno.Signal, () => void>();
  #onEarly: (signal: Deno.Signal) => void = () => {};
  /** Resolves with the first signal that arrives before the child starts. */
  #firstEarly: Promise<Deno.Signal>;

  /**
   * The first {@linkcode signalsDelivered} (keep rule): a process's first
   * signal takes milliseconds to reach its listener, so it is sent while
   * the session is prepared, not when the agent is about to start.
   */
  #warmed: Promise<void> = Promise.resolve();

  /** Starts catching signals. */
  constructor(rules: RelayRules = AGENT_RELAY) {
    this.#rules = rules;
    this.#firstEarly = new Promise((resolve) => this.#onEarly = resolve);
    if (Deno.build.os === "windows") return;
    if (rules.early === "keep") this.#warmed = signalsDelivered();
    for (const signal of [...FORWARDED_SIGNALS, ...IGNORED_SIGNALS]) {
      const forwarded = rules.forwarded.includes(signal);
      this.#listen(signal, () => {
        if (!this.#child) {
          this.#early.push(signal);
          this.#onEarly(signal);
        } else if (forwarded) this.#forward(signal);
      });
    }
  }

  /** The first signal that arrived before the child started, if any. */
  get pending(): Deno.Signal | undefined {
    return this.#early[0];
  }

  /**
   * Waits for `work` (a step before the child starts: a token fetch),
   * unless a signal arrives first or has already: then throws
   * {@linkcode SignalledBeforeStart} at once, without waiting for `work`
   * (whose outcome is dropped). For the `keep` rule: Ctrl-C while a
   * credential helper runs ends sherlock now, not once the helper is done.
   */
  async unlessSignalled<T>(work: Promise<T>): Promise<T> {
    const signalled = this.#firstEarly.then((signal): never => {
      throw new SignalledBeforeStart(signal);
    });
    // The loser's outcome is dropped, not reported as unhandled.
    work.catch(() => {});
    signalled.catch(() => {});
    if (this.pending) throw new SignalledBeforeStart(this.pending);
    return await Promise.race([work, signalled]);
  }

  /**
   * Starts the child with inherited stdio and waits for it. Returns the
   * exit code sherlock should exit with. Spawn failures (not found, not
   * executable) are thrown as Deno's errors (see {@linkcode spawnError}).
   * With the `keep` rule, a signal that came before (while sherlock wrote
   * files, without letting the event loop turn, so that no listener had
   * run yet) means 128+N and no child.
   */
  async spawn(options: SpawnOptions): Promise<number> {
    if (this.#rules.early === "keep") {
      // Without this, a signal caught during the synchronous writes before
      // would reach its listener only once the child ran, and be ignored.
      await this.#warmed;
      await signalsDelivered();
      if (this.pending) return 128 + signalNumber(this.pending);
    }
    const child = new Deno.Command(options.path, {
      args: options.args,
      env: options.env,
      clearEnv: !options.inheritEnv,
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
    this.#child = child;
    options.onSpawn?.(child.pid);
    if (this.#rules.early === "deliver") {
      for (const signal of this.#early) {
        if (this.#rules.forwarded.includes(signal)) this.#forward(signal);
      }
    }
    const status = await child.status;
    return exitCodeOf(status);
  }

  /** Stops catching signals. */
  close(): void {
    for (const [signal, handler] of this.#handlers) {
      Deno.removeSignalListener(signal, handler);
    }
    this.#handlers.clear();
  }

  #listen(signal: Deno.Signal, handler: () => void): void {
    Deno.addSignalListener(signal, handler);
    this.#handlers.set(signal, handler);
  }

  #forward(signal: Deno.Signal): void {
    const child = this.#child;
    if (child === undefined) return;
    // As a shell signalling the job: the agent and what it started in its
    // process group (see process_tree.ts for why).
    const descendants = this.#rules.toGroup
      ? descendantsInGroup(child.pid)
      : [];
    try {
      child.kill(signal);
    } catch {
      // The agent has already exited.
    }
    for (const pid of descendants) {
      try {
        Deno.kill(pid, signal);
      } catch {
        // Gone in the meantime.
      }
    }
  }
}

/** The shell's convention: the code, or 128+N for a death by signal N. */
export function exitCodeOf(status: Deno.CommandStatus): number {
  if (status.signal !== null) {
    const number = SIGNAL_NUMBERS[status.signal];
    if (number !== undefined) return 128 + number;
  }
  // Deno reports a death by any other signal N as code 128+N already.
  return status.code;
}

/** The number of a signal, for `128+N` exit codes before the agent ran. */
export function signalNumber(signal: Deno.Signal): number {
  return SIGNAL_NUMBERS[signal] ?? 0;
}

/**
 * The sherlock error for a child that could not be started: not found
 * (exit 127), not executable (126), each with the caller's message, or an
 * argv and environment larger than the system takes (E2BIG, exit 78: they
 * come from the profile, the services and the arguments); any other error
 * is returned as it is.
 */
export function spawnError(
  error: unknown,
  messages: { notFound: string; notExecutable: string; tooLong: string },
): unknown {
  if (error instanceof Deno.errors.NotFound) {
    return new ExecutableNotFoundError(messages.notFound);
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    return new NotExecutableError(messages.notExecutable);
  }
  // Deno has no error class for E2BIG; its message carries the OS error.
  if (error instanceof Error && /\(os error 7\)$/.test(error.message)) {
    return new ConfigError(messages.tooLong);
  }
  return error;
}

/** Where an executable was found, or why it was not. */
export type ExecutableLookup =
  | { found: true; path: string }
  | { found: false; reason: "missing" | "not-executable"; path?: string };

/**
 * Looks `name` up: a name with a `/` is taken as a path, anything else is
 * searched in each folder of `searchPath` (the agent's `PATH`). A file
 * without any execute bit is remembered and reported as not executable when
 * no executable one is found.
 */
export function findExecutable(
  name: string,
  searchPath: string | undefined,
): ExecutableLookup {
  if (name.includes("/") || isAbsolute(name)) {
    return check(name) ?? { found: false, reason: "missing" };
  }
  let notExecutable: string | undefined;
  for (const folder of (searchPath ?? "").split(delimiter)) {
    if (folder === "") continue;
    const candidate = join(folder, name);
    const result = check(candidate);
    if (result?.found) return result;
    if (result) notExecutable ??= candidate;
  }
  return notExecutable
    ? { found: false, reason: "not-executable", path: notExecutable }
    : { found: false, reason: "missing" };
}

/**
 * Like {@linkcode findExecutable}, but throws the error that maps to exit
 * 127 or 126 with one line naming the agent and what to do.
 */
export function requireExecutable(
  options: { name: string; searchPath: string | undefined; agent: string },
): string {
  const lookup = findExecutable(options.name, options.searchPath);
  if (lookup.found) return lookup.path;
  if (lookup.reason === "not-executable") {
    throw new NotExecutableError(
      `${lookup.path} (agent ${options.agent}) is not executable; chmod +x it or fix the profile's executable`,
    );
  }
  throw new ExecutableNotFoundError(
    options.name.includes("/")
      ? `${options.name} (agent ${options.agent}) does not exist; install the agent or fix the profile's executable`
      : `${options.name} (agent ${options.agent}) was not found on PATH; install the agent or put it on PATH`,
  );
}

function check(path: string): ExecutableLookup | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch {
    return undefined;
  }
  if (!info.isFile) return undefined;
  const executable = info.mode === null || (info.mode & 0o111) !== 0;
  return executable
    ? { found: true, path }
    : { found: false, reason: "not-executable", path };
}
