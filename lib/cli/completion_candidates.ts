/**
 * What `sherlock completions --complete` offers for a command line: the
 * words of sherlock's grammar, read from the command table's declarative
 * spec (commands.ts: subcommands, flags, the kind of each flag's value and
 * of each positional argument), so that a command or flag added there
 * completes with no change here; and which kinds of names (agents,
 * services, OAuth services, secrets) the caller must look up. Pure: the
 * names are looked up by `completions.ts`.
 *
 * @module
 */

import {
  COMMANDS,
  type CommandSpec,
  type FlagSpec,
  isCommandName,
  type SyntaxSpec,
  type ValueKind,
  visibleSubcommands,
} from "./commands.ts";

/** The kinds of names that complete from the operator's files or the broker. */
export type NameKind = "agents" | "services" | "oauth-services" | "secrets";

/** What to offer for the word under the cursor. */
export interface CompletionRequest {
  /** Fixed words: commands, subcommands, flags, a choice's values. */
  words: string[];
  /** Names to look up and offer too. */
  names: NameKind[];
  /** True when file names fit (a PATH value, an agent's own arguments). */
  files: boolean;
  /** The word under the cursor, which every candidate must start with. */
  prefix: string;
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
  const offer = offerFor(prefix);
  const first = before[0];
  if (first === undefined) {
    return prefix.startsWith("-")
      ? offer({
        words: ["--help", "-h", "--version", "-V", ...flagWords(COMMANDS.run)],
      })
      : offer({ words: offeredCommands(), names: ["agents"] });
  }
  if (!isCommandName(first)) return runRequest(before, offer);
  if (first === "run") return runRequest(before.slice(1), offer);
  const spec: CommandSpec = COMMANDS[first];
  const rest = before.slice(1);
  const subcommand = spec.subcommands !== undefined &&
      Object.hasOwn(spec.subcommands, rest[0] ?? "")
    ? rest[0]
    : undefined;
  const syntax: SyntaxSpec = subcommand === undefined
    ? spec
    : spec.subcommands![subcommand];
  const args = subcommand === undefined ? rest : rest.slice(1);
  if (spec.restAfterSeparator && args.includes("--")) {
    return offer({ files: true });
  }
  const valueOf = flagOf(syntax, args.at(-1));
  if (valueOf?.value !== undefined) {
    return offerKind({ kind: valueOf.value, choices: valueOf.choices }, offer);
  }
  if (prefix.startsWith("-")) {
    const flags = flagWords(syntax);
    return offer({
      words: rest.length === 0 ? [...flags, "--help", "-h"] : flags,
    });
  }
  const positional = (syntax.positionals ?? [])[positionalCount(args, syntax)];
  const subcommands = rest.length === 0 ? visibleSubcommands(spec) : [];
  if (positional === undefined) return offer({ words: subcommands });
  const request = offerKind(positional, offer);
  return { ...request, words: [...subcommands, ...request.words] };
}

type Offer = (
  what: { words?: readonly string[]; names?: NameKind[]; files?: boolean },
) => CompletionRequest;

/** The request for the candidates that start with `prefix`. */
function offerFor(prefix: string): Offer {
  return ({ words = [], names = [], files = false }) => ({
    words: words.filter((word) => word.startsWith(prefix)),
    names,
    files,
    prefix,
  });
}

/** What a value of `kind` completes with. */
function offerKind(
  value: { kind: ValueKind; choices?: readonly string[] },
  offer: Offer,
): CompletionRequest {
  switch (value.kind) {
    case "agent":
      return offer({ names: ["agents"] });
    case "service":
      return offer({ names: ["services"] });
    case "oauth-service":
      return offer({ names: ["oauth-services"] });
    case "secret":
      return offer({ names: ["secrets"] });
    case "file":
      return offer({ files: true });
    case "command":
      return offer({ words: Object.keys(COMMANDS) });
    case "choice":
      return offer({ words: value.choices ?? [] });
    case "text":
      return offer({});
  }
}

/** Every flag of `syntax` as it may be typed: long names, then short ones. */
function flagWords(syntax: SyntaxSpec): string[] {
  const flags = (syntax.flags ?? []).filter((flag) => !flag.hidden);
  return [
    ...flags.map((flag) => flag.name),
    ...flags.flatMap((flag) => flag.short === undefined ? [] : [flag.short]),
  ];
}

/** The flag `word` names in `syntax`, if any. */
function flagOf(
  syntax: SyntaxSpec,
  word: string | undefined,
): FlagSpec | undefined {
  if (word === undefined) return undefined;
  return (syntax.flags ?? []).find((flag) =>
    flag.name === word || flag.short === word
  );
}

/** How many positional arguments `args` holds, skipping flags and their values. */
function positionalCount(args: readonly string[], syntax: SyntaxSpec): number {
  let count = 0;
  for (let index = 0; index < args.length; index++) {
    const flag = flagOf(syntax, args[index]);
    if (flag?.value !== undefined) index++;
    else if (!args[index].startsWith("-")) count++;
  }
  return count;
}

/**
 * `sherlock [run] [options] <agent> [args…]`: options (a service's name
 * after `--service`), then an agent's name; after it, the agent's own
 * arguments (files fit best).
 */
function runRequest(args: readonly string[], offer: Offer): CompletionRequest {
  const syntax: SyntaxSpec = COMMANDS.run;
  if (positionalCount(args, syntax) > 0 || args.includes("--")) {
    return offer({ files: true });
  }
  const valueOf = flagOf(syntax, args.at(-1));
  if (valueOf?.value !== undefined) {
    return offerKind({ kind: valueOf.value, choices: valueOf.choices }, offer);
  }
  const prefix = offer({}).prefix;
  if (prefix.startsWith("-")) return offer({ words: flagWords(syntax) });
  return offer({ names: ["agents"] });
}
