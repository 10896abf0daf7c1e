/**
 * `$BROWSER` read as a command line (lib/cli/browser_command.ts), as git
 * and gh take it: words, quotes, `%s`.
 */

import assert from "node:assert/strict";
import {
  browserArgv,
  splitCommandLine,
} from "../../lib/cli/browser_command.ts";

const PAGE = "file:///run/user/1000/sherlock/launch-ab.html";

Deno.test("a plain program gets the page as its one argument", () => {
  assert.deepEqual(browserArgv("firefox", PAGE), { argv: ["firefox", PAGE] });
});

Deno.test("a command with arguments: split into words, the page last", () => {
  assert.deepEqual(browserArgv("python3 /opt/browser.py --new-tab", PAGE), {
    argv: ["python3", "/opt/browser.py", "--new-tab", PAGE],
  });
});

Deno.test("%s marks where the page goes; %% is a %", () => {
  assert.deepEqual(browserArgv("open -a 'Google Chrome' %s --x=100%%", PAGE), {
    argv: ["open", "-a", "Google Chrome", PAGE, "--x=100%"],
  });
});

Deno.test("quotes and backslashes as sh reads them, no expansion", () => {
  assert.deepEqual(
    splitCommandLine(
      `"/Applications/My Browser/run" 'a b' c\\ d "e\\"f" "$HOME" ''`,
    ),
    {
      words: ["/Applications/My Browser/run", "a b", "c d", 'e"f', "$HOME", ""],
    },
  );
});

Deno.test("an unreadable command line is a problem in words, not a throw", () => {
  assert.deepEqual(browserArgv("'unclosed", PAGE), {
    problem: "a ' is not closed",
  });
  assert.deepEqual(browserArgv("  ", PAGE), { problem: "it is empty" });
  assert.deepEqual(browserArgv("x \\", PAGE), {
    problem: "it ends with a lone \\",
  });
});
