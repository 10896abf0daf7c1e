/**
 * Printing for the commands: one-line errors, shell-quoted argv, aligned
 * columns, colour and emphasis, and the waiting line. Only `lib/cli/`
 * prints.
 *
 * Colour and emphasis go only to a terminal: never into a pipe or a file,
 * never when `NO_COLOR` is set (https://no-color.org) or `TERM` is `dumb`.
 * The waiting line goes only to a terminal on stderr, so a script reading
 * stderr never sees it.
 *
 * Every print function escapes the control characters of the text it is
 * given ({@linkcode terminalText}): text from elsewhere (an authorization
 * server's `error_description`, an issuer, a scope) can neither send the
 * terminal an escape sequence nor move its cursor. Sherlock's own styling
 * is added after that, here and nowhere else.
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

/** A stream a command writes to: the process's stdout or stderr, or a test's buffer. */
export interface Writer {
  /** Writes all of `bytes` (or throws). */
  writeSync(bytes: Uint8Array): number;
  /** True when a terminal reads it. */
  isTerminal(): boolean;
}

/** Where a command's output goes, and the environment that decides its colour. */
export interface OutputStreams {
  /** Its stdout. */
  stdout: Writer;
  /** Its stderr. */
  stderr: Writer;
  /** The environment (`NO_COLOR`, `TERM`, `SHERLOCK_DEBUG`). */
  env: Readonly<Record<string, string | undefined>>;
}

/**
 * The print functions bound to one command's streams
 * ({@linkcode printer}); each is the same as the module's function of the
 * same name, which prints to the process's streams.
 */
export interface Printer {
  /** {@linkcode printText} */
  text(text: string): void;
  /** {@linkcode printLine} */
  line(line?: string): void;
  /** {@linkcode printJson} */
  json(value: unknown): void;
  /** {@linkcode printWarning} */
  warning(line: string): void;
  /** {@linkcode printError} */
  error(line: string): void;
  /** {@linkcode printColumns} */
  columns(rows: readonly string[][], emphasis: ColumnsEmphasis): void;
  /** {@linkcode printHelp} */
  help(text: string): void;
  /** Whether `stream` gets colour and emphasis ({@linkcode colorAllowed}). */
  colorOn(stream: Stream): boolean;
}

/**
 * The print functions for `streams`: a command prints through the one its
 * context gives, so that a test runs it in-process and reads what it wrote.
 */
export function printer(streams: OutputStreams): Printer {
  const colorOf = (stream: Stream): boolean =>
    colorAllowed({
      isTerminal: writerIsTerminal(
        stream === "stdout" ? streams.stdout : streams.stderr,
      ),
      noColor: streams.env.NO_COLOR,
      term: streams.env.TERM,
    });
  const stdout = (text: string) => writeTo(streams.stdout, text);
  const marked = (line: string, style: Style) =>
    writeErr(
      streams.stderr,
      markedLines(line, { style, color: colorOf("stderr") }),
    );
  const text = (value: string) => stdout(terminalText(value));
  const line = (value = "") => text(value + "\n");
  return {
    text,
    line,
    json: (value) => line(jsonText(value)),
    warning: (value) => marked(value, "bold"),
    error: (value) => marked(value, "red"),
    columns: (rows, emphasis) =>
      stdout(
        columnsLines(rows, { emphasis, color: colorOf("stdout") })
          .map((each) => `${each}\n`).join(""),
      ),
    help: (value) =>
      stdout(`${helpText(value, { color: colorOf("stdout") })}\n`),
    colorOn: colorOf,
  };
}

/** The process's own streams and environment. */
const PROCESS_STREAMS: OutputStreams = {
  stdout: Deno.stdout,
  stderr: Deno.stderr,
  env: {
    get NO_COLOR() {
      return Deno.env.get("NO_COLOR");
    },
    get TERM() {
      return Deno.env.get("TERM");
    },
    get SHERLOCK_DEBUG() {
      return Deno.env.get("SHERLOCK_DEBUG");
    },
  },
};

const terminalWriters = new WeakMap<Writer, boolean>();

function writerIsTerminal(writer: Writer): boolean {
  let answer = terminalWriters.get(writer);
  if (answer === undefined) {
    answer = writer.isTerminal();
    terminalWriters.set(writer, answer);
  }
  return answer;
}

/** Writes to a stdout. Throws {@linkcode StdoutClosedError}. */
function writeTo(writer: Writer, text: string): void {
  try {
    writer.writeSync(encoder.encode(text));
  } catch (error) {
    if (error instanceof Deno.errors.BrokenPipe) throw new StdoutClosedError();
    throw error;
  }
}

/** Writes to a stderr: the process's above the waiting line when one shows. */
function writeErr(writer: Writer, text: string): void {
  if (writer === Deno.stderr) writeStderr(text);
  else writer.writeSync(encoder.encode(text));
}

/**
 * Writes text to stdout, its control characters escaped but for newlines
 * and tabs ({@linkcode terminalText}). Throws {@linkcode StdoutClosedError}.
 */
export function printText(text: string): void {
  writeStdout(terminalText(text));
}

/** Writes to stdout as it is: only text this module made safe. */
function writeStdout(text: string): void {
  writeTo(Deno.stdout, text);
}

/**
 * Writes `value` to stdout as indented JSON on a line. JSON.stringify
 * leaves DEL and C1 controls (U+007F–U+009F) as they are; they are written
 * `\u007f`…`\u009f`, so the output stays JSON and reaches a terminal
 * inert. Throws {@linkcode StdoutClosedError}.
 */
export function printJson(value: unknown): void {
  printLine(jsonText(value));
}

function jsonText(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    // Only inside strings, where `\u` is JSON.
    /[\x7f-\x9f]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Writes a line to stdout. Throws {@linkcode StdoutClosedError}. */
export function printLine(line = ""): void {
  printText(line + "\n");
}

/** Writes a line to stderr, prefixed with `sherlock: ` (in bold on a terminal). */
export function printWarning(line: string): void {
  printMarked(line, "bold");
}

/** Writes an error's line to stderr, prefixed with `sherlock: ` (in red on a terminal). */
export function printError(line: string): void {
  printMarked(line, "red");
}

function printMarked(line: string, style: Style): void {
  writeStderr(markedLines(line, { style, color: colorOn("stderr") }));
}

/**
 * The lines {@linkcode printWarning} and {@linkcode printError} write:
 * each line of `line` after the prefix, control characters escaped, the
 * prefix alone styled when `color`.
 */
export function markedLines(
  line: string,
  options: { style: Style; color: boolean },
): string {
  // A file with several problems reports one per line, each marked.
  const prefix = options.color
    ? styleText("sherlock:", options.style)
    : "sherlock:";
  return line.split("\n").map((part) => `${prefix} ${terminalText(part)}\n`)
    .join("");
}

/** Writes to stderr, above the waiting line when one shows. */
function writeStderr(text: string): void {
  const waiting = shownWaiting;
  if (waiting !== undefined) clearWaitingLine(waiting);
  Deno.stderr.writeSync(encoder.encode(text));
  if (waiting !== undefined) drawWaitingLine(waiting);
}

/**
 * Prints an error as one line and returns the exit code for it. An error
 * that is not one of sherlock's own is a bug: it says so, and prints the
 * stack only when `SHERLOCK_DEBUG=1`. A closed stdout is not an error: the
 * reader took what it wanted, so it is 0 and nothing is printed (as `head`
 * expects, and so that `set -o pipefail` scripts do not fail on it).
 */
export function reportError(
  error: unknown,
  streams: OutputStreams = PROCESS_STREAMS,
): number {
  if (error instanceof StdoutClosedError) return 0;
  const out = printer(streams);
  if (error instanceof SherlockError) {
    out.error(error.message);
    return error.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  out.error(
    `internal error: ${
      message.split("\n")[0]
    } (set SHERLOCK_DEBUG=1 for details)`,
  );
  if (streams.env.SHERLOCK_DEBUG === "1" && error instanceof Error) {
    writeErr(streams.stderr, `${terminalText(String(error.stack))}\n`);
  }
  return ExitCode.Software;
}

/**
 * `text` with every control character (C0, DEL, C1) written as `\xNN` and
 * every backslash as `\\`, so that a field from elsewhere (an audit log
 * entry, a tool's description) printed on a terminal can neither send it an
 * escape sequence nor start a line of its own, and a literal `\x1b` in it
 * does not print like an escaped ESC.
 */
export function escapeControls(text: string): string {
  return text.replace(
    // deno-lint-ignore no-control-regex -- finding them is the point
    /[\\\x00-\x1f\x7f-\x9f]/g,
    (char) =>
      char === "\\"
        ? "\\\\"
        : `\\x${char.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
}

/**
 * `text` as every print function writes it: each control character (C0,
 * DEL, C1: ESC, BEL, CR, CSI…) written as `\xNN`, but for the newline and
 * the tab, which are layout. Backslashes stay (a help text or a shell
 * script has them); for a field whose backslashes must be told apart, see
 * {@linkcode escapeControls}.
 */
export function terminalText(text: string): string {
  return text.replace(
    // deno-lint-ignore no-control-regex -- finding them is the point
    /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g,
    (char) => `\\x${char.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
}

/** Which cells of a table {@linkcode printColumns} emphasizes. */
export type ColumnsEmphasis = "header" | "first column";

/**
 * Formats rows as columns separated by two spaces. `emphasize`, when
 * given, styles a cell after it is padded (escape sequences take no room
 * on the screen, so they must not count in the widths).
 */
export function columns(
  rows: readonly string[][],
  emphasize?: (cell: string, at: { row: number; column: number }) => string,
): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, cell.length);
    });
  }
  return rows.map((row, rowIndex) =>
    row.map((cell, index) => {
      const padded = index === row.length - 1
        ? cell
        : cell.padEnd(widths[index]);
      if (emphasize === undefined) return padded;
      // Styled without the padding's trailing blanks, which trimEnd drops.
      const text = padded.trimEnd();
      const styledText = emphasize(text, { row: rowIndex, column: index });
      return styledText + padded.slice(text.length);
    }).join("  ").trimEnd()
  );
}

/**
 * Prints rows as {@linkcode columns} on stdout, the header row (the
 * column names) or the first column (the keys) in bold on a terminal.
 */
export function printColumns(
  rows: readonly string[][],
  emphasis: ColumnsEmphasis,
): void {
  const lines = columnsLines(rows, { emphasis, color: colorOn("stdout") });
  writeStdout(lines.map((line) => `${line}\n`).join(""));
}

/**
 * The lines {@linkcode printColumns} writes: each cell's control
 * characters escaped before the widths are taken, then the header or the
 * first column in bold when `color`.
 */
export function columnsLines(
  rows: readonly string[][],
  options: { emphasis: ColumnsEmphasis; color: boolean },
): string[] {
  const safe = rows.map((row) => row.map((cell) => terminalText(cell)));
  return columns(
    safe,
    options.color
      ? (cell, at) =>
        (options.emphasis === "header" ? at.row === 0 : at.column === 0)
          ? styleText(cell, "bold")
          : cell
      : undefined,
  );
}

/**
 * Prints a help text on stdout, its headings ("Usage:", "Options:",
 * "Commands:" and the like: a line that starts a paragraph with a word
 * and a colon) in bold on a terminal.
 */
export function printHelp(text: string): void {
  writeStdout(`${helpText(text, { color: colorOn("stdout") })}\n`);
}

/**
 * The text {@linkcode printHelp} writes: control characters escaped, then
 * the headings in bold when `color`.
 */
export function helpText(text: string, options: { color: boolean }): string {
  const safe = terminalText(text);
  return options.color
    ? safe.replace(
      /^([A-Z][a-z ]*:)/gm,
      (heading) => styleText(heading, "bold"),
    )
    : safe;
}

// --- Colour and emphasis -------------------------------------------------

/** The streams sherlock prints to. */
export type Stream = "stdout" | "stderr";

/** The emphasis sherlock uses. */
export type Style = "bold" | "dim" | "red" | "yellow" | "green";

const SGR: Record<Style, [string, string]> = {
  bold: ["\x1b[1m", "\x1b[22m"],
  dim: ["\x1b[2m", "\x1b[22m"],
  red: ["\x1b[1;31m", "\x1b[22;39m"],
  yellow: ["\x1b[33m", "\x1b[39m"],
  green: ["\x1b[32m", "\x1b[39m"],
};

/**
 * Whether output gets colour and emphasis: only on a terminal, with
 * `NO_COLOR` unset or empty (no-color.org's rule) and `TERM` not `dumb`.
 */
export function colorAllowed(
  facts: { isTerminal: boolean; noColor?: string; term?: string },
): boolean {
  if (!facts.isTerminal) return false;
  if (facts.noColor !== undefined && facts.noColor !== "") return false;
  return facts.term !== "dumb";
}

const terminalStreams = new Map<Stream, boolean>();

function isTerminal(stream: Stream): boolean {
  let answer = terminalStreams.get(stream);
  if (answer === undefined) {
    answer = stream === "stdout"
      ? Deno.stdout.isTerminal()
      : Deno.stderr.isTerminal();
    terminalStreams.set(stream, answer);
  }
  return answer;
}

/** Whether what this process prints on `stream` gets colour and emphasis. */
export function colorOn(stream: Stream): boolean {
  return colorAllowed({
    isTerminal: isTerminal(stream),
    noColor: Deno.env.get("NO_COLOR"),
    term: Deno.env.get("TERM"),
  });
}

/** `text` wrapped in the escape sequences of `style`, unconditionally. */
export function styleText(text: string, style: Style): string {
  const [on, off] = SGR[style];
  return `${on}${text}${off}`;
}

/** `text` in `style` when `stream` gets colour ({@linkcode colorOn}), else as it is. */
export function styled(
  text: string,
  options: { style: Style; stream: Stream },
): string {
  return colorOn(options.stream) ? styleText(text, options.style) : text;
}

// --- The waiting line ----------------------------------------------------

/** How long a helper may take before the launch shows its waiting line. */
export const SLOW_HELPER_MS = 2_000;

/** The waiting line's text after `seconds` of waiting for `what`. */
export function waitingText(what: string, seconds: number): string {
  return `sherlock: waiting for ${what}… ${seconds}s`;
}

interface WaitingLine {
  what: string;
  started: number;
  /** The text on the screen, unstyled (its length is its width). */
  text: string;
}

let shownWaiting: WaitingLine | undefined;

function drawWaitingLine(line: WaitingLine): void {
  // Rounded: a timer fires a little after its time, never on it exactly.
  const seconds = Math.round((Date.now() - line.started) / 1000);
  let text = terminalText(waitingText(line.what, seconds));
  // A line wider than the terminal wraps, and "\r" would then clear only
  // its last row.
  const width = terminalWidth();
  if (width !== undefined && text.length >= width) {
    text = text.slice(0, Math.max(width - 1, 0));
  }
  line.text = text;
  Deno.stderr.writeSync(
    encoder.encode(`\r${styled(text, { style: "dim", stream: "stderr" })}`),
  );
}

function clearWaitingLine(line: WaitingLine): void {
  // Blanks rather than an erase sequence: they work on any terminal.
  Deno.stderr.writeSync(
    encoder.encode(`\r${" ".repeat(line.text.length)}\r`),
  );
}

function terminalWidth(): number | undefined {
  try {
    return Deno.consoleSize().columns || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Waits for `work`, showing on stderr, when it is a terminal, a line that
 * says what sherlock waits for and for how many seconds, from `afterMs`
 * on (0: at once, for a person; {@linkcode SLOW_HELPER_MS} for a helper,
 * so that a fast one shows nothing). The line is cleared when `work`
 * settles; lines printed meanwhile go above it. Costs one timer.
 */
export async function whileWaiting<T>(
  what: string,
  work: Promise<T>,
  options: { afterMs?: number } = {},
): Promise<T> {
  if (!isTerminal("stderr") || shownWaiting !== undefined) return await work;
  const line: WaitingLine = { what, started: Date.now(), text: "" };
  let ticker: ReturnType<typeof setInterval> | undefined;
  const show = () => {
    shownWaiting = line;
    drawWaitingLine(line);
    const interval = setInterval(() => {
      clearWaitingLine(line);
      drawWaitingLine(line);
    }, 1000);
    Deno.unrefTimer(interval);
    ticker = interval;
  };
  const delay = setTimeout(show, options.afterMs ?? 0);
  Deno.unrefTimer(delay);
  try {
    return await work;
  } finally {
    clearTimeout(delay);
    clearInterval(ticker);
    if (shownWaiting === line) {
      clearWaitingLine(line);
      shownWaiting = undefined;
    }
  }
}
