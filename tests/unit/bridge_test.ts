/**
 * The bridge's pure parts: its token keeper (kept until shortly before
 * expiry, one fetch for concurrent requests, one forced refresh for a burst
 * of 401s, a token dropped after a 403), its event-stream reader, the
 * redirects it follows; and its argv.
 */

import assert from "node:assert/strict";
import { TokenKeeper } from "../../lib/bridge/tokens.ts";
import { type EventStreamState, readEvents } from "../../lib/bridge/sse.ts";
import { redirectAllowed } from "../../lib/bridge/relay.ts";
import { parseBridgeArguments } from "../../lib/cli/bridge.ts";
import { UsageError } from "../../lib/errors.ts";
import { planDelivery } from "../../lib/render/delivery.ts";
import { serverEntries } from "../../lib/render/servers.ts";
import { service } from "../helpers/services.ts";

function counting(tokens: { token: string; expiresAt?: number | null }[]) {
  const calls: boolean[] = [];
  const getToken = (options: { forceRefresh: boolean }) => {
    calls.push(options.forceRefresh);
    const next = tokens[Math.min(calls.length - 1, tokens.length - 1)];
    return Promise.resolve(next);
  };
  return { calls, getToken };
}

Deno.test("TokenKeeper: keeps a token until shortly before it expires", async () => {
  let now = 1_000_000;
  const { calls, getToken } = counting([
    { token: "a", expiresAt: now + 600_000 },
    { token: "b", expiresAt: now + 1_200_000 },
  ]);
  const keeper = new TokenKeeper(getToken, () => now);
  assert.equal(await keeper.get(), "a");
  now += 500_000;
  assert.equal(await keeper.get(), "a");
  now += 80_000; // 20 s before expiry: inside the margin.
  assert.equal(await keeper.get(), "b");
  assert.deepEqual(calls, [false, false]);
});

Deno.test("TokenKeeper: a token without expiry is fetched per request", async () => {
  const { calls, getToken } = counting([{ token: "a", expiresAt: null }]);
  const keeper = new TokenKeeper(getToken);
  await keeper.get();
  await keeper.get();
  assert.deepEqual(calls, [false, false]);
});

Deno.test("TokenKeeper: concurrent requests share one fetch", async () => {
  const { calls, getToken } = counting([
    { token: "a", expiresAt: Date.now() + 3_600_000 },
  ]);
  const keeper = new TokenKeeper(getToken);
  const tokens = await Promise.all([keeper.get(), keeper.get(), keeper.get()]);
  assert.deepEqual(tokens, ["a", "a", "a"]);
  assert.deepEqual(calls, [false]);
});

Deno.test("TokenKeeper: a burst of 401s for one token forces one refresh", async () => {
  const later = Date.now() + 3_600_000;
  const { calls, getToken } = counting([
    { token: "a", expiresAt: later },
    { token: "b", expiresAt: later },
  ]);
  const keeper = new TokenKeeper(getToken);
  assert.equal(await keeper.get(), "a");
  const refreshed = await Promise.all([
    keeper.get("a"),
    keeper.get("a"),
    keeper.get("a"),
  ]);
  assert.deepEqual(refreshed, ["b", "b", "b"]);
  // A late 401 for the old token gets the new one without a fetch.
  assert.equal(await keeper.get("a"), "b");
  assert.deepEqual(calls, [false, true]);
});

Deno.test("TokenKeeper: a token forgotten after a 403 is asked for again, without a forced refresh", async () => {
  const later = Date.now() + 3_600_000;
  const { calls, getToken } = counting([
    { token: "a", expiresAt: later },
    { token: "b", expiresAt: later },
  ]);
  const keeper = new TokenKeeper(getToken);
  assert.equal(await keeper.get(), "a");
  keeper.forget("other");
  assert.equal(await keeper.get(), "a", "another token's 403 changes nothing");
  keeper.forget("a");
  assert.equal(await keeper.get(), "b");
  assert.deepEqual(calls, [false, false]);
});

Deno.test("TokenKeeper: a failed fetch is thrown, and the next request tries again", async () => {
  let fail = true;
  const keeper = new TokenKeeper(() =>
    fail
      ? Promise.reject(new Error("not logged in"))
      : Promise.resolve({ token: "a" })
  );
  await assert.rejects(keeper.get(), /not logged in/);
  fail = false;
  assert.equal(await keeper.get(), "a");
});

function streamOf(...chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

Deno.test("readEvents: events across chunks, CRLF, multi-line data, comments, endpoint events", async () => {
  const events = [];
  for await (
    const event of readEvents(streamOf(
      ": keep-alive\n\nevent: endpoint\ndata: /messages?sessionId=1\n\n",
      'data: {"a":\r\ndata: 1}\r',
      "\n\r\nid: 7\nretry: 500\ndata:x\n\n",
      "data: unterminated",
    ))
  ) events.push(event);
  assert.deepEqual(events, [
    {
      event: "endpoint",
      data: "/messages?sessionId=1",
      id: undefined,
      retry: undefined,
    },
    { event: "message", data: '{"a":\n1}', id: undefined, retry: undefined },
    { event: "message", data: "x", id: "7", retry: 500 },
  ]);
});

Deno.test("readEvents: the stream's last event ID and retry, also from events without data; an empty id clears the ID", async () => {
  const state: EventStreamState = {};
  const seen: (string | undefined)[] = [];
  for await (
    const _ of readEvents(
      streamOf(
        "id: a\nretry: 250\n\n", // no data: not yielded, but it counts
        "data: 1\n\n",
        "id: b\ndata: 2\n\n",
      ),
      undefined,
      state,
    )
  ) seen.push(state.lastEventId);
  assert.deepEqual(seen, ["a", "b"]);
  assert.deepEqual(state, { lastEventId: "b", retry: 250 });
  for await (
    const _ of readEvents(streamOf("id\ndata: 3\n\n"), undefined, state)
  ) {
    // An `id` field without a value clears the ID: nothing to resume from.
  }
  assert.equal(state.lastEventId, "");
});

const BASE = [
  "--socket",
  "/run/s.sock",
  "--session",
  "s1",
  "--agent",
  "claude",
  "--url",
  "https://mcp.example.com/mcp",
];

Deno.test("parseBridgeArguments: options, headers, the transport", () => {
  assert.deepEqual(
    parseBridgeArguments([
      ...BASE,
      "--transport",
      "sse",
      "--header",
      "X-Tenant=a=b",
      "github",
    ]),
    {
      socket: "/run/s.sock",
      session: "s1",
      agent: "claude",
      url: "https://mcp.example.com/mcp",
      transport: "sse",
      headers: { "X-Tenant": "a=b" },
      tokenHeader: "Authorization",
      tokenFormat: "Bearer {token}",
      service: "github",
      verbose: false,
    },
  );
  const custom = parseBridgeArguments([
    ...BASE,
    "--token-header",
    "X-Api-Key",
    "--token-format",
    "key {token}",
    "--header",
    "Authorization=Basic public",
    "github",
  ]);
  assert.equal(custom.tokenHeader, "X-Api-Key");
  assert.equal(custom.tokenFormat, "key {token}");
  assert.deepEqual(custom.headers, { Authorization: "Basic public" });
  assert.equal(parseBridgeArguments([...BASE, "github"]).transport, "http");
  assert.equal(
    parseBridgeArguments([...BASE, "--verbose", "github"]).verbose,
    true,
  );
});

Deno.test("parseBridgeArguments: usage errors", () => {
  for (
    const args of [
      [...BASE],
      [...BASE, "a", "b"],
      [...BASE, "--transport", "ws", "a"],
      [...BASE, "--header", "Authorization=Bearer x", "a"],
      [...BASE, "--header", "authorization=Bearer x", "a"],
      [...BASE, "--token-header", "X-Key", "--header", "x-key=1", "a"],
      [...BASE, "--token-header", "Bad Name", "a"],
      [...BASE, "--token-format", "Bearer", "a"],
      [...BASE, "--header", "novalue", "a"],
      [...BASE, "--bogus", "a"],
      [...BASE.slice(0, 6), "--url", "file:///etc/passwd", "a"],
      [...BASE.slice(2), "a"],
    ]
  ) {
    assert.throws(() => parseBridgeArguments(args), UsageError, args.join(" "));
  }
});

Deno.test("parseBridgeArguments: reads back the entry sherlock renders", () => {
  const custom = service(`
[service]
name = "docs"
[server]
url = "https://docs.example.com/sse"
transport = "sse"
headers = { "X-Team" = "a=b" }
[token]
source = "secret"
header = "X-Api-Key"
format = "key {token}"
`);
  const entries = serverEntries([custom], {
    delivery: planDelivery({
      services: [custom],
      format: "mcp-json",
      configured: "inline",
      agent: "claude",
    }),
    tokens: new Map(),
    shim: {
      command: ["/opt/sherlock"],
      socket: "/run/s.sock",
      session: "s1",
      agent: "claude",
      verbose: true,
    },
  });
  const entry = entries.docs;
  assert.equal(entry.kind, "stdio");
  if (entry.kind !== "stdio") return;
  assert.equal(entry.args[0], "bridge");
  assert.deepEqual(parseBridgeArguments(entry.args.slice(1)), {
    socket: "/run/s.sock",
    session: "s1",
    agent: "claude",
    url: "https://docs.example.com/sse",
    transport: "sse",
    headers: { "X-Team": "a=b" },
    tokenHeader: "X-Api-Key",
    tokenFormat: "key {token}",
    service: "docs",
    verbose: true,
  });
});

Deno.test("redirectAllowed: only within the origin; never to another host or port, never from https to http", () => {
  const from = new URL("https://mcp.example.com/mcp");
  const to = (url: string) => redirectAllowed(from, new URL(url));
  assert.equal(to("https://mcp.example.com/v2/mcp"), true);
  assert.equal(to("https://mcp.example.com:443/mcp?x=1"), true);
  assert.equal(to("http://mcp.example.com/mcp"), false, "https to http");
  assert.equal(to("https://mcp.example.com:8443/mcp"), false, "another port");
  assert.equal(to("https://evil.example/mcp"), false, "another host");
  assert.equal(to("https://sub.mcp.example.com/mcp"), false, "a subdomain");
  assert.equal(to("data:text/plain,x"), false);
  const local = new URL("http://127.0.0.1:8080/mcp");
  assert.equal(
    redirectAllowed(local, new URL("http://127.0.0.1:8081/")),
    false,
  );
  assert.equal(
    redirectAllowed(local, new URL("http://localhost:8080/")),
    false,
  );
});
