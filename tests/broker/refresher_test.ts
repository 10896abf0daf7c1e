/**
 * The one refresh (`lib/broker/daemon/oauth/refresher.ts`) against a real
 * token endpoint on 127.0.0.1, through a grant storage in memory: the
 * request oauth4webapi sends (grant, refresh token, `resource`, the client's
 * secret form-encoded in Basic), the rotation kept before the answer is
 * returned, `invalid_grant` marking the grant dead, and a grant that changed
 * while its refresh ran read again (a dead answer or a rotation of an old
 * grant is never kept). The grants of the store (`sherlock auth`) and of the
 * SSO login use this same function: tests/broker/oauth_test.ts,
 * oauth_rotation_test.ts and login_oidc_test.ts cover them end to end.
 */

import assert from "node:assert/strict";
import {
  type GrantStorage,
  type RefreshableGrant,
  refreshGrant,
  rotatedRefreshToken,
} from "../../lib/broker/daemon/oauth/refresher.ts";
import { revokeToken } from "../../lib/broker/daemon/oauth/token_endpoint.ts";

interface Seen {
  path: string;
  form: URLSearchParams;
  authorization: string | null;
}

/** A token endpoint whose answer per refresh token the test decides. */
function startTokenServer(answer: (refreshToken: string) => Response) {
  const seen: Seen[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const form = new URLSearchParams(await request.text());
      const path = new URL(request.url).pathname;
      seen.push({
        path,
        form,
        authorization: request.headers.get("authorization"),
      });
      if (path === "/revoke") return new Response(null, { status: 200 });
      return answer(form.get("refresh_token") ?? "");
    },
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  return {
    seen,
    base,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** A grant in memory, recording what the refresh did to it. */
function memoryStorage(
  base: string,
  first: string,
  options: { changeDuringRequest?: string } = {},
) {
  const state = {
    refreshToken: first as string | undefined,
    dead: false,
    events: [] as string[],
  };
  let change = options.changeDuringRequest;
  const storage: GrantStorage = {
    read: () => {
      state.events.push(`read ${state.refreshToken}`);
      const grant: RefreshableGrant | undefined = state.refreshToken
        ? {
          refreshToken: state.refreshToken,
          resource: "https://mcp.example/mcp",
          server: { issuer: base, tokenEndpoint: `${base}/token` },
          client: {
            clientId: "pre-registered client",
            clientSecret: "p@ss:word",
            method: "client_secret_basic",
          },
        }
        : undefined;
      // Another daemon rotates the grant while this request runs.
      if (change !== undefined) {
        state.refreshToken = change;
        change = undefined;
      }
      return Promise.resolve(grant);
    },
    keep: (spent, answer) => {
      if (state.refreshToken !== spent) {
        state.events.push(`not kept ${spent}`);
        return Promise.resolve(false);
      }
      state.refreshToken = rotatedRefreshToken(answer, spent);
      state.events.push(`kept ${state.refreshToken}`);
      return Promise.resolve(true);
    },
    markDead: (spent) => {
      if (state.refreshToken !== spent) {
        state.events.push(`not dead ${spent}`);
        return Promise.resolve(false);
      }
      state.refreshToken = undefined;
      state.dead = true;
      state.events.push(`dead ${spent}`);
      return Promise.resolve(true);
    },
  };
  return { storage, state };
}

function tokens(refreshToken: string): Response {
  return Response.json({
    access_token: `at-for-${refreshToken}`,
    token_type: "Bearer",
    expires_in: 60,
    refresh_token: `${refreshToken}+1`,
  });
}

Deno.test("refreshGrant: the request oauth4webapi sends, the rotation kept before the answer is returned", async () => {
  await using server = startTokenServer(tokens);
  const { storage, state } = memoryStorage(server.base, "rt-1");
  const outcome = await refreshGrant(storage, {
    parameters: { scope: "a b" },
  });
  assert.equal(outcome.kind, "answered");
  assert.ok(outcome.kind === "answered" && outcome.kept);
  assert.deepEqual(state.events, ["read rt-1", "kept rt-1+1"]);
  const [request] = server.seen;
  assert.equal(request.form.get("grant_type"), "refresh_token");
  assert.equal(request.form.get("refresh_token"), "rt-1");
  assert.equal(request.form.get("resource"), "https://mcp.example/mcp");
  assert.equal(request.form.get("scope"), "a b");
  // RFC 6749 §2.3.1: both form-encoded before Basic, as the form serializer
  // does: `-` kept (a server that compares without decoding refuses %2D).
  assert.equal(
    request.authorization,
    `Basic ${btoa("pre-registered+client:p%40ss%3Aword")}`,
  );
  assert.equal(request.form.get("client_secret"), null);
});

Deno.test("refreshGrant: invalid_grant marks the grant dead; a grant rotated meanwhile is read again, never marked dead", async () => {
  await using server = startTokenServer((refreshToken) =>
    refreshToken === "rt-old"
      ? Response.json({ error: "invalid_grant" }, { status: 400 })
      : tokens(refreshToken)
  );
  // Rotated by another daemon while the spent one was presented.
  const rotated = memoryStorage(server.base, "rt-old", {
    changeDuringRequest: "rt-new",
  });
  const outcome = await refreshGrant(rotated.storage);
  assert.equal(outcome.kind, "answered");
  assert.deepEqual(rotated.state.events, [
    "read rt-old",
    "not dead rt-old",
    "read rt-new",
    "kept rt-new+1",
  ]);
  assert.equal(rotated.state.dead, false);

  const dead = memoryStorage(server.base, "rt-old");
  assert.deepEqual(await refreshGrant(dead.storage), { kind: "dead" });
  assert.equal(dead.state.dead, true);
});

Deno.test("refreshGrant: an answer for a grant that changed meanwhile is not kept; the new grant is refreshed", async () => {
  await using server = startTokenServer(tokens);
  const { storage, state } = memoryStorage(server.base, "rt-a", {
    changeDuringRequest: "rt-b",
  });
  const outcome = await refreshGrant(storage);
  assert.ok(outcome.kind === "answered" && outcome.kept);
  assert.deepEqual(state.events, [
    "read rt-a",
    "not kept rt-a",
    "read rt-b",
    "kept rt-b+1",
  ]);
  assert.equal(
    (outcome.answer.json as { access_token: string }).access_token,
    "at-for-rt-b",
  );
});

Deno.test("refreshGrant: another error is the caller's to read, nothing kept; no grant is none", async () => {
  await using server = startTokenServer(() =>
    // GitHub answers its errors with HTTP 200.
    Response.json({ error: "bad_refresh_token" })
  );
  const { storage, state } = memoryStorage(server.base, "rt-1");
  const outcome = await refreshGrant(storage);
  assert.ok(outcome.kind === "answered" && !outcome.kept);
  assert.equal(state.refreshToken, "rt-1");
  const none = memoryStorage(server.base, "");
  assert.deepEqual(await refreshGrant(none.storage), { kind: "none" });
});

Deno.test("revokeToken: RFC 7009 with the hint and the client's authentication; no endpoint is false", async () => {
  await using server = startTokenServer(tokens);
  const revoked = await revokeToken({
    server: {
      issuer: server.base,
      revocationEndpoint: `${server.base}/revoke`,
    },
    client: {
      clientId: "c",
      clientSecret: "s",
      method: "client_secret_post",
    },
    token: "rt-9",
    hint: "refresh_token",
  });
  assert.equal(revoked, true);
  const [request] = server.seen;
  assert.equal(request.path, "/revoke");
  assert.equal(request.form.get("token"), "rt-9");
  assert.equal(request.form.get("token_type_hint"), "refresh_token");
  assert.equal(request.form.get("client_id"), "c");
  assert.equal(request.form.get("client_secret"), "s");
  assert.equal(
    await revokeToken({
      server: { issuer: server.base },
      client: { clientId: "c" },
      token: "t",
      hint: "access_token",
    }),
    false,
  );
});
