/**
 * Starting the agent as a child with the terminal, and relaying signals.
 *
 * Deno cannot exec, so sherlock stays as the agent's parent. The rules:
 * - SIGTERM and SIGHUP sent to sherlock are forwarded to the agent and to
 *   the processes it started in its process group.
 * - SIGINT and SIGQUIT are ignored by sherlock while the agent runs: the
 *   terminal sends them to the whole foreground process group, so the agent
 *   already gets Ctrl-C (once), and sherlock must outlive it to clean up.
 * - sherlock exits with the agent's code, or 128+N when signal N killed it.
 *
 * @module
 */

import { descendantsInGroup } from "./process_tree.ts";

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

/** How the agent is started. */
export interface SpawnOptions {
  /** The executable's resolved path. */
  path: string;
  /** The arguments after it. */
  args: string[];
  /** The agent's whole environment (nothing else is inherited). */
  env: Record<string, string>;
}

/**
 * Catches signals from before the agent exists (while its files are being
 * written) until it has exited, so that sherlock always gets to clean up.
 * A signal that arrives before the agent starts is kept in
 * {@linkcode SignalRelay.pending}: the caller then cleans up and exits
 * 128+N instead of starting the agent. Create it, then
 * {@linkcode SignalRelay.spawn}, then {@linkcode SignalRelay.close}.
 */
export class SignalRelay {
  #pending: Deno.Signal | undefined;
  #child: Deno.ChildProcess | undefined;
  #handlers = new Map<Deno.Signal, () => void>();

  /** Starts catching signals. */
  constructor() {
    if (Deno.build.os === "windows") return;
    for (const signal of [...FORWARDED_SIGNALS, ...IGNORED_SIGNALS]) {
      const forwarded = FORWARDED_SIGNALS.includes(signal);
      this.#listen(signal, () => {
        if (!this.#child) this.#pending ??= signal;
        else if (forwarded) this.#forward(signal);
      });
    }
  }

  /** The signal that arrived before the agent started, if any. */
  get pending(): Deno.Signal | undefined {
    return this.#pending;
  }

  /**
   * Starts the agent with inherited stdio and waits for it. Returns the
   * exit code sherlock should exit with. Spawn failures (not found, not
   * executable) are thrown as Deno's errors.
   */
  async spawn(options: SpawnOptions): Promise<number> {
    const child = new Deno.Command(options.path, {
      args: options.args,
      env: options.env,
      clearEnv: true,
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
    this.#child = child;
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
    const descendants = descendantsInGroup(child.pid);
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
