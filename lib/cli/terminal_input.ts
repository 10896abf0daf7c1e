/**
 * Reading a passphrase or a secret: from the terminal without echo, or,
 * when stdin is not a terminal, from stdin. sherlock never prompts when
 * nobody can answer: with no terminal, an empty stdin is an error at once.
 *
 * @module
 */

import { concatBytes } from "../runtime/bytes.ts";
import { ExitCode, SherlockError, UsageError } from "../errors.ts";

/** The most bytes read from stdin for a secret. */
const MAX_INPUT_BYTES = 64 * 1024;

/**
 * Ctrl-C at a hidden prompt (the terminal is raw, so no SIGINT comes): exit
 * 130, as if the signal had ended sherlock.
 */
export class InterruptedError extends SherlockError {
  /** Creates the error. */
  constructor() {
    super("interrupted; nothing was sent", ExitCode.Interrupted);
    this.name = "InterruptedError";
  }
}

/** True when stdin is a terminal (so a prompt can be answered). */
export function stdinIsTerminal(): boolean {
  return Deno.stdin.isTerminal();
}

/**
 * Prompts on stderr and reads one line from the terminal with echo off.
 * Backspace and Ctrl-U edit; Ctrl-C throws {@linkcode InterruptedError};
 * Ctrl-D on an empty line ends the input.
 */
export async function readHidden(prompt: string): Promise<string> {
  const encoder = new TextEncoder();
  // Echo off first: whatever is typed once the prompt shows is not echoed.
  Deno.stdin.setRaw(true);
  Deno.stderr.writeSync(encoder.encode(prompt));
  const bytes: number[] = [];
  const buffer = new Uint8Array(64);
  try {
    let input = typedAhead.splice(0);
    while (true) {
      for (let index = 0; index < input.length; index++) {
        const byte = input[index];
        if (byte === 13 || byte === 10 || (byte === 4 && bytes.length === 0)) {
          // What was typed after the line belongs to the next prompt.
          typedAhead.push(...input.slice(index + 1));
          return new TextDecoder().decode(new Uint8Array(bytes));
        }
        if (byte === 3) throw new InterruptedError();
        if (byte === 127 || byte === 8) {
          // Remove a whole UTF-8 character: its continuation bytes too.
          while (bytes.length > 0 && (bytes.at(-1)! & 0xc0) === 0x80) {
            bytes.pop();
          }
          bytes.pop();
        } else if (byte === 21) bytes.length = 0;
        else if (byte >= 32 || byte === 9) bytes.push(byte);
      }
      const count = await Deno.stdin.read(buffer);
      if (count === null) break;
      input = [...buffer.subarray(0, count)];
    }
  } finally {
    Deno.stdin.setRaw(false);
    Deno.stderr.writeSync(encoder.encode("\n"));
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** Bytes read from the terminal after the line a prompt took. */
const typedAhead: number[] = [];

/**
 * Reads stdin to its end (at most 64 KiB) and drops one trailing newline;
 * with `firstLine`, only up to the first newline (so a pipe that stays open
 * after it does not make sherlock wait). `what` names the input in the
 * error for an empty stdin.
 */
export async function readStdin(
  what: string,
  options: { firstLine?: boolean } = {},
): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = Deno.stdin.readable.getReader();
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > MAX_INPUT_BYTES) {
        throw new UsageError(
          `${what} on stdin is longer than ${MAX_INPUT_BYTES} bytes`,
        );
      }
      chunks.push(value);
      if (options.firstLine && value.includes(10)) break;
    }
  } finally {
    reader.releaseLock();
  }
  let text = new TextDecoder().decode(concatBytes(chunks));
  text = options.firstLine
    ? text.split(/\r?\n/)[0]
    : text.replace(/\r?\n$/, "");
  if (text === "") {
    throw new UsageError(
      `no ${what}: stdin is not a terminal and ${
        total === 0 ? "is empty" : "starts with an empty line"
      }; pipe the ${what} in, or run this in a terminal`,
    );
  }
  return text;
}
