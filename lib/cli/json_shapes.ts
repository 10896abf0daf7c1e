/**
 * What `--json` prints, for scripts and CI: one shape per command, each a
 * zod schema and the TypeScript type inferred from it, so the two cannot
 * drift. The commands import only the types (`import type`), so zod is not
 * loaded to print; the tests check every command's real output against its
 * schema, and docs/json.md describes each one. A shape only grows: a field
 * is never renamed, removed or given another meaning. No shape holds a
 * secret's value or a token.
 *
 * @module
 */

import { z } from "zod";
import { TOKEN_SOURCES } from "../services/token_sources.ts";

/** A malformed file, as the listings report it. */
export const FILE_PROBLEM_JSON = z.object({
  /** The file. */
  path: z.string(),
  /** Its problems, one line each (no value from the file). */
  error: z.string(),
});

/** `sherlock agents --json`. */
export const AGENTS_JSON = z.object({
  agents: z.array(
    z.object({
      name: z.string(),
      /** `built-in`, or `file` for agents.d/. */
      source: z.enum(["built-in", "file"]),
      /** The file in agents.d/; null for a built-in. */
      path: z.string().nullable(),
      /** True when a file in agents.d/ shadows the built-in of its name. */
      shadowsBuiltin: z.boolean(),
      /** False for a malformed file (see `error`). */
      valid: z.boolean(),
      /** The file's problems, when it is malformed; null otherwise. */
      error: z.string().nullable(),
      /** The profile's executable; null for a malformed file. */
      executable: z.string().nullable(),
      /** Where it was found on the agent's PATH; null when not found. */
      executablePath: z.string().nullable(),
      /** `found`, `missing`, `not-executable`; null for a malformed file. */
      executableStatus: z.enum(["found", "missing", "not-executable"])
        .nullable(),
    }).strict(),
  ),
}).strict();

/** The type of {@linkcode AGENTS_JSON}. */
export type AgentsJson = z.infer<typeof AGENTS_JSON>;

/** `sherlock services --json`. */
export const SERVICES_JSON = z.object({
  services: z.array(
    z.object({
      name: z.string(),
      /** The file in services.d/. */
      path: z.string(),
      kind: z.enum(["stdio", "remote"]),
      /** A remote server's transport; null for stdio. */
      transport: z.enum(["http", "sse"]).nullable(),
      /** `[token] source`. */
      tokenSource: z.enum(TOKEN_SOURCES),
      /** The delivery for an agent whose config is a session file; or null. */
      delivery: z.string().nullable(),
      /** The command was found, or the URL's host resolves. */
      serverReachable: z.boolean(),
      /** What the SERVER column says. */
      server: z.string(),
      /** `ready`, `missing`, `unknown` (broker not running or locked), `none`. */
      tokenStatus: z.enum(["ready", "missing", "unknown", "none"]),
      /** What the TOKEN AVAILABLE column says. */
      token: z.string(),
    }).strict(),
  ),
  /** The malformed files of services.d/ (the exit code is then 78). */
  problems: z.array(FILE_PROBLEM_JSON),
}).strict();

/** The type of {@linkcode SERVICES_JSON}. */
export type ServicesJson = z.infer<typeof SERVICES_JSON>;

/** A login, as the broker tells it; without a running broker, all null. */
export const LOGIN_JSON = z.object({
  /** True while the store is unlocked. */
  loggedIn: z.boolean(),
  /** The login provider (`local`); null when the broker is not running. */
  provider: z.string().nullable(),
  /** Who is logged in; null when not. */
  user: z.string().nullable(),
  /** Since when (RFC 3339); null when not logged in. */
  since: z.string().nullable(),
  /** When the idle timeout locks the store (RFC 3339); or null. */
  locksAt: z.string().nullable(),
  /** Whether the store exists; null when the broker is not running. */
  storeExists: z.boolean().nullable(),
  /** The SSO login (`[login] provider = "oidc"`); null when there is none. */
  oidc: z.object({
    issuer: z.string(),
    subject: z.string(),
    /** The ID token's e-mail; null when it has none. */
    email: z.string().nullable(),
    since: z.string(),
    /** When the access token held expires (RFC 3339). */
    accessTokenExpiresAt: z.string(),
    /** Whether a refresh token is held (the login renews itself). */
    refreshToken: z.boolean(),
  }).strict().nullable(),
  /**
   * The key the OS keyring remembers (`sherlock login --remember`); null
   * when the store has none (or the broker is not running).
   */
  remembered: z.object({
    /** "Secret Service", "Keychain" or "Credential Manager". */
    keyring: z.string(),
    /** `unlocked`, `kept`, `absent`, `unavailable` or `wrong`. */
    state: z.enum(["unlocked", "kept", "absent", "unavailable", "wrong"]),
    /** Why it did not unlock the store; null when it did or was not asked. */
    reason: z.string().nullable(),
  }).strict().nullable(),
}).strict();

/** `sherlock whoami --json`. */
export const WHOAMI_JSON = LOGIN_JSON.extend({
  /** Whether a broker answers (whoami never starts one). */
  brokerRunning: z.boolean(),
}).strict();

/** The type of {@linkcode WHOAMI_JSON}. */
export type WhoamiJson = z.infer<typeof WHOAMI_JSON>;

/** `sherlock secret ls --json`: names and dates, never a value. */
export const SECRETS_JSON = z.object({
  secrets: z.array(
    z.object({
      name: z.string(),
      created: z.string(),
      updated: z.string(),
    }).strict(),
  ),
}).strict();

/** The type of {@linkcode SECRETS_JSON}. */
export type SecretsJson = z.infer<typeof SECRETS_JSON>;

/** `sherlock broker status --json`. */
export const BROKER_STATUS_JSON = z.object({
  running: z.boolean(),
  socket: z.string(),
  /** The daemon's pid, sherlock version and start time; null when not running. */
  pid: z.number().int().nullable(),
  version: z.string().nullable(),
  started: z.string().nullable(),
  /** Why the daemon's version is not this sherlock's; null when it is. */
  versionProblem: z.string().nullable(),
  /** Null when not running, or running another version (not asked). */
  login: LOGIN_JSON.nullable(),
}).strict();

/** The type of {@linkcode BROKER_STATUS_JSON}. */
export type BrokerStatusJson = z.infer<typeof BROKER_STATUS_JSON>;

/** `sherlock auth status --json`: the broker's own answer, as it is. */
export const AUTH_STATUS_JSON = z.object({
  services: z.array(
    z.object({
      service: z.string(),
      authorized: z.boolean(),
      issuer: z.string().nullable(),
      scopes: z.array(z.string()),
      accessTokenExpiresAt: z.string().nullable(),
      refreshToken: z.boolean(),
      scopesNeeded: z.array(z.string()),
    }).strict(),
  ),
}).strict();

/** The type of {@linkcode AUTH_STATUS_JSON}. */
export type AuthStatusJson = z.infer<typeof AUTH_STATUS_JSON>;

/** `sherlock doctor --json`. */
export const DOCTOR_JSON = z.object({
  /** True when no check failed (the exit code is then 0). */
  ok: z.boolean(),
  checks: z.array(
    z.object({
      /** `sherlock`, `runtime`, `broker`, `profile`, `service`, `agent`. */
      group: z.enum([
        "sherlock",
        "runtime",
        "broker",
        "profile",
        "service",
        "agent",
      ]),
      /** What was checked (a profile's or service's name, …). */
      name: z.string(),
      /** `ok`, `warn` (worth knowing, not failing), `fail`, `skip`. */
      verdict: z.enum(["ok", "warn", "fail", "skip"]),
      /** What was found, in one line. */
      detail: z.string(),
      /** What to do about it; null when nothing. */
      fix: z.string().nullable(),
    }).strict(),
  ),
}).strict();

/** The type of {@linkcode DOCTOR_JSON}. */
export type DoctorJson = z.infer<typeof DOCTOR_JSON>;
