/**
 * Reads `config.toml`, sherlock's own settings; a missing file means every
 * default. A malformed file is an error (exit 78): settings are never
 * guessed.
 *
 * @module
 */

import { importLazily } from "../runtime/lazy_import.ts";
import { readTomlFile } from "./toml_files.ts";
import type { SherlockPaths } from "./sherlock_paths.ts";
import { readTextIfPresent } from "../private_files.ts";
import type { Settings } from "./settings_schema.ts";
import type { ValidationCache } from "./validation_cache.ts";

export type { Settings } from "./settings_schema.ts";

/** The settings every missing key falls back to. */
export const DEFAULT_SETTINGS: Settings = {
  login: { provider: "local" },
  broker: {},
  render: { tokens: "inline" },
};

/** Loads config.toml. Throws `InvalidFileError` when it is malformed. */
export async function loadSettings(
  sources: { paths: SherlockPaths; cache: ValidationCache },
): Promise<Settings> {
  const text = readTextIfPresent(sources.paths.configFile);
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
