/**
 * The peak resident memory of a process, as the kernel counts it: run as a
 * script, this runs its arguments as a command and reports the child's
 * `ru_maxrss` (getrusage(RUSAGE_CHILDREN), through FFI: no `/usr/bin/time`
 * needed). In a process of its own, so that no other child of the test
 * counts. Linux only (libc.so.6).
 *
 * @module
 */

import { fileURLToPath } from "node:url";

/** What the measured command did. */
export interface MeasuredRun {
  code: number;
  stdout: string;
  stderr: string;
  /** The largest resident set the command reached, in KiB. */
  peakKiB: number;
}

/**
 * Runs `argv` with exactly `env` and returns its output and peak memory.
 * Hang guard: the command is killed after `timeoutMs`, and this throws.
 */
export async function measurePeakMemory(
  argv: readonly string[],
  options: { env: Record<string, string>; cwd?: string; timeoutMs?: number },
): Promise<MeasuredRun> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--quiet",
      fileURLToPath(import.meta.url),
      String(options.timeoutMs ?? 60_000),
      ...argv,
    ],
    env: options.env,
    clearEnv: true,
    cwd: options.cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const report = new TextDecoder().decode(output.stdout);
  if (output.code !== 0) {
    throw new Error(
      `measuring ${argv.join(" ")} failed: ${
        new TextDecoder().decode(output.stderr)
      }`,
    );
  }
  return JSON.parse(report) as MeasuredRun;
}

async function main(args: string[]): Promise<void> {
  const [timeoutMs, program, ...rest] = args;
  const child = new Deno.Command(program, {
    args: rest,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let timedOut = false;
  const guard = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, Number(timeoutMs));
  const output = await child.output();
  clearTimeout(guard);
  const decoder = new TextDecoder();
  if (timedOut) {
    console.error(`hung and was killed: ${decoder.decode(output.stderr)}`);
    Deno.exit(1);
  }
  const libc = Deno.dlopen("libc.so.6", {
    getrusage: { parameters: ["i32", "buffer"], result: "i32" },
  });
  // struct rusage: two struct timeval (16 bytes each), then ru_maxrss (KiB).
  const usage = new BigInt64Array(18);
  const RUSAGE_CHILDREN = -1;
  if (libc.symbols.getrusage(RUSAGE_CHILDREN, usage) !== 0) {
    throw new Error("getrusage failed");
  }
  const run: MeasuredRun = {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
    peakKiB: Number(usage[4]),
  };
  console.log(JSON.stringify(run));
}

if (import.meta.main) await main(Deno.args);
