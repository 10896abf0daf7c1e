/**
 * Issue 19, item 2: streams that end early (SEP-1699) and the order of the
 * agent's messages. A real Streamable HTTP server on 127.0.0.1 and real
 * `fetch`; the relay runs in this process so that the test can give it the
 * sleep it waits with (one that records the wait and returns at once), so
 * that no test waits for a server's `retry` and none asserts a duration.
 */

import assert from "node:assert/strict";
import {
  MAX_RESUMES,
  MAX_RETRY_MS,
  runRelay,
  SEND_ORDER_MS,
  UPSTREAM_ERROR_CODE,
} from "../../lib/bridge/relay.ts";
import { INITIALIZE } from "../helpers/raw_bridge.ts";

/** Far longer than any case here takes. */
const HANG_GUARD_MS = 20_000;

const TOKEN = "t0ken-never-in-a-url";

const INITIALIZED = { jsonrpc: "2.0", method: "notifications/initialized" };
const CALL = {
  jsonrpc: "2.0",
  id: 2,
  method: "tools/call",
  params: { name: "slow", arguments: {} },
};

const SSE_TYPE = { "content-type": "text/event-stream" };

/** What the server saw of one request. */
interface Seen {
  method: string;
  /** The JSON-RPC method of a POST; "" for a GET or DELETE. */
  rpc: string;
  url: string;
  headers: Headers;
}

/**
 * A Streamable HTTP server on 127.0.0.1: `initialize` is answered as JSON
 * with a session, a notification with 202, a GET without `Last-Event-ID`
 * (the stream for server messages) with 405; the rest goes to `handle`.
 */
function server(
  handle: (seen: Seen, body: Record<string, unknown>) => Promise<Response>,
) {
  const seen: Seen[] = [];
  const http = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const body = request.method === "POST" ? await request.json() : {};
      if (body.method === "server/discover") return notModern();
      const one: Seen = {
        method: request.method,
        rpc: typeof body.method === "string" ? body.method : "",
        url: request.url,
        headers: request.headers,
      };
      seen.push(one);
      if (body.method === "initialize") {
        return Response.json({
          jsonrpc: "2.0",
          id: body.id,
          result: {
            protocolVersion: "2025-11-25",
            capabilities: {},
            serverInfo: { name: "s", version: "1" },
          },
        }, { headers: { "mcp-session-id": "session-1" } });
      }
      if (request.method === "DELETE") return new Response(null);
      if (request.method === "POST" && !("id" in body)) {
        return new Response(null, { status: 202 });
      }
      if (
        request.method === "GET" && !request.headers.has("last-event-id")
      ) {
        return new Response(null, { status: 405 });
      }
      return await handle(one, body);
    },
  );
  return {
    url: `http://127.0.0.1:${http.addr.port}/mcp`,
    seen,
    async [Symbol.asyncDispose]() {
      await http.shutdown();
    },
  };
}

/**
 * What a 2025 server (the SDK's, stateful) answers the bridge's
 * `server/discover` probe: it is no `initialize`, and there is no session.
 */
function notModern(): Response {
  return Response.json({
    jsonrpc: "2.0",
    id: null,
    error: { code: -32000, message: "Bad Request: Server not initialized" },
  }, { status: 400 });
}

/** An event stream that sends `text` and ends. */
function events(text: string): Response {
  return new Response(text, { headers: SSE_TYPE });
}

/** The answer to the tool call, as an event. */
function answerEvent(id: string): string {
  const answer = { jsonrpc: "2.0", id: CALL.id, result: { content: [] } };
  return `id: ${id}\nevent: message\ndata: ${JSON.stringify(answer)}\n\n`;
}

/** The relay as an agent's stdin and stdout, and the waits it asked for. */
function relayTo(
  url: string,
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>,
) {
  const input = new TransformStream<Uint8Array, Uint8Array>();
  const writer = input.writable.getWriter();
  const lines: Record<string, unknown>[] = [];
  const warnings: string[] = [];
  const waits: number[] = [];
  let wake: (() => void) | undefined;
  const done = runRelay({
    url,
    service: "remote",
    getToken: () => Promise.resolve({ token: TOKEN, expiresAt: null }),
    input: input.readable,
    write: (line) => {
      lines.push(JSON.parse(line));
      wake?.();
      return Promise.resolve();
    },
    warn: (line) => warnings.push(line),
    sleep: sleep ?? ((ms) => {
      waits.push(ms);
      return Promise.resolve();
    }),
  });
  return {
    waits,
    async send(...messages: unknown[]) {
      for (const message of messages) {
        await writer.write(
          new TextEncoder().encode(JSON.stringify(message) + "\n"),
        );
      }
    },
    /** The answer to request `id` (a hang guard, not a timing assertion). */
    async answer(id: number): Promise<Record<string, unknown>> {
      let guard: ReturnType<typeof setTimeout> | undefined;
      const hung = new Promise<never>((_, reject) => {
        guard = setTimeout(
          () => reject(new Error(`no answer to request ${id}`)),
          HANG_GUARD_MS,
        );
      });
      try {
        for (;;) {
          const index = lines.findIndex((line) => line.id === id);
          if (index !== -1) return lines.splice(index, 1)[0];
          await Promise.race([
            new Promise<void>((resolve) => wake = resolve),
            hung,
          ]);
        }
      } finally {
        clearTimeout(guard);
      }
    },
    async end(): Promise<string[]> {
      await writer.close();
      await done;
      return warnings;
    },
  };
}

Deno.test("bridge resume: a POST stream that ends with an event ID before the answer is resumed by a GET with Last-Event-ID after the server's retry; the answer arrives on it; the token is on the GET, never in the URL", async () => {
  await using remote = server((seen) => {
    if (seen.method === "POST") {
      // The priming event (an ID, empty data), then the end: the answer
      // is still to come.
      return Promise.resolve(events("id: e-1\nretry: 700\ndata: \n\n"));
    }
    return Promise.resolve(events(answerEvent("e-2")));
  });
  const agent = relayTo(remote.url);
  await agent.send(INITIALIZE);
  await agent.answer(INITIALIZE.id);
  await agent.send(INITIALIZED, CALL);
  const answer = await agent.answer(CALL.id);
  assert.deepEqual(answer.result, { content: [] }, JSON.stringify(answer));
  assert.deepEqual(await agent.end(), []);

  const resumed = remote.seen.filter((one) =>
    one.method === "GET" && one.headers.has("last-event-id")
  );
  assert.equal(resumed.length, 1);
  assert.equal(resumed[0].headers.get("last-event-id"), "e-1");
  assert.equal(resumed[0].headers.get("mcp-session-id"), "session-1");
  assert.equal(resumed[0].headers.get("authorization"), `Bearer ${TOKEN}`);
  for (const one of remote.seen) assert.ok(!one.url.includes(TOKEN), one.url);
  // The server's retry, waited before the GET.
  assert.ok(agent.waits.includes(700), String(agent.waits));
});

Deno.test("bridge resume: a retry beyond the bound is clamped to it", async () => {
  await using remote = server((seen) =>
    Promise.resolve(
      seen.method === "POST"
        ? events("id: e-1\nretry: 3600000\ndata: \n\n")
        : events(answerEvent("e-2")),
    )
  );
  const agent = relayTo(remote.url);
  await agent.send(INITIALIZE);
  await agent.answer(INITIALIZE.id);
  await agent.send(CALL);
  assert.ok("result" in await agent.answer(CALL.id));
  await agent.end();
  assert.ok(agent.waits.includes(MAX_RETRY_MS), String(agent.waits));
  assert.ok(agent.waits.every((ms) => ms <= MAX_RETRY_MS));
});

Deno.test("bridge resume: a server that always closes early ends in a JSON-RPC error after a bounded number of resumes", async () => {
  let next = 0;
  await using remote = server(() =>
    Promise.resolve(events(`id: e-${++next}\nretry: 10\ndata: \n\n`))
  );
  const agent = relayTo(remote.url);
  await agent.send(INITIALIZE);
  await agent.answer(INITIALIZE.id);
  await agent.send(CALL);
  const answer = await agent.answer(CALL.id);
  const error = answer.error as { code: number; message: string };
  assert.ok(error, JSON.stringify(answer));
  assert.equal(error.code, UPSTREAM_ERROR_CODE);
  assert.match(
    error.message,
    /closed the stream before answering, also the \d+ times sherlock resumed it/,
  );
  await agent.end();
  const resumes = remote.seen.filter((one) =>
    one.method === "GET" && one.headers.has("last-event-id")
  );
  assert.equal(resumes.length, MAX_RESUMES);
  // Each GET resumes from the last event ID the stream before it gave.
  assert.deepEqual(
    resumes.map((one) => one.headers.get("last-event-id")),
    Array.from({ length: MAX_RESUMES }, (_, i) => `e-${i + 1}`),
  );
});

Deno.test("bridge resume: a stream that ends without an event ID is not resumed; the request gets an error at once", async () => {
  await using remote = server(() => Promise.resolve(events("data: \n\n")));
  const agent = relayTo(remote.url);
  await agent.send(INITIALIZE);
  await agent.answer(INITIALIZE.id);
  await agent.send(CALL);
  const error = (await agent.answer(CALL.id)).error as { message: string };
  assert.match(error.message, /closed the stream before answering$/);
  await agent.end();
  assert.equal(
    remote.seen.filter((one) => one.headers.has("last-event-id")).length,
    0,
  );
});

Deno.test("bridge order: the notification the agent wrote first reaches the server before the request written after it", async () => {
  // The server holds the notification's 202 a while (until the request
  // arrives, or the window closes): a request sent without waiting for
  // the notification to be sent would arrive inside that window.
  const arrivals: string[] = [];
  let requestArrived!: () => void;
  const arrived = new Promise<void>((resolve) => requestArrived = resolve);
  const http = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      if (request.method !== "POST") return new Response(null, { status: 405 });
      const body = await request.json();
      if (body.method === "server/discover") return notModern();
      arrivals.push(body.method);
      if (body.method === "initialize") {
        return Response.json({
          jsonrpc: "2.0",
          id: body.id,
          result: { protocolVersion: "2025-11-25", capabilities: {} },
        });
      }
      if (body.method === "notifications/initialized") {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          arrived,
          new Promise((resolve) => timer = setTimeout(resolve, 500)),
        ]);
        clearTimeout(timer);
        arrivals.push("notification acknowledged");
        return new Response(null, { status: 202 });
      }
      requestArrived();
      return Response.json({ jsonrpc: "2.0", id: body.id, result: {} });
    },
  );
  // The wait for the message before never runs out here: only its
  // acknowledgement lets the next one go.
  const agent = relayTo(
    `http://127.0.0.1:${http.addr.port}/mcp`,
    (ms, signal) =>
      ms === SEND_ORDER_MS
        ? new Promise((resolve) =>
          signal.addEventListener("abort", () => resolve(), { once: true })
        )
        : Promise.resolve(),
  );
  try {
    await agent.send(INITIALIZE, INITIALIZED, {
      jsonrpc: "2.0",
      id: 3,
      method: "tools/list",
    });
    assert.ok("result" in await agent.answer(3));
    await agent.end();
  } finally {
    await http.shutdown();
  }
  assert.deepEqual(arrivals, [
    "initialize",
    "notifications/initialized",
    "notification acknowledged",
    "tools/list",
  ]);
});

Deno.test("bridge order: a message whose answer's headers never come does not hold back the next one for good", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  await using remote = server(async (_seen, body) => {
    if (body.method === "tools/call") {
      // Headers only once the next request was answered.
      await released;
      return Response.json({ jsonrpc: "2.0", id: body.id, result: {} });
    }
    release();
    return Response.json({ jsonrpc: "2.0", id: body.id, result: {} });
  });
  const agent = relayTo(remote.url);
  try {
    await agent.send(INITIALIZE);
    await agent.answer(INITIALIZE.id);
    await agent.send(CALL, { jsonrpc: "2.0", id: 3, method: "tools/list" });
    assert.ok("result" in await agent.answer(3));
    assert.ok("result" in await agent.answer(CALL.id));
  } finally {
    // Failing, the test must end rather than leave the held answer behind.
    release();
    await agent.end();
  }
  // The wait for the tool call's headers ran out (the injected sleep).
  assert.ok(agent.waits.includes(SEND_ORDER_MS), String(agent.waits));
});

Deno.test("bridge resume: a server that refuses the resuming GET: the request gets an error at once, saying so", async () => {
  await using remote = server((seen) =>
    Promise.resolve(
      seen.method === "POST"
        ? events("id: e-1\ndata: \n\n")
        : new Response(null, { status: 404 }),
    )
  );
  const agent = relayTo(remote.url);
  await agent.send(INITIALIZE);
  await agent.answer(INITIALIZE.id);
  await agent.send(CALL);
  const error = (await agent.answer(CALL.id)).error as { message: string };
  assert.match(
    error.message,
    /answered HTTP 404 \(after it closed the stream before answering, sherlock asked to resume it\)/,
  );
  await agent.end();
  assert.equal(
    remote.seen.filter((one) => one.headers.has("last-event-id")).length,
    1,
  );
});
