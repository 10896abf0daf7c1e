/**
 * What completion offers (lib/cli/completion_candidates.ts), read from
 * the command table's spec, for a few command lines. The real shells run the scripts in
 * tests/integration/completions_test.ts.
 */

import assert from "node:assert/strict";
import {
  completionRequest,
  offeredCommands,
} from "../../lib/cli/completion_candidates.ts";
import {
  COMMANDS,
  type CommandSpec,
  type SyntaxSpec,
} from "../../lib/cli/commands.ts";
import { isOAuthServiceText } from "../../lib/cli/completions.ts";

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

Deno.test("every flag of the spec completes for its command or subcommand", () => {
  for (const [name, spec] of entries) {
    if (spec.internal || name === "run" || name === "completions") continue;
    const syntaxes: [string[], SyntaxSpec][] = [
      [[name], spec],
      ...Object.entries(spec.subcommands ?? {}).map((
        [sub, syntax],
      ): [string[], SyntaxSpec] => [[name, sub], syntax]),
    ];
    for (const [words, syntax] of syntaxes) {
      const offered = completionRequest([...words, "-"]).words;
      for (const flag of syntax.flags ?? []) {
        assert.ok(
          offered.includes(flag.name),
          `${words.join(" ")} ${flag.name}`,
        );
      }
    }
  }
});

Deno.test("a flag's value completes by its kind: a service after --service, an agent after --agent (issue 20, trap 6)", () => {
  for (const flag of ["--service", "--no-service"]) {
    assert.deepEqual(completionRequest(["run", flag, ""]).names, ["services"]);
    assert.deepEqual(completionRequest([flag, ""]).names, ["services"]);
    // After the service's name, the agent's: no files yet.
    assert.deepEqual(completionRequest([flag, "github", ""]), {
      words: [],
      names: ["agents"],
      files: false,
      prefix: "",
    });
  }
  assert.deepEqual(
    completionRequest(["--service", "github", "claude", ""]).files,
    true,
  );
  assert.deepEqual(completionRequest(["completions", ""]).words, [
    "bash",
    "zsh",
    "fish",
  ]);
});

Deno.test("auth offers only OAuth services, and its subcommands", () => {
  assert.deepEqual(completionRequest(["auth", ""]), {
    words: ["status", "revoke"],
    names: ["oauth-services"],
    files: false,
    prefix: "",
  });
  assert.deepEqual(completionRequest(["auth", "revoke", ""]).names, [
    "oauth-services",
  ]);
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
  assert.deepEqual(completionRequest(["auth", "--no-browser", ""]).names, [
    "oauth-services",
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

Deno.test('isOAuthServiceText: [token] source = "oauth", read by lines', () => {
  assert.ok(
    isOAuthServiceText('[service]\nname = "a"\n\n[token]\nsource = "oauth"\n'),
  );
  assert.ok(isOAuthServiceText("token = { source = 'oauth' }\n"));
  assert.ok(
    !isOAuthServiceText('[token]\nsource = "secret"\n[x]\nsource = "oauth"\n'),
  );
  assert.ok(!isOAuthServiceText('[service]\nsource = "oauth"\n'));
});
