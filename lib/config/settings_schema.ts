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

/** The scopes an OIDC login asks for when `[login] scopes` is not set. */
export const DEFAULT_OIDC_SCOPES: readonly string[] = [
  "openid",
  "offline_access",
];

/** The keys only `provider = "oidc"` takes. */
const OIDC_KEYS = ["issuer", "client_id", "scopes", "audience"] as const;

/**
 * `[login]`: `local` (the passphrase store, the default) or `oidc` (single
 * sign-on at an OpenID provider with a public client).
 */
const loginSchema = z.strictObject({
  provider: z.enum(["local", "oidc"], {
    error: () => `must be "local" or "oidc"`,
  }).default("local"),
  issuer: z.string().refine(isProviderUrl, {
    message:
      "must be the provider's issuer URL (https, or http on 127.0.0.1/localhost)",
  }).optional(),
  client_id: z.string().min(1, "must not be empty").optional(),
  scopes: z.array(
    z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, {
      message: "each scope must be one word (RFC 6749 scope-token)",
    }),
  ).optional(),
  audience: z.string().min(1, "must not be empty").optional(),
}).superRefine((login, ctx) => {
  if (login.provider === "oidc") {
    for (const key of ["issuer", "client_id"] as const) {
      if (login[key] === undefined) {
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: `provider = "oidc" needs ${key} (the provider's ${
            key === "issuer" ? "issuer URL" : "public client's id"
          })`,
        });
      }
    }
    if (login.scopes !== undefined && !login.scopes.includes("openid")) {
      ctx.addIssue({
        code: "custom",
        path: ["scopes"],
        message: `must include "openid" (sign-in needs an ID token)`,
      });
    }
    return;
  }
  for (const key of OIDC_KEYS) {
    if (login[key] !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: [key],
        message: `applies only to provider = "oidc"`,
      });
    }
  }
});

/** config.toml as the schema normalizes it. */
export const settingsSchema = z.strictObject({
  login: loginSchema.default({ provider: "local" }),
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

function isProviderUrl(text: string): boolean {
  try {
    const url = new URL(text);
    if (url.search !== "" || url.hash !== "") return false;
    return url.protocol === "https:" ||
      (url.protocol === "http:" &&
        ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname));
  } catch {
    return false;
  }
}

/** sherlock's settings. */
export type Settings = z.output<typeof settingsSchema>;

/** Validates a parsed config.toml. */
export function validateSettings(
  raw: unknown,
  text: string,
): Validation<Settings> {
  return validateWith(settingsSchema, raw, text);
}
