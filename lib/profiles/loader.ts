/**
 * Finds and loads agent profiles: the built-ins, and the operator's files in
 * `agents.d/`, each of which shadows a built-in of the same name entirely.
 *
 * A malformed operator file is never half-loaded: loading it throws (for
 * `run`), or it is listed as a problem while every other profile loads (for
 * `sherlock agents`).
 *
 * @module
 */

import { importLazily } from "../runtime/lazy_import.ts";
import { join } from "../runtime/path.ts";
import {
  type FileProblem,
  InvalidFileError,
  listTomlFiles,
  type NamedFileKind,
  readNamedTomlFile,
  readOperatorFile,
  readTomlFile,
} from "../config/toml_files.ts";
import { UsageError } from "../errors.ts";
import { didYouMean } from "../config/suggestion.ts";
import type { SherlockPaths } from "../config/sherlock_paths.ts";
import type { ValidationCache } from "../config/validation_cache.ts";
import { BUILTIN_PROFILES, builtinPath } from "./builtin.ts";
import type { Profile } from "./schema.ts";

export type { Profile } from "./schema.ts";

/** A profile together with where it came from. */
export interface LoadedProfile {
  /** The normalized profile. */
  profile: Profile;
  /** `built-in`, or `override` for a file in `agents.d/`. */
  source: "built-in" | "override";
  /** The file's path (`built-in:<name>.toml` for a built-in). */
  path: string;
  /** True when an override shadows a built-in of the same name. */
  shadowsBuiltin: boolean;
}

/** Every loadable profile, and the problems of those that are not. */
export interface ProfileListing {
  /** The loaded profiles, sorted by name. */
  profiles: LoadedProfile[];
  /** One problem per malformed file, sorted by path. */
  problems: FileProblem[];
}

/** Where to look and what to reuse. */
export interface ProfileSources {
  /** sherlock's locations (for `agents.d/`). */
  paths: SherlockPaths;
  /** Earlier successful validations. */
  cache: ValidationCache;
}

/**
 * The names of every profile, without reading any file: the built-ins and
 * the basenames of `agents.d/*.toml`. Used to recognize `sherlock <agent>`.
 */
export function profileNames(paths: SherlockPaths): Set<string> {
  const names = new Set(Object.keys(BUILTIN_PROFILES));
  for (const file of listTomlFiles(paths.agentsDir)) names.add(file.name);
  return names;
}

/**
 * Loads one profile by name. Throws {@linkcode UsageError} when there is no
 * such profile and {@linkcode InvalidFileError} when its file is malformed.
 */
export async function loadProfile(
  name: string,
  sources: ProfileSources,
): Promise<LoadedProfile> {
  if (!isFileBasename(name)) throw noSuchProfile(name, sources.paths);
  const overridePath = join(sources.paths.agentsDir, `${name}.toml`);
  const text = readOperatorFile(overridePath, "a profile");
  if (text !== undefined) {
    return {
      profile: await readNamedTomlFile(PROFILE_FILE, {
        path: overridePath,
        basename: name,
        text,
        cache: sources.cache,
      }),
      source: "override",
      path: overridePath,
      shadowsBuiltin: Object.hasOwn(BUILTIN_PROFILES, name),
    };
  }
  const builtin = Object.hasOwn(BUILTIN_PROFILES, name)
    ? BUILTIN_PROFILES[name]
    : undefined;
  if (builtin === undefined) throw noSuchProfile(name, sources.paths);
  return {
    // Built-ins spell out every default and are validated by a test, so
    // they are only parsed (once per version: the cache remembers them).
    profile: await readTomlFile({
      kind: "built-in profile",
      path: builtinPath(name),
      text: builtin,
      loadValidator: () =>
        Promise.resolve((raw) => ({ ok: true, value: raw as Profile })),
      cache: sources.cache,
    }),
    source: "built-in",
    path: builtinPath(name),
    shadowsBuiltin: false,
  };
}

/**
 * True when `name` can be the basename of a file in `agents.d/` as
 * {@linkcode listTomlFiles} lists them: a name never reaches outside it.
 */
function isFileBasename(name: string): boolean {
  return name !== "" && !name.startsWith(".") && !/[/\\\0]/.test(name);
}

function noSuchProfile(name: string, paths: SherlockPaths): UsageError {
  return new UsageError(
    `no agent profile named "${name}"${
      didYouMean(name, profileNames(paths))
    }; run "sherlock agents" to list them`,
  );
}

/** Loads every profile; malformed files become problems, not errors. */
export async function loadAllProfiles(
  sources: ProfileSources,
): Promise<ProfileListing> {
  const profiles: LoadedProfile[] = [];
  const problems: FileProblem[] = [];
  for (const name of [...profileNames(sources.paths)].sort()) {
    try {
      profiles.push(await loadProfile(name, sources));
    } catch (error) {
      if (!(error instanceof InvalidFileError)) throw error;
      problems.push(error.problem);
    }
  }
  return { profiles, problems };
}

const PROFILE_FILE: NamedFileKind<Profile> = {
  kind: "profile",
  nameKey: ["agent", "name"],
  nameOf: (profile) => profile.agent.name,
  loadValidator: async () =>
    (await importLazily<typeof import("./schema.ts")>(
      "lib/profiles/schema.ts",
    )).validateProfile,
};
