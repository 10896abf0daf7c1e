/**
 * `sherlock help [command]`, `--help` and `--version`: the help texts
 * (help_texts.ts) are loaded with this module, only when help is asked for.
 *
 * @module
 */

import { VERSION } from "../version.ts";
import {
  type CommandName,
  COMMANDS,
  type ParsedArguments,
} from "./commands.ts";
import type { CommandContext } from "./context.ts";
import { HELP_TEXTS } from "./help_texts.ts";
import { columns, printer } from "./output.ts";

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
    "command's options. Exit codes: 2 usage (an unknown command, subcommand or",
    "option, a missing or extra argument), 69 broker unreachable, 73 cannot",
    "write a file, 77 not logged in, 78 invalid profile, service or config file,",
    "126/127 agent not executable/not found; otherwise the agent's own code.",
  ].join("\n");
}

/** The help text of `name`: its usage lines first. */
export function commandHelp(name: CommandName): string {
  return HELP_TEXTS[name];
}

/** Prints the top-level help: on stdout when asked for, on stderr for a bare `sherlock`. */
export function printMainHelp(
  context: CommandContext,
  options: { to: "stdout" | "stderr" } = { to: "stdout" },
): void {
  if (options.to === "stdout") printer(context).help(mainHelp());
  else context.stderr.writeSync(new TextEncoder().encode(mainHelp() + "\n"));
}

/** Prints the help of `name` on stdout. */
export function printCommandHelp(
  name: CommandName,
  context: CommandContext,
): void {
  printer(context).help(commandHelp(name));
}

/** `sherlock help [command]`: the command's help from the table. */
export function helpCommand(
  args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const [name] = args.positionals;
  if (name === undefined) printMainHelp(context);
  else printCommandHelp(name as CommandName, context);
  return Promise.resolve(0);
}

/** `sherlock version`. */
export function versionCommand(
  _args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  printer(context).line(`sherlock ${VERSION}`);
  return Promise.resolve(0);
}
