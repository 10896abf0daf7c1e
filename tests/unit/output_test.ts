/**
 * Columns, when colour is allowed, the waiting line's text
 * and the escaping every print function does (lib/cli/output.ts). A real
 * terminal: tests/integration/looks_test.ts.
 */

import assert from "node:assert/strict";
import {
  colorAllowed,
  columns,
  columnsLines,
  escapeControls,
  helpText,
  markedLines,
  styleText,
  terminalText,
  waitingText,
} from "../../lib/cli/output.ts";

Deno.test("columns: aligns every column but the last, two spaces apart", () => {
  assert.deepEqual(
    columns([["NAME", "SOURCE", "EXECUTABLE"], [
      "claude",
      "built-in",
      "/bin/claude",
    ], [
      "a",
      "x",
      "y",
    ]]),
    [
      "NAME    SOURCE    EXECUTABLE",
      "claude  built-in  /bin/claude",
      "a       x         y",
    ],
  );
});

Deno.test("colorAllowed: a terminal only, and not with NO_COLOR set or TERM=dumb", () => {
  assert.equal(colorAllowed({ isTerminal: true }), true);
  assert.equal(
    colorAllowed({ isTerminal: true, term: "xterm-256color" }),
    true,
  );
  assert.equal(colorAllowed({ isTerminal: false }), false, "a pipe or a file");
  assert.equal(colorAllowed({ isTerminal: true, noColor: "1" }), false);
  assert.equal(colorAllowed({ isTerminal: true, noColor: "0" }), false);
  // no-color.org: set means present and not empty.
  assert.equal(colorAllowed({ isTerminal: true, noColor: "" }), true);
  assert.equal(colorAllowed({ isTerminal: true, term: "dumb" }), false);
});

Deno.test("columns: emphasized cells keep the columns aligned on the screen", () => {
  const rows = [["NAME", "SOURCE"], ["github", "command"], ["x", "-"]];
  const plain = columns(rows);
  const bold = columns(
    rows,
    (cell, at) => at.row === 0 ? styleText(cell, "bold") : cell,
  );
  assert.equal(bold[0], "\x1b[1mNAME\x1b[22m    \x1b[1mSOURCE\x1b[22m");
  // deno-lint-ignore no-control-regex -- removing what styleText adds
  const visible = bold.map((line) => line.replace(/\x1b\[[\d;]*m/g, ""));
  assert.deepEqual(visible, plain);
});

Deno.test("waitingText: what sherlock waits for and the seconds so far", () => {
  assert.equal(
    waitingText("the services' tokens", 3),
    "sherlock: waiting for the services' tokens… 3s",
  );
});

/**
 * What a hostile server puts into a text sherlock prints: a title change
 * ended by BEL, a CSI as ESC [ and as the C1 byte U+009B, a C1 NEL, a
 * carriage return, DEL and NUL.
 */
const HOSTILE = "iss\x1b]0;pwned\x07 \x1b[2J\x9b31m\x85\rok\x7f\x00";

/** Control characters a terminal obeys: C0 but newline and tab, DEL, C1. */
// deno-lint-ignore no-control-regex -- finding them is the point
const OBEYED = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

/** `text` without sherlock's own SGR sequences (what styleText adds). */
function withoutStyles(text: string): string {
  // deno-lint-ignore no-control-regex -- removing what styleText adds
  return text.replace(/\x1b\[[\d;]*m/g, "");
}

Deno.test("terminalText: C0 but newline and tab, DEL and C1 written as \\xNN", () => {
  assert.equal(
    terminalText(HOSTILE),
    "iss\\x1b]0;pwned\\x07 \\x1b[2J\\x9b31m\\x85\\rok\\x7f\\x00"
      .replaceAll("\\r", "\\x0d"),
  );
  assert.equal(terminalText("a\tb\nc \\x1b é ü €"), "a\tb\nc \\x1b é ü €");
  assert.doesNotMatch(terminalText(HOSTILE), OBEYED);
});

Deno.test("escapeControls: a field's backslash is doubled, so a literal \\x1b does not pass for an escaped ESC", () => {
  assert.equal(escapeControls("\x1b"), "\\x1b");
  assert.equal(escapeControls("\\x1b"), "\\\\x1b");
  assert.notEqual(escapeControls("\x1b"), escapeControls("\\x1b"));
  assert.equal(escapeControls("a\nb\tc\x9b"), "a\\x0ab\\x09c\\x9b");
});

Deno.test("markedLines: the content escaped, the prefix alone styled, one prefix per line", () => {
  const text = markedLines(`bad issuer ${HOSTILE}\nsecond`, {
    style: "red",
    color: true,
  });
  const lines = text.split("\n");
  assert.equal(lines.length, 3);
  assert.ok(lines[0].startsWith(styleText("sherlock:", "red") + " bad issuer"));
  assert.ok(lines[1].startsWith(styleText("sherlock:", "red") + " second"));
  assert.doesNotMatch(withoutStyles(text), OBEYED);
  assert.match(text, /\\x1b\]0;pwned\\x07/);
  const plain = markedLines(HOSTILE, { style: "bold", color: false });
  assert.equal(plain, `sherlock: ${terminalText(HOSTILE)}\n`);
});

Deno.test("columnsLines: cells escaped before the widths are taken, the header still bold", () => {
  const rows = [["SERVICE", "SCOPE"], [HOSTILE, "mcp:tools"], ["x", "-"]];
  const styled = columnsLines(rows, { emphasis: "header", color: true });
  assert.ok(styled[0].startsWith(styleText("SERVICE", "bold")));
  const visible = styled.map(withoutStyles);
  for (const line of visible) assert.doesNotMatch(line, OBEYED);
  // The second column starts at the same place on every line.
  const at = visible[1].indexOf("mcp:tools");
  assert.equal(visible[0].indexOf("SCOPE"), at);
  assert.equal(visible[2].indexOf("-"), at);
  assert.deepEqual(
    columnsLines(rows, { emphasis: "header", color: false }),
    visible,
  );
});

Deno.test("helpText: text escaped, its headings still bold", () => {
  const text = helpText(`Usage: sherlock auth\n\nNote: ${HOSTILE}`, {
    color: true,
  });
  assert.ok(text.startsWith(styleText("Usage:", "bold")));
  assert.match(
    text,
    new RegExp(`^${escapeRegex(styleText("Note:", "bold"))}`, "m"),
  );
  assert.doesNotMatch(withoutStyles(text), OBEYED);
});

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

Deno.test("every print function: no control character of the text reaches stdout or stderr; --json output stays JSON", async () => {
  const output = new URL("../../lib/cli/output.ts", import.meta.url).href;
  const errors = new URL("../../lib/errors.ts", import.meta.url).href;
  const script = `
    import * as out from ${JSON.stringify(output)};
    import { UnavailableError } from ${JSON.stringify(errors)};
    const hostile = ${JSON.stringify(HOSTILE)};
    out.printText(hostile + "\\n");
    out.printLine(hostile);
    out.printColumns([["A", "B"], [hostile, hostile]], "header");
    out.printColumns([["key", hostile]], "first column");
    out.printHelp("Usage: " + hostile);
    out.printJson({ issuer: hostile });
    out.printWarning(hostile);
    out.printError(hostile);
    out.reportError(new UnavailableError("the server said: " + hostile));
    out.reportError(new Error(hostile));
  `;
  const result = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-config", script],
    env: { NO_COLOR: "", TERM: "xterm", PATH: Deno.env.get("PATH") ?? "" },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(result.stdout);
  const stderr = new TextDecoder().decode(result.stderr);
  assert.equal(result.code, 0, stderr);
  // Bytes, not characters: a C1 control is 0xC2 0x80–0x9F in UTF-8.
  for (
    const [name, bytes] of [["stdout", result.stdout], [
      "stderr",
      result.stderr,
    ]] as const
  ) {
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i];
      const c0 = byte < 0x20 && byte !== 0x0a && byte !== 0x09;
      const c1 = byte === 0xc2 && bytes[i + 1] >= 0x80 && bytes[i + 1] <= 0x9f;
      assert.ok(
        !c0 && byte !== 0x7f && !c1,
        `${name} has a raw control at ${i}`,
      );
    }
  }
  assert.equal(stdout.split("\n").filter((l) => l.includes("pwned")).length, 6);
  const json = stdout.slice(stdout.indexOf("{"), stdout.lastIndexOf("}") + 1);
  assert.deepEqual(JSON.parse(json), { issuer: HOSTILE });
  assert.equal(stderr.split("\n").filter((l) => l.includes("pwned")).length, 4);
});
