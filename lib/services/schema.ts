/**
 * The service schema (`services.d/<name>.toml`): one MCP server, stdio or
 * remote, and how the broker gets its token. Strict: unknown keys are errors.
 *
 * Imported lazily, like the profile schema; the launch path uses the
 * {@linkcode Service} type only.
 *
 * @module
 */

import { z } from "zod";
import type { Validation } from "../config/toml_files.ts";
import {
  ENV_NAME_PATTERN,
  hasControlCharacters,
  HEADER_NAME_PATTERN,
  MAX_NAME_LENGTH,
  NAME_PATTERN,
} from "../config/names.ts";
import { validateWith } from "../config/schema_problems.ts";
import { TOKEN_SOURCES, type TokenSourceName } from "./token_sources.ts";

const envName = z.string().regex(
  ENV_NAME_PATTERN,
  "must be an environment variable name (letters, digits, '_')",
);

const serverSchema = z.strictObject({
  command: z.string().min(1, "must not be empty").optional(),
  args: z.array(z.string()).optional(),
  env: z.record(envName, z.string()).optional(),
  url: z.url({
    protocol: /^https?$/,
    error: "must be an http:// or https:// URL",
  }).optional(),
  transport: z.enum(["http", "sse"]).optional(),
  headers: z.record(
    z.string().regex(HEADER_NAME_PATTERN, "must be an HTTP header name"),
    z.string().refine(
      (value) => !hasControlCharacters(value),
      "must not contain control characters (a newline?)",
    ),
  ).optional(),
}).superRefine((server, context) => {
  if ((server.command === undefined) === (server.url === undefined)) {
    context.addIssue({
      code: "custom",
      path: [server.command === undefined ? "command" : "url"],
      message: server.command === undefined
        ? "missing; set command (a stdio server) or url (a remote server)"
        : "set command or url, not both",
    });
    return;
  }
  const unused = server.command === undefined
    ? (["args", "env"] as const)
    : (["transport", "headers"] as const);
  for (const key of unused) {
    if (server[key] !== undefined) {
      context.addIssue({
        code: "custom",
        path: [key],
        message: server.command === undefined
          ? "only applies to a stdio server (command); remove it"
          : "only applies to a remote server (url); remove it",
      });
    }
  }
});

/**
 * The largest `[token] timeout`, in seconds: one hour. A helper that needs
 * longer is stuck; beyond ~24.8 days the timer would overflow anyway.
 */
export const MAX_TOKEN_TIMEOUT_SECONDS = 3600;

/**
 * The largest `[token] ttl`, in seconds: 30 days. Far beyond it an expiry
 * computed from the ttl is no longer a valid date.
 */
export const MAX_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

const tokenSchema = z.strictObject({
  source: z.enum(TOKEN_SOURCES, {
    // Anything else gets schema_problems.ts's "must be one of" the names.
    error: (issue) =>
      issue.input === "oidc"
        ? "oidc is not available in this version of sherlock; use command or secret"
        : undefined,
  }),
  command: z.array(z.string()).min(1, "must name a program").optional(),
  env: envName.optional(),
  header: z.string().regex(/^[A-Za-z0-9-]+$/, "must be an HTTP header name")
    .optional(),
  format: z.string().includes("{token}", { message: "must contain {token}" })
    .optional(),
  ttl: z.int().positive("must be a positive number of seconds")
    .max(
      MAX_TOKEN_TTL_SECONDS,
      `must be at most ${MAX_TOKEN_TTL_SECONDS} seconds (30 days)`,
    ).optional(),
  timeout: z.number().positive("must be a positive number of seconds")
    .max(
      MAX_TOKEN_TIMEOUT_SECONDS,
      `must be at most ${MAX_TOKEN_TIMEOUT_SECONDS} seconds (an hour)`,
    ).default(30),
  delivery: z.enum(["inline", "shim", "bridge"]).optional(),
  client_id: z.string().min(1, "must not be empty").refine(
    (value) => !hasControlCharacters(value),
    "must not contain control characters",
  ).optional(),
  client_secret: z.string().regex(
    NAME_PATTERN,
    'must be the name of a secret in sherlock\'s store ("sherlock secret set NAME"), not the secret itself',
  ).max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`)
    .refine(
      // A pasted secret (GitHub's are 40 hex digits) would pass as a name
      // and then be printed in "run sherlock secret set …".
      (value) => !/^[0-9a-f]{32,}$/.test(value),
      'looks like a secret itself; store it with "sherlock secret set NAME" and give NAME here',
    ).optional(),
  client_key: z.string().regex(
    NAME_PATTERN,
    'must be the name of a private key in sherlock\'s store ("sherlock secret set NAME" with the PEM on stdin), not the key itself',
  ).max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`)
    .optional(),
  grant: z.enum(["authorization_code", "client_credentials"]).optional(),
  client_metadata_url: z.url({
    protocol: /^https$/,
    error: "must be an https:// URL (a Client ID Metadata Document)",
  }).optional(),
  scopes: z.array(
    z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, "must be an OAuth scope"),
  ).optional(),
  send_resource: z.boolean().optional(),
  ema: z.boolean().optional(),
  ema_audiences: z.array(
    z.url({
      protocol: /^https?$/,
      error:
        "must be the issuer URL of an authorization server (https://…), as its metadata names it",
    }),
  ).min(1, "must name at least one authorization server's issuer")
    .optional(),
  subject: z.enum(["access_token", "id_token"]).optional(),
  audience: z.string().min(1, "must not be empty").refine(
    (value) => !hasControlCharacters(value),
    "must not contain control characters",
  ).optional(),
  resource: z.url({ error: "must be an absolute URL (RFC 8707)" })
    .optional(),
  requested_token_type: z.string().regex(
    /^urn:[A-Za-z0-9:._-]+$/,
    "must be a token type URN (urn:ietf:params:oauth:token-type:…)",
  ).optional(),
  mode: z.enum(["exchange", "refresh"]).optional(),
});

/** The `[token]` keys only `source = "oauth"` takes. */
const OAUTH_KEYS = [
  "client_id",
  "client_secret",
  "client_key",
  "grant",
  "client_metadata_url",
  "send_resource",
  "ema",
  "ema_audiences",
] as const;

/** The `[token]` keys only `source = "exchange"` takes. */
const EXCHANGE_KEYS = [
  "subject",
  "audience",
  "resource",
  "requested_token_type",
  "mode",
] as const;

/** A service file as the schema normalizes it. */
export const serviceSchema = z.strictObject({
  service: z.strictObject({
    name: z.string().regex(
      NAME_PATTERN,
      "must be lowercase letters, digits, '-' or '_', starting with a letter or digit",
    ).max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`),
    description: z.string().default(""),
    // Only sessions of these agents (profile names) get the service.
    agents: z.array(
      z.string().regex(
        NAME_PATTERN,
        "must be an agent's name (lowercase letters, digits, '-' or '_')",
      ),
    ).min(1, "must name at least one agent; remove it for every agent")
      .optional(),
  }),
  server: serverSchema,
  token: tokenSchema.default({ source: "none", timeout: 30 }),
}).superRefine((service, context) => {
  const { server, token } = service;
  const issue = (key: string, message: string) =>
    context.addIssue({ code: "custom", path: ["token", key], message });
  if (token.source === "command" && token.command === undefined) {
    issue("command", `missing; source = "command" needs the helper's argv`);
  }
  if (token.source !== "command" && token.command !== undefined) {
    issue("command", `only applies to source = "command"; remove it`);
  }
  const stdio = server.command !== undefined;
  if (token.source !== "oauth") {
    for (const key of OAUTH_KEYS) {
      if (token[key] !== undefined) {
        issue(key, `only applies to source = "oauth"; remove it`);
      }
    }
  }
  if (token.client_secret !== undefined && token.client_id === undefined) {
    issue(
      "client_secret",
      "needs client_id: a client secret belongs to a client registered at the server",
    );
  }
  if (token.client_key !== undefined && token.client_id === undefined) {
    issue(
      "client_key",
      "needs client_id: a client key belongs to a client registered at the server",
    );
  }
  if (token.client_key !== undefined && token.client_secret !== undefined) {
    issue(
      "client_key",
      "set client_secret or client_key, not both: the client proves itself with one",
    );
  }
  if (
    token.client_key !== undefined && token.grant !== "client_credentials"
  ) {
    issue(
      "client_key",
      'only applies to grant = "client_credentials" (private_key_jwt); remove it or set the grant',
    );
  }
  if (
    token.grant === "client_credentials" &&
    token.client_secret === undefined && token.client_key === undefined
  ) {
    issue(
      "grant",
      "client_credentials needs client_id and client_secret or client_key: the client logs in with no person, by its own credential",
    );
  }
  if (token.grant === "client_credentials") {
    for (
      const key of ["client_metadata_url", "ema", "ema_audiences"] as const
    ) {
      if (token[key] !== undefined) {
        issue(key, 'not used with grant = "client_credentials"; remove it');
      }
    }
  }
  if (token.source !== "exchange") {
    for (const key of EXCHANGE_KEYS) {
      if (token[key] !== undefined) {
        issue(key, `only applies to source = "exchange"; remove it`);
      }
    }
  }
  if (
    token.scopes !== undefined && token.source !== "oauth" &&
    token.source !== "exchange"
  ) {
    issue(
      "scopes",
      `only applies to source = "oauth" or "exchange"; remove it`,
    );
  }
  // Neither command nor url (a misspelt `comand`?): [server] says so, and
  // the rules below, which depend on the server's kind, would only add
  // follow-on complaints (token.header missing for a stdio server).
  if ((server.command === undefined) === (server.url === undefined)) return;
  if (token.source === "oauth" && stdio) {
    context.addIssue({
      code: "custom",
      path: ["server", "url"],
      message:
        `missing; source = "oauth" needs a remote server (a stdio server gets its token from secret or command)`,
    });
    return;
  }
  if (token.source === "none") {
    for (const key of ["env", "header", "format", "ttl", "delivery"] as const) {
      if (token[key] !== undefined) {
        issue(key, `not used with source = "none"; remove it`);
      }
    }
    return;
  }
  if (stdio && token.env === undefined) {
    issue(
      "env",
      "missing; name the variable the stdio server reads its token from",
    );
  }
  if (stdio && token.header !== undefined) {
    issue("header", "only applies to a remote server (url); use env");
  }
  if (
    !stdio && token.header === undefined && token.source !== "oauth" &&
    token.source !== "exchange"
  ) {
    issue("header", "missing; name the HTTP header that carries the token");
  }
  if (!stdio && token.env !== undefined) {
    issue("env", "only applies to a stdio server (command); use header");
  }
  if (!stdio && token.delivery === "shim") {
    issue(
      "delivery",
      'a remote server gets its token through the bridge, not the shim; use "bridge" (the default) or "inline"',
    );
  }
  if (stdio && token.delivery === "bridge") {
    issue(
      "delivery",
      'only applies to a remote server (url); use "inline" or "shim"',
    );
  }
}).transform((service): NormalizedService => ({
  service: service.service,
  server: service.server.command !== undefined
    ? {
      command: service.server.command,
      args: service.server.args ?? [],
      env: service.server.env ?? {},
    }
    : {
      url: service.server.url as string,
      transport: service.server.transport ?? "http",
      headers: service.server.headers ?? {},
    },
  token: {
    ...service.token,
    // OAuth access tokens are bearer tokens (RFC 6750): Authorization.
    ...(bearerByDefault(service) && service.token.header === undefined
      ? { header: "Authorization" }
      : {}),
    format: service.token.format ??
      (service.token.header || bearerByDefault(service)
        ? "Bearer {token}"
        : "{token}"),
  },
}));

/** A remote service whose token is an OAuth access token (a bearer token). */
function bearerByDefault(
  service: { server: { url?: string }; token: { source: string } },
): boolean {
  return service.token.source === "oauth" ||
    (service.token.source === "exchange" && service.server.url !== undefined);
}

/** A validated, normalized service. */
export type Service = z.output<typeof serviceSchema>;

/** The token part of a normalized service. */
export interface TokenSpec {
  /** Where the broker gets the token. */
  source: TokenSourceName;
  /** The credential helper's argv (`source = "command"`). */
  command?: string[];
  /** The variable a stdio server reads the token from. */
  env?: string;
  /** The header a remote server reads the token from. */
  header?: string;
  /** How the token is written into `env` or `header`: contains `{token}`. */
  format: string;
  /** Seconds to cache a token whose helper gives no expiry. */
  ttl?: number;
  /** Seconds the helper may take. */
  timeout: number;
  /**
   * A stdio server's: overrides config.toml's `[render] tokens` (`inline`,
   * `shim`). A remote server's: `bridge` (the default) or `inline`.
   */
  delivery?: "inline" | "shim" | "bridge";
  /** `oauth`: a pre-registered client's id. */
  client_id?: string;
  /**
   * `oauth`: the name of the store's secret (`sherlock secret set NAME`)
   * that is the pre-registered client's secret.
   */
  client_secret?: string;
  /**
   * `oauth`, `grant = "client_credentials"`: the name of the store's entry
   * holding the client's PKCS#8 PEM private key (RS256 or ES256), for
   * `private_key_jwt` client authentication (RFC 7523).
   */
  client_key?: string;
  /**
   * `oauth`: `authorization_code` (the default: `sherlock auth`) or
   * `client_credentials` (no person: the broker logs in as the client).
   */
  grant?: "authorization_code" | "client_credentials";
  /** `oauth`: the https URL of a Client ID Metadata Document. */
  client_metadata_url?: string;
  /** `oauth`: the scopes to ask for when the server names none. */
  scopes?: string[];
  /** `oauth`: send RFC 8707 `resource` (default true). */
  send_resource?: boolean;
  /**
   * Enterprise-Managed Authorization (`source = "oauth"`): false keeps a
   * service whose server redeems ID-JAGs on `sherlock auth` instead.
   */
  ema?: boolean;
  /**
   * Enterprise-Managed Authorization: the issuers of the authorization
   * servers for which the provider may be asked for an ID-JAG (its
   * `audience`). Without it, no EMA for the service.
   */
  ema_audiences?: string[];
  /** `exchange`: the login's token presented, `access_token` by default. */
  subject?: "access_token" | "id_token";
  /** `exchange`: the RFC 8693 `audience`. */
  audience?: string;
  /** `exchange`: the RFC 8707 `resource`. */
  resource?: string;
  /** `exchange`: the token type asked for (default an access token). */
  requested_token_type?: string;
  /** `exchange`: token exchange or the refresh-token fallback (RFC 8707). */
  mode?: "exchange" | "refresh";
}

interface NormalizedService {
  service: { name: string; description: string; agents?: string[] };
  server: StdioServer | RemoteServer;
  token: TokenSpec;
}

/** A stdio server: sherlock's agent starts `command args…` with `env`. */
export type StdioServer = {
  command: string;
  args: string[];
  env: Record<string, string>;
};

/** A remote server the agent connects to over HTTP. */
export type RemoteServer = {
  url: string;
  transport: "http" | "sse";
  headers: Record<string, string>;
};

/** Validates a parsed service file. */
export function validateService(
  raw: unknown,
  text: string,
): Validation<Service> {
  return validateWith(serviceSchema, raw, text);
}
