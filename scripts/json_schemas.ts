/**
 * `deno task schemas`: writes the JSON Schemas of sherlock's TOML files to
 * `schemas/`, generated from the zod schemas that sherlock validates them
 * with, for editors (taplo / Even Better TOML read the `#:schema` line that
 * sherlock puts at the top of the files it writes):
 *
 * - `schemas/agent_profile.schema.json`: `agents.d/<name>.toml` and
 *   `profiles/*.toml`;
 * - `schemas/service.schema.json`: `services.d/<name>.toml`;
 * - `schemas/config.schema.json`: `config.toml`.
 *
 * The schemas describe the files as written (zod's input side: a key with
 * a default is optional; the output side of a `transform` has no JSON
 * Schema, and zod refuses to write one). What zod checks in code (`refine`,
 * `superRefine`: which keys go together, a URL's scheme) a JSON Schema
 * does not carry; the descriptions say those rules in words, and sherlock
 * itself remains the judge. tests/scripts/json_schemas_test.ts fails when
 * the committed files differ from what this writes.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { settingsSchema } from "../lib/config/settings_schema.ts";
import { KEY_COMMENTS } from "../lib/profiles/profile_comments.ts";
import { profileSchema } from "../lib/profiles/schema.ts";
import { serviceSchema } from "../lib/services/schema.ts";
import { EDITOR_SCHEMAS } from "../lib/config/editor_schemas.ts";

/** The folder of the committed schemas, `schemas/` at the repository root. */
export const SCHEMAS_DIR: string = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "schemas",
);

/** A JSON Schema object, as zod writes it. */
type JsonSchema = Record<string, unknown>;

/**
 * The rules the service schema checks in code, by key path (`table.key`);
 * the table's own line says what goes with what.
 */
const SERVICE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  "":
    "A service file (services.d/<name>.toml): one MCP server and how the broker gets its token. Rules across keys (below, per key) are checked by sherlock, not by this schema.",
  service: "[service]: the service's name and who gets it.",
  "service.name": "Must equal the file's basename (services.d/<name>.toml).",
  "service.agents":
    "Only sessions of these agents (profile names) get the service; leave it out for every agent.",
  server:
    "[server]: a stdio server (command, args, env) or a remote one (url, transport, headers), not both.",
  "server.command": "A stdio server's program; not together with url.",
  "server.url":
    "A remote server's http:// or https:// URL; not together with command.",
  "server.args": "stdio only: the program's arguments.",
  "server.env": "stdio only: added to the server's environment.",
  "server.transport": "remote only: http (the default) or sse.",
  "server.headers":
    "remote only: sent with every request; no control characters in a value.",
  token: "[token]: how the broker gets the service's token.",
  "token.source":
    'none (no token) | secret ("sherlock secret set NAME") | command (a credential helper) | oauth ("sherlock auth NAME") | exchange (from the SSO login).',
  "token.command":
    'source = "command" only, and needed there: the helper\'s argv.',
  "token.env":
    'stdio servers: the variable the server reads its token from (needed unless source = "none").',
  "token.header":
    "remote servers: the header that carries the token (needed for secret and command; oauth and exchange default to Authorization).",
  "token.format":
    'Where the token goes in the value; must contain {token}. Default "Bearer {token}" for a header, "{token}" for env.',
  "token.delivery":
    "stdio: inline | shim; remote: bridge (the default) | inline. Overrides config.toml's [render] tokens.",
  "token.client_id":
    'source = "oauth" only: a client registered at the server.',
  "token.client_secret":
    'source = "oauth" only, with client_id: the NAME of a stored secret ("sherlock secret set NAME"), never the secret itself.',
  "token.client_metadata_url":
    'source = "oauth" only: an https:// Client ID Metadata Document.',
  "token.send_resource": 'source = "oauth" only.',
  "token.ema": 'source = "oauth" only.',
  "token.ema_audiences":
    'source = "oauth" only: issuer URLs (https://) of authorization servers.',
  "token.scopes": 'source = "oauth" or "exchange" only.',
  "token.subject": 'source = "exchange" only.',
  "token.audience": 'source = "exchange" only.',
  "token.resource": 'source = "exchange" only: an absolute URL (RFC 8707).',
  "token.requested_token_type": 'source = "exchange" only.',
  "token.mode":
    'source = "exchange" only: overrides what the provider\'s discovery says.',
};

/** The rules of config.toml checked in code. */
const CONFIG_DESCRIPTIONS: Readonly<Record<string, string>> = {
  "":
    "sherlock's settings ($XDG_CONFIG_HOME/sherlock/config.toml). Rules across keys are checked by sherlock, not by this schema.",
  login:
    '[login]: local (the passphrase store, the default) or oidc (single sign-on). provider = "oidc" needs issuer and client_id; issuer, client_id, scopes and audience apply only to it.',
  "login.issuer":
    "The provider's issuer URL: https, or http on 127.0.0.1/localhost; no query or fragment.",
  "login.scopes": 'Must include "openid".',
  "broker.idle_timeout":
    "Seconds of idleness before the broker locks the store again; 0 for never.",
  "render.tokens": "How stdio servers get their tokens: inline | shim.",
  "run.strict":
    "As sherlock run --strict: a service that cannot be part of the session stops it.",
  "services.default":
    "none: a session gets only the services its profile includes or --service names.",
};

/** The rules of a profile checked in code, and every key's comment. */
const PROFILE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  "":
    "An agent profile (agents.d/<name>.toml). Rules across keys are checked by sherlock, not by this schema.",
  ...Object.fromEntries(
    Object.entries(KEY_COMMENTS).map((
      [key, comment],
    ) => [key, comment.replaceAll("\n", " ")]),
  ),
  "mcp.mode": `${
    KEY_COMMENTS["mcp.mode"].replaceAll("\n", " ")
  } Each mode needs its key (flag, var or path) and takes no other.`,
  "mcp.merge": `${
    KEY_COMMENTS["mcp.merge"].replaceAll("\n", " ")
  } Only with mode = "config-file" and a format whose servers sit under one key.`,
  "services.exclude": `${
    KEY_COMMENTS["services.exclude"]
  } Not together with include.`,
};

/**
 * Each schema file's name and its text: the zod schema's input side, with
 * the descriptions above, as `deno task schemas` writes it.
 */
export function jsonSchemaFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  const sources = {
    profile: [profileSchema, PROFILE_DESCRIPTIONS],
    service: [serviceSchema, SERVICE_DESCRIPTIONS],
    config: [settingsSchema, CONFIG_DESCRIPTIONS],
  } as const;
  for (const [kind, [schema, descriptions]] of Object.entries(sources)) {
    const { file, title } = EDITOR_SCHEMAS[kind as keyof typeof sources];
    const json = z.toJSONSchema(schema, { io: "input" }) as JsonSchema;
    dropZodFormats(json);
    describe(json, descriptions, file);
    const { $schema, ...rest } = json;
    files[file] = JSON.stringify({ $schema, title, ...rest }, null, 2) + "\n";
  }
  return files;
}

/**
 * The `format`s JSON Schema defines that zod writes (URLs); zod's own names
 * (`includes`, for "must contain {token}", whose `pattern` says the same)
 * mean nothing to an editor.
 */
export const STANDARD_FORMATS: readonly string[] = ["uri"];

/** Removes every `format` not in {@linkcode STANDARD_FORMATS}, in place. */
function dropZodFormats(node: unknown) {
  if (Array.isArray(node)) {
    node.forEach(dropZodFormats);
    return;
  }
  if (typeof node !== "object" || node === null) return;
  const schema = node as JsonSchema;
  if (
    typeof schema.format === "string" &&
    !STANDARD_FORMATS.includes(schema.format) &&
    typeof schema.type === "string"
  ) {
    delete schema.format;
  }
  Object.values(schema).forEach(dropZodFormats);
}

/** Sets each key's description; a key the schema lacks is an error. */
function describe(
  schema: JsonSchema,
  descriptions: Readonly<Record<string, string>>,
  file: string,
) {
  for (const [path, description] of Object.entries(descriptions)) {
    let node = schema;
    for (const key of path === "" ? [] : path.split(".")) {
      const properties = node.properties as Record<string, JsonSchema>;
      if (properties?.[key] === undefined) {
        throw new Error(`${file}: no key ${path} to describe`);
      }
      node = properties[key];
    }
    node.description = description;
  }
}

if (import.meta.main) {
  Deno.mkdirSync(SCHEMAS_DIR, { recursive: true });
  for (const [file, text] of Object.entries(jsonSchemaFiles())) {
    Deno.writeTextFileSync(join(SCHEMAS_DIR, file), text);
    console.log(`wrote schemas/${file}`);
  }
}
