/**
 * The 2026-07-28 wire as the bridge writes and reads it
 * (lib/bridge/modern_wire.ts): pure functions, no server.
 */

import assert from "node:assert/strict";
import {
  agentHello,
  checkTools,
  classifyDiscover,
  forAgent,
  headerValue,
  initializeAnswer,
  listenFilter,
  missingCapability,
  MODERN_REVISION,
  requestHeaders,
  withEnvelope,
} from "../../lib/bridge/modern_wire.ts";

const HELLO = agentHello({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: { elicitation: {} },
    clientInfo: { name: "agent", version: "2" },
  },
});

Deno.test("withEnvelope: the revision, the agent's info and capabilities, its log level; the message's own _meta wins", () => {
  assert.deepEqual(
    withEnvelope({ name: "t", _meta: { progressToken: 7 } }, {
      hello: HELLO,
      logLevel: "debug",
    }),
    {
      name: "t",
      _meta: {
        "io.modelcontextprotocol/protocolVersion": MODERN_REVISION,
        "io.modelcontextprotocol/clientInfo": { name: "agent", version: "2" },
        "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
        "io.modelcontextprotocol/logLevel": "debug",
        progressToken: 7,
      },
    },
  );
});

Deno.test("headerValue and requestHeaders: Mcp-Method, Mcp-Name, Base64 when the value is not plain, Mcp-Param-* from x-mcp-header", () => {
  assert.equal(headerValue("get_weather"), "get_weather");
  assert.equal(headerValue("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
  assert.equal(headerValue(" padded "), "=?base64?IHBhZGRlZCA=?=");
  assert.equal(headerValue("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
  assert.equal(
    headerValue("=?base64?literal?="),
    "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
  );
  assert.deepEqual(
    requestHeaders({ method: "resources/read", params: { uri: "file:///a" } }),
    {
      "MCP-Protocol-Version": MODERN_REVISION,
      "Mcp-Method": "resources/read",
      "Mcp-Name": "file:///a",
    },
  );
  assert.equal(
    requestHeaders({ method: "tools/list", params: { name: "x" } })["Mcp-Name"],
    undefined,
  );
  const { headers: annotated, rejected } = checkTools({
    tools: [{
      name: "execute_sql",
      inputSchema: {
        type: "object",
        properties: {
          region: { type: "string", "x-mcp-header": "Region" },
          query: { type: "string" },
          options: {
            type: "object",
            properties: { dry: { type: "boolean", "x-mcp-header": "Dry" } },
          },
        },
      },
    }, { name: "plain", inputSchema: { type: "object" } }],
  });
  assert.deepEqual([...annotated.keys()], ["execute_sql"]);
  assert.deepEqual(rejected, []);
  assert.deepEqual(
    requestHeaders({
      method: "tools/call",
      params: {
        name: "execute_sql",
        arguments: { region: "us-west1", options: { dry: false }, query: "q" },
      },
    }, annotated.get("execute_sql")),
    {
      "MCP-Protocol-Version": MODERN_REVISION,
      "Mcp-Method": "tools/call",
      "Mcp-Name": "execute_sql",
      "Mcp-Param-Region": "us-west1",
      "Mcp-Param-Dry": "false",
    },
  );
});

Deno.test("classifyDiscover: modern only on a DiscoverResult or UnsupportedProtocolVersion that lists 2026-07-28", () => {
  const modern = classifyDiscover({
    status: 200,
    message: {
      jsonrpc: "2.0",
      id: 1,
      result: { supportedVersions: [MODERN_REVISION], capabilities: {} },
    },
  });
  assert.equal(modern.kind, "modern");
  // A 2025 SDK server: 400 and its own error, no session.
  assert.deepEqual(
    classifyDiscover({
      status: 400,
      message: { jsonrpc: "2.0", id: null, error: { code: -32000 } },
    }),
    { kind: "legacy" },
  );
  // A stateless 2025 server: method not found.
  assert.deepEqual(
    classifyDiscover({
      status: 200,
      message: { jsonrpc: "2.0", id: 1, error: { code: -32601 } },
    }),
    { kind: "legacy" },
  );
  assert.deepEqual(classifyDiscover({ status: 404 }), { kind: "legacy" });
  assert.deepEqual(classifyDiscover({ status: 405 }), { kind: "legacy" });
  assert.deepEqual(
    classifyDiscover({
      status: 400,
      message: {
        error: {
          code: -32022,
          data: { supported: ["2025-11-25", "2027-01-01"] },
        },
      },
    }),
    { kind: "legacy" },
  );
  assert.equal(
    classifyDiscover({
      status: 400,
      message: { error: { code: -32022, data: { supported: ["2027-01-01"] } } },
    }).kind,
    "error",
  );
  assert.equal(classifyDiscover({ status: 502 }).kind, "error");
});

Deno.test("initializeAnswer: the agent's 2025 revision, the server's capabilities, name and instructions", () => {
  assert.deepEqual(
    initializeAnswer(1, HELLO, {
      supportedVersions: [MODERN_REVISION],
      capabilities: { tools: { listChanged: true } },
      instructions: "be kind",
      _meta: {
        "io.modelcontextprotocol/serverInfo": { name: "s", version: "3" },
      },
    }),
    {
      jsonrpc: "2.0",
      id: 1,
      result: {
        protocolVersion: "2025-06-18",
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: "s", version: "3" },
        instructions: "be kind",
      },
    },
  );
  const future = agentHello({
    method: "initialize",
    params: { protocolVersion: "2030-01-01" },
  });
  assert.equal(
    (initializeAnswer(1, future, {}).result as Record<string, unknown>)
      .protocolVersion,
    "2025-11-25",
  );
});

Deno.test("missingCapability: what the agent did not declare, as requiredCapabilities", () => {
  const elicit = { method: "elicitation/create", params: { mode: "form" } };
  const url = { method: "elicitation/create", params: { mode: "url" } };
  const sample = { method: "sampling/createMessage", params: {} };
  const roots = { method: "roots/list" };
  assert.equal(missingCapability(elicit, { elicitation: {} }), undefined);
  assert.deepEqual(missingCapability(elicit, {}), { elicitation: {} });
  assert.deepEqual(missingCapability(url, { elicitation: {} }), {
    elicitation: { url: {} },
  });
  assert.equal(
    missingCapability(url, { elicitation: { url: {} } }),
    undefined,
  );
  assert.deepEqual(missingCapability(sample, { elicitation: {} }), {
    sampling: {},
  });
  assert.equal(missingCapability(sample, { sampling: {} }), undefined);
  assert.deepEqual(missingCapability(roots, {}), { roots: {} });
});

Deno.test("listenFilter and forAgent: listen for what can change; notifications without the subscription tag, results without resultType", () => {
  assert.equal(listenFilter({ tools: {} }, new Set()), undefined);
  assert.deepEqual(
    listenFilter(
      { tools: { listChanged: true }, resources: { listChanged: true } },
      new Set(["file:///a"]),
    ),
    {
      toolsListChanged: true,
      resourcesListChanged: true,
      resourceSubscriptions: ["file:///a"],
    },
  );
  assert.deepEqual(
    forAgent({
      jsonrpc: "2.0",
      method: "notifications/tools/list_changed",
      params: { _meta: { "io.modelcontextprotocol/subscriptionId": "x" } },
    }),
    {
      jsonrpc: "2.0",
      method: "notifications/tools/list_changed",
      params: {},
    },
  );
  assert.deepEqual(
    forAgent({
      jsonrpc: "2.0",
      id: "up-2",
      result: { resultType: "complete", content: [] },
    }, 7),
    { jsonrpc: "2.0", id: 7, result: { content: [] } },
  );
});

Deno.test("checkTools: a tool whose x-mcp-header breaks the revision's rules is left out of tools/list", () => {
  const tool = (name: string, properties: Record<string, unknown>) => ({
    name,
    inputSchema: { type: "object", properties },
  });
  const checked = checkTools({
    tools: [
      tool("good", { a: { type: "integer", "x-mcp-header": "A" } }),
      tool("number", { a: { type: "number", "x-mcp-header": "A" } }),
      tool("twice", {
        a: { type: "string", "x-mcp-header": "Same" },
        b: { type: "string", "x-mcp-header": "same" },
      }),
      tool("not-a-token", { a: { type: "string", "x-mcp-header": "A B" } }),
      tool("in-items", {
        list: {
          type: "array",
          items: { type: "string", "x-mcp-header": "Item" },
        },
      }),
      tool("in-anyof", {
        a: { anyOf: [{ type: "string", "x-mcp-header": "Any" }] },
      }),
    ],
    ttlMs: 5,
  });
  assert.deepEqual(
    checked.rejected.map((one) => one.name),
    ["number", "twice", "not-a-token", "in-items", "in-anyof"],
  );
  assert.deepEqual(checked.result, {
    tools: [tool("good", { a: { type: "integer", "x-mcp-header": "A" } })],
    ttlMs: 5,
  });
  assert.deepEqual(checked.headers.get("good"), [{ path: ["a"], header: "A" }]);
});
