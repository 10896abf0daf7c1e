/**
 * The entry point's dispatcher: a sherlock command, an agent alias, or
 * help. Every failure becomes one line on stderr and a documented exit code.
 *
 * @module
 */

import { importLazily } from "../runtime/lazy_import.ts";
import { ExitCode, UsageError } from "../errors.ts";
import { COMMANDS, isCommandName } from "./commands.ts";
import { commandContext } from "./context.ts";
import { reportError } from "./output.ts";

/** Runs sherlock with `args` (without the program name); returns the exit code. */
export async function main(args: readonly string[]): Promise<number> {
  try {
    return await dispatch(args);
  } catch (error) {
    return reportError(error);
  }
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
  if (first === "--help" || first === "-h") {
    return await (await COMMANDS.help.load())([]);
  }
  if (first === "--version" || first === "-V") {
    return await (await COMMANDS.version.load())([]);
  }
  if (isCommandName(first)) {
    return await (await COMMANDS[first].load())(args.slice(1));
  }
  if (first === "--dry-run" || await isProfileName(first)) {
    return await (await COMMANDS.run.load())(args);
  }
  if (first.startsWith("-")) {
    throw new UsageError(`unknown option ${first}; see sherlock --help`);
  }
  throw new UsageError(
    `no command or agent named "${first}"; run "sherlock agents" to list agents, "sherlock --help" for commands`,
  );
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
