/**
 * Quoting for the /bin/sh scripts that tests write (credential helpers,
 * fake servers, the fake agent's launcher), and running a step the way an
 * operator's shell does (a redirect, a symlink, a pipe).
 *
 * @module
 */

import { assertNoStackTrace } from "./sherlock.ts";

/** Quotes a word for /bin/sh. */
export function sh(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** How a shell script ended and what it printed. */
export interface ShellResult {
  /** The exit code. */
  code: number;
  /** Everything on stdout. */
  stdout: string;
  /** Everything on stderr (checked for stack traces). */
  stderr: string;
}

/**
 * Runs `script` with `bash -c` in `cwd`, with exactly `env`, and fails on
 * a stack trace in its stderr (sherlock's, when the script runs it).
 */
export async function runBash(
  script: string,
  options: { env: Record<string, string>; cwd: string },
): Promise<ShellResult> {
  const output = await new Deno.Command("bash", {
    args: ["-c", script],
    env: options.env,
    clearEnv: true,
    cwd: options.cwd,
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  const stderr = decoder.decode(output.stderr);
  assertNoStackTrace(stderr);
  return { code: output.code, stdout: decoder.decode(output.stdout), stderr };
}
