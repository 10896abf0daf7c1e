/**
 * sherlock's own commands, in one declarative table: their names (which no
 * agent alias may shadow), summaries, grammar (subcommands, flags with the
 * kind of their value, positionals) and where each one's code is; and the
 * one parser that reads a command line by that grammar. `--help`,
 * completion (completion_candidates.ts) and the generated command
 * reference (scripts/command_reference.ts) read the same table.
 * Registering a command is one entry here and its help in help_texts.ts.
 *
 * The table is read on every start, `sherlock run`'s included, so it holds
 * only short strings: the long help texts are in help_texts.ts, loaded only
 * for help, and a command's module is imported when the command runs.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { didYouMean } from "../config/suggestion.ts";
import { importLazily, LAZY_LIBRARY_MODULES } from "../runtime/lazy_import.ts";
import type {
  CommandFunction,
  CommandSpec,
  FlagSpec,
  ParsedArguments,
  SyntaxSpec,
} from "./command_types.ts";

export type * from "./command_types.ts";

const JSON_FLAG: FlagSpec = { name: "--json" };

/** Every command, by name, in the order `sherlock --help` lists them. */
export const COMMANDS = {
  run: {
    summary: "start an agent with its per-session MCP config",
    flags: [
      { name: "--dry-run" },
      { name: "--strict" },
      {
        name: "--service",
        value: "service",
        placeholder: "NAME",
        repeatable: true,
      },
      {
        name: "--no-service",
        value: "service",
        placeholder: "NAME",
        repeatable: true,
      },
      { name: "--verbose", short: "-v" },
    ],
    positionals: [{ name: "agent", kind: "agent" }],
    restAfterPositional: true,
    module: "lib/cli/run.ts",
    entry: "runCommand",
  },
  demo: {
    summary:
      "run a whole session on built-in stand-ins, touching nothing of yours",
    subcommands: {
      // The demo's own halves, started by its session: the MCP server
      // (behind the shim) and the stand-in agent (its rendered config).
      server: { hidden: true },
      agent: {
        hidden: true,
        flags: [{ name: "--mcp-config", value: "file", placeholder: "PATH" }],
      },
    },
    module: "lib/cli/demo.ts",
    entry: "demoCommand",
  },
  agents: {
    summary: "list the agent profiles, show one, or copy a built-in to edit",
    flags: [JSON_FLAG],
    subcommands: {
      show: {
        flags: [{ name: "--builtin" }],
        positionals: [{ name: "name", kind: "agent" }],
      },
      override: { positionals: [{ name: "name", kind: "agent" }] },
    },
    module: "lib/cli/agents.ts",
    entry: "agentsCommand",
  },
  services: {
    summary: "list the services, show one, or test one as a session would",
    flags: [JSON_FLAG],
    subcommands: {
      show: { positionals: [{ name: "name", kind: "service" }] },
      test: {
        flags: [
          { name: "--agent", value: "agent", placeholder: "NAME" },
          { name: "--timeout", value: "text", placeholder: "SECONDS" },
        ],
        positionals: [{ name: "name", kind: "service" }],
      },
    },
    module: "lib/cli/services.ts",
    entry: "servicesCommand",
  },
  import: {
    summary: "import the MCP servers the agents already have into services.d",
    flags: [
      { name: "--dry-run" },
      { name: "--project" },
      { name: "--from", value: "file", placeholder: "PATH", repeatable: true },
    ],
    module: "lib/cli/import.ts",
    entry: "importCommand",
  },
  login: {
    summary: "sign in at the OIDC provider, or unlock the local secret store",
    flags: [
      { name: "--passphrase-file", value: "file", placeholder: "PATH" },
      { name: "--device" },
      { name: "--no-browser" },
      { name: "--subject-token-file", value: "file", placeholder: "PATH" },
      { name: "--subject-token-env", value: "text", placeholder: "VAR" },
      // id_token, jwt, access_token or a token type's URN.
      { name: "--subject-token-type", value: "text", placeholder: "TYPE" },
      { name: "--id-token-file", value: "file", placeholder: "PATH" },
      { name: "--id-token-env", value: "text", placeholder: "VAR" },
      { name: "--local" },
      { name: "--remember" },
      { name: "--forget" },
      { name: "--change-passphrase" },
    ],
    module: "lib/cli/login.ts",
    entry: "loginCommand",
  },
  logout: {
    summary: "lock the store and drop cached tokens",
    module: "lib/cli/login.ts",
    entry: "logoutCommand",
  },
  whoami: {
    summary: "who is logged in, through which provider, since when",
    flags: [{ name: "--verbose" }, JSON_FLAG],
    module: "lib/cli/login.ts",
    entry: "whoamiCommand",
  },
  secret: {
    summary: "set, remove or list the secrets of the local store",
    subcommands: {
      set: {
        positionals: [{ name: "service", kind: "service" }],
        usageNote: "the value comes from stdin or a prompt, never from argv",
      },
      rm: { positionals: [{ name: "service", kind: "secret" }] },
      ls: { flags: [JSON_FLAG] },
    },
    subcommandRequired: true,
    module: "lib/cli/secret.ts",
    entry: "secretCommand",
    needsArguments: true,
  },
  auth: {
    summary: "authorize an OAuth service once; its status; revoke it",
    flags: [{ name: "--no-browser" }, { name: "--device" }],
    positionals: [{ name: "service", kind: "oauth-service" }],
    subcommands: {
      status: { flags: [JSON_FLAG] },
      revoke: { positionals: [{ name: "service", kind: "oauth-service" }] },
    },
    module: "lib/cli/auth.ts",
    entry: "authCommand",
    needsArguments: true,
  },
  broker: {
    summary:
      "serve, start, stop or inspect the credential broker; its audit log",
    subcommands: {
      serve: { flags: [{ name: "--background" }] },
      start: {},
      stop: {},
      status: { flags: [JSON_FLAG] },
      log: {
        flags: [
          { name: "--lines", short: "-n", value: "text", placeholder: "N" },
        ],
      },
    },
    subcommandRequired: true,
    module: "lib/cli/broker.ts",
    entry: "brokerCommand",
    needsArguments: true,
  },
  doctor: {
    summary: "check sherlock, the broker, every profile and service",
    flags: [JSON_FLAG],
    module: "lib/cli/doctor.ts",
    entry: "doctorCommand",
  },
  shim: {
    summary: "(used inside rendered configs) run an MCP server with its token",
    flags: [
      { name: "--socket", value: "file", placeholder: "PATH" },
      { name: "--session", value: "text", placeholder: "ID" },
      { name: "--agent", value: "agent", placeholder: "NAME" },
      { name: "--token-env", value: "text", placeholder: "VAR" },
      { name: "--token-format", value: "text", placeholder: "FORMAT" },
    ],
    positionals: [{ name: "SERVICE", kind: "service" }],
    restAfterSeparator: true,
    module: "lib/cli/shim.ts",
    internal: true,
    entry: "shimCommand",
  },
  credential: {
    summary: "(used by an agent's key helper) print the agent's own key",
    flags: [{ name: "--socket", value: "file", placeholder: "PATH" }],
    positionals: [{ name: "NAME", kind: "text" }],
    module: "lib/cli/credential.ts",
    entry: "credentialCommand",
    internal: true,
  },
  bridge: {
    summary: "(used inside rendered configs) a remote MCP server on stdio",
    flags: [
      { name: "--socket", value: "file", placeholder: "PATH" },
      { name: "--session", value: "text", placeholder: "ID" },
      { name: "--agent", value: "agent", placeholder: "NAME" },
      { name: "--url", value: "text", placeholder: "URL" },
      {
        name: "--transport",
        value: "choice",
        placeholder: "http|sse",
        choices: ["http", "sse"],
      },
      {
        name: "--header",
        value: "text",
        placeholder: "NAME=VALUE",
        repeatable: true,
      },
      { name: "--token-header", value: "text", placeholder: "NAME" },
      { name: "--token-format", value: "text", placeholder: "FORMAT" },
      { name: "--verbose" },
    ],
    positionals: [{ name: "SERVICE", kind: "service" }],
    module: "lib/cli/bridge.ts",
    internal: true,
    entry: "bridgeCommand",
  },
  completions: {
    summary: "print a shell's completion script (bash, zsh or fish)",
    // `--complete -- WORD…` is the scripts' own call, not the operator's.
    flags: [{ name: "--complete", hidden: true }],
    positionals: [{
      name: "shell",
      kind: "choice",
      choices: ["bash", "zsh", "fish"],
      optional: true,
    }],
    restAfterSeparator: true,
    module: "lib/cli/completions.ts",
    entry: "completionsCommand",
    needsArguments: true,
  },
  help: {
    summary: "show this help, or a command's",
    positionals: [{ name: "command", kind: "command", optional: true }],
    module: "lib/cli/help.ts",
    entry: "helpCommand",
  },
  version: {
    summary: "print sherlock's version",
    module: "lib/cli/help.ts",
    entry: "versionCommand",
  },
} as const satisfies Record<string, CommandSpec>;

/** The name of one of sherlock's commands. */
export type CommandName = keyof typeof COMMANDS;

/**
 * Every module sherlock imports lazily, from the repository's root: the
 * commands' and the library's. `scripts/build.ts` compiles each one in.
 */
export const LAZY_MODULES: readonly string[] = [
  ...new Set([
    ...Object.values(COMMANDS).map((spec: CommandSpec) => spec.module),
    ...LAZY_LIBRARY_MODULES,
  ]),
];

/** True when `name` is one of sherlock's commands. */
export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(COMMANDS, name);
}

/** The table's entry for `name`, as the general {@linkcode CommandSpec}. */
export function commandSpec(name: CommandName): CommandSpec {
  return COMMANDS[name];
}

/** The subcommands of `spec` an operator types (not the hidden ones). */
export function visibleSubcommands(spec: CommandSpec): string[] {
  return Object.entries(spec.subcommands ?? {})
    .filter(([, syntax]) => !syntax.hidden)
    .map(([name]) => name);
}

/** True for the flags that ask for help: `--help` and `-h`. */
export function isHelpFlag(arg: string | undefined): boolean {
  return arg === "--help" || arg === "-h";
}

/** Imports the command's module and returns its entry point. */
export async function loadCommand(name: CommandName): Promise<CommandFunction> {
  const spec: CommandSpec = COMMANDS[name];
  const module = await importLazily<Record<string, CommandFunction>>(
    spec.module,
  );
  return module[spec.entry];
}

/**
 * The usage line of `name` (and `subcommand`) from the table, e.g.
 * `sherlock services test [--agent NAME] [--timeout SECONDS] <name>`.
 */
export function usageLine(name: CommandName, subcommand?: string): string {
  const spec = commandSpec(name);
  const syntax = subcommand === undefined
    ? spec
    : spec.subcommands?.[subcommand] ?? {};
  const words = [`sherlock ${name}`];
  if (subcommand !== undefined) words.push(subcommand);
  for (const flag of syntax.flags ?? []) {
    if (flag.hidden) continue;
    const value = flag.value === undefined ? "" : ` ${flag.placeholder}`;
    words.push(`[${flag.name}${value}]${flag.repeatable ? "…" : ""}`);
  }
  for (const positional of syntax.positionals ?? []) {
    const word = `<${positional.name}>`;
    words.push(positional.optional ? `[${word}]` : word);
  }
  if (spec.restAfterPositional) words.push("[args…]");
  if (spec.restAfterSeparator && name === "shim") words.push("-- COMMAND…");
  return words.join(" ");
}

/**
 * The value of a flag an internal command cannot go without. Throws
 * {@linkcode UsageError} (`shim needs --socket`) when it was not given.
 */
export function requiredValue(
  parsed: ParsedArguments,
  options: { command: CommandName; flag: string },
): string {
  const value = parsed.value(options.flag);
  if (value === undefined) {
    throw new UsageError(`${options.command} needs ${options.flag}`);
  }
  return value;
}

/**
 * The flags of `parsed` as canonical words (`--flag value`, `--flag`), in
 * the order of `flags`: for a command whose rules about which flags go
 * together are easier said on words (`login`).
 */
export function flagWords(
  parsed: ParsedArguments,
  flags: readonly FlagSpec[],
): string[] {
  return flags.flatMap((flag) =>
    flag.value === undefined
      ? parsed.has(flag.name) ? [flag.name] : []
      : parsed.values(flag.name).flatMap((value) => [flag.name, value])
  );
}

/**
 * Reads `args` (the words after the command's name) by the command's
 * grammar: `--flag value` and `--flag=value` for every flag that takes a
 * value, a boolean flag alone. Throws {@linkcode UsageError} (exit 2) for
 * an unknown flag or subcommand (with the closest known one, when one is
 * close), a flag's missing value, a value given to a boolean flag, a flag
 * given twice that is not repeatable, a missing or an extra positional
 * argument, and a value that is not one of a choice's.
 */
export function parseArguments(
  name: CommandName,
  args: readonly string[],
): ParsedArguments {
  const spec = commandSpec(name);
  let index = 0;
  let subcommand: string | undefined;
  let syntax: SyntaxSpec = spec;
  const first = args[0];
  if (spec.subcommands !== undefined && first !== undefined) {
    if (Object.hasOwn(spec.subcommands, first)) {
      subcommand = first;
      syntax = spec.subcommands[first];
      index = 1;
    } else if (
      !first.startsWith("-") && visibleSubcommands(spec).length > 0 &&
      (spec.subcommandRequired || (spec.positionals ?? []).length === 0)
    ) {
      throw new UsageError(
        `no subcommand "${first}" for ${name}${
          didYouMean(first, visibleSubcommands(spec))
        }; see sherlock ${name} --help`,
      );
    }
  }
  const where = subcommand === undefined ? name : `${name} ${subcommand}`;
  const usage = () =>
    `usage: ${usageLine(name, subcommand)}${
      syntax.usageNote === undefined ? "" : ` (${syntax.usageNote})`
    }`;
  const flags = syntax.flags ?? [];
  const given = new Map<string, string[]>();
  const positionals: string[] = [];
  let rest: string[] = [];
  let help = false;
  for (; index < args.length; index++) {
    const arg = args[index];
    if (arg === "--") {
      const after = args.slice(index + 1);
      if (spec.restAfterSeparator) rest = after;
      else if (spec.restAfterPositional && after.length > 0) {
        // `run -- fake --dry-run`: the agent's name, then its own arguments.
        positionals.push(after[0]);
        rest = after.slice(1);
      } else positionals.push(...after);
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positionals.push(arg);
      if (spec.restAfterPositional) {
        rest = args.slice(index + 1);
        break;
      }
      continue;
    }
    const equals = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const word = equals > 0 ? arg.slice(0, equals) : arg;
    if (isHelpFlag(word)) {
      help = true;
      break;
    }
    const flag = flags.find((each) =>
      each.name === word || each.short === word
    );
    if (flag === undefined) {
      const known = flags.flatMap((each) => [each.name, each.short ?? ""]);
      throw new UsageError(
        `unknown option ${word} for ${where}${
          didYouMean(word, known)
        }; ${usage()}`,
      );
    }
    let value: string;
    if (flag.value === undefined) {
      if (equals > 0) {
        throw new UsageError(`${flag.name} takes no value; ${usage()}`);
      }
      value = "";
    } else {
      const next = equals > 0 ? arg.slice(equals + 1) : args[++index];
      // `--flag --` is a flag without its value, not a value of "--".
      if (next === undefined || next === "" || next === "--") {
        throw new UsageError(
          `${flag.name} needs a value (${flag.name} ${flag.placeholder}); ${usage()}`,
        );
      }
      if (flag.choices !== undefined && !flag.choices.includes(next)) {
        throw new UsageError(
          `${flag.name} takes ${flag.choices.join(", ")}, not ${next}${
            didYouMean(next, flag.choices)
          }`,
        );
      }
      value = next;
    }
    const values = given.get(flag.name) ?? [];
    if (values.length > 0 && !flag.repeatable) {
      throw new UsageError(`${flag.name} is given twice; ${usage()}`);
    }
    given.set(flag.name, [...values, value]);
  }
  if (!help) checkPositionals({ syntax, positionals, where, usage });
  return {
    subcommand,
    help,
    positionals,
    rest,
    has: (flag) => given.has(flag),
    value: (flag) => given.get(flag)?.at(-1),
    values: (flag) => [...given.get(flag) ?? []],
  };
}

/** Throws for a missing or an extra positional argument, or a wrong choice. */
function checkPositionals(
  options: {
    syntax: SyntaxSpec;
    positionals: readonly string[];
    where: string;
    usage: () => string;
  },
): void {
  const { syntax, positionals, where, usage } = options;
  const specs = syntax.positionals ?? [];
  const required = specs.filter((spec) => !spec.optional).length;
  if (positionals.length > specs.length) {
    // Not quoted: an extra argument may be a token pasted in the wrong place.
    throw new UsageError(
      `${where} takes ${
        specs.length === 0 ? "no" : `at most ${specs.length}`
      } argument${
        specs.length === 1 ? "" : "s"
      }, got ${positionals.length}; ${usage()}`,
    );
  }
  if (positionals.length < required) {
    throw new UsageError(
      `${where} needs <${specs[positionals.length].name}>; ${usage()}`,
    );
  }
  specs.forEach((spec, index) => {
    const given = positionals[index];
    if (
      given !== undefined && spec.kind === "command" && !isCommandName(given)
    ) {
      throw new UsageError(
        `no command named ${given}${
          didYouMean(given, Object.keys(COMMANDS))
        }; see sherlock --help`,
      );
    }
    if (
      given !== undefined && spec.choices !== undefined &&
      !spec.choices.includes(given)
    ) {
      throw new UsageError(
        `${where} takes ${spec.choices.join(", ")}, not ${given}${
          didYouMean(given, spec.choices)
        }; ${usage()}`,
      );
    }
  });
}
