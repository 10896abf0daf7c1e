/**
 * The entry point's dispatcher: a sherlock command, an agent alias, or
 * help. Every failure becomes one line on stderr and a documented exit code.
 *
 * @module
 */

import { importLazily } from "../runtime/lazy_import.ts";
import { ExitCode, UsageError } from "../errors.ts";
import {
  type CommandName,
  COMMANDS,
  type CommandSpec,
  isCommandName,
  isHelpFlag,
  loadCommand,
} from "./commands.ts";
import { commandContext } from "./context.ts";
import { printHelp, reportError } from "./output.ts";

/** Runs sherlock with `args` (without the program name); returns the exit code. */
export async function main(args: readonly string[]): Promise<number> {
  try {
    return await dispatch(args);
  } catch (error) {
    return reportError(error);
  }
}

/** `sherlock run`'s options, which may also come first in `sherlock [options] <agent>`. */
const RUN_OPTIONS: ReadonlySet<string> = new Set([
  "--dry-run",
  "--strict",
  "-v",
  "--verbose",
  "--service",
  "--no-service",
]);

/** True for one of {@linkcode RUN_OPTIONS}, also as `--service=NAME`. */
function isRunOption(arg: string): boolean {
  return RUN_OPTIONS.has(arg.split("=", 1)[0]);
}

async function dispatch(args: readonly string[]): Promise<number> {
  const [first] = args;
  if (first === undefined) {
    const { mainHelp } = await importLazily<typeof import("./help.ts")>(
      new URL("./help.ts", import.meta.url),
    );
    Deno.stderr.writeSync(new TextEncoder().encode(mainHelp() + "\n"));
    return ExitCode.Usage;
  }
  if (isHelpFlag(first)) return await runCommand("help", []);
  if (first === "--version" || first === "-V") {
    return await runCommand("version", []);
  }
  if (isCommandName(first)) return await runCommand(first, args.slice(1));
  if (isRunOption(first) || await isProfileName(first)) {
    return await runCommand("run", args);
  }
  if (first.startsWith("-")) {
    throw new UsageError(`unknown option ${first}; see sherlock --help`);
  }
  throw await unknownName(first);
}

/** The error for a first argument that is no command and no agent. */
async function unknownName(name: string): Promise<UsageError> {
  const [{ didYouMean }, { profileNames }] = await Promise.all([
    importLazily<typeof import("../config/suggestion.ts")>(
      new URL("../config/suggestion.ts", import.meta.url),
    ),
    importLazily<typeof import("../profiles/loader.ts")>(
      new URL("../profiles/loader.ts", import.meta.url),
    ),
  ]);
  const known = [
    ...Object.keys(COMMANDS),
    ...profileNames(commandContext().paths),
  ];
  return new UsageError(
    `no command or agent named "${name}"${
      didYouMean(name, known)
    }; run "sherlock agents" to list agents, "sherlock --help" for commands`,
  );
}

/**
 * Runs the command, or prints its help from the table: for `--help` or
 * `-h` as its first argument, and, when it needs arguments, for none.
 */
async function runCommand(
  name: CommandName,
  args: readonly string[],
): Promise<number> {
  const spec: CommandSpec = COMMANDS[name];
  if (isHelpFlag(args[0])) {
    printHelp(spec.help);
    return 0;
  }
  if (args.length === 0 && spec.needsArguments) {
    printHelp(spec.help);
    return ExitCode.Usage;
  }
  return await (await loadCommand(name))(args);
}

/**
 * True when `name` is a loaded profile's name (an agent alias). The loader
 * is imported here, not at the top, so that commands such as `shim` (run
 * for every MCP server start) do not load it.
 */
async function isProfileName(name: string): Promise<boolean> {
  if (name.startsWith("-")) return false;
  const { profileNames } = await importLazily<
    typeof import("../profiles/loader.ts")
  >(new URL("../profiles/loader.ts", import.meta.url));
  return profileNames(commandContext().paths).has(name);
}
