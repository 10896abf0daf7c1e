/**
 * Tokens kept for a session's shim (lib/broker/daemon/token_handoff.ts):
 * in-process, taken once, per session and service, gone after their time;
 * then through a real daemon: `POST /v1/tokens` with `defer` answers
 * "deferred" without an audit entry, and that session's `POST /v1/token`
 * gets the very token, audited then, once.
 */

import assert from "node:assert/strict";
import {
  fetchToken,
  fetchTokens,
  registerSession,
} from "../../lib/broker/client.ts";
import {
  HANDOFF_TTL_MS,
  TokenHandoffs,
} from "../../lib/broker/daemon/token_handoff.ts";
import {
  AGENT,
  auditEntries,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { rawExchange } from "../helpers/socket_http.ts";

const KEY = { session: "s1", service: "api", tokenKey: "api\0hash" };
const SERVED = { token: "p$ss", cached: false };

Deno.test("TokenHandoffs: taken once, by the same session and service only", () => {
  const handoffs = new TokenHandoffs();
  handoffs.hold(KEY, SERVED, 0);
  assert.equal(handoffs.take({ ...KEY, session: "s2" }, 1), undefined);
  assert.equal(handoffs.take({ ...KEY, service: "other" }, 1), undefined);
  assert.deepEqual(handoffs.take(KEY, 1), SERVED);
  assert.equal(handoffs.take(KEY, 2), undefined);
  assert.equal(handoffs.size, 0);
});

Deno.test("TokenHandoffs: a changed [token] table does not get the kept token", () => {
  const handoffs = new TokenHandoffs();
  handoffs.hold(KEY, SERVED, 0);
  assert.equal(handoffs.take({ ...KEY, tokenKey: "api\0new" }, 1), undefined);
  assert.equal(handoffs.take(KEY, 1), undefined, "and it is gone");
});

Deno.test("TokenHandoffs: gone after their time, or the token's expiry if sooner", () => {
  const handoffs = new TokenHandoffs();
  handoffs.hold(KEY, SERVED, 0);
  assert.equal(handoffs.take(KEY, HANDOFF_TTL_MS), undefined);
  handoffs.hold(KEY, { ...SERVED, expiresAt: 1_000 }, 0);
  assert.equal(handoffs.take(KEY, 1_000), undefined);
  handoffs.hold(KEY, SERVED, 0);
  handoffs.hold({ ...KEY, session: "s2" }, SERVED, HANDOFF_TTL_MS - 1);
  // Holding prunes what has expired.
  handoffs.hold({ ...KEY, session: "s3" }, SERVED, HANDOFF_TTL_MS);
  assert.equal(handoffs.size, 2);
});

Deno.test("TokenHandoffs: forget drops the kept tokens of one session only", () => {
  const handoffs = new TokenHandoffs();
  handoffs.hold(KEY, SERVED, 0);
  handoffs.hold({ ...KEY, service: "other" }, SERVED, 0);
  handoffs.hold({ ...KEY, session: "s10" }, SERVED, 0);
  handoffs.forget("s1");
  assert.equal(handoffs.take(KEY, 1), undefined);
  assert.equal(handoffs.take({ ...KEY, service: "other" }, 1), undefined);
  assert.deepEqual(handoffs.take({ ...KEY, session: "s10" }, 1), SERVED);
});

Deno.test("TokenHandoffs: clear forgets every kept token", () => {
  const handoffs = new TokenHandoffs();
  handoffs.hold(KEY, SERVED, 0);
  handoffs.clear();
  assert.equal(handoffs.take(KEY, 1), undefined);
});

Deno.test("the daemon defers a token with $ to the session's shim: one helper run, one audit entry", async () => {
  await using home = await createBrokerHome();
  const token = "a$b$$c";
  const helper = home.tokenHelper("api", { token });
  const plain = home.tokenHelper("plain");
  home.writeService(
    "api",
    tokenServiceToml({ name: "api", command: [helper.path] }),
  );
  home.writeService(
    "plain",
    tokenServiceToml({ name: "plain", command: [plain.path] }),
  );
  await home.login();
  // Sessions registered as `sherlock run` registers them (this process
  // stands in for its sherlock).
  const capabilities = new Map<string, string>();
  for (const session of ["s1", "s2", "s3", "s4"]) {
    const { capability } = await registerSession({
      socket: home.socket,
      session,
      agent: AGENT,
      services: ["api", "plain"],
      pid: Deno.pid,
    });
    capabilities.set(session, capability);
  }
  const capability = (session: string) => capabilities.get(session)!;
  const defer = { services: ["api", "plain"], ifContains: ["$"] };
  const fetched = await fetchTokens({
    socket: home.socket,
    services: ["api", "plain"],
    defer,
    capability: capability("s1"),
  });
  assert.deepEqual(fetched.deferred, ["api"]);
  assert.deepEqual([...fetched.tokens], [["plain", plain.token]]);
  const served = () =>
    auditEntries(home).filter((entry) =>
      entry.event === "token" && entry.service === "api"
    );
  assert.deepEqual(served(), [], "nothing served yet");

  // Another session's shim does not get it: it fetches its own.
  const shim = (session: string) =>
    fetchToken(home.socket, {
      service: "api",
      capability: capability(session),
    });
  assert.equal((await shim("s2")).token, token);
  assert.equal(helper.runs(), 2);
  // The session's own shim gets the kept token, without a helper run.
  assert.equal((await shim("s1")).token, token);
  assert.equal(helper.runs(), 2);
  assert.deepEqual(served().map((entry) => entry.session), ["s2", "s1"]);
  assert.equal(served()[1].cached, false);
  // Once only: a restarted server gets a fresh token.
  assert.equal((await shim("s1")).token, token);
  assert.equal(helper.runs(), 3);

  // Logout forgets kept tokens.
  await fetchTokens({
    socket: home.socket,
    services: ["api"],
    defer: { services: ["api"], ifContains: ["$"] },
    capability: capability("s3"),
  });
  assert.equal(helper.runs(), 4);
  assert.equal((await home.sherlock(["logout"])).code, 0);
  await home.login();
  assert.equal((await shim("s3")).token, token);
  assert.equal(helper.runs(), 5);

  // Without defer (or for a service not named in it), the token is answered.
  const direct = await fetchTokens({
    socket: home.socket,
    services: ["api"],
    defer: { services: [], ifContains: ["$"] },
    capability: capability("s4"),
  });
  assert.deepEqual([...direct.tokens], [["api", token]]);
  assert.deepEqual(direct.deferred, []);
});

Deno.test("a malformed defer is a 400, checked before the login", async () => {
  await using home = await createBrokerHome();
  assert.equal((await home.sherlock(["broker", "start"])).code, 0);
  const bodies = [
    { defer: "$" },
    { defer: null },
    { defer: { services: ["other"], ifContains: ["$"] } },
    { defer: { services: ["api"], ifContains: [] } },
    { defer: { services: ["api"], ifContains: [""] } },
    { defer: { services: ["api"], ifContains: [5] } },
    { defer: { services: ["api"] } },
  ];
  for (const extra of bodies) {
    // A well-formed capability, so that only the defer can be wrong.
    const body = JSON.stringify({
      services: ["api"],
      capability: "0".repeat(64),
      ...extra,
    });
    const answer = await rawExchange(
      home.socket,
      `POST /v1/tokens HTTP/1.1\r\nHost: sherlock\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${
          new TextEncoder().encode(body).length
        }\r\n\r\n${body}`,
    );
    assert.equal(answer.status, 400, `${body}: ${answer.text}`);
    assert.equal(
      (answer.json as { error: { code: string } }).error.code,
      "bad_request",
      body,
    );
  }
});
