/**
 * `sherlock agents` lists every profile; `sherlock agents show <name>`
 * prints one as it resolved, every default filled in.
 *
 * @module
 */

import { stringify } from "smol-toml";
import { formatProblem } from "../config/toml_files.ts";
import { ConfigError, ExitCode, UsageError } from "../errors.ts";
import type { ExpandContext } from "../config/expand.ts";
import { findExecutable } from "../launch/spawn.ts";
import { buildEnv } from "../launch/plan.ts";
import {
  loadAllProfiles,
  type LoadedProfile,
  loadProfile,
} from "../profiles/loader.ts";
import { ValidationCache } from "../config/validation_cache.ts";
import { commandContext } from "./context.ts";
import { columns, printLine, printWarning } from "./output.ts";
import { isCommandName } from "./commands.ts";

/** Runs the command; returns the exit code. */
export async function agentsCommand(args: readonly string[]): Promise<number> {
  if (args[0] === "show") {
    if (args.length !== 2) {
      throw new UsageError("usage: sherlock agents show <name>");
    }
    return await showProfile(args[1]);
  }
  if (args.length > 0) {
    throw new UsageError(
      `unexpected argument ${args[0]}; see sherlock agents --help`,
    );
  }
  const { env, uid, paths } = commandContext();
  const cache = new ValidationCache(paths.cacheDir);
  const listing = await loadAllProfiles({ paths, cache });
  cache.save();
  const rows = [["NAME", "SOURCE", "EXECUTABLE"]];
  for (const loaded of listing.profiles) {
    const name = loaded.profile.agent.name;
    const lookup = findExecutable(
      loaded.profile.agent.executable,
      agentSearchPath(loaded, { env, uid }),
    );
    let source = loaded.source === "built-in" ? "built-in" : loaded.path;
    if (loaded.shadowsBuiltin) source += " (overrides the built-in)";
    if (isCommandName(name)) source += ` (no alias: use sherlock run ${name})`;
    rows.push([
      name,
      source,
      lookup.found
        ? lookup.path
        : lookup.reason === "missing"
        ? `${loaded.profile.agent.executable}: not found on PATH`
        : `${lookup.path}: not executable`,
    ]);
  }
  for (const line of columns(rows)) printLine(line);
  for (const problem of listing.problems) {
    printWarning(`skipped malformed profile ${formatProblem(problem)}`);
  }
  return listing.problems.length > 0 ? ExitCode.Config : 0;
}

/**
 * The PATH the agent is looked up on when it runs: the operator's, or the
 * profile's `[env] PATH` when it sets one. A profile whose `[env]` cannot
 * be expanded here is looked up on the operator's (running it says why).
 */
function agentSearchPath(
  loaded: LoadedProfile,
  context: ExpandContext,
): string | undefined {
  try {
    return buildEnv({ loaded, configPath: undefined, context }).env.PATH;
  } catch (error) {
    if (error instanceof ConfigError) return context.env.PATH;
    throw error;
  }
}

async function showProfile(name: string): Promise<number> {
  const { paths } = commandContext();
  const cache = new ValidationCache(paths.cacheDir);
  const loaded = await loadProfile(name, { paths, cache });
  cache.save();
  printLine(
    `# ${loaded.source === "built-in" ? "built-in profile" : loaded.path}`,
  );
  printLine(stringify(loaded.profile).trimEnd());
  return 0;
}
