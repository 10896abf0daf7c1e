/**
 * The command table (lib/cli/commands.ts): each entry's module exports the
 * entry point it names, each help text agrees with its spec, and the one
 * parser reads every command line by its spec.
 */

import assert from "node:assert/strict";
import {
  type CommandName,
  COMMANDS,
  type CommandSpec,
  isCommandName,
  loadCommand,
  parseArguments,
  type SyntaxSpec,
  visibleSubcommands,
} from "../../lib/cli/commands.ts";
import { UsageError } from "../../lib/errors.ts";
import { MIN_PASSPHRASE_LENGTH } from "../../lib/broker/protocol.ts";
import { HELP_TEXTS } from "../../lib/cli/help_texts.ts";

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
    assert.ok(HELP_TEXTS[name].startsWith(`Usage: sherlock ${name}`), name);
    assert.ok(!HELP_TEXTS[name].endsWith("\n"), name);
  }
});

Deno.test("every flag and subcommand of the spec is in its command's help, and every flag its usage names is in the spec", () => {
  for (const [name, spec] of entries) {
    const help = HELP_TEXTS[name];
    // A hidden subcommand (demo's halves) is sherlock's own: not in help.
    const syntaxes: SyntaxSpec[] = [
      spec,
      ...Object.values(spec.subcommands ?? {}).filter((sub) => !sub.hidden),
    ];
    const flags = syntaxes.flatMap((syntax) => syntax.flags ?? []);
    for (const flag of flags) {
      // The bridge's token flags are the renderer's, not in its usage.
      if (name === "bridge" && flag.name.startsWith("--token-")) continue;
      if (flag.hidden) continue;
      assert.ok(help.includes(flag.name), `${name} ${flag.name}`);
    }
    for (const sub of visibleSubcommands(spec)) {
      assert.ok(help.includes(sub), `${name} ${sub}`);
    }
    const usage = help.split("\n\n")[0];
    const named = flags.flatMap((flag) => [flag.name, flag.short ?? ""]);
    for (const flag of usage.match(/(?<![\w-])--?[a-z][\w-]*/g) ?? []) {
      if (flag === "-h" || flag === "--help") continue;
      assert.ok(named.includes(flag), `${name}: ${flag} is in no spec`);
    }
  }
});

Deno.test("login's help states the passphrase length login enforces", () => {
  assert.ok(
    HELP_TEXTS.login.includes(
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

Deno.test("parseArguments: --flag=value and --flag value for every value flag of every command", () => {
  for (const [name, spec] of entries) {
    const syntaxes: [string[], SyntaxSpec][] = [
      [[], spec],
      ...Object.entries(spec.subcommands ?? {}).map((
        [sub, syntax],
      ): [string[], SyntaxSpec] => [[sub], syntax]),
    ];
    for (const [prefix, syntax] of syntaxes) {
      const positionals = (syntax.positionals ?? [])
        .filter((positional) => !positional.optional)
        .map((positional) => positional.choices?.[0] ?? "x");
      for (const flag of syntax.flags ?? []) {
        if (flag.value === undefined) continue;
        const value = flag.choices?.[0] ?? "a=b c";
        const tail = spec.restAfterSeparator ? ["--", "cmd"] : [];
        for (
          const words of [[flag.name, value], [`${flag.name}=${value}`]]
        ) {
          const parsed = parseArguments(name, [
            ...prefix,
            ...words,
            ...positionals,
            ...tail,
          ]);
          assert.equal(parsed.value(flag.name), value, `${name} ${words}`);
          assert.deepEqual(parsed.positionals, positionals);
        }
      }
    }
  }
});

/** The message of the usage error `args` throw, which must exit 2. */
function usageError(name: CommandName, args: string[]): string {
  try {
    parseArguments(name, args);
  } catch (error) {
    assert.ok(error instanceof UsageError, String(error));
    assert.equal(error.exitCode, 2);
    return error.message;
  }
  assert.fail(`${name} ${args.join(" ")} parsed`);
}

Deno.test("parseArguments: usage errors (exit 2), with the closest name for a typo", () => {
  assert.match(
    usageError("services", ["tset", "github"]),
    /^no subcommand "tset" for services \(did you mean test\?\)/,
  );
  assert.match(
    usageError("agents", ["--jsno"]),
    /^unknown option --jsno for agents \(did you mean --json\?\); usage: sherlock agents \[--json\]$/,
  );
  assert.match(usageError("doctor", ["--json=yes"]), /^--json takes no value/);
  assert.match(
    usageError("services", ["test", "--agent"]),
    /^--agent needs a value \(--agent NAME\)/,
  );
  assert.match(usageError("import", ["--from="]), /^--from needs a value/);
  assert.match(
    usageError("services", ["test", "--agent", "a", "--agent=b", "x"]),
    /^--agent is given twice/,
  );
  assert.match(
    usageError("services", ["show"]),
    /^services show needs <name>; usage: sherlock services show <name>$/,
  );
  // An extra argument is counted, never quoted: it may be a pasted token.
  const extra = usageError("secret", ["set", "github", "ghp_secretvalue"]);
  assert.match(
    extra,
    /^secret set takes at most 1 argument, got 2; usage: sherlock secret set <service> \(the value comes from stdin or a prompt, never from argv\)$/,
  );
  assert.ok(!extra.includes("ghp_secretvalue"));
  assert.match(
    usageError("broker", ["stauts"]),
    /\(did you mean status\?\)/,
  );
  assert.match(
    usageError("completions", ["bahs"]),
    /takes bash, zsh, fish, not bahs \(did you mean bash\?\)/,
  );
  assert.match(
    usageError("help", ["servics"]),
    /^no command named servics \(did you mean services\?\)/,
  );
});

Deno.test("parseArguments: run's options stop at the agent's name; the rest is the agent's", () => {
  const parsed = parseArguments("run", [
    "--service=github",
    "--no-service",
    "linear",
    "-v",
    "claude",
    "--help",
    "--service",
    "x",
  ]);
  assert.deepEqual(parsed.values("--service"), ["github"]);
  assert.deepEqual(parsed.values("--no-service"), ["linear"]);
  assert.ok(parsed.has("--verbose"));
  assert.equal(parsed.help, false);
  assert.deepEqual(parsed.positionals, ["claude"]);
  assert.deepEqual(parsed.rest, ["--help", "--service", "x"]);
  assert.ok(parseArguments("run", ["--strict", "--help"]).help);
  const shim = parseArguments("shim", ["svc", "--socket=/s", "--", "-x", "y"]);
  assert.deepEqual(shim.rest, ["-x", "y"]);
  assert.equal(shim.value("--socket"), "/s");
});

Deno.test("run: -- ends sherlock's options; the next word is the agent, the rest its own", () => {
  const parsed = parseArguments("run", ["--strict", "--", "fake", "--dry-run"]);
  assert.ok(parsed.has("--strict"));
  assert.equal(parsed.has("--dry-run"), false);
  assert.deepEqual(parsed.positionals, ["fake"]);
  assert.deepEqual(parsed.rest, ["--dry-run"]);
});
