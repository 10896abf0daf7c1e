/**
 * `sherlock help [command]`, `--help` and `--version`.
 *
 * @module
 */

import { didYouMean } from "../config/suggestion.ts";
import { UsageError } from "../errors.ts";
import { VERSION } from "../version.ts";
import { COMMANDS, isCommandName } from "./commands.ts";
import { columns, printHelp, printLine } from "./output.ts";

/** The top-level help text. */
export function mainHelp(): string {
  const commands = columns(
    Object.entries(COMMANDS).map(([name, spec]) => [`  ${name}`, spec.summary]),
  );
  return [
    `sherlock ${VERSION}: launch AI coding agents with per-session MCP servers`,
    "",
    "Usage: sherlock <command> [args…]",
    "       sherlock <agent> [args…]     (same as: sherlock run <agent> [args…])",
    "",
    "Commands:",
    ...commands,
    "",
    'Run "sherlock agents" to list the agents, "sherlock help <command>" for a',
    "command's options. Exit codes: 2 usage, 69 broker unreachable, 73 cannot",
    "write a file, 77 not logged in, 78 invalid profile, service or config file,",
    "126/127 agent not executable/not found; otherwise the agent's own code.",
  ].join("\n");
}

/** `sherlock help [command]`: the command's help from the table. */
export function helpCommand(args: readonly string[]): Promise<number> {
  const name = args[0];
  if (name === undefined) {
    printHelp(mainHelp());
    return Promise.resolve(0);
  }
  if (!isCommandName(name)) {
    throw new UsageError(
      `no command named ${name}${
        didYouMean(name, Object.keys(COMMANDS))
      }; see sherlock --help`,
    );
  }
  printHelp(COMMANDS[name].help);
  return Promise.resolve(0);
}

/** `sherlock version`. */
export function versionCommand(_args: readonly string[]): Promise<number> {
  printLine(`sherlock ${VERSION}`);
  return Promise.resolve(0);
}
