/**
 * The device authorization grant's rules and poll loop
 * (`lib/broker/daemon/oauth/device_grant.ts`). The poll runs against a small
 * scripted token endpoint on 127.0.0.1: oidc-provider (the fixture the
 * broker tests use) cannot be made to answer `slow_down` on demand. The
 * waits between polls go to an injected sleep and clock: no test sleeps.
 */

import assert from "node:assert/strict";
import {
  DEVICE_CODE_GRANT,
  MAX_POLL_INTERVAL_S,
  MIN_POLL_INTERVAL_S,
  pollDeviceToken,
  pollStep,
  readDeviceAuthorization,
} from "../../lib/broker/daemon/oauth/device_grant.ts";
import type { JsonAnswer } from "../../lib/broker/daemon/oauth/http.ts";

function answer(status: number, json: unknown): JsonAnswer {
  return { status, headers: new Headers(), json, notJson: false };
}

Deno.test("readDeviceAuthorization: the parts, defaults, a problem without a code", () => {
  const read = readDeviceAuthorization(answer(200, {
    device_code: "dc-secret",
    user_code: "ABCD-EFGH",
    verification_uri: "https://as/device",
  }));
  assert.ok(typeof read === "object");
  assert.equal(read.userCode, "ABCD-EFGH");
  assert.equal(read.interval, 5, "RFC 8628: 5 s when none is named");
  assert.equal(read.expiresIn, 600);
  assert.equal(read.verificationUriComplete, undefined);
  assert.match(
    String(readDeviceAuthorization(answer(200, { user_code: "X" }))),
    /no device_code/,
  );
  const refused = String(
    readDeviceAuthorization(answer(400, { error: "invalid_client" })),
  );
  assert.match(refused, /HTTP 400 \(invalid_client\)/);
});

Deno.test("pollStep: pending and slow_down wait; the rest stop", () => {
  assert.deepEqual(pollStep(answer(200, {})), { kind: "token" });
  assert.deepEqual(
    pollStep(answer(400, { error: "authorization_pending" })),
    { kind: "wait", slowDown: false },
  );
  assert.deepEqual(
    pollStep(answer(400, { error: "slow_down" })),
    { kind: "wait", slowDown: true },
  );
  assert.deepEqual(pollStep(answer(400, { error: "access_denied" })), {
    kind: "stop",
    error: "access_denied",
    description: undefined,
  });
  assert.equal(
    (pollStep(answer(500, undefined)) as { error: string }).error,
    "HTTP 500",
  );
});

/** A clock that moves only when the poll waits, and the waits it saw. */
function fakeTime() {
  let clock = 1_000_000;
  const waits: number[] = [];
  return {
    waits,
    now: () => clock,
    sleep: (ms: number) => {
      waits.push(ms);
      clock += ms;
      return Promise.resolve();
    },
  };
}

/** A token endpoint on 127.0.0.1 that answers `script` in turn. */
function scriptedTokenEndpoint(script: string[]) {
  const forms: URLSearchParams[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      forms.push(new URLSearchParams(await request.text()));
      const next = script.shift() ?? "expired_token";
      return next === "ok"
        ? Response.json({ access_token: "at", token_type: "Bearer" })
        : Response.json({ error: next }, { status: 400 });
    },
  );
  return {
    forms,
    endpoint: `http://127.0.0.1:${server.addr.port}/token`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/**
 * `pollDeviceToken` at `endpoint` for device code "dc", on `time`'s clock:
 * the code lives `lifetimeS` seconds and so does the poll's deadline.
 */
function poll(options: {
  endpoint: string;
  time: ReturnType<typeof fakeTime>;
  interval: number;
  lifetimeS: number;
  form?: Record<string, string>;
}) {
  return pollDeviceToken({
    tokenEndpoint: options.endpoint,
    client: { form: { client_id: "c" }, headers: {} },
    authorization: {
      deviceCode: "dc",
      userCode: "U",
      verificationUri: "https://as/device",
      expiresIn: options.lifetimeS,
      interval: options.interval,
    },
    form: options.form,
    signal: new AbortController().signal,
    deadline: options.time.now() + options.lifetimeS * 1000,
    retry: "sherlock auth --device x",
    ...options.time,
  });
}

Deno.test("pollDeviceToken: waits the interval, 5 s more after slow_down, stops on expired_token", async () => {
  await using server = scriptedTokenEndpoint([
    "authorization_pending",
    "slow_down",
    "ok",
  ]);
  const time = fakeTime();
  const result = await poll({
    endpoint: server.endpoint,
    time,
    interval: 1,
    lifetimeS: 60,
    form: { resource: "https://mcp" },
  });
  assert.equal(result.status, 200);
  assert.equal(server.forms.length, 3);
  // Before each poll: the interval, again, then 1 + 5 after slow_down.
  assert.deepEqual(time.waits, [1000, 1000, 6000]);
  const form = server.forms[0];
  assert.equal(form.get("grant_type"), DEVICE_CODE_GRANT);
  assert.equal(form.get("device_code"), "dc");
  assert.equal(form.get("resource"), "https://mcp");

  const again = fakeTime();
  await assert.rejects(
    poll({
      endpoint: server.endpoint,
      time: again,
      interval: 1,
      lifetimeS: 60,
    }),
    (error: Error & { code?: string }) =>
      error.code === "needs_authorization" &&
      /expired before it was approved; run "sherlock auth --device x" again/
        .test(error.message),
  );
});

Deno.test("a server's interval beyond any sane bound is clamped: no tight loop, no endless wait", async () => {
  // JSON's 1e400 is Infinity; 1e12 s overflows a timer, which then fires at
  // once; 0.001 s is a tight loop by itself.
  for (
    const [body, expected] of [
      ['{"interval": 1e12', MAX_POLL_INTERVAL_S],
      ['{"interval": 1e400', MAX_POLL_INTERVAL_S],
      ['{"interval": 0.001', MIN_POLL_INTERVAL_S],
      ['{"interval": 7', 7],
    ] as const
  ) {
    const json = JSON.parse(
      `${body}, "device_code": "dc", "user_code": "U", "verification_uri": "https://as/d"}`,
    );
    const read = readDeviceAuthorization(answer(200, json));
    assert.ok(typeof read === "object");
    assert.equal(read.interval, expected, body);
  }

  // A server that answers slow_down for ever: the wait grows by 5 s up to
  // the bound, never beyond; and an interval handed in unclamped is too.
  await using server = scriptedTokenEndpoint([
    ...Array(20).fill("slow_down"),
    "ok",
  ]);
  const time = fakeTime();
  const result = await poll({
    endpoint: server.endpoint,
    time: time,
    interval: 1e12,
    lifetimeS: 3600,
  });
  assert.equal(result.status, 200);
  assert.equal(time.waits.length, 21);
  assert.ok(
    time.waits.every((ms) => ms === MAX_POLL_INTERVAL_S * 1000),
    `waits: ${time.waits}`,
  );

  await using slowing = scriptedTokenEndpoint([
    ...Array(15).fill("slow_down"),
    "ok",
  ]);
  const grows = fakeTime();
  await poll({
    endpoint: slowing.endpoint,
    time: grows,
    interval: 5,
    lifetimeS: 3600,
  });
  assert.deepEqual(
    grows.waits.map((ms) => ms / 1000),
    [5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 60, 60, 60, 60],
  );
});
