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

/**
 * `[broker] idle_timeout` when config.toml does not set it: an hour without
 * a token request locks the store (0 means never). Long enough for a working
 * session, short enough that a machine left unattended over lunch or the
 * night does not keep every token one request away (docs/security.md).
 */
export const DEFAULT_IDLE_TIMEOUT_SECONDS = 3600;

/** The settings every missing key falls back to. */
export const DEFAULT_SETTINGS: Settings = {
  login: { provider: "local" },
  broker: { idle_timeout: DEFAULT_IDLE_TIMEOUT_SECONDS },
  render: { tokens: "inline" },
  run: { strict: false },
  services: { default: "all" },
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
        "lib/config/settings_schema.ts",
      )).validateSettings,
    cache: sources.cache,
  });
}
