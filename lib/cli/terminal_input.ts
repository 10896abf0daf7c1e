/**
 * Reading a passphrase or a secret: from the terminal without echo, or,
 * when stdin is not a terminal, from stdin. sherlock never prompts when
 * nobody can answer: with no terminal, an empty stdin is an error at once.
 *
 * @module
 */

import { UsageError } from "../errors.ts";

/** The most bytes read from stdin for a secret. */
const MAX_INPUT_BYTES = 64 * 1024;

/** Ctrl-C at a hidden prompt. */
export class InterruptedError extends Error {
  /** Creates the error. */
  constructor() {
    super("interrupted");
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
  Deno.stderr.writeSync(encoder.encode(prompt));
  Deno.stdin.setRaw(true);
  const bytes: number[] = [];
  const buffer = new Uint8Array(64);
  try {
    reading: while (true) {
      const count = await Deno.stdin.read(buffer);
      if (count === null) break;
      for (const byte of buffer.subarray(0, count)) {
        if (byte === 13 || byte === 10) break reading;
        if (byte === 3) throw new InterruptedError();
        if (byte === 4 && bytes.length === 0) break reading;
        if (byte === 127 || byte === 8) bytes.pop();
        else if (byte === 21) bytes.length = 0;
        else if (byte >= 32 || byte === 9) bytes.push(byte);
      }
    }
  } finally {
    Deno.stdin.setRaw(false);
    Deno.stderr.writeSync(encoder.encode("\n"));
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/**
 * Reads stdin to its end (at most 64 KiB) and drops one trailing newline.
 * `what` names the input in the error for an empty stdin.
 */
export async function readStdin(what: string): Promise<string> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of Deno.stdin.readable) {
    total += chunk.length;
    if (total > MAX_INPUT_BYTES) {
      throw new UsageError(
        `${what} on stdin is longer than ${MAX_INPUT_BYTES} bytes`,
      );
    }
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  const text = new TextDecoder().decode(bytes).replace(/\r?\n$/, "");
  if (text === "") {
    throw new UsageError(
      `no ${what}: stdin is not a terminal and is empty; pipe the ${what} in`,
    );
  }
  return text;
}
