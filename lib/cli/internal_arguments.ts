/**
 * The argv of sherlock's internal commands (`shim`, `bridge`,
 * `credential`): rendered configs run them, never an operator, so their
 * syntax is fixed and small — `--name value` options, one positional
 * service or credential name, and for the shim the server's command after
 * `--`. One parser, so the three cannot drift apart in what they accept.
 *
 * @module
 */

import { UsageError } from "../errors.ts";

/** What an internal command accepts. */
export interface InternalSyntax {
  /** The command's name, for the messages ("shim", "bridge"…). */
  command: string;
  /** The options that take a value; each may be given once. */
  options: readonly string[];
  /** The options that take a value and may be given again (`--header`). */
  repeatable?: readonly string[];
  /** The options that take no value (`--verbose`). */
  flags?: readonly string[];
  /** What the one positional argument is, for its message. */
  positional: string;
}

/** An internal command's parsed argv. */
export interface InternalArguments {
  /** The options given once, by name (with the dashes). */
  values: Map<string, string>;
  /** The repeatable options' values in order, by name. */
  repeated: Map<string, string[]>;
  /** The flags given (options without a value). */
  flags: Set<string>;
  /** The one positional argument. */
  name: string;
  /** The value of an option that must be there; throws when it is not. */
  required(option: string): string;
}

/**
 * Parses `args` (everything before a shim's `--`). Throws
 * {@linkcode UsageError} for an unknown option, an option without a value
 * and anything but exactly one positional argument.
 */
export function parseInternalArguments(
  args: readonly string[],
  syntax: InternalSyntax,
): InternalArguments {
  const { command } = syntax;
  const repeatable = syntax.repeatable ?? [];
  const values = new Map<string, string>();
  const repeated = new Map<string, string[]>();
  const positional: string[] = [];
  const flags = new Set<string>();
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    if (syntax.options.includes(arg) || repeatable.includes(arg)) {
      const value = args[++index];
      if (value === undefined) {
        throw new UsageError(`${command}: ${arg} needs a value`);
      }
      if (repeatable.includes(arg)) {
        repeated.set(arg, [...repeated.get(arg) ?? [], value]);
      } else values.set(arg, value);
    } else if (syntax.flags?.includes(arg)) flags.add(arg);
    else if (arg.startsWith("-")) {
      throw new UsageError(`${command}: unknown option ${arg}`);
    } else positional.push(arg);
  }
  if (positional.length !== 1) {
    throw new UsageError(
      `${command} needs exactly one ${syntax.positional}; see sherlock ${command} --help`,
    );
  }
  return {
    values,
    repeated,
    flags,
    name: positional[0],
    required(option: string): string {
      const value = values.get(option);
      if (value === undefined) {
        throw new UsageError(`${command} needs ${option}`);
      }
      return value;
    },
  };
}
