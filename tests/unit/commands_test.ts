/**
 * The command table (lib/cli/commands.ts): each entry's module exports the
 * entry point it names, and each help text agrees with its command.
 */

import assert from "node:assert/strict";
import {
  type CommandName,
  COMMANDS,
  type CommandSpec,
  isCommandName,
  loadCommand,
} from "../../lib/cli/commands.ts";
import { MIN_PASSPHRASE_LENGTH } from "../../lib/broker/protocol.ts";

const entries = Object.entries(COMMANDS) as [CommandName, CommandSpec][];

Deno.test("every command's module exports the function the table names", async () => {
  for (const [name, spec] of entries) {
    assert.match(spec.module, /^lib\/cli\/[a-z_]+\.ts$/, name);
    const command = await loadCommand(name);
    assert.equal(typeof command, "function", `${spec.module} ${spec.entry}`);
    assert.equal(command.name, spec.entry);
  }
});

Deno.test("every command has a one-line summary and a help that starts with its usage", () => {
  for (const [name, spec] of entries) {
    assert.ok(spec.summary !== "" && !spec.summary.includes("\n"), name);
    assert.ok(spec.help.startsWith(`Usage: sherlock ${name}`), name);
    assert.ok(!spec.help.endsWith("\n"), name);
  }
});

Deno.test("login's help states the passphrase length login enforces", () => {
  assert.ok(
    COMMANDS.login.help.includes(
      `at least\n${MIN_PASSPHRASE_LENGTH} characters`,
    ),
  );
});

Deno.test("isCommandName: the table's own names only", () => {
  assert.ok(isCommandName("run"));
  assert.ok(isCommandName("version"));
  for (const name of ["claude", "toString", "__proto__", "constructor", ""]) {
    assert.equal(isCommandName(name), false, name);
  }
});
