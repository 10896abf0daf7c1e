/**
 * What completion offers (lib/cli/completion_candidates.ts): the grammar
 * read from the command table's help texts, and the request for a few
 * command lines. The real shells run the scripts in
 * tests/integration/completions_test.ts.
 */

import assert from "node:assert/strict";
import {
  commandGrammar,
  completionRequest,
  offeredCommands,
} from "../../lib/cli/completion_candidates.ts";
import { COMMANDS, type CommandSpec } from "../../lib/cli/commands.ts";

const entries = Object.entries(COMMANDS) as [string, CommandSpec][];

Deno.test("every command of the table completes, but those used inside rendered configs", () => {
  assert.deepEqual(
    completionRequest([""]).words,
    entries.filter(([, spec]) => !spec.internal).map(([name]) => name),
  );
  assert.deepEqual(completionRequest([""]).names, ["agents"]);
  assert.ok(!offeredCommands().includes("shim"));
  assert.ok(!offeredCommands().includes("bridge"));
});

Deno.test("every flag a help's usage or option list names completes for its command", () => {
  for (const [name, spec] of entries) {
    const grammar = commandGrammar(name, spec.help);
    const usage = spec.help.split("\n\n")[0];
    const all = [...grammar.flags, ...[...grammar.subcommands.values()].flat()]
      .map((flag) => flag.name);
    for (const flag of usage.match(/(?<![\w-])--?[a-z][\w-]*/g) ?? []) {
      assert.ok(all.includes(flag), `${name}: ${flag}`);
    }
  }
});

Deno.test("commandGrammar: subcommands from the usage lines, each with its own flags", () => {
  const services = commandGrammar("services", COMMANDS.services.help);
  assert.deepEqual([...services.subcommands.keys()], ["show", "test"]);
  assert.deepEqual(services.subcommands.get("test"), [
    { name: "--agent", value: "NAME" },
    { name: "--timeout", value: "SECONDS" },
  ]);
  const broker = commandGrammar("broker", COMMANDS.broker.help);
  assert.deepEqual([...broker.subcommands.keys()], [
    "serve",
    "start",
    "stop",
    "status",
    "log",
  ]);
  assert.deepEqual(broker.subcommands.get("serve"), [{ name: "--background" }]);
  assert.deepEqual(broker.subcommands.get("log"), [{ name: "-n", value: "N" }]);
  const run = commandGrammar("run", COMMANDS.run.help);
  assert.deepEqual(run.flags.map((flag) => flag.name), [
    "--dry-run",
    "--strict",
    "--service",
    "--no-service",
    "-v",
    "--verbose",
    "-h",
    "--help",
  ]);
  assert.deepEqual(
    run.flags.find((flag) => flag.name === "--service")?.value,
    "NAME",
    "--service takes a service's name",
  );
  assert.deepEqual(run.subcommands.size, 0);
});

Deno.test("completionRequest: which names, which words, and files where they fit", () => {
  assert.deepEqual(completionRequest(["secret", "rm", ""]), {
    words: [],
    names: ["secrets"],
    files: false,
    prefix: "",
  });
  assert.deepEqual(completionRequest(["secret", "set", "gi"]).names, [
    "services",
  ]);
  assert.deepEqual(completionRequest(["secret", ""]).words, [
    "set",
    "rm",
    "ls",
  ]);
  // One name each: nothing after it.
  assert.deepEqual(
    completionRequest(["secret", "set", "github", ""]).names,
    [],
  );
  assert.deepEqual(completionRequest(["auth", ""]), {
    words: ["status", "revoke"],
    names: ["services"],
    files: false,
    prefix: "",
  });
  assert.deepEqual(completionRequest(["auth", "--no-browser", ""]).names, [
    "services",
  ]);
  assert.deepEqual(
    completionRequest(["services", "test", "--agent", "c"])
      .names,
    ["agents"],
  );
  assert.equal(completionRequest(["import", "--from", ""]).files, true);
  assert.equal(
    completionRequest(["login", "--passphrase-file", ""]).files,
    true,
  );
  assert.deepEqual(completionRequest(["broker", "log", "-n", ""]).words, []);
  assert.deepEqual(completionRequest(["help", "se"]).words, [
    "services",
    "secret",
  ]);
  // An agent's own arguments belong to it: files, never sherlock's flags.
  assert.deepEqual(completionRequest(["claude", "--"]), {
    words: [],
    names: [],
    files: true,
    prefix: "--",
  });
  assert.equal(
    completionRequest(["run", "--strict", "claude", ""]).files,
    true,
  );
  assert.deepEqual(completionRequest(["run", "--str"]).words, ["--strict"]);
  assert.deepEqual(completionRequest(["--dry-run", ""]).names, ["agents"]);
});
