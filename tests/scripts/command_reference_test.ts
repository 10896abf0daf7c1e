/**
 * The command reference, docs/manual/commands.md, is what
 * `deno task reference` (scripts/command_reference.ts) generates from the
 * command table today: a command, flag or help text changed without
 * running the task fails here.
 */

import assert from "node:assert/strict";
import {
  commandReference,
  formattedReference,
  REFERENCE_PATH,
} from "../../scripts/command_reference.ts";
import { COMMANDS, type FlagSpec } from "../../lib/cli/commands.ts";
import { HELP_TEXTS } from "../../lib/cli/help_texts.ts";

Deno.test("docs/manual/commands.md is what deno task reference generates", async () => {
  assert.ok(
    Deno.readTextFileSync(REFERENCE_PATH) === await formattedReference(),
    "docs/manual/commands.md is stale; run deno task reference",
  );
});

Deno.test("the reference has every command's help and every flag of the spec", () => {
  const text = commandReference();
  for (const [name, spec] of Object.entries(COMMANDS)) {
    assert.ok(text.includes(`## sherlock ${name}\n`), name);
    assert.ok(
      text.includes(HELP_TEXTS[name as keyof typeof HELP_TEXTS]),
      name,
    );
    const flags: readonly FlagSpec[] = "flags" in spec ? spec.flags : [];
    for (const flag of flags.filter((each) => !each.hidden)) {
      assert.ok(text.includes(`\`${flag.name}\``), `${name} ${flag.name}`);
    }
  }
});
