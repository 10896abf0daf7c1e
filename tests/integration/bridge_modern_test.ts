/**
 * Issue 19, items 1 and 3: `sherlock bridge` as a real process between a
 * 2025-era agent on stdio (the official SDK v1's stdio client, which
 * speaks 2025-11-25, or raw JSON-RPC lines for 2025-06-18) and a server
 * that serves only MCP 2026-07-28 (tests/helpers/modern_server.ts: the SDK
 * v2's `createMcpHandler(factory, { legacy: "reject" })`), with its tokens
 * from a real, logged-in broker: initialize answered from
 * `server/discover`, what every request must carry, list-changed through
 * `subscriptions/listen`, elicitation and sampling mid-request (or the
 * revision's refusal), the token's 401/403 handling, and the token in no
 * URL and no line on stderr.
 */

import assert from "node:assert/strict";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { join } from "node:path";
import { type BrokerHome, createBrokerHome } from "../helpers/broker_home.ts";
import { registerSession } from "../../lib/broker/client.ts";
import { CAPABILITY_ENV } from "../../lib/render/servers.ts";
import {
  AUTH_ERROR_CODE,
  MISSING_CAPABILITY_CODE,
} from "../../lib/bridge/relay.ts";
import { randomToken } from "../helpers/leaks.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { sh } from "../helpers/shell.ts";
import { sherlockCommand } from "../helpers/sherlock.ts";
import { waitUntil } from "../helpers/wait.ts";
import { type RawBridge, startRawBridge } from "../helpers/raw_bridge.ts";
import {
  MODERN_REVISION,
  MODERN_SERVER_NAME,
  type ModernServer,
  sha256,
  startModernServer,
} from "../helpers/modern_server.ts";
import {
  REMOTE_SERVER_NAME,
  startRemoteMcpServer,
} from "../fixtures/remote_mcp_server.ts";

const SERVICE = "remote";
const SESSION = "s-bridge-modern";
const AGENT = "fake";

/** The capability variable of each home's registered session. */
const sessionEnv = new WeakMap<BrokerHome, Record<string, string>>();

/** A logged-in broker whose service `remote` gets its token from a helper. */
async function brokerWithService(
  home: BrokerHome,
  url: string,
  helper: { token: string } | { script: string },
): Promise<void> {
  const command = "script" in helper
    ? home.writeScript("remote-helper", helper.script)
    : home.tokenHelper(SERVICE, { ...helper, expiresIn: 3600 }).path;
  home.writeService(
    SERVICE,
    tokenServiceToml({ name: SERVICE, url, command: [command] }),
  );
  await home.login();
  const { capability } = await registerSession({
    socket: home.socket,
    session: SESSION,
    agent: AGENT,
    services: [SERVICE],
    pid: Deno.pid,
  });
  sessionEnv.set(home, { [CAPABILITY_ENV]: capability });
}

function bridgeArgs(home: BrokerHome, url: string): string[] {
  return [
    "bridge",
    "--socket",
    home.socket,
    "--session",
    SESSION,
    "--agent",
    AGENT,
    "--url",
    url,
    "--verbose",
    SERVICE,
  ];
}

/**
 * The SDK v1 client (a 2025-11-25 agent that declares elicitation and
 * sampling), connected through a bridge it spawned.
 */
async function connectAgent(
  home: BrokerHome,
  url: string,
): Promise<{ client: Client; stderr: () => string; changed: () => number }> {
  const [command, ...rest] = sherlockCommand(bridgeArgs(home, url));
  const transport = new StdioClientTransport({
    command,
    args: rest,
    env: { ...home.env, ...sessionEnv.get(home) },
    cwd: home.work,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => stderr += String(chunk));
  const client = new Client({ name: "bridge-modern-test", version: "1.0.0" }, {
    capabilities: { elicitation: {}, sampling: {} },
  });
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    assert.equal(request.params.message, "Proceed?");
    return { action: "accept", content: { ok: true } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, () => ({
    role: "assistant",
    model: "test-model",
    content: { type: "text", text: "hello" },
  }));
  let changed = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changed++;
  });
  await client.connect(transport);
  return { client, stderr: () => stderr, changed: () => changed };
}

function rawBridge(home: BrokerHome, url: string): RawBridge {
  return startRawBridge({
    args: bridgeArgs(home, url),
    env: { ...home.env, ...sessionEnv.get(home) },
    cwd: home.work,
  });
}

function textOf(result: unknown): string {
  const content = (result as { content: { type: string; text: string }[] })
    .content;
  return content.map((part) => part.text).join("");
}

/** Every request the server saw carried what the revision requires. */
function assertModernRequests(server: ModernServer, token: string): void {
  assert.equal(server.counts.methods["initialize"], undefined);
  for (const seen of server.counts.seen) {
    assert.equal(seen.httpMethod, "POST", "no GET stream, no DELETE");
    assert.equal(seen.sessionId, null);
    assert.equal(seen.protocolVersion, MODERN_REVISION);
    assert.equal(seen.mcpMethod, seen.method);
    const params = (seen.body as { params?: Record<string, unknown> }).params;
    const meta = params?._meta as Record<string, unknown>;
    assert.equal(
      meta["io.modelcontextprotocol/protocolVersion"],
      MODERN_REVISION,
    );
    assert.ok(meta["io.modelcontextprotocol/clientCapabilities"]);
    if (seen.method === "tools/call") {
      assert.equal(seen.mcpName, params?.name);
    }
    assert.ok(!seen.url.includes(token), seen.url);
  }
}

Deno.test("bridge modern: a 2025-11-25 agent lists and calls tools of a 2026-07-28-only server; elicitation and sampling reach it; list_changed arrives through subscriptions/listen", async () => {
  const token = randomToken();
  await using server = await startModernServer({ token });
  await using home = await createBrokerHome();
  await brokerWithService(home, server.url, { token });
  const { client, stderr, changed } = await connectAgent(home, server.url);
  try {
    assert.equal(client.getServerVersion()?.name, MODERN_SERVER_NAME);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), [
      "add_tool",
      "ask_model",
      "confirm",
      "echo",
      "slow",
      "whoami",
    ]);
    assert.equal(
      textOf(
        await client.callTool({ name: "echo", arguments: { text: "hé" } }),
      ),
      "hé",
    );
    assert.equal(
      textOf(await client.callTool({ name: "whoami", arguments: {} })),
      sha256(token),
    );
    assert.equal(
      textOf(await client.callTool({ name: "confirm", arguments: {} })),
      'accept:{"ok":true}',
    );
    assert.equal(
      textOf(await client.callTool({ name: "ask_model", arguments: {} })),
      "model:hello",
    );
    await client.ping();
    await waitUntil(
      () => (server.counts.methods["subscriptions/listen"] ?? 0) >= 1,
      "the subscriptions/listen stream",
    );
    await client.callTool({ name: "add_tool", arguments: {} });
    await waitUntil(
      () => changed() >= 1,
      "the tools/list_changed notification",
    );
    const after = await client.listTools();
    assert.ok(after.tools.some((tool) => tool.name === "added"));
  } finally {
    await client.close();
  }
  assertModernRequests(server, token);
  // The agent's capabilities reached the server in each request's _meta.
  const call = server.counts.seen.find((seen) => seen.method === "tools/call")!;
  const meta = (call.body as { params: { _meta: Record<string, unknown> } })
    .params._meta;
  assert.deepEqual(meta["io.modelcontextprotocol/clientCapabilities"], {
    elicitation: {},
    sampling: {},
  });
  // The retried call carried the answers under a new id.
  const confirms = server.counts.seen.filter((seen) =>
    seen.mcpName === "confirm"
  );
  assert.equal(confirms.length, 2);
  const [asked, retried] = confirms.map((seen) =>
    seen.body as { id: unknown; params: Record<string, unknown> }
  );
  assert.notEqual(asked.id, retried.id);
  assert.deepEqual(retried.params.inputResponses, {
    confirm: { action: "accept", content: { ok: true } },
  });
  assert.match(stderr(), /speaks MCP 2026-07-28/);
  assert.ok(!stderr().includes(token));
});

Deno.test("bridge modern: a 2025-06-18 agent that declared neither elicitation nor sampling gets the revision's refusal; ping and the handshake are answered by the bridge", async () => {
  const token = randomToken();
  await using server = await startModernServer({ token });
  await using home = await createBrokerHome();
  await brokerWithService(home, server.url, { token });
  const bridge = rawBridge(home, server.url);
  await bridge.send({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "old-agent", version: "1" },
    },
  });
  const hello = (await bridge.receive()).result as Record<string, unknown>;
  assert.equal(hello.protocolVersion, "2025-06-18");
  assert.deepEqual(hello.serverInfo, {
    name: MODERN_SERVER_NAME,
    version: "1.0.0",
  });
  await bridge.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  await bridge.send({ jsonrpc: "2.0", id: 2, method: "ping" });
  assert.deepEqual(await bridge.receive(), {
    jsonrpc: "2.0",
    id: 2,
    result: {},
  });
  for (
    const [id, tool, capability] of [
      [3, "confirm", "elicitation"],
      [4, "ask_model", "sampling"],
    ] as const
  ) {
    await bridge.send({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: tool, arguments: {} },
    });
    const answer = await bridge.receive();
    assert.equal(answer.id, id);
    const error = answer.error as {
      code: number;
      data: { requiredCapabilities: Record<string, unknown> };
    };
    assert.equal(error.code, MISSING_CAPABILITY_CODE, JSON.stringify(answer));
    // The SDK's server refuses before it asks (it reads the capabilities
    // the bridge put in _meta); the bridge would refuse the same way.
    assert.ok(capability in error.data.requiredCapabilities);
  }
  const { code, stderr } = await bridge.end();
  assert.equal(code, 0);
  assert.ok(!stderr.includes(token));
  assert.equal(server.counts.methods["ping"], undefined);
  assertModernRequests(server, token);
});

Deno.test("bridge modern: a 401 is healed by one forced refresh; the token is in no URL and no line on stderr", async () => {
  const stale = randomToken("stale");
  const fresh = randomToken("fresh");
  await using server = await startModernServer({ token: fresh });
  await using home = await createBrokerHome();
  const marker = join(home.scratch, "helper-ran");
  await brokerWithService(home, server.url, {
    script: `if [ -e ${sh(marker)} ]; then echo ${sh(fresh)}; else touch ${
      sh(marker)
    }; echo ${sh(stale)}; fi`,
  });
  const { client, stderr } = await connectAgent(home, server.url);
  try {
    assert.equal(server.counts.unauthorized, 1);
    assert.equal(
      textOf(await client.callTool({ name: "whoami", arguments: {} })),
      sha256(fresh),
    );
    assert.equal(server.counts.unauthorized, 1);
  } finally {
    await client.close();
  }
  assertModernRequests(server, fresh);
  for (const seen of server.counts.seen) {
    assert.ok(!seen.url.includes(stale));
  }
  assert.ok(!stderr().includes(stale) && !stderr().includes(fresh));
});

Deno.test("bridge modern: a server that refuses every token, and a 403 insufficient_scope, are answered with errors naming sherlock auth", async () => {
  const token = randomToken();
  {
    await using server = await startModernServer({ token: randomToken() });
    await using home = await createBrokerHome();
    await brokerWithService(home, server.url, { token });
    const bridge = rawBridge(home, server.url);
    await bridge.send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "a", version: "1" },
      },
    });
    const error = (await bridge.receive()).error as {
      code: number;
      message: string;
    };
    assert.equal(error.code, AUTH_ERROR_CODE);
    assert.match(error.message, /HTTP 401.*sherlock auth remote/);
    const { stderr } = await bridge.end();
    // One refused token, one forced refresh: two tries.
    assert.equal(server.counts.unauthorized, 2);
    assert.ok(!stderr.includes(token));
  }
  {
    await using server = await startModernServer({
      token,
      requireScope: { tool: "echo", scope: "mcp:write", holds: () => false },
    });
    await using home = await createBrokerHome();
    await brokerWithService(home, server.url, { token });
    const bridge = rawBridge(home, server.url);
    await bridge.send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "a", version: "1" },
      },
    });
    assert.ok((await bridge.receive()).result);
    await bridge.send({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "echo", arguments: { text: "x" } },
    });
    const error = (await bridge.receive()).error as {
      code: number;
      message: string;
    };
    assert.equal(error.code, AUTH_ERROR_CODE);
    assert.match(
      error.message,
      /HTTP 403, insufficient scope: it needs mcp:write/,
    );
    assert.match(error.message, /sherlock auth remote/);
    const { stderr } = await bridge.end();
    assert.equal(server.counts.insufficientScope, 1);
    assert.ok(!stderr.includes(token));
  }
});

Deno.test("bridge modern: a 2025 server is found out once and relayed as before; -v says which revision it speaks", async () => {
  const token = randomToken();
  await using remote = await startRemoteMcpServer({ token });
  await using home = await createBrokerHome();
  await brokerWithService(home, remote.url, { token });
  const { client, stderr } = await connectAgent(home, remote.url);
  try {
    assert.equal(client.getServerVersion()?.name, REMOTE_SERVER_NAME);
    await client.listTools();
    await client.listTools();
  } finally {
    await client.close();
  }
  assert.equal(remote.counts.methods["server/discover"], 1);
  assert.equal(remote.counts.methods["initialize"], 1);
  assert.match(stderr(), /speaks MCP 2025-11-25 \(Streamable HTTP of 2025/);
});

Deno.test("bridge modern: a server that serves both eras is spoken to in 2026-07-28", async () => {
  const token = randomToken();
  await using server = await startModernServer({ token, era: "dual" });
  await using home = await createBrokerHome();
  await brokerWithService(home, server.url, { token });
  const { client } = await connectAgent(home, server.url);
  try {
    assert.equal(
      textOf(await client.callTool({ name: "echo", arguments: { text: "d" } })),
      "d",
    );
  } finally {
    await client.close();
  }
  assertModernRequests(server, token);
});

Deno.test("bridge modern: logging/setLevel becomes each request's log level, resources/subscribe reopens the listen stream with the resource, notifications/cancelled closes the request's stream", async () => {
  const token = randomToken();
  await using server = await startModernServer({ token });
  await using home = await createBrokerHome();
  await brokerWithService(home, server.url, { token });
  const bridge = rawBridge(home, server.url);
  await bridge.send({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "a", version: "1" },
    },
  });
  assert.ok((await bridge.receive()).result);
  await bridge.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  await bridge.send({
    jsonrpc: "2.0",
    id: 2,
    method: "logging/setLevel",
    params: { level: "debug" },
  });
  assert.deepEqual((await bridge.receive()).result, {});
  await bridge.send({
    jsonrpc: "2.0",
    id: 3,
    method: "resources/subscribe",
    params: { uri: "file:///watched" },
  });
  assert.deepEqual((await bridge.receive()).result, {});
  await bridge.send({
    jsonrpc: "2.0",
    id: 4,
    method: "tools/call",
    params: { name: "echo", arguments: { text: "after" } },
  });
  assert.equal((await bridge.receive()).id, 4);
  await bridge.send({
    jsonrpc: "2.0",
    id: 5,
    method: "tools/call",
    params: { name: "slow", arguments: {} },
  });
  await waitUntil(() => server.slow().started === 1, "the slow call");
  await bridge.send({
    jsonrpc: "2.0",
    method: "notifications/cancelled",
    params: { requestId: 5 },
  });
  await waitUntil(() => server.slow().cancelled === 1, "its cancellation");
  await waitUntil(
    () =>
      server.counts.seen.filter((seen) =>
        seen.method === "subscriptions/listen"
      ).length >= 2,
    "the listen stream, reopened",
  );
  await bridge.end();
  const echo = server.counts.seen.find((seen) => seen.mcpName === "echo")!;
  const meta = (echo.body as { params: { _meta: Record<string, unknown> } })
    .params._meta;
  assert.equal(meta["io.modelcontextprotocol/logLevel"], "debug");
  const listens = server.counts.seen.filter((seen) =>
    seen.method === "subscriptions/listen"
  ).map((seen) =>
    (seen.body as { params: { notifications: Record<string, unknown> } })
      .params.notifications
  );
  assert.deepEqual(listens[0], { toolsListChanged: true });
  assert.deepEqual(listens.at(-1), {
    toolsListChanged: true,
    resourceSubscriptions: ["file:///watched"],
  });
  assert.equal(server.counts.methods["logging/setLevel"], undefined);
  assert.equal(server.counts.methods["resources/subscribe"], undefined);
});
