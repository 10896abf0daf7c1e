/** The services.d schema and its problems (lib/services/schema.ts). */

import assert from "node:assert/strict";
import { parse } from "smol-toml";
import { formatProblem } from "../../lib/config/toml_files.ts";
import { validateService } from "../../lib/services/schema.ts";

function validate(text: string) {
  return validateService(parse(text), text);
}

function problem(text: string): string {
  const result = validate(text);
  assert.ok(!result.ok, "the service should be invalid");
  return formatProblem({ path: "s.toml", ...result.problem });
}

const SERVICE = `[service]\nname = "s"\n`;

Deno.test("service: a stdio server without a token, every default filled in", () => {
  const result = validate(`${SERVICE}[server]\ncommand = "srv"\n`);
  assert.ok(result.ok);
  assert.deepEqual(result.value, {
    service: { name: "s", description: "" },
    server: { command: "srv", args: [], env: {} },
    token: { source: "none", timeout: 30, format: "{token}" },
  });
});

Deno.test("service: a remote server with a header token gets Bearer by default", () => {
  const result = validate(
    `${SERVICE}[server]\nurl = "https://mcp.example.com/mcp"\n[token]\nsource = "secret"\nheader = "Authorization"\n`,
  );
  assert.ok(result.ok);
  assert.deepEqual(result.value.server, {
    url: "https://mcp.example.com/mcp",
    transport: "http",
    headers: {},
  });
  assert.equal(result.value.token.format, "Bearer {token}");
});

Deno.test("service problems: one line each, with the line of the key", () => {
  assert.equal(
    problem(`${SERVICE}[server]\nargs = []\n`),
    "s.toml:3: server.command: missing; set command (a stdio server) or url (a remote server)",
  );
  assert.equal(
    problem(`${SERVICE}[server]\ncommand = "c"\nurl = "https://a"\n`),
    "s.toml:5: server.url: set command or url, not both",
  );
  assert.equal(
    problem(`${SERVICE}[server]\nurl = "ftp://a"\n`),
    "s.toml:4: server.url: must be an http:// or https:// URL",
  );
  assert.equal(
    problem(`${SERVICE}[server]\ncommand = "c"\nheaders = { A = "b" }\n`),
    "s.toml:5: server.headers: only applies to a remote server (url); remove it",
  );
  assert.equal(
    problem(`${SERVICE}colour = 1\n[server]\ncommand = "c"\n`),
    "s.toml:3: service.colour: unknown key (allowed here: name, description, agents)",
  );
  assert.equal(
    problem(`${SERVICE}[server]\ncommand = 7\n`),
    "s.toml:4: server.command: must be a string, not a number",
  );
  assert.equal(
    problem(`${SERVICE}[server]\ncommand = "c"\n[token]\nsource = "oidc"\n`),
    "s.toml:6: token.source: oidc is not available in this version of sherlock; use command or secret",
  );
  assert.equal(
    problem(
      `${SERVICE}[server]\ncommand = "c"\n[token]\nsource = "command"\ncommand = ["gh"]\n`,
    ),
    "s.toml:5: token.env: missing; name the variable the stdio server reads its token from",
  );
  assert.equal(
    problem(
      `${SERVICE}[server]\ncommand = "c"\n[server.env]\n"NOT-A-NAME" = "x"\n`,
    ),
    "s.toml:6: server.env.NOT-A-NAME: must be an environment variable name (letters, digits, '_')",
  );
  assert.equal(
    problem(`[server]\ncommand = "c"\n`),
    "s.toml: service: missing; a table is required",
  );
});

Deno.test("service problems: a timeout or ttl too large for a timer or a date", () => {
  const token =
    `${SERVICE}[server]\ncommand = "c"\n[token]\nsource = "secret"\nenv = "T"\n`;
  assert.equal(
    problem(`${token}timeout = 2200000\n`),
    "s.toml:8: token.timeout: must be at most 3600 seconds (an hour)",
  );
  assert.equal(
    problem(`${token}ttl = 9007199254740991\n`),
    "s.toml:8: token.ttl: must be at most 2592000 seconds (30 days)",
  );
  const largest = validate(`${token}timeout = 3600\nttl = 2592000\n`);
  assert.ok(largest.ok);
  assert.equal(largest.value.token.timeout, 3600);
  assert.equal(largest.value.token.ttl, 2592000);
});

Deno.test("service problems: a header name or value with control characters", () => {
  const remote = `${SERVICE}[server]\nurl = "https://a"\n`;
  assert.equal(
    problem(`${remote}headers = { X-Team = "infra\\r\\nX-Injected: yes" }\n`),
    "s.toml:5: server.headers.X-Team: must not contain control characters (a newline?)",
  );
  assert.equal(
    problem(`${remote}headers = { "X-Team\\nX-Injected" = "yes" }\n`),
    `s.toml:5: server.headers."X-Team\\nX-Injected": must be an HTTP header name`,
  );
  const plain = validate(`${remote}headers = { X-Team = "a b" }\n`);
  assert.ok(plain.ok);
});

Deno.test("service: a misspelt key is reported first, with the key it resembles, and every other problem after it but the key it misspells", () => {
  const lines = problem(
    `${SERVICE}[server]\ncommand = "srv"\n[token]\nsorce = "secret"\nenv = "T"\nttl = "soon"\n`,
  ).split("\n");
  assert.match(
    lines[0],
    /^s\.toml:6: token\.sorce: unknown key; did you mean source\? \(allowed here: source, /,
  );
  // Not `token.source: missing` too: that is the misspelt key itself.
  assert.deepEqual(lines.slice(1), [
    "s.toml:8: token.ttl: must be a number, not a string",
  ]);
  assert.doesNotMatch(lines.join("\n"), /more problem/);
});

Deno.test("service: [token] client_secret names a stored secret, with a client_id", () => {
  const remote = (token: string) =>
    `${SERVICE}[server]\nurl = "https://mcp.example.com/mcp"\n[token]\nsource = "oauth"\n${token}`;
  const ok = validate(
    remote(`client_id = "Ov23li"\nclient_secret = "github-app-secret"\n`),
  );
  assert.ok(ok.ok);
  assert.equal(ok.value.token.client_secret, "github-app-secret");
  assert.match(
    problem(remote(`client_id = "Ov23li"\nclient_secret = "Not A Name!"\n`)),
    /^s\.toml:\d+: token\.client_secret: must be the name of a secret in sherlock's store \("sherlock secret set NAME"\), not the secret itself$/,
  );
  // A pasted GitHub secret (40 hex digits) is a valid name, yet refused.
  const pasted = "0123456789abcdef0123456789abcdef01234567";
  const line = problem(
    remote(`client_id = "Ov23li"\nclient_secret = "${pasted}"\n`),
  );
  assert.match(line, /token\.client_secret: looks like a secret itself/);
  assert.ok(!line.includes(pasted), "the problem does not repeat it");
  assert.match(
    problem(remote(`client_secret = "app-secret"\n`)),
    /token\.client_secret: needs client_id/,
  );
  assert.match(
    problem(
      `${SERVICE}[server]\nurl = "https://x.example/mcp"\n[token]\nsource = "secret"\nheader = "Authorization"\nclient_secret = "app-secret"\n`,
    ),
    /token\.client_secret: only applies to source = "oauth"/,
  );
});

Deno.test('service: source = "exchange" keys, Authorization Bearer by default, and keys it alone takes', () => {
  const result = validate(
    `${SERVICE}[server]\nurl = "https://mcp.example.com/mcp"\n[token]\nsource = "exchange"\naudience = "api"\nresource = "https://mcp.example.com/mcp"\nscopes = ["read"]\nsubject = "id_token"\nmode = "refresh"\n`,
  );
  assert.ok(result.ok);
  assert.equal(result.value.token.header, "Authorization");
  assert.equal(result.value.token.format, "Bearer {token}");
  assert.equal(result.value.token.audience, "api");
  assert.equal(result.value.token.mode, "refresh");
  assert.equal(
    problem(
      `${SERVICE}[server]\ncommand = "c"\n[token]\nsource = "secret"\nenv = "T"\naudience = "api"\n`,
    ),
    's.toml:8: token.audience: only applies to source = "exchange"; remove it',
  );
  assert.match(
    problem(
      `${SERVICE}[server]\nurl = "https://x"\n[token]\nsource = "exchange"\nmode = "swap"\n`,
    ),
    /token\.mode: must be one of/,
  );
  assert.match(
    problem(
      `${SERVICE}[server]\nurl = "https://x"\n[token]\nsource = "exchange"\nresource = "not a url"\n`,
    ),
    /token\.resource: must be an absolute URL/,
  );
});

Deno.test('service: grant = "client_credentials" with a stored secret or key, no person', () => {
  const url = `[server]\nurl = "https://mcp.example.com/mcp"\n`;
  const oauth = (lines: string) =>
    `${SERVICE}${url}[token]\nsource = "oauth"\n${lines}`;
  const secret = validate(
    oauth(
      `grant = "client_credentials"\nclient_id = "ci"\nclient_secret = "ci-secret"\n`,
    ),
  );
  assert.ok(secret.ok);
  assert.equal(secret.value.token.grant, "client_credentials");
  const key = validate(
    oauth(
      `grant = "client_credentials"\nclient_id = "ci"\nclient_key = "ci-key"\n`,
    ),
  );
  assert.ok(key.ok);
  assert.equal(key.value.token.client_key, "ci-key");
  assert.match(
    problem(oauth(`grant = "client_credentials"\nclient_id = "ci"\n`)),
    /^s\.toml:\d+: token\.grant: client_credentials needs client_id and client_secret or client_key/,
  );
  assert.match(
    problem(
      oauth(
        `grant = "client_credentials"\nclient_id = "ci"\nclient_secret = "a"\nclient_key = "b"\n`,
      ),
    ),
    /token\.client_key: set client_secret or client_key, not both/,
  );
  assert.match(
    problem(oauth(`client_id = "ci"\nclient_key = "ci-key"\n`)),
    /token\.client_key: only applies to grant = "client_credentials"/,
  );
  assert.match(
    problem(oauth(`grant = "password"\n`)),
    /token\.grant: must be one of/,
  );
  assert.match(
    problem(
      `${SERVICE}${url}[token]\nsource = "secret"\nheader = "X"\ngrant = "client_credentials"\n`,
    ),
    /token\.grant: only applies to source = "oauth"/,
  );
});
