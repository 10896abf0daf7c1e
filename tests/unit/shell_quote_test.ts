/**
 * Quoting a word for a POSIX shell (lib/runtime/shell_quote.ts), checked
 * against a real /bin/sh.
 */

import assert from "node:assert/strict";
import { shellQuote } from "../../lib/runtime/shell_quote.ts";

Deno.test("shellQuote: plain words are left alone", () => {
  for (
    const word of [
      "claude",
      "/usr/local/bin/copilot",
      "--mcp-config=/run/user/1000/sherlock/claude.0a1b.mcp.json",
      "@/tmp/x.json",
      "-p",
      "a,b:c+d%e",
    ]
  ) {
    assert.equal(shellQuote(word), word);
  }
});

Deno.test("shellQuote: anything a shell would change is single-quoted", () => {
  assert.equal(shellQuote(""), "''");
  assert.equal(shellQuote("two words"), "'two words'");
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
  assert.equal(shellQuote("$HOME"), "'$HOME'");
  assert.equal(shellQuote("~"), "'~'");
  assert.equal(shellQuote("*"), "'*'");
  assert.equal(shellQuote("a;b"), "'a;b'");
});

/** What `sh` makes of a command line: its words, NUL-separated. */
async function shellWords(line: string): Promise<string[]> {
  const output = await new Deno.Command("/bin/sh", {
    args: ["-c", `printf '%s\\0' ${line}`],
    env: { HOME: "/nonexistent-home", PATH: "/usr/bin:/bin" },
    clearEnv: true,
    stdout: "piped",
  }).output();
  assert.equal(output.code, 0);
  const text = new TextDecoder().decode(output.stdout);
  return text.split("\0").slice(0, -1);
}

Deno.test("shellQuote: /bin/sh reads every quoted word back unchanged", async () => {
  const words = [
    "",
    " ",
    "two words",
    "it's",
    `"double"`,
    "'''",
    "$HOME",
    "${HOME}",
    "$(echo pwned)",
    "`echo pwned`",
    "~",
    "~/x",
    "*",
    "?",
    "[a]",
    "{a,b}",
    "a\\b",
    "line\nbreak",
    "tab\there",
    "!bang",
    "#hash",
    "a=b",
    "--",
    "--help",
    "-",
    "é ü 日本",
    "a&b|c;d<e>f",
  ];
  assert.deepEqual(await shellWords(words.map(shellQuote).join(" ")), words);
});
