/**
 * The rendered MCP config documents (lib/render/formats.ts) and the server
 * entries they are made from (lib/render/servers.ts).
 */

import { docs, events, github, plain, service } from "../helpers/services.ts";
import assert from "node:assert/strict";
import {
  isArgvFormat,
  MCP_FORMATS,
  renderDocument,
  type RenderedDocument,
} from "../../lib/render/formats.ts";
import {
  REDACTED,
  serverEntries as renderEntries,
  type ServerEntry,
} from "../../lib/render/servers.ts";
import type { Service } from "../../lib/services/loader.ts";
import { planDelivery } from "../../lib/render/delivery.ts";

/** The entries with every token inline (the shim has its own tests). */
function serverEntries(
  services: Service[],
  tokens: ReadonlyMap<string, string>,
): Record<string, ServerEntry> {
  const delivery = planDelivery({
    services,
    format: "mcp-json",
    configured: "inline",
    agent: "fake",
  });
  return renderEntries(services, { tokens, delivery });
}

/** The text of a document rendered for a file. */
function jsonText(document: RenderedDocument): string {
  assert.equal(document.kind, "json");
  return document.kind === "json" ? document.text : "";
}

Deno.test("mcp-json: an empty session is an empty mcpServers map", () => {
  const document = renderDocument("mcp-json", serverEntries([], new Map()));
  assert.equal(jsonText(document), '{\n  "mcpServers": {}\n}\n');
});

Deno.test("mcp-json: a stdio server is type/command/args/env", () => {
  const document = renderDocument(
    "mcp-json",
    serverEntries([plain], new Map()),
  );
  assert.deepEqual(JSON.parse(jsonText(document)), {
    mcpServers: {
      plain: { type: "stdio", command: "/opt/mcp/plain", args: [], env: {} },
    },
  });
});

Deno.test("mcp-json: a remote server is type/url/headers", () => {
  const document = renderDocument(
    "mcp-json",
    serverEntries([events], new Map()),
  );
  assert.deepEqual(JSON.parse(jsonText(document)), {
    mcpServers: {
      events: { type: "sse", url: "http://127.0.0.1:8080/sse", headers: {} },
    },
  });
});

Deno.test("mcp-json: tokens go into the stdio env and the remote header, formatted", () => {
  const tokens = new Map([["github", "ghp_abc"], ["docs", "eyJ.tok"]]);
  const document = renderDocument(
    "mcp-json",
    serverEntries([github, docs, plain], tokens),
  );
  assert.deepEqual(JSON.parse(jsonText(document)), {
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
      plain: { type: "stdio", command: "/opt/mcp/plain", args: [], env: {} },
    },
  });
});

Deno.test("serverEntries: a missing token is redacted, never empty", () => {
  const entries = serverEntries([github, docs], new Map());
  assert.deepEqual(entries.github, {
    kind: "stdio",
    command: "github-mcp-server",
    args: ["stdio", "--read-only"],
    env: {
      GITHUB_TOOLSETS: "repos,issues",
      GITHUB_PERSONAL_ACCESS_TOKEN: REDACTED,
    },
  });
  assert.deepEqual(entries.docs, {
    kind: "remote",
    url: "https://mcp.example.com/mcp",
    transport: "http",
    headers: { "X-Team": "platform", Authorization: `Bearer ${REDACTED}` },
  });
});

Deno.test("serverEntries: a custom format, every {token} replaced", () => {
  const custom = service(`
[service]
name = "custom"
[server]
url = "https://x.example/mcp"
[token]
source = "secret"
header = "X-Auth"
format = "token={token};again={token}"
delivery = "inline"
`);
  const entries = serverEntries([custom], new Map([["custom", "T"]]));
  assert.deepEqual(entries.custom, {
    kind: "remote",
    url: "https://x.example/mcp",
    transport: "http",
    headers: { "X-Auth": "token=T;again=T" },
  });
});

Deno.test("serverEntries: a token with $ patterns is inserted literally", () => {
  const entries = serverEntries([docs], new Map([["docs", "a$&b$1c$$"]]));
  assert.equal(
    (entries.docs as { headers: Record<string, string> }).headers.Authorization,
    "Bearer a$&b$1c$$",
  );
});

Deno.test("serverEntries: never changes the services it renders", () => {
  const before = structuredClone(github);
  serverEntries([github], new Map([["github", "secret"]]));
  assert.deepEqual(github, before);
});

Deno.test("renderDocument: every file format renders JSON that parses", () => {
  for (const format of MCP_FORMATS.filter((format) => !isArgvFormat(format))) {
    const text = jsonText(
      renderDocument(format, serverEntries([github, docs], new Map())),
    );
    assert.ok(text.endsWith("\n"));
    JSON.parse(text);
  }
});
