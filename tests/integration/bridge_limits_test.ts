/**
 * Issue 17, item 7: the bridge's relay bounds every answer it reads from
 * the remote server — a JSON answer in size and in time, each event of an
 * event stream in size and in time, the wait for headers — and tells the
 * agent why in a JSON-RPC error. A real HTTP server on 127.0.0.1 and real
 * `fetch`; the relay runs in this process so that the test can give it
 * small bounds (the `sherlock bridge` command always uses ANSWER_LIMITS).
 * No assertion is on a duration: each case only checks which error came.
 */

import assert from "node:assert/strict";
import { type AnswerLimits, byteSize } from "../../lib/bridge/answer_limits.ts";
import { runRelay, UPSTREAM_ERROR_CODE } from "../../lib/bridge/relay.ts";

/** Far longer than any bound here takes to trip. */
const HANG_GUARD_MS = 20_000;

const SMALL: AnswerLimits = { maxBytes: 4096, bodyMs: 300, headersMs: 300 };

/** A request the agent sends. */
const REQUEST = { jsonrpc: "2.0", id: 7, method: "tools/list" };

interface Agent {
  /** The next message the relay wrote to the agent. */
  receive(): Promise<Record<string, unknown>>;
  /** Ends the agent's input and waits for the relay to end. */
  end(): Promise<string[]>;
}

/** Runs the relay against `url` with `limits`, as an agent's stdin/stdout. */
function relayTo(
  url: string,
  limits: Partial<AnswerLimits>,
  transport: "http" | "sse" = "http",
): Agent {
  const input = new TransformStream<Uint8Array, Uint8Array>();
  const writer = input.writable.getWriter();
  const lines: string[] = [];
  const warnings: string[] = [];
  let wake: (() => void) | undefined;
  const done = runRelay({
    url,
    transport,
    service: "remote",
    getToken: () => Promise.resolve({ token: "t0ken", expiresAt: null }),
    input: input.readable,
    write: (line) => {
      lines.push(line);
      wake?.();
      return Promise.resolve();
    },
    warn: (line) => warnings.push(line),
    limits,
  });
  writer.write(new TextEncoder().encode(JSON.stringify(REQUEST) + "\n"));
  return {
    async receive() {
      // A hang guard, not a timing assertion: without the bounds, these
      // answers never end, and the test must fail rather than hang.
      let guard: ReturnType<typeof setTimeout> | undefined;
      const hung = new Promise<never>((_, reject) => {
        guard = setTimeout(
          () => reject(new Error("no answer reached the agent")),
          HANG_GUARD_MS,
        );
      });
      try {
        while (lines.length === 0) {
          await Promise.race([
            new Promise<void>((resolve) => wake = resolve),
            hung,
          ]);
        }
      } finally {
        clearTimeout(guard);
      }
      return JSON.parse(lines.shift()!);
    },
    async end() {
      await writer.close();
      await done;
      return warnings;
    },
  };
}

/**
 * A server on 127.0.0.1 answering every POST with `answer`; `released`
 * resolves when the test ends, so that no answer outlives it.
 */
function server(
  answer: (released: Promise<void>) => Response | Promise<Response>,
) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  const http = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      await request.body?.cancel();
      return await answer(released);
    },
  );
  return {
    url: `http://127.0.0.1:${http.addr.port}/mcp`,
    async [Symbol.asyncDispose]() {
      release();
      await http.shutdown();
    },
  };
}

/** A body that sends `first`, then `more` every 50 ms until released. */
function trickle(
  released: Promise<void>,
  first: string,
  more = "",
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let stopped = false;
  released.then(() => stopped = true);
  return new ReadableStream({
    async start(controller) {
      controller.enqueue(encoder.encode(first));
      while (!stopped) {
        await Promise.race([
          released,
          new Promise((resolve) => setTimeout(resolve, 50)),
        ]);
        if (stopped) break;
        try {
          if (more) controller.enqueue(encoder.encode(more));
        } catch {
          return; // the bridge stopped reading
        }
      }
      try {
        controller.close();
      } catch {
        // already cancelled
      }
    },
  });
}

async function expectError(
  url: string,
  limits: Partial<AnswerLimits>,
  pattern: RegExp,
): Promise<string> {
  const agent = relayTo(url, limits);
  const answer = await agent.receive();
  assert.equal(answer.id, REQUEST.id, JSON.stringify(answer));
  const error = answer.error as { code: number; message: string };
  assert.ok(error, JSON.stringify(answer));
  assert.equal(error.code, UPSTREAM_ERROR_CODE);
  assert.match(error.message, pattern);
  await agent.end();
  return error.message;
}

const JSON_TYPE = { "content-type": "application/json" };
const SSE_TYPE = { "content-type": "text/event-stream" };

Deno.test("bridge limits: a JSON answer larger than the bound is refused, not buffered", async () => {
  await using remote = server(() =>
    Response.json({
      jsonrpc: "2.0",
      id: REQUEST.id,
      result: { big: "x".repeat(SMALL.maxBytes * 4) },
    })
  );
  const message = await expectError(
    remote.url,
    SMALL,
    /the remote server of service remote sent an answer larger than 4 KiB; sherlock stopped reading it/,
  );
  assert.equal(byteSize(SMALL.maxBytes), "4 KiB", message);
});

Deno.test("bridge limits: a JSON answer that never ends (a byte now and then) is cut off", async () => {
  await using remote = server((released) =>
    new Response(trickle(released, '{"jsonrpc":"2.0",', " "), {
      headers: JSON_TYPE,
    })
  );
  await expectError(
    remote.url,
    SMALL,
    /took more than 0\.3 s to send its answer/,
  );
});

Deno.test("bridge limits: an event larger than the bound ends the stream; the request gets an error", async () => {
  await using remote = server((released) =>
    new Response(trickle(released, "data: ", "x".repeat(1024)), {
      headers: SSE_TYPE,
    })
  );
  await expectError(
    remote.url,
    { ...SMALL, bodyMs: 60_000 },
    /sent an event larger than 4 KiB/,
  );
});

Deno.test("bridge limits: an event that never ends is cut off; the wait between events is not bounded", async (t) => {
  await t.step("an event under way too long", async () => {
    await using remote = server((released) =>
      new Response(trickle(released, "event: message\ndata: {", " "), {
        headers: SSE_TYPE,
      })
    );
    await expectError(
      remote.url,
      SMALL,
      /took more than 0\.3 s to send one event/,
    );
  });
  await t.step("a pause between events longer than the bound", async () => {
    const answer = JSON.stringify({
      jsonrpc: "2.0",
      id: REQUEST.id,
      result: { ok: true },
    });
    await using remote = server(() => {
      const encoder = new TextEncoder();
      return new Response(
        new ReadableStream({
          async start(controller) {
            controller.enqueue(encoder.encode(": open\n\n"));
            // Longer than bodyMs, between events: allowed.
            await new Promise((resolve) => setTimeout(resolve, 600));
            controller.enqueue(encoder.encode(`data: ${answer}\n\n`));
            controller.close();
          },
        }),
        { headers: SSE_TYPE },
      );
    });
    const agent = relayTo(remote.url, SMALL);
    assert.deepEqual((await agent.receive()).result, { ok: true });
    await agent.end();
  });
});

Deno.test("bridge limits: headers that never come", async () => {
  await using remote = server(async (released) => {
    await released;
    return new Response(null, { status: 202 });
  });
  await expectError(
    remote.url,
    SMALL,
    /took more than 0\.3 s to start its answer/,
  );
});

Deno.test("bridge limits: the legacy SSE transport: an oversized event on the stream ends it; the request waiting for its answer gets an error", async () => {
  let posted!: () => void;
  const post = new Promise<void>((resolve) => posted = resolve);
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  const http = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      await request.body?.cancel();
      if (request.method === "POST") {
        posted();
        return new Response(null, { status: 202 });
      }
      const encoder = new TextEncoder();
      return new Response(
        new ReadableStream({
          async start(controller) {
            controller.enqueue(
              encoder.encode("event: endpoint\ndata: /messages\n\n"),
            );
            await Promise.race([post, released]);
            // The answer, larger than the bound, in one piece.
            controller.enqueue(
              encoder.encode(`data: ${"x".repeat(SMALL.maxBytes * 2)}\n\n`),
            );
            await released;
            try {
              controller.close();
            } catch {
              // the bridge stopped reading
            }
          },
        }),
        { headers: SSE_TYPE },
      );
    },
  );
  try {
    const agent = relayTo(
      `http://127.0.0.1:${http.addr.port}/sse`,
      SMALL,
      "sse",
    );
    const answer = await agent.receive();
    assert.equal(answer.id, REQUEST.id, JSON.stringify(answer));
    const error = answer.error as { code: number; message: string };
    assert.ok(error, JSON.stringify(answer));
    assert.match(error.message, /sent an event larger than 4 KiB/);
    await agent.end();
  } finally {
    release();
    await http.shutdown();
  }
});
