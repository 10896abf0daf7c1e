/**
 * `sherlock agents` lists every profile (a malformed one too, with its
 * error); `sherlock agents show [--builtin] <name>` prints one as it
 * resolved, every default filled in; `sherlock agents override <name>`
 * copies a built-in into agents.d/ to edit.
 *
 * @module
 */

import { stringify } from "smol-toml";
import {
  type FileProblem,
  formatProblem,
  InvalidFileError,
} from "../config/toml_files.ts";
import { didYouMean } from "../config/suggestion.ts";
import {
  CantCreateError,
  ConfigError,
  ExitCode,
  UsageError,
} from "../errors.ts";
import { describeFsError, writeFileExclusively } from "../private_files.ts";
import { join } from "../runtime/path.ts";
import { BUILTIN_PROFILES } from "../profiles/builtin.ts";
import { annotateProfile, overrideText } from "../profiles/profile_comments.ts";
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
import { printColumns, printLine, printWarning } from "./output.ts";
import { isCommandName } from "./commands.ts";

/** Runs the command; returns the exit code. */
export async function agentsCommand(args: readonly string[]): Promise<number> {
  if (args[0] === "show") {
    const builtin = args[1] === "--builtin";
    const names = args.slice(builtin ? 2 : 1);
    if (names.length !== 1 || names[0].startsWith("-")) {
      throw new UsageError("usage: sherlock agents show [--builtin] <name>");
    }
    return builtin ? showBuiltin(names[0]) : await showProfile(names[0]);
  }
  if (args[0] === "override") {
    if (args.length !== 2 || args[1].startsWith("-")) {
      throw new UsageError("usage: sherlock agents override <name>");
    }
    return writeOverride(args[1]);
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
  const rows: { name: string; cells: string[] }[] = [];
  for (const loaded of listing.profiles) {
    const name = loaded.profile.agent.name;
    const lookup = findExecutable(
      loaded.profile.agent.executable,
      agentSearchPath(loaded, { env, uid }),
    );
    let source = loaded.source === "built-in" ? "built-in" : loaded.path;
    if (loaded.shadowsBuiltin) source += " (overrides the built-in)";
    if (isCommandName(name)) source += ` (no alias: use sherlock run ${name})`;
    rows.push({
      name,
      cells: [
        source,
        lookup.found
          ? lookup.path
          : lookup.reason === "missing"
          ? `${loaded.profile.agent.executable}: not found on PATH`
          : `${lookup.path}: not executable`,
      ],
    });
  }
  // A malformed file keeps its row (it shadows a built-in of its name,
  // which would otherwise seem to vanish): its first problem stands in for
  // the executable, and every problem follows on stderr.
  for (const problem of listing.problems) {
    const name = fileBasename(problem.path);
    rows.push({
      name,
      cells: [
        `${problem.path} (malformed${
          Object.hasOwn(BUILTIN_PROFILES, name) ? "; shadows the built-in" : ""
        })`,
        `error: ${firstProblem(problem)}`,
      ],
    });
  }
  rows.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const table = [
    ["NAME", "SOURCE", "EXECUTABLE"],
    ...rows.map((row) => [row.name, ...row.cells]),
  ];
  printColumns(table, "header");
  for (const problem of listing.problems) {
    printWarning(`skipped malformed profile ${formatProblem(problem)}`);
  }
  return listing.problems.length > 0 ? ExitCode.Config : 0;
}

/** The basename of an agents.d file, without `.toml`: the agent's name. */
function fileBasename(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1).replace(/\.toml$/, "");
}

/** A problem's first line, without the path (the row names the file). */
function firstProblem(problem: FileProblem): string {
  const line = problem.line === undefined ? "" : `line ${problem.line}: `;
  const key = problem.key ? `${problem.key}: ` : "";
  const more = problem.further?.length
    ? ` (+${problem.further.length} more, below)`
    : "";
  return `${line}${key}${problem.reason}${more}`;
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
  let loaded: LoadedProfile;
  try {
    loaded = await loadProfile(name, { paths, cache });
  } catch (error) {
    if (
      error instanceof InvalidFileError && Object.hasOwn(BUILTIN_PROFILES, name)
    ) {
      // The newcomer's trap: `agents show claude > agents.d/claude.toml`
      // creates the empty file before sherlock runs.
      printWarning(error.message);
      printWarning(
        `this file shadows the built-in ${name}: "sherlock agents show --builtin ${name}" shows the built-in, "sherlock agents override ${name}" writes an editable copy (once the file is gone or empty)`,
      );
      return error.exitCode;
    }
    throw error;
  } finally {
    cache.save();
  }
  if (loaded.source === "built-in") return showBuiltin(name);
  printLine(`# ${loaded.path}`);
  printLine(stringify(loaded.profile).trimEnd());
  return 0;
}

/**
 * Prints a built-in profile's own text, every key explained: built-ins
 * spell out every default, so this is the profile as it resolves.
 */
function showBuiltin(name: string): number {
  const text = builtinText(name);
  printLine("# built-in profile");
  printLine(annotateProfile(text).trimEnd());
  return 0;
}

/**
 * `agents override NAME`: writes the built-in's text, every key explained,
 * to `agents.d/NAME.toml` and prints its path. Never replaces a file with
 * something in it; an empty one (what a failed `> agents.d/NAME.toml`
 * leaves) holds nothing to lose and is replaced.
 */
function writeOverride(name: string): number {
  const text = builtinText(name);
  const { paths } = commandContext();
  const path = join(paths.agentsDir, `${name}.toml`);
  const empty = isEmptyFile(path);
  if (empty) Deno.removeSync(path);
  try {
    Deno.mkdirSync(paths.agentsDir, { recursive: true });
  } catch (error) {
    throw new CantCreateError(
      `cannot create ${paths.agentsDir}: ${describeFsError(error)}`,
    );
  }
  const written = writeFileExclusively({
    path,
    bytes: new TextEncoder().encode(overrideText(name, text) + "\n"),
    mode: 0o644,
  });
  if (!written) {
    throw new CantCreateError(
      `${path} already exists and was left as it is; edit it, or remove it and run "sherlock agents override ${name}" again`,
    );
  }
  if (empty) printWarning(`replaced the empty file ${path}`);
  printLine(path);
  return 0;
}

/** The built-in's text; a usage error naming the built-ins otherwise. */
function builtinText(name: string): string {
  if (Object.hasOwn(BUILTIN_PROFILES, name)) return BUILTIN_PROFILES[name];
  const names = Object.keys(BUILTIN_PROFILES);
  throw new UsageError(
    `no built-in profile named "${name}"${
      didYouMean(name, names)
    }; the built-ins are ${names.join(", ")}`,
  );
}

/** True for a regular file (not a symlink) of zero bytes at `path`. */
function isEmptyFile(path: string): boolean {
  try {
    const info = Deno.lstatSync(path);
    return info.isFile && info.size === 0;
  } catch {
    return false;
  }
}
