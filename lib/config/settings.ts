/**
 * Reads `config.toml`, sherlock's own settings; a missing file means every
 * default. A malformed or unreadable file is an error (exit 78): settings
 * are never guessed.
 *
 * @module
 */

import { importLazily } from "../runtime/lazy_import.ts";
import { readOperatorFile, readTomlFile } from "./toml_files.ts";
import type { SherlockPaths } from "./sherlock_paths.ts";
import type { Settings } from "./settings_schema.ts";
import type { ValidationCache } from "./validation_cache.ts";

export type { Settings } from "./settings_schema.ts";

/** The settings every missing key falls back to. */
export const DEFAULT_SETTINGS: Settings = {
  login: { provider: "local" },
  broker: {},
  render: { tokens: "inline" },
};

/**
 * Loads config.toml. Throws `InvalidFileError` when it is malformed or
 * cannot be read (a folder, a dangling symlink, no permission), as for a
 * profile.
 */
export async function loadSettings(
  sources: { paths: SherlockPaths; cache: ValidationCache },
): Promise<Settings> {
  const text = readOperatorFile(sources.paths.configFile, "config.toml");
  if (text === undefined) return DEFAULT_SETTINGS;
  return await readTomlFile({
    kind: "settings",
    path: sources.paths.configFile,
    text,
    loadValidator: async () =>
      (await importLazily<typeof import("./settings_schema.ts")>(
        new URL("./settings_schema.ts", import.meta.url),
      )).validateSettings,
    cache: sources.cache,
  });
}
