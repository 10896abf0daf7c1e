/**
 * Every MCP config format (lib/render/formats.ts), byte for byte, for stdio
 * and remote servers, with tokens inline and with shim entries; Codex's
 * `-c` overrides read back with a TOML parser.
 */

import { docs, events, github, linear, plain } from "../helpers/services.ts";
import assert from "node:assert/strict";
import { parse } from "smol-toml";
import {
  isArgvFormat,
  MCP_FORMATS,
  type McpFormat,
  OPENCODE_SCHEMA,
  renderDocument,
} from "../../lib/render/formats.ts";
import {
  type RemoteEntry,
  serverEntries,
  type ServerEntry,
  type ShimContext,
  type StdioEntry,
} from "../../lib/render/servers.ts";
import { type DeliveryPlan, planDelivery } from "../../lib/render/delivery.ts";

const SERVICES = [github, docs, events, plain];
const TOKENS = new Map([["github", "ghp_abc"], ["docs", "eyJ.tok"]]);

const SHIM: ShimContext = {
  command: ["/opt/sherlock/bin/sherlock"],
  socket: "/run/user/1000/sherlock/broker.sock",
  session: "0123456789ab",
  agent: "fake",
};

/** The argv of github's shim entry after the shim's own command. */
const GITHUB_SHIM_ARGS = [
  "shim",
  "--socket",
  "/run/user/1000/sherlock/broker.sock",
  "--session",
  "0123456789ab",
  "--agent",
  "fake",
  "--token-env",
  "GITHUB_PERSONAL_ACCESS_TOKEN",
  "github",
  "--",
  "github-mcp-server",
  "stdio",
  "--read-only",
];

/** The delivery of every service with config.toml's `[render] tokens`. */
function delivery(configured: "inline" | "shim"): DeliveryPlan {
  return planDelivery({
    services: SERVICES,
    format: "mcp-json",
    configured,
    agent: "fake",
  });
}

/** The entries with every token inline. */
function inlineEntries(): Record<string, ServerEntry> {
  return serverEntries(SERVICES, {
    tokens: TOKENS,
    delivery: delivery("inline"),
  });
}

/** The entries with github's token through the shim (docs stays inline). */
function shimEntries(): Record<string, ServerEntry> {
  return serverEntries(SERVICES, {
    tokens: new Map([["docs", "eyJ.tok"]]),
    delivery: delivery("shim"),
    shim: SHIM,
  });
}

/** Asserts that `format` renders `entries` as exactly `expected`. */
function assertDocument(
  format: McpFormat,
  entries: Record<string, ServerEntry>,
  expected: Record<string, unknown>,
): void {
  const rendered = renderDocument(format, entries);
  assert.equal(rendered.kind, "json");
  if (rendered.kind !== "json") return;
  assert.deepEqual(rendered.document, expected);
  // The text, key order included: two spaces, a final newline; opencode's
  // file starts with its "$schema" (or opencode rewrites the file).
  const file = format === "opencode"
    ? { $schema: OPENCODE_SCHEMA, ...expected }
    : expected;
  assert.equal(rendered.text, JSON.stringify(file, null, 2) + "\n");
}

Deno.test("format names: codex-overrides is the only argv format", () => {
  assert.deepEqual(MCP_FORMATS.filter(isArgvFormat), ["codex-overrides"]);
});

Deno.test("mcp-json: {mcpServers} with type on every entry, tokens inline", () => {
  assertDocument("mcp-json", inlineEntries(), {
    mcpServers: {
      github: {
        type: "stdio",
        command: "github-mcp-server",
        args: ["stdio", "--read-only"],
        env: {
          GITHUB_TOOLSETS: "repos,issues",
          GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_abc",
        },
      },
      docs: {
        type: "http",
        url: "https://mcp.example.com/mcp",
        headers: { "X-Team": "platform", Authorization: "Bearer eyJ.tok" },
      },
      events: { type: "sse", url: "http://127.0.0.1:8080/sse", headers: {} },
      plain: { type: "stdio", command: "/opt/mcp/plain", args: [], env: {} },
    },
  });
});

Deno.test("mcp-json: a shim entry runs sherlock shim, no token anywhere", () => {
  assertDocument("mcp-json", shimEntries(), {
    mcpServers: {
      github: {
        type: "stdio",
        command: "/opt/sherlock/bin/sherlock",
        args: GITHUB_SHIM_ARGS,
        env: { GITHUB_TOOLSETS: "repos,issues" },
      },
      docs: {
        type: "http",
        url: "https://mcp.example.com/mcp",
        headers: { "X-Team": "platform", Authorization: "Bearer eyJ.tok" },
      },
      events: { type: "sse", url: "http://127.0.0.1:8080/sse", headers: {} },
      plain: { type: "stdio", command: "/opt/mcp/plain", args: [], env: {} },
    },
  });
});

Deno.test("servers-map: the bare map, no type", () => {
  assertDocument("servers-map", inlineEntries(), {
    github: {
      command: "github-mcp-server",
      args: ["stdio", "--read-only"],
      env: {
        GITHUB_TOOLSETS: "repos,issues",
        GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_abc",
      },
    },
    docs: {
      url: "https://mcp.example.com/mcp",
      headers: { "X-Team": "platform", Authorization: "Bearer eyJ.tok" },
    },
    events: { url: "http://127.0.0.1:8080/sse", headers: {} },
    plain: { command: "/opt/mcp/plain", args: [], env: {} },
  });
  assertDocument("servers-map", shimEntries(), {
    github: {
      command: "/opt/sherlock/bin/sherlock",
      args: GITHUB_SHIM_ARGS,
      env: { GITHUB_TOOLSETS: "repos,issues" },
    },
    docs: {
      url: "https://mcp.example.com/mcp",
      headers: { "X-Team": "platform", Authorization: "Bearer eyJ.tok" },
    },
    events: { url: "http://127.0.0.1:8080/sse", headers: {} },
    plain: { command: "/opt/mcp/plain", args: [], env: {} },
  });
});

Deno.test("opencode: {mcp} with local command arrays and remote entries, enabled", () => {
  assertDocument("opencode", inlineEntries(), {
    mcp: {
      github: {
        type: "local",
        command: ["github-mcp-server", "stdio", "--read-only"],
        environment: {
          GITHUB_TOOLSETS: "repos,issues",
          GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_abc",
        },
        enabled: true,
      },
      docs: {
        type: "remote",
        url: "https://mcp.example.com/mcp",
        headers: { "X-Team": "platform", Authorization: "Bearer eyJ.tok" },
        enabled: true,
      },
      events: {
        type: "remote",
        url: "http://127.0.0.1:8080/sse",
        headers: {},
        enabled: true,
      },
      plain: {
        type: "local",
        command: ["/opt/mcp/plain"],
        environment: {},
        enabled: true,
      },
    },
  });
  assertDocument("opencode", shimEntries(), {
    mcp: {
      github: {
        type: "local",
        command: ["/opt/sherlock/bin/sherlock", ...GITHUB_SHIM_ARGS],
        environment: { GITHUB_TOOLSETS: "repos,issues" },
        enabled: true,
      },
      docs: {
        type: "remote",
        url: "https://mcp.example.com/mcp",
        headers: { "X-Team": "platform", Authorization: "Bearer eyJ.tok" },
        enabled: true,
      },
      events: {
        type: "remote",
        url: "http://127.0.0.1:8080/sse",
        headers: {},
        enabled: true,
      },
      plain: {
        type: "local",
        command: ["/opt/mcp/plain"],
        environment: {},
        enabled: true,
      },
    },
  });
});

Deno.test("gemini: {mcpServers}, httpUrl for streamable HTTP, url for SSE", () => {
  assertDocument("gemini", inlineEntries(), {
    mcpServers: {
      github: {
        command: "github-mcp-server",
        args: ["stdio", "--read-only"],
        env: {
          GITHUB_TOOLSETS: "repos,issues",
          GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_abc",
        },
      },
      docs: {
        httpUrl: "https://mcp.example.com/mcp",
        headers: { "X-Team": "platform", Authorization: "Bearer eyJ.tok" },
      },
      events: { url: "http://127.0.0.1:8080/sse", headers: {} },
      plain: { command: "/opt/mcp/plain", args: [], env: {} },
    },
  });
  assertDocument("gemini", shimEntries(), {
    mcpServers: {
      github: {
        command: "/opt/sherlock/bin/sherlock",
        args: GITHUB_SHIM_ARGS,
        env: { GITHUB_TOOLSETS: "repos,issues" },
      },
      docs: {
        httpUrl: "https://mcp.example.com/mcp",
        headers: { "X-Team": "platform", Authorization: "Bearer eyJ.tok" },
      },
      events: { url: "http://127.0.0.1:8080/sse", headers: {} },
      plain: { command: "/opt/mcp/plain", args: [], env: {} },
    },
  });
});

Deno.test("continue: a block with a list of named entries, remote ones typed, headers under requestOptions", () => {
  const block = { name: "sherlock", version: "1.0.0", schema: "v1" };
  assertDocument("continue", inlineEntries(), {
    ...block,
    mcpServers: [
      {
        name: "github",
        command: "github-mcp-server",
        args: ["stdio", "--read-only"],
        env: {
          GITHUB_TOOLSETS: "repos,issues",
          GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_abc",
        },
      },
      {
        name: "docs",
        type: "streamable-http",
        url: "https://mcp.example.com/mcp",
        requestOptions: {
          headers: { "X-Team": "platform", Authorization: "Bearer eyJ.tok" },
        },
      },
      {
        name: "events",
        type: "sse",
        url: "http://127.0.0.1:8080/sse",
        requestOptions: { headers: {} },
      },
      { name: "plain", command: "/opt/mcp/plain", args: [], env: {} },
    ],
  });
  assertDocument("continue", shimEntries(), {
    ...block,
    mcpServers: [
      {
        name: "github",
        command: "/opt/sherlock/bin/sherlock",
        args: GITHUB_SHIM_ARGS,
        env: { GITHUB_TOOLSETS: "repos,issues" },
      },
      {
        name: "docs",
        type: "streamable-http",
        url: "https://mcp.example.com/mcp",
        requestOptions: {
          headers: { "X-Team": "platform", Authorization: "Bearer eyJ.tok" },
        },
      },
      {
        name: "events",
        type: "sse",
        url: "http://127.0.0.1:8080/sse",
        requestOptions: { headers: {} },
      },
      { name: "plain", command: "/opt/mcp/plain", args: [], env: {} },
    ],
  });
});

Deno.test("every file format: an empty session has no servers", () => {
  assertDocument("mcp-json", {}, { mcpServers: {} });
  assertDocument("servers-map", {}, {});
  assertDocument("opencode", {}, { mcp: {} });
  assertDocument("gemini", {}, { mcpServers: {} });
  assertDocument("continue", {}, {
    name: "sherlock",
    version: "1.0.0",
    schema: "v1",
    mcpServers: [],
  });
  assert.deepEqual(renderDocument("codex-overrides", {}), {
    kind: "argv",
    values: [],
  });
});

/** The argv values of codex-overrides. */
function codexValues(entries: Record<string, ServerEntry>): string[] {
  const rendered = renderDocument("codex-overrides", entries);
  assert.equal(rendered.kind, "argv");
  return rendered.kind === "argv" ? rendered.values : [];
}

/**
 * Reads one `-c` value back the way Codex does: `<dotted key>=<TOML value>`
 * is a TOML document of one line.
 */
function readOverride(value: string): Record<string, unknown> {
  // smol-toml's tables have no prototype; compare plain objects.
  const document = JSON.parse(JSON.stringify(parse(value))) as {
    mcp_servers?: Record<string, unknown>;
  };
  assert.deepEqual(Object.keys(document), ["mcp_servers"], value);
  const servers = document.mcp_servers!;
  assert.equal(Object.keys(servers).length, 1, value);
  return servers;
}

/** What Codex reads for an entry. */
function codexTable(entry: ServerEntry): Record<string, unknown> {
  return entry.kind === "stdio"
    ? { command: entry.command, args: entry.args, env: entry.env }
    : { url: entry.url, http_headers: entry.headers };
}

Deno.test("codex-overrides: one mcp_servers.<name>={…} value per server, exactly", () => {
  assert.deepEqual(codexValues(inlineEntries()), [
    'mcp_servers.github={command="github-mcp-server",args=["stdio","--read-only"],' +
    'env={GITHUB_TOOLSETS="repos,issues",GITHUB_PERSONAL_ACCESS_TOKEN="ghp_abc"}}',
    'mcp_servers.docs={url="https://mcp.example.com/mcp",' +
    'http_headers={X-Team="platform",Authorization="Bearer eyJ.tok"}}',
    'mcp_servers.events={url="http://127.0.0.1:8080/sse",http_headers={}}',
    'mcp_servers.plain={command="/opt/mcp/plain",args=[],env={}}',
  ]);
});

Deno.test("codex-overrides: a shim entry, and what Codex reads back", () => {
  const entries = shimEntries();
  const values = codexValues(entries);
  assert.equal(
    values[0],
    'mcp_servers.github={command="/opt/sherlock/bin/sherlock",args=[' +
      GITHUB_SHIM_ARGS.map((arg) => JSON.stringify(arg)).join(",") +
      '],env={GITHUB_TOOLSETS="repos,issues"}}',
  );
  const names = Object.keys(entries);
  values.forEach((value, index) => {
    const name = names[index];
    assert.deepEqual(readOverride(value), {
      [name]: codexTable(entries[name]),
    });
  });
});

/** Strings that a TOML writer must escape or keep as they are. */
const AWKWARD = [
  "",
  "with space",
  'double"quote',
  "single'quote",
  "back\\slash",
  "C:\\Program Files\\x",
  "\\u0041 is not an escape here",
  "ünïcødé ✓ 日本語 😀",
  "tab\there",
  "new\nline\r\n",
  "nul\u0000bell\u0007esc\u001b",
  "del\u007fchar",
  "line\u2028separator",
  "=",
  "{x=1}",
  "[a, b]",
  "# not a comment",
  "a,b",
  "$HOME ${HOME} $$",
  "'''",
  '"""',
];

Deno.test("codex-overrides: awkward command, args and env read back exactly", () => {
  const entry: StdioEntry = {
    kind: "stdio",
    command: '/opt/my tools/mcp "server"\\bin',
    args: AWKWARD,
    env: Object.fromEntries(
      AWKWARD.map((value, index) => [`V${index}`, value]),
    ),
  };
  const [value] = codexValues({ awkward: entry });
  assert.match(value, /^mcp_servers\.awkward=\{/);
  assert.deepEqual(readOverride(value), { awkward: codexTable(entry) });
  // One argv word: no raw newline or control character in it.
  assert.ok(
    [...value].every((character) => {
      const code = character.codePointAt(0)!;
      return code >= 0x20 && code !== 0x7f;
    }),
    "a control character in the value",
  );
});

Deno.test("codex-overrides: awkward URL and header values read back exactly", () => {
  const entry: RemoteEntry = {
    kind: "remote",
    url: 'https://mcp.example.com/a b/ü?q="x"&r=\\',
    transport: "http",
    headers: Object.fromEntries(
      AWKWARD.map((value, index) => [`X-H${index}`, value]),
    ),
  };
  const [value] = codexValues({ remote: entry });
  assert.deepEqual(readOverride(value), { remote: codexTable(entry) });
});

Deno.test("codex-overrides: names and keys that are not bare TOML keys are quoted", () => {
  const plainEntry = (env: Record<string, string>): StdioEntry => ({
    kind: "stdio",
    command: "srv",
    args: [],
    env,
  });
  const entries: Record<string, ServerEntry> = {
    "a-b_c9": plainEntry({}),
    "123": plainEntry({}),
    "my.server": plainEntry({}),
    "with space": plainEntry({}),
    "ünï": plainEntry({}),
    'q"uote': plainEntry({}),
    "": plainEntry({}),
    keys: plainEntry({ "A.B": "1", "C D": "2", "É": "3", 'x"y': "4", "": "5" }),
  };
  const values = codexValues(entries);
  // In the entries' order (JavaScript puts "123" first).
  const names = Object.keys(entries);
  const valueOf = (name: string) => values[names.indexOf(name)];
  // Bare where TOML allows it, quoted elsewhere.
  assert.match(valueOf("a-b_c9"), /^mcp_servers\.a-b_c9=\{/);
  assert.match(valueOf("123"), /^mcp_servers\.123=\{/);
  assert.match(valueOf("my.server"), /^mcp_servers\."my\.server"=\{/);
  assert.match(valueOf("with space"), /^mcp_servers\."with space"=\{/);
  assert.match(valueOf('q"uote'), /^mcp_servers\."q\\"uote"=\{/);
  assert.match(valueOf(""), /^mcp_servers\.""=\{/);
  values.forEach((value, index) => {
    const name = names[index];
    assert.deepEqual(readOverride(value), {
      [name]: codexTable(entries[name]),
    });
  });
});

/** The argv of linear's bridge entry after sherlock's own command. */
const LINEAR_BRIDGE_ARGS = [
  "bridge",
  "--socket",
  "/run/user/1000/sherlock/broker.sock",
  "--session",
  "0123456789ab",
  "--agent",
  "fake",
  "--url",
  "https://mcp.linear.example/sse",
  "--transport",
  "sse",
  "--header",
  "X-Team=platform",
  "linear",
];

/** linear through the bridge, as a session with capability `cap` renders it. */
function bridgeEntries(format: McpFormat): Record<string, ServerEntry> {
  return serverEntries([linear], {
    tokens: new Map(),
    delivery: planDelivery({
      services: [linear],
      format,
      configured: "inline",
      agent: "fake",
    }),
    shim: { ...SHIM, capability: "cap" },
  });
}

Deno.test("bridge entry: a stdio server running sherlock bridge, in every file format", () => {
  const stdio = {
    command: "/opt/sherlock/bin/sherlock",
    args: LINEAR_BRIDGE_ARGS,
    env: { SHERLOCK_SESSION_CAPABILITY: "cap" },
  };
  assertDocument("mcp-json", bridgeEntries("mcp-json"), {
    mcpServers: { linear: { type: "stdio", ...stdio } },
  });
  assertDocument("servers-map", bridgeEntries("servers-map"), {
    linear: stdio,
  });
  assertDocument("gemini", bridgeEntries("gemini"), {
    mcpServers: { linear: stdio },
  });
  assertDocument("continue", bridgeEntries("continue"), {
    name: "sherlock",
    version: "1.0.0",
    schema: "v1",
    mcpServers: [{ name: "linear", ...stdio }],
  });
  assertDocument("opencode", bridgeEntries("opencode"), {
    mcp: {
      linear: {
        type: "local",
        command: [stdio.command, ...stdio.args],
        environment: stdio.env,
        enabled: true,
      },
    },
  });
});

Deno.test("bridge entry: Codex gets an SSE server with a token through the bridge, read back exactly", () => {
  const entries = bridgeEntries("codex-overrides");
  const values = codexValues(entries);
  assert.deepEqual(values, [
    'mcp_servers.linear={command="/opt/sherlock/bin/sherlock",args=[' +
    LINEAR_BRIDGE_ARGS.map((arg) => JSON.stringify(arg)).join(",") +
    '],env={SHERLOCK_SESSION_CAPABILITY="cap"}}',
  ]);
  assert.deepEqual(readOverride(values[0]), {
    linear: codexTable(entries.linear),
  });
});
