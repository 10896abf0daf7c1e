/**
 * The modern-only test server (tests/helpers/modern_server.ts) as the
 * official SDK v2 client sees it: what the bridge's tests rely on it to do.
 */

import assert from "node:assert/strict";
import {
  Client,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import {
  MODERN_REVISION,
  MODERN_SERVER_NAME,
  sha256,
  spawnModernServer,
  startModernServer,
} from "../helpers/modern_server.ts";

function modernClient(): Client {
  return new Client({ name: "modern-server-test", version: "1.0.0" }, {
    versionNegotiation: { mode: "auto" },
    capabilities: { elicitation: {}, sampling: {} },
  });
}

Deno.test("modern server: the SDK v2 client negotiates 2026-07-28 and calls every tool", async () => {
  await using server = await startModernServer({ token: "tok_modern" });
  const client = modernClient();
  client.setRequestHandler("elicitation/create", () => ({
    action: "accept",
    content: { ok: true },
  }));
  client.setRequestHandler("sampling/createMessage", () => ({
    role: "assistant",
    model: "test-model",
    content: { type: "text", text: "hello" },
  }));
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    requestInit: { headers: { Authorization: "Bearer tok_modern" } },
  });
  await client.connect(transport);
  try {
    assert.equal(client.getServerVersion()?.name, MODERN_SERVER_NAME);
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN_REVISION);
    const tools = await client.listTools();
    assert.deepEqual(
      tools.tools.map((tool) => tool.name).sort(),
      ["add_tool", "ask_model", "confirm", "echo", "slow", "whoami"],
    );
    const echo = await client.callTool({
      name: "echo",
      arguments: { text: "hi" },
    });
    assert.deepEqual(echo.content, [{ type: "text", text: "hi" }]);
    const whoami = await client.callTool({ name: "whoami", arguments: {} });
    assert.deepEqual(whoami.content, [{
      type: "text",
      text: sha256("tok_modern"),
    }]);
    const confirm = await client.callTool({ name: "confirm", arguments: {} });
    assert.deepEqual(confirm.content, [{
      type: "text",
      text: 'accept:{"ok":true}',
    }]);
    const sampled = await client.callTool({
      name: "ask_model",
      arguments: {},
    });
    assert.deepEqual(sampled.content, [{ type: "text", text: "model:hello" }]);
    assert.equal(server.counts.methods["initialize"], undefined);
    assert.ok(server.counts.seen.every((seen) => seen.sessionId === null));
  } finally {
    await client.close();
  }
});

Deno.test("modern server: a request without the token gets 401 with a Bearer challenge", async () => {
  await using server = await startModernServer({ token: "tok_modern" });
  const response = await fetch(server.url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: "{}",
  });
  await response.body?.cancel();
  assert.equal(response.status, 401);
  assert.match(response.headers.get("www-authenticate") ?? "", /^Bearer /);
});

Deno.test("modern server: a 2025 initialize is refused unless the era is dual", async () => {
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "old", version: "1" },
    },
  };
  const post = (url: string) =>
    fetch(url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
      },
      body: JSON.stringify(initialize),
    }).then(async (response) => {
      const text = await response.text();
      return text;
    });
  {
    await using server = await startModernServer();
    assert.match(await post(server.url), /"error"/);
  }
  {
    await using server = await startModernServer({ era: "dual" });
    assert.match(await post(server.url), /"protocolVersion":"2025-06-18"/);
  }
});

Deno.test("modern server: a tool added mid-session reaches a listening client as list_changed", async () => {
  await using server = await startModernServer();
  const changed = Promise.withResolvers<string[]>();
  const client = new Client({ name: "modern-server-test", version: "1" }, {
    versionNegotiation: { mode: "auto" },
    listChanged: {
      tools: {
        onChanged: (error, tools) =>
          error
            ? changed.reject(error)
            : changed.resolve((tools ?? []).map((tool) => tool.name)),
      },
    },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  try {
    await client.listTools();
    await client.callTool({ name: "add_tool", arguments: {} });
    assert.ok((await changed.promise).includes("added"));
    assert.ok(server.counts.methods["subscriptions/listen"] >= 1);
  } finally {
    await client.close();
  }
});

Deno.test("modern server: runs as a child process and answers server/discover", async () => {
  await using server = await spawnModernServer({ token: "tok_child" });
  const client = modernClient();
  await client.connect(
    new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { Authorization: "Bearer tok_child" } },
    }),
  );
  try {
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN_REVISION);
  } finally {
    await client.close();
  }
});
