/**
 * What `sherlock completions --complete` offers for a command line: the
 * words of sherlock's grammar, read from the command table's usage lines
 * and option lists (so that a command or flag added there completes with
 * no change here), and which kinds of names (agents, services, secrets)
 * the caller must look up. Pure: the names are looked up by
 * `completions.ts`.
 *
 * @module
 */

import { COMMANDS, type CommandSpec, isCommandName } from "./commands.ts";

/** The kinds of names that complete from the operator's files or the broker. */
export type NameKind = "agents" | "services" | "secrets";

/** What to offer for the word under the cursor. */
export interface CompletionRequest {
  /** Fixed words: commands, subcommands, flags. */
  words: string[];
  /** Names to look up and offer too. */
  names: NameKind[];
  /** True when file names fit (a PATH value, an agent's own arguments). */
  files: boolean;
  /** The word under the cursor, which every candidate must start with. */
  prefix: string;
}

/** A flag of a command, and the placeholder of its value when it takes one. */
export interface FlagSpec {
  /** The flag, e.g. `--agent`. */
  name: string;
  /** Its value's placeholder in the help, e.g. `NAME`, `PATH`. */
  value?: string;
}

/** A command's words, as its help states them. */
export interface CommandGrammar {
  /** The flags that go before any subcommand. */
  flags: FlagSpec[];
  /** Each subcommand's own flags. */
  subcommands: Map<string, FlagSpec[]>;
}

/**
 * The names a command's (or subcommand's, `command subcommand`) one
 * positional argument takes. The help's placeholders (`<name>`,
 * `<service>`) do not say whose name it is, so this table does.
 */
const POSITIONAL_NAMES: Record<string, NameKind | "commands"> = {
  "run": "agents",
  "help": "commands",
  "agents show": "agents",
  "agents override": "agents",
  "services show": "services",
  "services test": "services",
  "secret set": "services",
  "secret rm": "secrets",
  "auth": "services",
  "auth revoke": "services",
};

/** `sherlock run`'s options, which may also come before an agent's name. */
const RUN_FLAGS: readonly string[] = ["--dry-run", "--strict", "-v"];

const FLAG = /(?<![\w-])(--?[A-Za-z][\w-]*)(?: ([A-Z][A-Z_=]*)(?![\w]))?/g;

/** The flags named in `text`, each with its value's placeholder. */
function flagsIn(text: string): FlagSpec[] {
  return [...text.matchAll(FLAG)].map((match) =>
    match[2] === undefined
      ? { name: match[1] }
      : { name: match[1], value: match[2] }
  );
}

function addFlags(into: FlagSpec[], flags: readonly FlagSpec[]): void {
  for (const flag of flags) {
    if (!into.some((known) => known.name === flag.name)) into.push(flag);
  }
}

/**
 * A command's grammar from its help: the usage lines (`Usage: sherlock
 * secret set <service>`, `sherlock broker <serve|start|…>`) give the
 * subcommands and their flags; an option list (`  -v, --verbose  …`,
 * `  serve [--background]  …`) adds flags, a subcommand's when its line
 * starts with one.
 */
export function commandGrammar(name: string, help: string): CommandGrammar {
  const grammar: CommandGrammar = { flags: [], subcommands: new Map() };
  const lines = help.split("\n");
  const usageEnd = lines.findIndex((line) => line.trim() === "");
  let current: FlagSpec[] = grammar.flags;
  for (const line of lines.slice(0, usageEnd === -1 ? 1 : usageEnd)) {
    const usage = new RegExp(`sherlock ${name}(?: (.*))?$`).exec(line);
    let rest = line;
    if (usage !== null) {
      rest = usage[1] ?? "";
      current = grammar.flags;
      const first = rest.split(" ")[0];
      const choice = /^<([a-z]+(?:\|[a-z]+)+)>$/.exec(first);
      const words = choice !== null
        ? choice[1].split("|")
        : /^[a-z]+$/.test(first)
        ? [first]
        : [];
      for (const word of words) {
        if (!grammar.subcommands.has(word)) grammar.subcommands.set(word, []);
      }
      if (words.length === 1) current = grammar.subcommands.get(words[0])!;
    }
    addFlags(current, flagsIn(rest));
  }
  for (const line of lines) {
    // "  -v, --verbose  what it does": the flags before the two blanks.
    const option = /^ {2}(-.*?)(?: {2}|$)/.exec(line);
    if (option !== null) addFlags(grammar.flags, flagsIn(option[1]));
    // "  serve [--background]  what it does": a subcommand's own flags.
    const sub = /^ {2}([a-z]+)((?: \S+)*)(?: {2}|$)/.exec(line);
    const flags = sub === null ? undefined : grammar.subcommands.get(sub[1]);
    if (flags !== undefined) addFlags(flags, flagsIn(sub![2]));
  }
  return grammar;
}

/** The commands completion offers: all but those used inside rendered configs. */
export function offeredCommands(): string[] {
  return Object.entries(COMMANDS as Record<string, CommandSpec>)
    .filter(([, spec]) => !spec.internal)
    .map(([name]) => name);
}

/**
 * What completes the last of `words` (the command line after `sherlock`,
 * up to the cursor; the last word is the one being typed, possibly empty).
 */
export function completionRequest(words: readonly string[]): CompletionRequest {
  const prefix = words.at(-1) ?? "";
  const before = words.slice(0, -1);
  const request = (
    fixed: readonly string[],
    names: NameKind[] = [],
    files = false,
  ): CompletionRequest => ({
    words: fixed.filter((word) => word.startsWith(prefix)),
    names,
    files,
    prefix,
  });
  const first = before[0];
  if (first === undefined) {
    return prefix.startsWith("-")
      ? request(["--help", "-h", "--version", "-V", ...RUN_FLAGS, "--verbose"])
      : request(offeredCommands(), ["agents"]);
  }
  if (!isCommandName(first)) return runRequest(before, request);
  if (first === "run") return runRequest(before.slice(1), request);
  const rest = before.slice(1);
  const grammar = commandGrammar(first, COMMANDS[first].help);
  const subcommand = grammar.subcommands.has(rest[0] ?? "")
    ? rest[0]
    : undefined;
  const flags = subcommand === undefined
    ? grammar.flags
    : grammar.subcommands.get(subcommand)!;
  const valueOf = [...grammar.flags, ...grammar.subcommands.values()].flat()
    .find((flag) => flag.name === rest.at(-1) && flag.value !== undefined);
  if (valueOf !== undefined) {
    if (valueOf.name === "--agent") return request([], ["agents"]);
    return request([], [], valueOf.value === "PATH");
  }
  if (prefix.startsWith("-")) {
    const names = flags.map((flag) => flag.name);
    return request(rest.length === 0 ? [...names, "--help", "-h"] : names);
  }
  const positional = POSITIONAL_NAMES[
    subcommand === undefined ? first : `${first} ${subcommand}`
  ];
  const given = positionals(
    rest.slice(subcommand === undefined ? 0 : 1),
    flags,
  );
  if (given > 0) return request([]);
  const offered = rest.length === 0 ? [...grammar.subcommands.keys()] : [];
  if (positional === "commands") return request(Object.keys(COMMANDS));
  return request(offered, positional === undefined ? [] : [positional]);
}

/** How many positional arguments `args` holds, skipping flags and their values. */
function positionals(args: readonly string[], flags: readonly FlagSpec[]) {
  let count = 0;
  for (let index = 0; index < args.length; index++) {
    const flag = flags.find((each) => each.name === args[index]);
    if (flag?.value !== undefined) index++;
    else if (!args[index].startsWith("-")) count++;
  }
  return count;
}

/**
 * `sherlock [run] [options] <agent> [args…]`: options, then an agent's
 * name; after it, the agent's own arguments (files fit best).
 */
function runRequest(
  args: readonly string[],
  request: (
    fixed: readonly string[],
    names?: NameKind[],
    files?: boolean,
  ) => CompletionRequest,
): CompletionRequest {
  if (args.some((arg) => !arg.startsWith("-"))) return request([], [], true);
  const prefix = request([]).prefix;
  if (prefix.startsWith("-")) {
    return request(
      commandGrammar("run", COMMANDS.run.help).flags.map((flag) => flag.name),
    );
  }
  return request([], ["agents"]);
}
