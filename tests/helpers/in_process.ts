/**
 * Runs a sherlock command line in the test's own process, through
 * `main(args, context)` with a context whose stdout and stderr are
 * buffers: for what a command prints, which needs no process of its own.
 * Signals, exit codes end to end and real sessions stay subprocess tests
 * (sherlock.ts).
 *
 * @module
 */

import { main } from "../../lib/cli/main.ts";
import { commandContext } from "../../lib/cli/context.ts";
import type { Writer } from "../../lib/cli/output.ts";
import { assertNoStackTrace, type SherlockResult } from "./sherlock.ts";

/** A stream that keeps what is written to it; never a terminal. */
export class BufferWriter implements Writer {
  #chunks: Uint8Array[] = [];

  /** Keeps `bytes`. */
  writeSync(bytes: Uint8Array): number {
    this.#chunks.push(bytes.slice());
    return bytes.length;
  }

  /** A buffer is no terminal. */
  isTerminal(): boolean {
    return false;
  }

  /** What was written, as text. */
  text(): string {
    const decoder = new TextDecoder();
    return this.#chunks.map((chunk) => decoder.decode(chunk)).join("");
  }
}

/**
 * Runs `sherlock ARGS` in-process with `env` as its whole environment;
 * returns its exit code and what it wrote.
 */
export async function runInProcess(
  args: readonly string[],
  options: { env: Record<string, string> },
): Promise<SherlockResult> {
  const stdout = new BufferWriter();
  const stderr = new BufferWriter();
  const code = await main(
    args,
    commandContext({ env: options.env, stdout, stderr }),
  );
  const result = {
    code,
    signal: null,
    stdout: stdout.text(),
    stderr: stderr.text(),
  };
  assertNoStackTrace(result.stderr);
  return result;
}
