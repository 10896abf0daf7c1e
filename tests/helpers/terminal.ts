/**
 * Running sherlock without a terminal (stdin from /dev/null) or on a real
 * pseudo-terminal, for the commands that ask for a passphrase.
 *
 * @module
 */

import { spawn } from "node:child_process";
import { sh } from "./shell.ts";
import {
  assertNoStackTrace,
  HANG_GUARD_MS,
  sherlockCommand,
  type SherlockResult,
} from "./sherlock.ts";
import { waitUntil } from "./wait.ts";

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
