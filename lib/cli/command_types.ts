/**
 * The types of the command table (commands.ts): a command's grammar and
 * what its parser returns. Types only, so that the launch path, which
 * reads the table, loads none of this text.
 *
 * @module
 */

import type { CommandContext } from "./context.ts";

/**
 * What a flag's value or a positional argument is, which says what
 * completion offers for it: an agent's name, a service's, an OAuth
 * service's (`[token] source = "oauth"`), a stored secret's, a file, one of
 * sherlock's commands, one of `choices`, or nothing (`text`: a number, a
 * variable's name, a URL).
 */
export type ValueKind =
  | "agent"
  | "service"
  | "oauth-service"
  | "secret"
  | "file"
  | "command"
  | "choice"
  | "text";

/** A flag: a boolean one, or one that takes a value. */
export interface FlagSpec {
  /** The flag as typed, e.g. `--agent` (or `-n`, a short one alone). */
  name: string;
  /** Its short form, e.g. `-v` for `--verbose`. */
  short?: string;
  /** What its value is; absent for a boolean flag, which takes none. */
  value?: ValueKind;
  /** The value's placeholder in a usage line, e.g. `NAME`. */
  placeholder?: string;
  /** The values it takes, for `value: "choice"`. */
  choices?: readonly string[];
  /** It may be given more than once (each value is kept, in order). */
  repeatable?: boolean;
  /**
   * sherlock's own call, not the operator's (`completions --complete`):
   * in no usage line, completion or reference.
   */
  hidden?: boolean;
}

/** A positional argument. */
export interface PositionalSpec {
  /** Its placeholder, e.g. `service`. */
  name: string;
  /** What it is. */
  kind: ValueKind;
  /** The values it takes, for `kind: "choice"`. */
  choices?: readonly string[];
  /** It may be left out. */
  optional?: boolean;
}

/** The grammar of a command, or of one of its subcommands. */
export interface SyntaxSpec {
  /** The flags it takes (`--help`/`-h` are always taken). */
  flags?: readonly FlagSpec[];
  /** Its positional arguments, in order. */
  positionals?: readonly PositionalSpec[];
  /** Said after its usage line in a usage error, e.g. where a value comes from. */
  usageNote?: string;
  /**
   * A subcommand sherlock runs itself, not the operator (`demo server`):
   * in no usage line, suggestion, completion or reference.
   */
  hidden?: boolean;
}

/** One command. */
export interface CommandSpec extends SyntaxSpec {
  /** The one-line summary shown by `sherlock --help`. */
  summary: string;
  /** The module that implements the command, from the repository's root. */
  module: string;
  /** The name of the function that module exports for the command. */
  entry: string;
  /**
   * Its subcommands, when it has any: the first argument names one. The
   * command's own flags and positionals apply when none is named.
   */
  subcommands?: Readonly<Record<string, SyntaxSpec>>;
  /** A subcommand must be named (`secret`, `broker`). */
  subcommandRequired?: boolean;
  /**
   * Options end at the first positional argument, and everything after it
   * is kept verbatim in `rest` (`run`: the agent's own arguments).
   */
  restAfterPositional?: boolean;
  /** Everything after `--` is kept verbatim in `rest` (the shim's command). */
  restAfterSeparator?: boolean;
  /**
   * Without arguments the command prints its help and exits 2 (usage)
   * instead of running.
   */
  needsArguments?: boolean;
  /**
   * Used inside rendered configs, not by hand: shell completion does not
   * offer it.
   */
  internal?: boolean;
}

/** A command line read by its command's grammar. */
export interface ParsedArguments {
  /** The subcommand named, if any. */
  subcommand?: string;
  /** True when `--help` or `-h` came among the options. */
  help: boolean;
  /** The positional arguments. */
  positionals: string[];
  /** What came verbatim after the options (see the spec's `rest…`). */
  rest: string[];
  /** True when the boolean flag `name` (its long form) was given. */
  has(name: string): boolean;
  /** The value of the flag `name`; the last one when it is repeatable. */
  value(name: string): string | undefined;
  /** Every value of the repeatable flag `name`, in order. */
  values(name: string): string[];
}

/** A command's entry point: its parsed arguments and context in, the exit code out. */
export type CommandFunction = (
  args: ParsedArguments,
  context: CommandContext,
) => Promise<number>;
