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
  skippedMalformed,
} from "../config/toml_files.ts";
import { shortenForQuote } from "../config/names.ts";
import { didYouMean } from "../config/suggestion.ts";
import { CantCreateError, ExitCode, UsageError } from "../errors.ts";
import { describeFsError, writeFileExclusively } from "../private_files.ts";
import { join } from "../runtime/path.ts";
import { BUILTIN_PROFILES } from "../profiles/builtin.ts";
import { annotateProfile, overrideText } from "../profiles/profile_comments.ts";
import { findExecutable } from "../launch/spawn.ts";
import { agentSearchPath } from "../launch/search_path.ts";
import {
  loadAllProfiles,
  type LoadedProfile,
  loadProfile,
} from "../profiles/loader.ts";
import { ValidationCache } from "../config/validation_cache.ts";
import { writeEditorSchemas } from "../config/editor_schema_files.ts";
import type { CommandContext } from "./context.ts";
import { type Printer, printer } from "./output.ts";
import { isCommandName, type ParsedArguments } from "./commands.ts";
import type { AgentsJson } from "./json_shapes.ts";

/** Runs the command; returns the exit code. */
export async function agentsCommand(
  args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  const [name] = args.positionals;
  if (args.subcommand === "show") {
    return args.has("--builtin")
      ? showBuiltin(name, out)
      : await showProfile(name, context);
  }
  if (args.subcommand === "override") return writeOverride(name, context);
  const json = args.has("--json");
  const { env, paths } = context;
  const cache = new ValidationCache(paths.cacheDir);
  const listing = await loadAllProfiles({ paths, cache });
  cache.save();
  const rows: { name: string; cells: string[] }[] = [];
  const shape: AgentsJson = { agents: [] };
  for (const loaded of listing.profiles) {
    const name = loaded.profile.agent.name;
    const lookup = findExecutable(
      loaded.profile.agent.executable,
      agentSearchPath(loaded, { env }),
    );
    shape.agents.push({
      name,
      source: loaded.source === "built-in" ? "built-in" : "file",
      path: loaded.source === "built-in" ? null : loaded.path,
      shadowsBuiltin: loaded.shadowsBuiltin,
      valid: true,
      error: null,
      executable: loaded.profile.agent.executable,
      executablePath: lookup.found ? lookup.path : null,
      executableStatus: lookup.found ? "found" : lookup.reason,
    });
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
    shape.agents.push({
      name,
      source: "file",
      path: problem.path,
      shadowsBuiltin: Object.hasOwn(BUILTIN_PROFILES, name),
      valid: false,
      error: formatProblem(problem),
      executable: null,
      executablePath: null,
      executableStatus: null,
    });
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
  if (json) {
    shape.agents.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    out.json(shape);
    return listing.problems.length > 0 ? ExitCode.Config : 0;
  }
  const table = [
    ["NAME", "SOURCE", "EXECUTABLE"],
    ...rows.map((row) => [row.name, ...row.cells]),
  ];
  out.columns(table, "header");
  for (const problem of listing.problems) {
    out.warning(skippedMalformed("profile", problem));
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
  const key = problem.key ? `${shortenForQuote(problem.key)}: ` : "";
  const more = problem.further?.length
    ? ` (+${problem.further.length} more, below)`
    : "";
  return `${line}${key}${problem.reason}${more}`;
}

async function showProfile(
  name: string,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  const { paths } = context;
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
      out.warning(error.message);
      out.warning(
        `this file shadows the built-in ${name}: "sherlock agents show --builtin ${name}" shows the built-in, "sherlock agents override ${name}" writes an editable copy (once the file is gone or empty)`,
      );
      return error.exitCode;
    }
    throw error;
  } finally {
    cache.save();
  }
  if (loaded.source === "built-in") return showBuiltin(name, out);
  out.line(`# ${loaded.path}`);
  out.line(stringify(loaded.profile).trimEnd());
  return 0;
}

/**
 * Prints a built-in profile's own text, every key explained: built-ins
 * spell out every default, so this is the profile as it resolves.
 */
function showBuiltin(name: string, out: Printer): number {
  const text = builtinText(name);
  out.line("# built-in profile");
  out.line(annotateProfile(text).trimEnd());
  return 0;
}

/**
 * `agents override NAME`: writes the built-in's text, every key explained,
 * to `agents.d/NAME.toml` and prints its path. Never replaces a file with
 * something in it; an empty one (what a failed `> agents.d/NAME.toml`
 * leaves) holds nothing to lose and is replaced.
 */
function writeOverride(name: string, context: CommandContext): number {
  const out = printer(context);
  const text = builtinText(name);
  const { paths } = context;
  const path = join(paths.agentsDir, `${name}.toml`);
  const empty = isEmptyFile(path);
  // Where the file's #:schema line points, for the operator's editor.
  writeEditorSchemas(paths.configDir);
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
  if (empty) out.warning(`replaced the empty file ${path}`);
  out.line(path);
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
