/**
 * Printing for the commands: one-line errors, shell-quoted argv, aligned
 * columns. Only `lib/cli/` prints.
 *
 * @module
 */

import { ExitCode, SherlockError } from "../errors.ts";

const encoder = new TextEncoder();

/**
 * Thrown when stdout's reader has gone (`sherlock agents | head`): the
 * command stops, and sherlock exits 0 without a word, as Unix tools do
 * (see {@linkcode reportError}).
 */
export class StdoutClosedError extends Error {
  /** Creates the error. */
  constructor() {
    super("stdout is closed");
    this.name = "StdoutClosedError";
  }
}

/** Writes text to stdout as it is. Throws {@linkcode StdoutClosedError}. */
export function printText(text: string): void {
  try {
    Deno.stdout.writeSync(encoder.encode(text));
  } catch (error) {
    if (error instanceof Deno.errors.BrokenPipe) throw new StdoutClosedError();
    throw error;
  }
}

/** Writes a line to stdout. Throws {@linkcode StdoutClosedError}. */
export function printLine(line = ""): void {
  printText(line + "\n");
}

/** Writes a line to stderr, prefixed with `sherlock: `. */
export function printWarning(line: string): void {
  // A file with several problems reports one per line, each marked.
  const marked = line.split("\n").map((part) => `sherlock: ${part}\n`);
  Deno.stderr.writeSync(encoder.encode(marked.join("")));
}

/**
 * Prints an error as one line and returns the exit code for it. An error
 * that is not one of sherlock's own is a bug: it says so, and prints the
 * stack only when `SHERLOCK_DEBUG=1`. A closed stdout is not an error: the
 * reader took what it wanted, so it is 0 and nothing is printed (as `head`
 * expects, and so that `set -o pipefail` scripts do not fail on it).
 */
export function reportError(error: unknown): number {
  if (error instanceof StdoutClosedError) return 0;
  if (error instanceof SherlockError) {
    printWarning(error.message);
    return error.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  printWarning(
    `internal error: ${
      message.split("\n")[0]
    } (set SHERLOCK_DEBUG=1 for details)`,
  );
  if (Deno.env.get("SHERLOCK_DEBUG") === "1" && error instanceof Error) {
    Deno.stderr.writeSync(encoder.encode(`${error.stack}\n`));
  }
  return ExitCode.Software;
}

/**
 * `text` with every control character (C0, DEL, C1) written as `\xNN`, so
 * that a string from elsewhere (an audit log entry) printed on a terminal
 * can neither send it an escape sequence nor start a line of its own.
 */
export function escapeControls(text: string): string {
  return text.replace(
    // deno-lint-ignore no-control-regex -- finding them is the point
    /[\x00-\x1f\x7f-\x9f]/g,
    (char) => `\\x${char.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
}

/** Quotes a word for a POSIX shell, only when it needs it. */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Formats rows as columns separated by two spaces. */
export function columns(rows: readonly string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row.map((cell, index) =>
      index === row.length - 1 ? cell : cell.padEnd(widths[index])
    ).join("  ").trimEnd()
  );
}
