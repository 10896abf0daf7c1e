/**
 * The device authorization grant's rules and poll loop
 * (`lib/broker/daemon/oauth/device_grant.ts`). The poll runs against a small
 * scripted token endpoint on 127.0.0.1: oidc-provider (the fixture the
 * broker tests use) cannot be made to answer `slow_down` on demand.
 */

import assert from "node:assert/strict";
import {
  DEVICE_CODE_GRANT,
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

Deno.test("pollDeviceToken: waits the interval, 5 s more after slow_down, stops on expired_token", async () => {
  const script = ["authorization_pending", "slow_down", "ok"];
  const times: number[] = [];
  const forms: URLSearchParams[] = [];
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      times.push(Date.now());
      forms.push(new URLSearchParams(await request.text()));
      const next = script.shift() ?? "expired_token";
      return next === "ok"
        ? Response.json({ access_token: "at", token_type: "Bearer" })
        : Response.json({ error: next }, { status: 400 });
    },
  );
  const endpoint = `http://127.0.0.1:${server.addr.port}/token`;
  const authorization = {
    deviceCode: "dc",
    userCode: "U",
    verificationUri: "https://as/device",
    expiresIn: 60,
    interval: 1,
  };
  const start = Date.now();
  const result = await pollDeviceToken({
    tokenEndpoint: endpoint,
    client: { form: { client_id: "c" }, headers: {} },
    authorization,
    form: { resource: "https://mcp" },
    signal: new AbortController().signal,
    deadline: Date.now() + 60_000,
    retry: "sherlock auth --device x",
  });
  assert.equal(result.status, 200);
  assert.equal(times.length, 3);
  assert.ok(times[0] - start >= 1000, "the first poll waits the interval");
  assert.ok(times[1] - times[0] >= 1000, "then the interval again");
  assert.ok(times[2] - times[1] >= 6000, "slow_down: 1 + 5 seconds");
  assert.equal(forms[0].get("grant_type"), DEVICE_CODE_GRANT);
  assert.equal(forms[0].get("device_code"), "dc");
  assert.equal(forms[0].get("resource"), "https://mcp");

  await assert.rejects(
    pollDeviceToken({
      tokenEndpoint: endpoint,
      client: { form: { client_id: "c" }, headers: {} },
      authorization,
      signal: new AbortController().signal,
      deadline: Date.now() + 60_000,
      retry: "sherlock auth --device x",
    }),
    (error: Error & { code?: string }) =>
      error.code === "needs_authorization" &&
      /expired before it was approved; run "sherlock auth --device x" again/
        .test(error.message),
  );
});
