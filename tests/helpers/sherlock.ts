/**
 * Runs sherlock as a real process (`deno run main.ts …`), the way an
 * operator does, with a given environment and nothing inherited.
 *
 * `SHERLOCK_TEST_PROGRAM=path/to/sherlock` makes every test that starts
 * sherlock through {@linkcode sherlockCommand} run that program (a compiled
 * binary) instead, so the release checks the binary it ships with the same
 * suites.
 *
 * Every result is checked for the one thing sherlock must never print: a
 * stack trace or an uncaught error. Each process has a hang guard: a
 * generous timeout after which it is killed and the test fails; tests never
 * assert on durations.
 *
 * @module
 */

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The repository's root folder. */
export const REPO_ROOT: string = fileURLToPath(
  new URL("../../", import.meta.url),
);

/** sherlock's entry point. */
export const MAIN_TS: string = fileURLToPath(
  new URL("../../main.ts", import.meta.url),
);

/** How long a process may run before it is killed as hung. */
export const HANG_GUARD_MS = 120_000;

/** How to start sherlock. */
export interface SherlockOptions {
  /** The whole environment (see `home.ts`); nothing else is inherited. */
  env: Record<string, string>;
  /** The working folder (default: the test process's). */
  cwd?: string;
  /** Text for stdin; stdin is empty (closed) otherwise. */
  stdin?: string;
  /**
   * Start sherlock as the leader of a new session and process group, as a
   * shell does for a foreground job, so that a signal can be sent to the
   * whole group the way a terminal sends Ctrl-C.
   */
  detached?: boolean;
  /** Overrides {@linkcode HANG_GUARD_MS}. */
  timeoutMs?: number;
}

/** How sherlock ended and what it printed. */
export interface SherlockResult {
  /** The exit code (null when a signal killed it). */
  code: number | null;
  /** The signal that killed it, if one did. */
  signal: string | null;
  /** Everything on stdout. */
  stdout: string;
  /** Everything on stderr. */
  stderr: string;
}

/** A sherlock process that is running. */
export interface RunningSherlock {
  /** Its pid (and process group id, when detached). */
  pid: number;
  /** Resolves when the process has exited (its pipes may still be open). */
  exited: Promise<{ code: number | null; signal: string | null }>;
  /** Resolves when it has exited and its output is complete. */
  result: Promise<SherlockResult>;
  /** What it printed on stderr so far (for prompts a test answers). */
  stderrSoFar(): string;
  /** Sends a signal to sherlock alone. */
  kill(signal: Deno.Signal): void;
  /** Sends a signal to sherlock's whole process group (detached only). */
  killGroup(signal: Deno.Signal): void;
}

/**
 * The argv that runs sherlock: `SHERLOCK_TEST_PROGRAM` when set (a compiled
 * binary), otherwise `deno run main.ts` from source.
 */
export function sherlockCommand(args: readonly string[]): string[] {
  const program = Deno.env.get("SHERLOCK_TEST_PROGRAM");
  if (program) return [program, ...args];
  return [Deno.execPath(), "run", "--allow-all", "--quiet", MAIN_TS, ...args];
}

/**
 * Throws when `stderr` holds a stack trace or an uncaught error: sherlock
 * reports every failure as one line.
 */
export function assertNoStackTrace(stderr: string): void {
  if (/^\s+at .+[:(]\d+/m.test(stderr) || /\bUncaught\b/.test(stderr)) {
    throw new Error(`sherlock printed a stack trace:\n${stderr}`);
  }
}

/** Starts sherlock and returns at once. */
export function startSherlock(
  args: readonly string[],
  options: SherlockOptions,
): RunningSherlock {
  const [program, ...rest] = sherlockCommand(args);
  const child = spawn(program, rest, {
    env: options.env,
    cwd: options.cwd,
    detached: options.detached ?? false,
    stdio: ["pipe", "pipe", "pipe"],
  });
  if (child.pid === undefined) throw new Error("could not start sherlock");
  const pid = child.pid;
  child.stdin!.end(options.stdin ?? "");
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (text) => stdout += text);
  child.stderr!.setEncoding("utf8").on("data", (text) => stderr += text);

  let timedOut = false;
  const guard = setTimeout(() => {
    timedOut = true;
    try {
      if (options.detached) Deno.kill(-pid, "SIGKILL");
      else Deno.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }, options.timeoutMs ?? HANG_GUARD_MS);

  const exited = new Promise<{ code: number | null; signal: string | null }>(
    (resolve) => {
      child.on("exit", (code, signal) => {
        clearTimeout(guard);
        resolve({ code, signal });
      });
    },
  );
  const closed = new Promise<void>((resolve) => child.on("close", resolve));
  const result = Promise.all([exited, closed]).then(([status]) => {
    if (timedOut) {
      throw new Error(
        `sherlock ${args.join(" ")} hung and was killed\nstderr: ${stderr}`,
      );
    }
    assertNoStackTrace(stderr);
    return { ...status, stdout, stderr };
  });
  // A test that only awaits `exited` must not see an unhandled rejection.
  result.catch(() => {});

  return {
    pid,
    exited,
    result,
    stderrSoFar: () => stderr,
    kill: (signal) => Deno.kill(pid, signal),
    killGroup: (signal) => Deno.kill(-pid, signal),
  };
}

/** Runs sherlock to the end. */
export function runSherlock(
  args: readonly string[],
  options: SherlockOptions,
): Promise<SherlockResult> {
  return startSherlock(args, options).result;
}

/** The lines of a text, without the empty one after the last newline. */
export function lines(text: string): string[] {
  const all = text.split("\n");
  if (all.at(-1) === "") all.pop();
  return all;
}
