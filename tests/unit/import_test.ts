/**
 * `sherlock import`'s pure parts: reading each agent's MCP config (the
 * realistic files of `tests/helpers/agent_configs.ts`: Claude's user and
 * project scopes, Copilot's file, Codex TOML with quoted names, Gemini's
 * JSONC), the credential heuristics with their false positives, and the
 * import plan (names, duplicates, skips, the one secret per service, the
 * no-overwrite rule).
 */

import assert from "node:assert/strict";
import {
  type AgentConfigFile,
  agentConfigFiles,
  type ImportedServer,
  parseAgentConfig,
  projectConfigFiles,
  stripJsonComments,
} from "../../lib/import/agent_configs.ts";
import { isCredential, splitCredential } from "../../lib/import/credentials.ts";
import { planImport, serviceName } from "../../lib/import/import_plan.ts";
import { validateService } from "../../lib/services/schema.ts";
import { parse } from "smol-toml";
import {
  agentTokens,
  claudeJson,
  codexToml,
  copilotJson,
  geminiJsonc,
} from "../helpers/agent_configs.ts";

const tokens = agentTokens();

/** A TOML text as plain objects (smol-toml's tables have no prototype). */
function toml(text: string): unknown {
  return JSON.parse(JSON.stringify(parse(text)));
}

function parsed(file: Omit<AgentConfigFile, "path">, text: string) {
  return parseAgentConfig({ ...file, path: "/home/me/x" }, text);
}

function byKey(servers: ImportedServer[]): Record<string, ImportedServer> {
  return Object.fromEntries(servers.map((server) => [server.keyPath, server]));
}

Deno.test("Claude's ~/.claude.json: the user scope and every project's scope, with their key paths", () => {
  const { servers, skipped } = parsed(
    { agent: "claude", format: "claude-user" },
    claudeJson(tokens),
  );
  assert.deepEqual(skipped, []);
  const found = byKey(servers);
  assert.deepEqual(Object.keys(found), [
    "mcpServers.github",
    "mcpServers.linear",
    'projects["/src/app"].mcpServers.sentry',
    'projects["/src/app"].mcpServers."Puppeteer Browser"',
    'projects["/src/other"].mcpServers.github',
  ]);
  assert.deepEqual(found["mcpServers.github"].server, {
    kind: "stdio",
    command: "npx",
    args: ["-y", "@modelcontextprotocol/server-github"],
    env: { GITHUB_PERSONAL_ACCESS_TOKEN: tokens.github },
  });
  assert.deepEqual(found["mcpServers.linear"].server, {
    kind: "remote",
    url: "https://mcp.linear.app/mcp",
    transport: "http",
    headers: { Authorization: `Bearer ${tokens.linear}` },
  });
});

Deno.test("Copilot's mcp-config.json: local and http servers", () => {
  const { servers } = parsed(
    { agent: "copilot", format: "mcp-json" },
    copilotJson(tokens),
  );
  assert.deepEqual(servers.map((server) => server.server.kind), [
    "remote",
    "stdio",
  ]);
  assert.equal(
    servers[1].server.kind === "stdio" && servers[1].server.command,
    "npx",
  );
});

Deno.test("Codex's config.toml: quoted names, inline env tables, a url server; a disabled one is skipped with a line", () => {
  const { servers, skipped } = parsed(
    { agent: "codex", format: "codex" },
    codexToml(tokens),
  );
  assert.deepEqual(servers.map((server) => server.keyPath), [
    'mcp_servers."my.docs"',
    "mcp_servers.context7",
  ]);
  assert.equal(servers[0].name, "my.docs");
  assert.deepEqual(servers[0].server, {
    kind: "stdio",
    command: "docs-mcp",
    args: ["--stdio"],
    env: {
      DOCS_KEY_PATH: "/home/me/.config/docs/key.pem",
      DOCS_API_KEY: tokens.docs,
    },
  });
  assert.deepEqual(skipped, [
    {
      path: "/home/me/x",
      keyPath: "mcp_servers.disabled-one",
      reason: "is disabled",
    },
  ]);
});

Deno.test("Gemini's settings.json: comments and trailing commas; url is SSE, httpUrl Streamable HTTP", () => {
  const { servers } = parsed(
    { agent: "gemini", format: "gemini" },
    geminiJsonc(tokens),
  );
  const found = byKey(servers);
  assert.equal(
    found["mcpServers.slack"].server.kind === "stdio" &&
      found["mcpServers.slack"].server.env.SLACK_BOT_TOKEN,
    tokens.slack,
  );
  assert.deepEqual(found["mcpServers.events"].server, {
    kind: "remote",
    url: "https://events.example.com/sse",
    transport: "sse",
    headers: {},
  });
  assert.equal(
    found["mcpServers.search"].server.kind === "remote" &&
      found["mcpServers.search"].server.transport,
    "http",
  );
});

Deno.test("stripJsonComments leaves strings alone: // and /* in a value, a comma before } in a string", () => {
  const text = `{"url": "https://x//y", "a": "/* no */", "b": "x,}", // c
  "c": [1, 2,], }`;
  assert.deepEqual(JSON.parse(stripJsonComments(text)), {
    url: "https://x//y",
    a: "/* no */",
    b: "x,}",
    c: [1, 2],
  });
});

Deno.test("--from files: opencode's mcp, a servers map, Codex TOML", () => {
  const opencode = parsed(
    { agent: "file", format: "any" },
    JSON.stringify({
      $schema: "https://opencode.ai/config.json",
      mcp: {
        fs: {
          type: "local",
          command: ["mcp-fs", "/src"],
          environment: { FS_TOKEN: "abc123xyz789" },
          enabled: true,
        },
        web: { type: "remote", url: "https://web.example.com/mcp" },
      },
    }),
  );
  assert.deepEqual(opencode.servers.map((server) => server.server), [
    {
      kind: "stdio",
      command: "mcp-fs",
      args: ["/src"],
      env: { FS_TOKEN: "abc123xyz789" },
    },
    {
      kind: "remote",
      url: "https://web.example.com/mcp",
      transport: "http",
      headers: {},
    },
  ]);
  const map = parsed(
    { agent: "file", format: "any" },
    JSON.stringify({ amp: { command: "amp-mcp" } }),
  );
  assert.equal(map.servers[0].keyPath, "amp");
  const toml = parsed(
    { agent: "file", format: "any" },
    '[mcp_servers.x]\ncommand = "x"\n',
  );
  assert.equal(toml.servers[0].name, "x");
  assert.throws(
    () => parsed({ agent: "file", format: "any" }, "{ nope"),
    SyntaxError,
  );
});

Deno.test("credentials: by name (TOKEN, KEY, SECRET, PASSWORD, Authorization) and by known prefix", () => {
  assert.ok(isCredential("GITHUB_PERSONAL_ACCESS_TOKEN", "abcdef123456"));
  assert.ok(isCredential("OPENAI_API_KEY", "whatever-it-is"));
  assert.ok(isCredential("APIKEY", "abc"));
  assert.ok(isCredential("CLIENT_SECRET", "s3cr3t"));
  assert.ok(isCredential("DB_PASSWORD", "hunter2"));
  assert.ok(isCredential("Authorization", "Bearer abc.def"));
  assert.ok(isCredential("X-Api-Key", "abc123"));
  assert.ok(isCredential("GH", `ghp_${"a".repeat(36)}`));
  assert.ok(isCredential("ANY", `github_pat_${"b".repeat(40)}`));
  assert.ok(isCredential("SLACK", "xoxb-1234-5678-abcdefgh"));
  assert.ok(isCredential("MODEL", "sk-proj-abcdefghijkl"));
  assert.ok(isCredential("DATABASE_URL", "postgres://app:hunter2@db/app"));
});

Deno.test("credentials: false positives stay plain (KEY_PATH is a path, references, numbers, names that say where)", () => {
  assert.equal(isCredential("DOCS_KEY_PATH", "/home/me/key.pem"), false);
  assert.equal(isCredential("SSH_KEY", "~/.ssh/id_ed25519"), false);
  assert.equal(
    isCredential("TOKEN_URL", "https://auth.example.com/token"),
    false,
  );
  assert.equal(isCredential("AWS_ACCESS_KEY_ID", "my-key-id"), false);
  assert.equal(isCredential("GITHUB_TOKEN", "${GITHUB_TOKEN}"), false);
  assert.equal(isCredential("Authorization", "Bearer ${LINEAR_TOKEN}"), false);
  assert.equal(isCredential("MAX_TOKENS", "4096"), false);
  assert.equal(isCredential("USE_KEYRING", "true"), false);
  assert.equal(isCredential("SLACK_TEAM_ID", "T01234567"), false);
  assert.equal(isCredential("KEYBOARD_LAYOUT", "us"), false);
  assert.equal(isCredential("DATABASE_URL", "postgres://db/app"), false);
  assert.equal(isCredential("MODE", "sk-"), false);
});

Deno.test("splitCredential: an Authorization scheme becomes the format; anything else is stored whole", () => {
  assert.deepEqual(splitCredential("Authorization", "Bearer abc"), {
    secret: "abc",
    format: "Bearer {token}",
  });
  assert.deepEqual(splitCredential("authorization", "token ghp_x"), {
    secret: "ghp_x",
    format: "token {token}",
  });
  assert.deepEqual(splitCredential("API_KEY", "Bearer abc"), {
    secret: "Bearer abc",
    format: "{token}",
  });
});

Deno.test("serviceName: an agent's server name as a service name", () => {
  assert.equal(serviceName("my.docs"), "my-docs");
  assert.equal(serviceName("Puppeteer Browser"), "puppeteer-browser");
  assert.equal(serviceName("_hidden__x"), "hidden__x");
  assert.equal(serviceName("!!!"), "server");
  assert.equal(serviceName("x".repeat(80)).length, 64);
});

function claudeServers(): ImportedServer[] {
  return parsed({ agent: "claude", format: "claude-user" }, claudeJson(tokens))
    .servers;
}

Deno.test("planImport: each credential into the store, never into the file; the file validates against the service schema", () => {
  const plan = planImport(claudeServers(), { existing: new Set() });
  const names = plan.services.map((service) => service.name);
  assert.deepEqual(names, [
    "github",
    "linear",
    "sentry",
    "puppeteer-browser",
    "github-claude",
  ]);
  const github = plan.services[0];
  assert.deepEqual(github.secret, {
    value: tokens.github,
    keyPath: "mcpServers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN",
  });
  const linear = plan.services[1];
  assert.equal(linear.secret?.value, tokens.linear);
  for (const service of plan.services) {
    for (const token of Object.values(tokens)) {
      assert.equal(service.text.includes(token), false, service.name);
    }
    const validation = validateService(parse(service.text), service.text);
    assert.ok(validation.ok, `${service.name}: ${service.text}`);
  }
  assert.deepEqual(toml(github.text), {
    service: {
      name: "github",
      description: "imported from /home/me/x mcpServers.github",
    },
    server: {
      command: "npx",
      args: ["-y", "@modelcontextprotocol/server-github"],
    },
    token: { source: "secret", env: "GITHUB_PERSONAL_ACCESS_TOKEN" },
  });
  assert.deepEqual((toml(linear.text) as { token: unknown }).token, {
    source: "secret",
    header: "Authorization",
  });
  // The project's github keeps its ${GITHUB_TOKEN} reference, no secret.
  assert.equal(plan.services[4].secret, undefined);
  assert.match(
    plan.services[4].text,
    /GITHUB_PERSONAL_ACCESS_TOKEN = "\$\{GITHUB_TOKEN\}"/,
  );
  assert.deepEqual(plan.plaintext.map((found) => found.keyPath), [
    "mcpServers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN",
    "mcpServers.linear.headers.Authorization",
    'projects["/src/app"].mcpServers.sentry.env.SENTRY_AUTH_TOKEN',
  ]);
});

Deno.test("planImport: a KEY_PATH stays in the file next to the key that goes to the store", () => {
  const { servers } = parsed(
    { agent: "codex", format: "codex" },
    codexToml(tokens),
  );
  const plan = planImport(servers, { existing: new Set() });
  const docs = plan.services.find((service) => service.name === "my-docs")!;
  assert.equal(docs.secret?.value, tokens.docs);
  assert.match(
    docs.text,
    /DOCS_KEY_PATH = "\/home\/me\/.config\/docs\/key.pem"/,
  );
  assert.match(docs.redacted, /DOCS_KEY_PATH = "<redacted>"/);
  assert.equal(docs.text.includes(tokens.docs), false);
});

Deno.test("planImport: an existing name is never planned again, so planning what was imported plans nothing", () => {
  const servers = claudeServers();
  const first = planImport(servers, { existing: new Set() });
  const second = planImport(servers, {
    existing: new Set(first.services.map((service) => service.name)),
  });
  assert.deepEqual(second.services, []);
  assert.equal(second.skipped.length, servers.length);
  assert.match(
    second.skipped[0].reason,
    /services\.d\/github\.toml exists; left as it is/,
  );
});

Deno.test("planImport: the same server in two agents is one service; two credentials, or one in args, skip it with the reason", () => {
  const same: ImportedServer = {
    ...claudeServers()[0],
    agent: "codex",
    path: "/home/me/.codex/config.toml",
    keyPath: "mcp_servers.github",
  };
  const twice = planImport([claudeServers()[0], same], { existing: new Set() });
  assert.equal(twice.services.length, 1);
  assert.equal(twice.services[0].origins.length, 2);
  const aws: ImportedServer = {
    name: "aws",
    agent: "claude",
    path: "/p",
    keyPath: "mcpServers.aws",
    server: {
      kind: "stdio",
      command: "aws-mcp",
      args: [],
      env: {
        AWS_ACCESS_KEY_ID: "AKIAABCDEFGHIJKLMNOP",
        AWS_SECRET_ACCESS_KEY: "abc/def",
      },
    },
  };
  const pg: ImportedServer = {
    name: "pg",
    agent: "claude",
    path: "/p",
    keyPath: "mcpServers.pg",
    server: {
      kind: "stdio",
      command: "npx",
      args: ["server-postgres", "postgresql://app:hunter2@localhost/app"],
      env: {},
    },
  };
  const cli: ImportedServer = {
    ...pg,
    name: "cli",
    keyPath: "mcpServers.cli",
    server: {
      kind: "stdio",
      command: "x",
      args: ["--api-key", "abc123"],
      env: {},
    },
  };
  const plan = planImport([aws, pg, cli], { existing: new Set() });
  assert.deepEqual(plan.services, []);
  assert.match(
    plan.skipped[0].reason,
    /holds 2 credentials \(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY\)/,
  );
  assert.match(
    plan.skipped[1].reason,
    /^mcpServers\.pg\.args\[1\] holds a credential sherlock cannot deliver/,
  );
  assert.match(plan.skipped[2].reason, /^mcpServers\.cli\.args\[1\]/);
  for (const skipped of plan.skipped) {
    assert.equal(skipped.reason.includes("hunter2"), false);
    assert.equal(skipped.reason.includes("abc123"), false);
  }
});

Deno.test("the files read by default are the operator's own, in HOME; a folder's project files only when asked (issue 17, item 11)", () => {
  const env = { HOME: "/home/op" };
  const paths = agentConfigFiles(env).map((file) => file.path);
  assert.deepEqual(paths, [
    "/home/op/.claude.json",
    "/home/op/.copilot/mcp-config.json",
    "/home/op/.codex/config.toml",
    "/home/op/.gemini/settings.json",
  ]);
  assert.deepEqual(
    projectConfigFiles("/src/cloned").map((file) => [file.path, file.format]),
    [
      ["/src/cloned/.mcp.json", "mcp-json"],
      ["/src/cloned/.gemini/settings.json", "gemini"],
    ],
  );
});
