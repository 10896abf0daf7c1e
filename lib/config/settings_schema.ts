/**
 * The schema of `$XDG_CONFIG_HOME/sherlock/config.toml`, sherlock's own
 * settings. Strict like profiles and services; imported lazily.
 *
 * @module
 */

import { z } from "zod";
import type { Validation } from "./toml_files.ts";
import { validateWith } from "./schema_problems.ts";
import { DEFAULT_IDLE_TIMEOUT_SECONDS } from "./settings.ts";

/**
 * The largest `[broker] idle_timeout`, in seconds: 7 days. (A timer cannot
 * wait longer than ~24.8 days; a week of idleness is long enough.)
 */
export const MAX_IDLE_TIMEOUT_SECONDS = 7 * 24 * 3600;

/** config.toml as the schema normalizes it. */
export const settingsSchema = z.strictObject({
  login: z.strictObject({
    provider: z.enum(["local"], {
      error: (issue) =>
        issue.input === "oidc"
          ? "oidc is not available in this version of sherlock; use local"
          : `must be "local"`,
    }).default("local"),
  }).default({ provider: "local" }),
  broker: z.strictObject({
    // 0: never lock.
    idle_timeout: z.int().nonnegative(
      "must be a number of seconds, 0 for never",
    ).max(
      MAX_IDLE_TIMEOUT_SECONDS,
      `must be at most ${MAX_IDLE_TIMEOUT_SECONDS} seconds (7 days)`,
    ).default(DEFAULT_IDLE_TIMEOUT_SECONDS),
  }).default({ idle_timeout: DEFAULT_IDLE_TIMEOUT_SECONDS }),
  render: z.strictObject({
    tokens: z.enum(["inline", "shim"]).default("inline"),
  }).default({ tokens: "inline" }),
  run: z.strictObject({
    // As `sherlock run --strict`: a service that cannot be part of the
    // session stops it instead of being left out.
    strict: z.boolean().default(false),
  }).default({ strict: false }),
  services: z.strictObject({
    // "none": deny by default; a session gets only the services its
    // profile's [services] include or `--service` names.
    default: z.enum(["all", "none"]).default("all"),
  }).default({ default: "all" }),
});

/** sherlock's settings. */
export type Settings = z.output<typeof settingsSchema>;

/** Validates a parsed config.toml. */
export function validateSettings(
  raw: unknown,
  text: string,
): Validation<Settings> {
  return validateWith(settingsSchema, raw, text);
}
