/**
 * Columns, when colour is allowed and the waiting line's text
 * (lib/cli/output.ts). A real terminal: tests/integration/looks_test.ts.
 */

import assert from "node:assert/strict";
import {
  colorAllowed,
  columns,
  styleText,
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
