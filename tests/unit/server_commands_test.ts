/**
 * The one-line warnings for stdio servers whose command cannot start
 * (lib/launch/server_commands.ts): a whole command line in `command`, a
 * command not on PATH, one that is not executable. The lookup is a table
 * here; tests/integration/newcomer_test.ts looks up real files.
 */

import assert from "node:assert/strict";
import { serverCommandProblems } from "../../lib/launch/server_commands.ts";
import type { ExecutableLookup } from "../../lib/launch/spawn.ts";
import { docs, github, plain, service } from "../helpers/services.ts";

/** A lookup that finds only the commands of `found`. */
function lookupOf(
  found: Record<string, ExecutableLookup>,
): (command: string) => ExecutableLookup {
  return (command) => found[command] ?? { found: false, reason: "missing" };
}

const npx = service(`
[service]
name = "pkg"

[server]
command = "npx -y @acme/mcp-server"
`);

Deno.test("serverCommandProblems: every command found: no line; a remote server is not looked up", () => {
  const looked: string[] = [];
  const problems = serverCommandProblems([github, docs, plain], (command) => {
    looked.push(command);
    return { found: true, path: `/usr/bin/${command}` };
  });
  assert.deepEqual(problems, []);
  assert.deepEqual(looked, ["github-mcp-server", "/opt/mcp/plain"]);
});

Deno.test("serverCommandProblems: one line per service that cannot start, in order, naming what to do", () => {
  const problems = serverCommandProblems(
    [github, docs, plain, npx],
    lookupOf({
      "/opt/mcp/plain": {
        found: false,
        reason: "not-executable",
        path: "/opt/mcp/plain",
      },
      // Even if `npx -y …` were a file: args is empty, the likely mistake.
      "npx -y @acme/mcp-server": { found: true, path: "/x" },
    }),
  );
  assert.deepEqual(problems, [
    "service github: its command github-mcp-server is not on PATH; install the server or give its full path in services.d/github.toml",
    "service plain: its command /opt/mcp/plain is not executable; chmod +x it or fix command in services.d/plain.toml",
    'service pkg: command "npx -y @acme/mcp-server" is a whole command line and args is empty; ' +
    'in services.d/pkg.toml write command = "npx" and args = ["-y", "@acme/mcp-server"]',
  ]);
});

Deno.test("serverCommandProblems: a path that does not exist; spaces with args given are a file name", () => {
  const spaced = service(`
[service]
name = "spaced"

[server]
command = "/opt/My Tools/server"
args = ["stdio"]
`);
  assert.deepEqual(
    serverCommandProblems([plain, spaced], lookupOf({})),
    [
      "service plain: its command /opt/mcp/plain does not exist; install the server or fix command in services.d/plain.toml",
      "service spaced: its command /opt/My Tools/server does not exist; install the server or fix command in services.d/spaced.toml",
    ],
  );
});
