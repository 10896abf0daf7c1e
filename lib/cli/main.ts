/**
 * The entry point's dispatcher: a sherlock command, an agent alias, or
 * help. Every command line is read by its command's grammar in the command
 * table (commands.ts `parseArguments`) before the command's module loads.
 * Every failure becomes one line on stderr and a documented exit code.
 *
 * @module
 */

import { importLazily } from "../runtime/lazy_import.ts";
import { ExitCode, UsageError } from "../errors.ts";
import {
  type CommandName,
  COMMANDS,
  commandSpec,
  isCommandName,
  isHelpFlag,
  loadCommand,
  parseArguments,
} from "./commands.ts";
import { type CommandContext, commandContext } from "./context.ts";
import { reportError } from "./output.ts";
import type * as HelpModule from "./help.ts";

/** Runs sherlock with `args` (without the program name); returns the exit code. */
export async function main(
  args: readonly string[],
  context: CommandContext = commandContext(),
): Promise<number> {
  try {
    return await dispatch(args, context);
  } catch (error) {
    return reportError(error, context);
  }
}

/** True for one of `sherlock run`'s options, also as `--service=NAME`. */
function isRunOption(arg: string): boolean {
  const word = arg.split("=", 1)[0];
  return COMMANDS.run.flags.some((flag: { name: string; short?: string }) =>
    flag.name === word || flag.short === word
  );
}

async function dispatch(
  args: readonly string[],
  context: CommandContext,
): Promise<number> {
  const [first] = args;
  if (first === undefined) {
    const help = await helpModule();
    help.printMainHelp(context, { to: "stderr" });
    return ExitCode.Usage;
  }
  if (isHelpFlag(first)) return await runCommand("help", [], context);
  if (first === "--version" || first === "-V") {
    return await runCommand("version", [], context);
  }
  if (isCommandName(first)) {
    return await runCommand(first, args.slice(1), context);
  }
  if (isRunOption(first) || await isProfileName(first, context)) {
    return await runCommand("run", args, context);
  }
  if (first.startsWith("-")) {
    throw new UsageError(`unknown option ${first}; see sherlock --help`);
  }
  throw await unknownName(first, context);
}

function helpModule(): Promise<typeof HelpModule> {
  return importLazily<typeof HelpModule>(
    "lib/cli/help.ts",
  );
}

/** The error for a first argument that is no command and no agent. */
async function unknownName(
  name: string,
  context: CommandContext,
): Promise<UsageError> {
  const [{ didYouMean }, { profileNames }] = await Promise.all([
    importLazily<typeof import("../config/suggestion.ts")>(
      "lib/config/suggestion.ts",
    ),
    importLazily<typeof import("../profiles/loader.ts")>(
      "lib/profiles/loader.ts",
    ),
  ]);
  const known = [
    ...Object.keys(COMMANDS),
    ...profileNames(context.paths),
  ];
  return new UsageError(
    `no command or agent named "${name}"${
      didYouMean(name, known)
    }; run "sherlock agents" to list agents, "sherlock --help" for commands`,
  );
}

/**
 * Reads the command line by the command's grammar and runs the command,
 * or prints its help (help_texts.ts, loaded only then): for `--help` or
 * `-h` among its options, and, when it needs arguments, for none.
 */
async function runCommand(
  name: CommandName,
  args: readonly string[],
  context: CommandContext,
): Promise<number> {
  if (args.length === 0 && commandSpec(name).needsArguments) {
    (await helpModule()).printCommandHelp(name, context);
    return ExitCode.Usage;
  }
  const parsed = parseArguments(name, args);
  if (parsed.help) {
    (await helpModule()).printCommandHelp(name, context);
    return 0;
  }
  return await (await loadCommand(name))(parsed, context);
}

/**
 * True when `name` is a loaded profile's name (an agent alias). The loader
 * is imported here, not at the top, so that commands such as `shim` (run
 * for every MCP server start) do not load it.
 */
async function isProfileName(
  name: string,
  context: CommandContext,
): Promise<boolean> {
  if (name.startsWith("-")) return false;
  const { profileNames } = await importLazily<
    typeof import("../profiles/loader.ts")
  >("lib/profiles/loader.ts");
  return profileNames(context.paths).has(name);
}
