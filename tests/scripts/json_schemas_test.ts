/**
 * The JSON Schemas in `schemas/` (scripts/json_schemas.ts): the committed
 * files are what the zod schemas generate today, and they accept what
 * sherlock accepts (the built-in profiles, a service of every source, a
 * config.toml with every table), checked with a real JSON Schema validator
 * (ajv, a test-only dependency).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parse } from "smol-toml";
import {
  jsonSchemaFiles,
  SCHEMAS_DIR,
  STANDARD_FORMATS,
} from "../../scripts/json_schemas.ts";
import { EDITOR_SCHEMAS } from "../../lib/config/editor_schemas.ts";
import { validateProfile } from "../../lib/profiles/schema.ts";
import { validateService } from "../../lib/services/schema.ts";
import { validateSettings } from "../../lib/config/settings_schema.ts";
import { REPO_ROOT } from "../helpers/sherlock.ts";

/** A validator of the committed schema of `kind`. */
function validator(kind: keyof typeof EDITOR_SCHEMAS) {
  // Formats (uri) are left to sherlock: ajv knows none without ajv-formats.
  const ajv = new Ajv2020({ strict: true, validateFormats: false });
  const text = Deno.readTextFileSync(
    join(SCHEMAS_DIR, EDITOR_SCHEMAS[kind].file),
  );
  const validate = ajv.compile(JSON.parse(text));
  return (document: unknown): string | undefined =>
    validate(document) ? undefined : ajv.errorsText(validate.errors);
}

Deno.test("json schemas: the committed files are what the zod schemas generate", () => {
  const generated = jsonSchemaFiles();
  const committed = [...Deno.readDirSync(SCHEMAS_DIR)].map((e) => e.name);
  assert.deepEqual(
    committed.sort(),
    Object.keys(generated).sort(),
    "schemas/ holds other files than deno task schemas writes; run deno task schemas",
  );
  for (const [file, text] of Object.entries(generated)) {
    assert.ok(
      Deno.readTextFileSync(join(SCHEMAS_DIR, file)) === text,
      `schemas/${file} is stale; run deno task schemas`,
    );
  }
});

Deno.test("json schemas: every format is one JSON Schema defines, every pattern compiles", () => {
  for (const [file, text] of Object.entries(jsonSchemaFiles())) {
    const walk = (node: unknown, path: string): void => {
      if (typeof node !== "object" || node === null) return;
      const schema = node as Record<string, unknown>;
      if (typeof schema.type === "string" && "format" in schema) {
        assert.ok(
          STANDARD_FORMATS.includes(schema.format as string),
          `${file} ${path}: format ${schema.format}`,
        );
      }
      if (typeof schema.pattern === "string") {
        // Editors compile patterns as ECMA-262 with the u flag, as ajv does.
        new RegExp(schema.pattern, "u");
      }
      for (const [key, value] of Object.entries(schema)) {
        walk(value, `${path}/${key}`);
      }
    };
    walk(JSON.parse(text), "");
  }
});

Deno.test("json schemas: every built-in profile is valid under the profile schema", () => {
  const check = validator("profile");
  const dir = join(REPO_ROOT, "profiles");
  const files = [...Deno.readDirSync(dir)].filter((e) =>
    e.name.endsWith(".toml")
  );
  assert.ok(files.length >= 10);
  for (const { name } of files) {
    const text = Deno.readTextFileSync(join(dir, name));
    const document = parse(text);
    assert.ok(validateProfile(document, text).ok, `sherlock refuses ${name}`);
    assert.equal(check(document), undefined, name);
  }
});

const SERVICES: Record<string, string> = {
  helper: `
[service]
name = "github"
description = "GitHub"
agents = ["claude"]
[server]
command = "github-mcp-server"
args = ["stdio"]
env = { GITHUB_TOOLSETS = "repos,issues" }
[token]
source = "command"
command = ["gh", "auth", "token"]
env = "GITHUB_PERSONAL_ACCESS_TOKEN"
ttl = 3600
timeout = 30
delivery = "shim"
`,
  secret: `
[service]
name = "docs"
[server]
url = "https://mcp.example.com/mcp"
transport = "sse"
headers = { X-Team = "infra" }
[token]
source = "secret"
header = "Authorization"
format = "Bearer {token}"
delivery = "inline"
`,
  oauth: `
[service]
name = "linear"
[server]
url = "https://mcp.linear.app/mcp"
[token]
source = "oauth"
client_id = "sherlock"
client_secret = "linear-client"
scopes = ["read", "write"]
send_resource = true
ema = true
ema_audiences = ["https://auth.example.com"]
`,
  exchange: `
[service]
name = "wiki"
[server]
url = "https://wiki.example/mcp"
[token]
source = "exchange"
subject = "id_token"
audience = "api-wiki"
resource = "https://wiki.example/mcp"
scopes = ["mcp:tools"]
requested_token_type = "urn:ietf:params:oauth:token-type:access_token"
mode = "exchange"
`,
  none: `
[service]
name = "plain"
[server]
command = "plain-server"
`,
};

Deno.test("json schemas: a service of every source is valid under the service schema", () => {
  const check = validator("service");
  for (const [label, text] of Object.entries(SERVICES)) {
    const document = parse(text);
    assert.ok(validateService(document, text).ok, `sherlock refuses ${label}`);
    assert.equal(check(document), undefined, label);
  }
});

Deno.test("json schemas: config.toml with every table is valid under the config schema", () => {
  const check = validator("config");
  const text = `
[login]
provider = "oidc"
issuer = "https://login.example.com"
client_id = "sherlock"
scopes = ["openid", "offline_access"]
audience = "sherlock"
[broker]
idle_timeout = 0
[render]
tokens = "shim"
[run]
strict = true
[services]
default = "none"
`;
  const document = parse(text);
  assert.ok(validateSettings(document, text).ok);
  assert.equal(check(document), undefined);
  assert.equal(check({}), undefined, "an empty config.toml");
});

Deno.test("json schemas: an unknown key or a wrong value is refused, as sherlock refuses it", () => {
  const service = validator("service");
  const typo = parse(SERVICES.secret.replace("[token]", "[token]\nsorce = 1"));
  assert.match(service(typo) ?? "", /additional properties/);
  const source = parse(
    SERVICES.secret.replace('source = "secret"', 'source = "vault"'),
  );
  assert.match(service(source) ?? "", /allowed values/);
  const profile = validator("profile");
  assert.match(profile({ agent: { name: "x" } }) ?? "", /required/);
  const config = validator("config");
  assert.match(config({ broker: { idle_timeout: -1 } }) ?? "", />= 0/);
});
