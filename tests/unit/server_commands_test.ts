/**
 * The one-line warnings for stdio servers whose command cannot start
 * (lib/launch/server_commands.ts): a whole command line in `command`, a
 * command not on PATH, one that is not executable; and for a credential
 * helper that a shim or bridge would run. The lookup is a table here;
 * tests/integration/newcomer_test.ts looks up real files.
 */

import assert from "node:assert/strict";
import {
  helperCommandProblems,
  rememberedLookup,
  serverCommandProblems,
} from "../../lib/launch/server_commands.ts";
import { ValidationCache } from "../../lib/config/validation_cache.ts";
import type { DeliveryPlan } from "../../lib/render/delivery.ts";
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

Deno.test("helperCommandProblems: only a shim's or a bridge's helper is looked up, as the broker would", () => {
  const helper = (name: string, command: string) =>
    service(`
[service]
name = "${name}"

[server]
command = "server"

[token]
source = "command"
command = ["${command}", "auth", "token"]
env = "TOKEN"
`);
  const services = [
    helper("inline", "gh"),
    helper("shim", "gh"),
    helper("found", "op"),
    helper("relative", "./bin/helper"),
    helper("absolute", "/opt/helper"),
    docs,
  ];
  const delivery: DeliveryPlan = new Map([
    ["inline", { kind: "inline", deferrable: true }],
    ["shim", { kind: "shim", reason: "" }],
    ["found", { kind: "shim", reason: "" }],
    ["relative", { kind: "shim", reason: "" }],
    ["absolute", { kind: "bridge" }],
    ["docs", { kind: "inline", deferrable: false }],
  ]);
  const looked: string[] = [];
  const problems = helperCommandProblems(services, {
    delivery,
    lookup: (command) => {
      looked.push(command);
      return command === "op"
        ? { found: true, path: "/usr/bin/op" }
        : { found: false, reason: "missing" };
    },
  });
  assert.deepEqual(looked, ["gh", "op", "/opt/helper"]);
  assert.deepEqual(problems, [
    "service shim: its credential helper gh is not on PATH, so its shim will get no token; install it or fix [token] command in services.d/shim.toml",
    "service absolute: its credential helper /opt/helper does not exist, so its bridge will get no token; install it or fix [token] command in services.d/absolute.toml",
  ]);
});

Deno.test("rememberedLookup: the next launch with the same PATH looks at the remembered place only; another PATH or a gone command searches again", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const calls: string[] = [];
    const found = new Set(["/late/bin/srv"]);
    const find = (command: string, searchPath: string | undefined) => {
      calls.push(`${command} in ${searchPath}`);
      const path = command.includes("/") ? command : `/late/bin/${command}`;
      return found.has(path)
        ? { found: true as const, path }
        : { found: false as const, reason: "missing" as const };
    };
    const first = new ValidationCache(dir);
    assert.deepEqual(
      rememberedLookup({ cache: first, searchPath: "/a:/late/bin", find })(
        "srv",
      ),
      { found: true, path: "/late/bin/srv" },
    );
    first.save();
    // The next launch: a new process, the cache read from its file.
    const next = () => new ValidationCache(dir);
    calls.length = 0;
    rememberedLookup({ cache: next(), searchPath: "/a:/late/bin", find })(
      "srv",
    );
    assert.deepEqual(calls, ["/late/bin/srv in /a:/late/bin"]);
    calls.length = 0;
    rememberedLookup({ cache: next(), searchPath: "/b:/late/bin", find })(
      "srv",
    );
    assert.deepEqual(calls, ["srv in /b:/late/bin"]);
    found.clear();
    calls.length = 0;
    assert.deepEqual(
      rememberedLookup({ cache: next(), searchPath: "/a:/late/bin", find })(
        "srv",
      ),
      { found: false, reason: "missing" },
    );
    assert.deepEqual(calls, [
      "/late/bin/srv in /a:/late/bin",
      "srv in /a:/late/bin",
    ]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
