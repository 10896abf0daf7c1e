/** Locating a key's line in TOML text (lib/config/schema_problems.ts findKeyLine). */

import assert from "node:assert/strict";
import { findKeyLine } from "../../lib/config/schema_problems.ts";

const PROFILE = `# a comment
[agent]
name = "fake"
executable = "fake"

[mcp]
mode = "cli-flag"
  flag   =   "--mcp"
"value" = "{path}"

[ env ]   # spaced header with a comment
FOO = "1"
'BAR' = "2"

[argv]
prefix = [
  "a",
  1,
]
`;

Deno.test("findKeyLine: a key under its table header", () => {
  assert.equal(findKeyLine(PROFILE, ["agent", "name"]), 3);
  assert.equal(findKeyLine(PROFILE, ["agent", "executable"]), 4);
  assert.equal(findKeyLine(PROFILE, ["mcp", "mode"]), 7);
});

Deno.test("findKeyLine: indented keys, spaces around =, quoted keys", () => {
  assert.equal(findKeyLine(PROFILE, ["mcp", "flag"]), 8);
  assert.equal(findKeyLine(PROFILE, ["mcp", "value"]), 9);
  assert.equal(findKeyLine(PROFILE, ["env", "BAR"]), 13);
});

Deno.test("findKeyLine: a header with spaces and a trailing comment", () => {
  assert.equal(findKeyLine(PROFILE, ["env"]), 11);
  assert.equal(findKeyLine(PROFILE, ["env", "FOO"]), 12);
});

Deno.test("findKeyLine: an array element is reported at its key", () => {
  assert.equal(findKeyLine(PROFILE, ["argv", "prefix", "1"]), 16);
});

Deno.test("findKeyLine: a missing key is reported at its table's header", () => {
  assert.equal(findKeyLine(PROFILE, ["agent", "description"]), 2);
  assert.equal(findKeyLine(PROFILE, ["mcp", "joined"]), 6);
});

Deno.test("findKeyLine: the same key name in another table is not a match", () => {
  const text = `[agent]\nname = "a"\n[service]\nname = "b"\n`;
  assert.equal(findKeyLine(text, ["service", "name"]), 4);
  assert.equal(findKeyLine(text, ["agent", "name"]), 2);
  // A key that only exists in another table falls back to the header.
  assert.equal(findKeyLine(`[a]\nx = 1\n[b]\ny = 2\n`, ["b", "x"]), 3);
});

Deno.test("findKeyLine: dotted keys and inline tables", () => {
  const dotted =
    `agent.name = "x"\nagent . executable = 3\n[mcp]\nsub.key = 1\n`;
  assert.equal(findKeyLine(dotted, ["agent", "executable"]), 2);
  assert.equal(findKeyLine(dotted, ["mcp", "sub", "key"]), 4);
  const inline = `agent = { name = "x", executable = 3 }\n`;
  assert.equal(findKeyLine(inline, ["agent", "executable"]), 1);
  assert.equal(findKeyLine(`[a]\nb = { c = 1 }\n`, ["a", "b", "c"]), 2);
});

Deno.test("findKeyLine: dotted table headers and quoted header parts", () => {
  const text =
    `[server]\ncommand = "x"\n[server.env]\nA = "1"\n["token"]\nenv = "B"\n`;
  assert.equal(findKeyLine(text, ["server", "env", "A"]), 4);
  assert.equal(findKeyLine(text, ["token", "env"]), 6);
});

Deno.test("findKeyLine: CRLF line endings", () => {
  assert.equal(findKeyLine(`[agent]\r\nname = "x"\r\n`, ["agent", "name"]), 2);
  assert.equal(findKeyLine(`[agent]\r\nname = "x"\r\n`, ["agent", "other"]), 1);
});

Deno.test("findKeyLine: nothing on the path appears", () => {
  assert.equal(findKeyLine(PROFILE, ["forbid", "env"]), undefined);
  assert.equal(findKeyLine(PROFILE, []), undefined);
  assert.equal(findKeyLine("", ["agent"]), undefined);
});

Deno.test("findKeyLine: a value that looks like a key is not a key", () => {
  const text = `[agent]\ndescription = "name = x"\nname = "y"\n`;
  assert.equal(findKeyLine(text, ["agent", "name"]), 3);
});
