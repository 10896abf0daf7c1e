/**
 * The one authorization flow (`lib/broker/daemon/oauth/authorization_flow.ts`)
 * that `sherlock auth` and `sherlock login` share, against a real token
 * endpoint on 127.0.0.1 and its real loopback listener, on a clock the test
 * moves: the browser flow's URL, redirect and code exchange (PKCE, state,
 * nonce, `iss`, `resource`), the device grant's poll, and every way a flow
 * ends early — its time limit, a newer flow for the same key, the waiting
 * command gone, the daemon stopping — each with its one line.
 */

import assert from "node:assert/strict";
import {
  AUTHORIZATION_TIMEOUT_MS,
  AuthorizationFlows,
  type FlowMessages,
} from "../../lib/broker/daemon/oauth/authorization_flow.ts";
import type { Clock } from "../../lib/broker/daemon/clock.ts";

const MESSAGES: FlowMessages = {
  unfinished: "ended unfinished",
  received: "received",
  timedOut: "no answer in time",
  replaced: "a newer one replaced this one",
  interrupted: "interrupted",
  retry: "sherlock auth --device demo",
};

/** A clock that moves only when the test says; its sleeps are counted. */
function manualClock() {
  let now = 1_700_000_000_000;
  const sleeps = new Set<{ until: number; wake: () => void }>();
  let onSleep: (() => void) | undefined;
  const clock: Clock = {
    now: () => now,
    sleep(ms, signal) {
      return new Promise((resolve) => {
        if (signal.aborted) return resolve();
        const entry = { until: now + ms, wake };
        function wake() {
          sleeps.delete(entry);
          signal.removeEventListener("abort", wake);
          resolve();
        }
        sleeps.add(entry);
        signal.addEventListener("abort", wake, { once: true });
        onSleep?.();
      });
    },
  };
  return {
    clock,
    /** Moves the clock; every sleep that has run out ends. */
    advance(ms: number) {
      now += ms;
      for (const entry of [...sleeps]) if (entry.until <= now) entry.wake();
    },
    /** Resolves once `count` sleeps are under way. */
    sleeping(count: number): Promise<void> {
      if (sleeps.size >= count) return Promise.resolve();
      return new Promise((resolve) => {
        onSleep = () => {
          if (sleeps.size < count) return;
          onSleep = undefined;
          resolve();
        };
      });
    },
  };
}

/** What the token endpoint was sent. */
interface Seen {
  path: string;
  form: URLSearchParams;
}

/**
 * An authorization server's endpoints: `/token` takes the code `the-code`
 * and, once `approve()` was called, the device code; `/device` hands one
 * out. `seen` resolves each request's waiters.
 */
function startTokenServer() {
  const seen: Seen[] = [];
  let approved = false;
  let waiters: (() => void)[] = [];
  const token = (name: string) =>
    Response.json({
      access_token: `at-${name}`,
      token_type: "Bearer",
      expires_in: 60,
    });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request): Promise<Response> => {
      const path = new URL(request.url).pathname;
      const form = new URLSearchParams(await request.text());
      seen.push({ path, form });
      for (const wake of waiters) wake();
      waiters = [];
      if (path === "/device") {
        return Response.json({
          device_code: "the-device-code",
          user_code: "WDJB-MJHT",
          verification_uri: `${base}/verify`,
          expires_in: 600,
          interval: 1,
        });
      }
      if (form.get("grant_type") === "authorization_code") {
        return form.get("code") === "the-code"
          ? token("browser")
          : Response.json({ error: "invalid_grant" }, { status: 400 });
      }
      return approved
        ? token("device")
        : Response.json({ error: "authorization_pending" }, { status: 400 });
    },
  );
  const base: string = `http://127.0.0.1:${server.addr.port}`;
  return {
    base,
    seen,
    server: {
      issuer: base,
      authorizationEndpoint: `${base}/authorize`,
      tokenEndpoint: `${base}/token`,
      deviceAuthorizationEndpoint: `${base}/device`,
      issParameterSupported: true,
    },
    approve: () => approved = true,
    /** Resolves once `count` requests came. */
    requests(count: number): Promise<void> {
      if (seen.length >= count) return Promise.resolve();
      return new Promise((resolve) => {
        const check = () => {
          if (seen.length >= count) resolve();
          else waiters.push(check);
        };
        waiters.push(check);
      });
    },
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

function flowsOn(clock: Clock) {
  return new AuthorizationFlows<{ who: string }>({
    clock,
    unknown: "no such flow under way",
    stopped: "the broker stopped",
  });
}

function browserRequest(
  as: ReturnType<typeof startTokenServer>,
  key = "demo",
) {
  return {
    key,
    server: as.server,
    clientId: "sherlock-test",
    scopes: ["read", "write"],
    authorizationParameters: new URLSearchParams({
      resource: "https://mcp.example/mcp",
    }),
    tokenParameters: { resource: "https://mcp.example/mcp" },
    messages: MESSAGES,
    context: { who: key },
  };
}

/** What a browser does with the authorization URL: follows the redirect. */
async function redirect(
  url: string,
  answer: Record<string, string>,
): Promise<number> {
  const authorization = new URL(url);
  const callback = new URL(authorization.searchParams.get("redirect_uri")!);
  for (const [key, value] of Object.entries(answer)) {
    callback.searchParams.set(key, value);
  }
  const response = await fetch(callback);
  await response.body?.cancel();
  return response.status;
}

/** `promise`, its rejection handled until the test awaits it. */
function later<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

async function rejectsWith(promise: Promise<unknown>, message: string) {
  await assert.rejects(promise, (error: Error) => {
    assert.equal(error.message, message);
    return true;
  });
}

Deno.test("browser flow: the URL asks with PKCE, state, nonce and resource; the redirect's code is exchanged with the verifier", async () => {
  await using as = startTokenServer();
  const { clock } = manualClock();
  const flows = flowsOn(clock);
  try {
    const started = await flows.startBrowser({
      ...browserRequest(as),
      nonce: true,
    });
    const url = new URL(started.url);
    const query = url.searchParams;
    assert.equal(`${url.origin}${url.pathname}`, `${as.base}/authorize`);
    assert.equal(query.get("response_type"), "code");
    assert.equal(query.get("client_id"), "sherlock-test");
    assert.equal(query.get("scope"), "read write");
    assert.equal(query.get("code_challenge_method"), "S256");
    assert.equal(query.get("resource"), "https://mcp.example/mcp");
    const state = query.get("state")!;
    assert.ok(state.length >= 43 && query.get("nonce")!.length >= 43);
    assert.match(query.get("redirect_uri")!, /^http:\/\/127\.0\.0\.1:\d+\//);

    const finished = later(flows.finish(started.flow));
    // Another local program guesses: ignored, counted, the flow goes on.
    assert.equal(await redirect(started.url, { code: "forged" }), 400);
    assert.equal(
      await redirect(started.url, { code: "the-code", state, iss: as.base }),
      200,
    );
    const outcome = await finished;
    assert.equal(outcome.answer.status, 200);
    assert.equal(
      (outcome.answer.json as Record<string, unknown>).access_token,
      "at-browser",
    );
    assert.equal(outcome.ignored, 1);
    assert.equal(outcome.nonce, query.get("nonce"));
    assert.deepEqual(outcome.context, { who: "demo" });
    assert.equal(flows.size, 0);

    const [exchange] = as.seen;
    assert.equal(exchange.path, "/token");
    assert.equal(exchange.form.get("code"), "the-code");
    assert.equal(
      exchange.form.get("redirect_uri"),
      query.get("redirect_uri"),
    );
    assert.equal(exchange.form.get("resource"), "https://mcp.example/mcp");
    const verifier = exchange.form.get("code_verifier")!;
    const digest = await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode(verifier),
    );
    const challenge = btoa(String.fromCharCode(...new Uint8Array(digest)))
      .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    assert.equal(challenge, query.get("code_challenge"));
  } finally {
    flows.close();
  }
});

Deno.test("browser flow: an answer from another issuer is refused before any code is sent, the ignored requests named", async () => {
  await using as = startTokenServer();
  const flows = flowsOn(manualClock().clock);
  try {
    const started = await flows.startBrowser(browserRequest(as));
    const state = new URL(started.url).searchParams.get("state")!;
    const finished = later(flows.finish(started.flow));
    await redirect(started.url, { code: "x", state: "wrong" });
    await redirect(started.url, {
      code: "the-code",
      state,
      iss: "https://evil.example",
    });
    await rejectsWith(
      finished,
      `the authorization response came from issuer https://evil.example, not ${as.base} (RFC 9207); refused (the redirect listener ignored 1 request that did not carry this flow's state: another local program may have tried to forge the answer)`,
    );
    assert.equal(as.seen.length, 0, "no code exchange");
  } finally {
    flows.close();
  }
});

Deno.test("a flow ends at its time limit on the daemon's clock, not before", async () => {
  await using as = startTokenServer();
  const time = manualClock();
  const flows = flowsOn(time.clock);
  try {
    const started = await flows.startBrowser(browserRequest(as));
    const finished = later(flows.finish(started.flow));
    await redirect(started.url, { code: "forged" });
    time.advance(AUTHORIZATION_TIMEOUT_MS - 1);
    assert.equal(flows.size, 1, "still under way a moment before");
    time.advance(1);
    await rejectsWith(
      finished,
      "no answer in time (the redirect listener ignored 1 request that did not carry this flow's state: another local program may have tried to forge the answer)",
    );
    assert.equal(flows.size, 0);
    await rejectsWith(flows.finish(started.flow), "no such flow under way");
  } finally {
    flows.close();
  }
});

Deno.test("a newer flow for the same key replaces the one under way; another key's goes on", async () => {
  await using as = startTokenServer();
  const flows = flowsOn(manualClock().clock);
  try {
    const old = await flows.startBrowser(browserRequest(as));
    const oldFinished = later(flows.finish(old.flow));
    const other = await flows.startBrowser(browserRequest(as, "other"));
    const fresh = await flows.startBrowser(browserRequest(as));
    await rejectsWith(oldFinished, "a newer one replaced this one");
    assert.equal(flows.size, 2);
    // The old URL's listener is gone: its answer reaches no one.
    const oldState = new URL(old.url).searchParams.get("state")!;
    await assert.rejects(
      redirect(old.url, { code: "the-code", state: oldState, iss: as.base }),
    );
    const state = new URL(fresh.url).searchParams.get("state")!;
    const finished = later(flows.finish(fresh.flow));
    await redirect(fresh.url, { code: "the-code", state, iss: as.base });
    assert.equal((await finished).answer.status, 200);
    assert.equal(flows.size, 1, `"other" is still under way`);
    assert.notEqual(other.flow, fresh.flow);
  } finally {
    flows.close();
  }
});

Deno.test("the waiting command going away ends its flow; the daemon stopping ends every flow", async () => {
  await using as = startTokenServer();
  const flows = flowsOn(manualClock().clock);
  try {
    const first = await flows.startBrowser(browserRequest(as));
    const gone = new AbortController();
    const finished = later(flows.finish(first.flow, { signal: gone.signal }));
    gone.abort();
    await rejectsWith(finished, "interrupted");
    assert.equal(flows.size, 0);

    const second = await flows.startBrowser(browserRequest(as, "a"));
    const third = await flows.startDevice({
      ...browserRequest(as, "b"),
      client: { clientId: "sherlock-test" },
    });
    const waiting = [second, third].map((flow) =>
      later(flows.finish(flow.flow))
    );
    flows.close();
    for (const waiter of waiting) {
      await rejectsWith(waiter, "the broker stopped");
    }
    assert.equal(flows.size, 0);
  } finally {
    flows.close();
  }
});

Deno.test("device flow: the code handed out, the poll at the server's interval on the daemon's clock, the approval's answer", async () => {
  await using as = startTokenServer();
  const time = manualClock();
  const flows = flowsOn(time.clock);
  try {
    const started = await flows.startDevice({
      ...browserRequest(as),
      authorizationParameters: new URLSearchParams({ audience: "api" }),
      client: { clientId: "sherlock-test" },
    });
    assert.equal(started.url, `${as.base}/verify`);
    assert.equal(started.userCode, "WDJB-MJHT");
    const [authorization] = as.seen;
    assert.equal(authorization.path, "/device");
    assert.equal(authorization.form.get("scope"), "read write");
    assert.equal(authorization.form.get("audience"), "api");
    assert.equal(authorization.form.get("client_id"), "sherlock-test");

    const finished = later(flows.finish(started.flow));
    // The flow's time limit sleeps too: the poll's is the second sleep.
    await time.sleeping(2);
    time.advance(1_000);
    await as.requests(2);
    as.approve();
    await time.sleeping(2);
    time.advance(1_000);
    const outcome = await finished;
    assert.equal(outcome.ignored, 0);
    assert.equal(
      (outcome.answer.json as Record<string, unknown>).access_token,
      "at-device",
    );
    const polls = as.seen.slice(1);
    assert.equal(polls.length, 2);
    for (const poll of polls) {
      assert.equal(poll.form.get("device_code"), "the-device-code");
      assert.equal(poll.form.get("resource"), "https://mcp.example/mcp");
    }
    assert.equal(flows.size, 0);
  } finally {
    flows.close();
  }
});

Deno.test("device flow: a code not approved within the time limit expires with the command to run again", async () => {
  await using as = startTokenServer();
  const time = manualClock();
  const flows = flowsOn(time.clock);
  try {
    const started = await flows.startDevice({
      ...browserRequest(as),
      client: { clientId: "sherlock-test" },
    });
    const finished = later(flows.finish(started.flow));
    await time.sleeping(2);
    time.advance(AUTHORIZATION_TIMEOUT_MS);
    await assert.rejects(
      finished,
      (error: Error & { code?: string }) =>
        error.code === "needs_authorization" &&
        error.message ===
          `the device code expired before it was approved; run "sherlock auth --device demo" again`,
    );
    assert.equal(as.seen.length, 1, "no poll after the deadline");
  } finally {
    flows.close();
  }
});
