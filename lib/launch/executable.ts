/**
 * Finding the agent's executable the way a shell would, so that a missing
 * or non-executable agent is reported before anything is written, and
 * `sherlock agents` can say whether each agent is installed.
 *
 * @module
 */

import { delimiter, isAbsolute, join } from "../runtime/path.ts";
import { ExecutableNotFoundError, NotExecutableError } from "../errors.ts";

/** Where an executable was found, or why it was not. */
export type ExecutableLookup =
  | { found: true; path: string }
  | { found: false; reason: "missing" | "not-executable"; path?: string };

/**
 * Looks `name` up: a name with a `/` is taken as a path, anything else is
 * searched in each folder of `searchPath` (the agent's `PATH`). A file
 * without any execute bit is remembered and reported as not executable when
 * no executable one is found.
 */
export function findExecutable(
  name: string,
  searchPath: string | undefined,
): ExecutableLookup {
  if (name.includes("/") || isAbsolute(name)) {
    return check(name) ?? { found: false, reason: "missing" };
  }
  let notExecutable: string | undefined;
  for (const folder of (searchPath ?? "").split(delimiter)) {
    if (folder === "") continue;
    const candidate = join(folder, name);
    const result = check(candidate);
    if (result?.found) return result;
    if (result) notExecutable ??= candidate;
  }
  return notExecutable
    ? { found: false, reason: "not-executable", path: notExecutable }
    : { found: false, reason: "missing" };
}

/**
 * Like {@linkcode findExecutable}, but throws the error that maps to exit
 * 127 or 126 with one line naming the agent and what to do.
 */
export function requireExecutable(
  options: { name: string; searchPath: string | undefined; agent: string },
): string {
  const lookup = findExecutable(options.name, options.searchPath);
  if (lookup.found) return lookup.path;
  if (lookup.reason === "not-executable") {
    throw new NotExecutableError(
      `${lookup.path} (agent ${options.agent}) is not executable; chmod +x it or fix the profile's executable`,
    );
  }
  throw new ExecutableNotFoundError(
    options.name.includes("/")
      ? `${options.name} (agent ${options.agent}) does not exist; install the agent or fix the profile's executable`
      : `${options.name} (agent ${options.agent}) was not found on PATH; install the agent or put it on PATH`,
  );
}

function check(path: string): ExecutableLookup | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch {
    return undefined;
  }
  if (!info.isFile) return undefined;
  const executable = info.mode === null || (info.mode & 0o111) !== 0;
  return executable
    ? { found: true, path }
    : { found: false, reason: "not-executable", path };
}
