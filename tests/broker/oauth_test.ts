/**
 * `[token] source = "oauth"` and `sherlock auth`, against the real OAuth
 * fixture (oidc-provider on 127.0.0.1) and the remote MCP server fixture:
 * authorize headlessly, serve tokens to a session across expiries, one
 * refresh for a burst, a dead grant, a step-up after a 403
 * `insufficient_scope` seen by a real bridge, an interrupted or replaced
 * `sherlock auth`, the spec's rules, a confidential client (its secret in
 * the store) and a server that answers as GitHub's OAuth Apps do (the
 * fixture's `githubTokenAnswers`: verified against that imitation only).
 */

import assert from "node:assert/strict";
import {
  type AuthServer,
  type AuthServerOptions,
  browserEnv,
  startAuthServer,
} from "../fixtures/oauth/mod.ts";
import { openedUrl } from "../fixtures/oauth/browser.ts";
import {
  type RemoteMcpServerOptions,
  sha256,
} from "../fixtures/remote_mcp_server.ts";
import { callRemote } from "../helpers/protected_server.ts";
import { createOAuthHome, type OAuthHome } from "../helpers/oauth_home.ts";
import {
  AGENT,
  auditEntries,
  type BrokerHome,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import {
  fetchToken,
  registerSession,
  reportScopeChallenge,
} from "../../lib/broker/client.ts";
import { AUTH_ERROR_CODE } from "../../lib/bridge/relay.ts";
import { CAPABILITY_ENV } from "../../lib/render/servers.ts";
import { INITIALIZE, startRawBridge } from "../helpers/raw_bridge.ts";
import { startSherlock } from "../helpers/sherlock.ts";
import { waitUntil, whileAdvancing } from "../helpers/wait.ts";
import { filesContaining } from "../helpers/leaks.ts";
import { sh } from "../helpers/shell.ts";
import { runSherlockOnPty } from "../helpers/terminal.ts";

/** The AS's tokens live 2 s unless `options` says otherwise. */
function setup(
  options: AuthServerOptions = {},
  token: Record<string, unknown> = {},
  remoteOptions: RemoteMcpServerOptions = {},
  scopesSupported: string[] = ["mcp:tools"],
): Promise<OAuthHome> {
  // The protected-resource metadata (RFC 9728) is read at request time: the
  // issuer changes with changeIssuer().
  return createOAuthHome({
    authServer: { accessTokenTtlSeconds: 2, ...options },
    token,
    remote: remoteOptions,
    scopesSupported,
  });
}

async function authorize(home: BrokerHome, log?: string) {
  return await home.sherlock(["auth", "remote"], { env: browserEnv(log) });
}

/** The authorization URLs the fixture's browser opened (its log). */
function urlsOpened(log: string): URL[] {
  return Deno.readTextFileSync(log).trim().split("\n").map((line) =>
    new URL(JSON.parse(line).url)
  );
}

/** Registers a session of "remote" (`id`, else a random one); its capability. */
async function session(
  home: BrokerHome,
  id = crypto.randomUUID().replaceAll("-", "").slice(0, 12),
): Promise<string> {
  const { capability } = await registerSession({
    socket: home.socket,
    session: id,
    agent: AGENT,
    services: ["remote"],
    pid: Deno.pid,
  });
  return capability;
}

/**
 * A real `sherlock bridge` for the service "remote" of `session`, past
 * its `initialize` (which needs a token the server takes).
 */
async function startBridge(
  home: BrokerHome,
  options: { session: string; capability: string; url: string },
) {
  const bridge = startRawBridge({
    args: [
      "bridge",
      "--socket",
      home.socket,
      "--session",
      options.session,
      "--agent",
      AGENT,
      "--url",
      options.url,
      "remote",
    ],
    env: { ...home.env, [CAPABILITY_ENV]: options.capability },
    cwd: home.work,
  });
  await bridge.send(INITIALIZE);
  assert.ok((await bridge.receive()).result);
  await bridge.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  return bridge;
}

Deno.test("sherlock auth, tokens across expiries, one refresh per burst, a dead grant", async () => {
  await using s = await setup();
  const { as, remote, home } = s;
  const log = `${home.root}/browser.log`;
  const auth = await authorize(home, log);
  assert.equal(auth.code, 0, auth.stderr);
  assert.match(auth.stdout, /^authorized remote at http:\/\/127\.0\.0\.1/);
  assert.equal(urlsOpened(log)[0].searchParams.get("resource"), remote.url);
  // The AS lists offline_access in scopes_supported: asked for with the rest.
  assert.deepEqual(
    urlsOpened(log)[0].searchParams.get("scope")?.split(" "),
    ["mcp:tools", "offline_access"],
  );
  assert.equal(as.counts.registration, 1);

  const status = await home.sherlock(["auth", "status", "--json"]);
  assert.equal(status.code, 0, status.stderr);
  const [entry] = JSON.parse(status.stdout).services;
  assert.equal(entry.authorized, true);
  assert.equal(entry.issuer, as.issuer);
  assert.equal(entry.refreshToken, true);

  const capability = await session(home);
  const seen: string[] = [];
  const get = async () => {
    const { token } = await fetchToken(home.socket, {
      service: "remote",
      capability,
    });
    seen.push(token);
    return token;
  };
  // A session that outlives several 2-second access tokens.
  for (let i = 0; i < 3; i++) {
    assert.equal(await callRemote(remote.url, await get()), 200);
    home.advanceClock(2100);
  }
  // Twenty requests after expiry: one refresh at the server.
  const before = as.counts.refresh;
  const burst = await Promise.all(Array.from({ length: 20 }, get));
  assert.equal(as.counts.refresh - before, 1);
  assert.equal(new Set(burst).size, 1);
  assert.equal(await callRemote(remote.url, burst[0]), 200);

  // A revoked grant: needs `sherlock auth`, then works again.
  as.revokeAllGrants();
  home.advanceClock(2100);
  await assert.rejects(get, /needs authorization: run "sherlock auth remote"/);
  const dead = await home.sherlock(["auth", "status", "--json"]);
  assert.equal(JSON.parse(dead.stdout).services[0].authorized, false);
  assert.equal((await authorize(home)).code, 0);
  assert.equal(as.counts.registration, 1, "the registration is reused");
  assert.equal(await callRemote(remote.url, await get()), 200);

  // Revoke: forgotten; the next request needs authorization.
  const revoke = await home.sherlock(["auth", "revoke", "remote"]);
  assert.equal(revoke.code, 0, revoke.stderr);
  assert.match(revoke.stdout, /revoked remote's grant at its server/);
  await assert.rejects(get, /sherlock auth remote/);

  // No token in any file, nor in what sherlock printed.
  const outputs = [auth, status, dead, revoke].map((r) => r.stdout + r.stderr)
    .join("\n");
  for (const token of seen) assert.ok(!outputs.includes(token));
  assert.deepEqual(filesContaining(home.root, seen), []);
  // The registration (and grants) are in the store, encrypted.
  assert.deepEqual(
    filesContaining(home.root, ["oauth.client", "clientId"]),
    [],
  );
  // …nor in the daemon's argv or environment.
  for (const pid of home.daemonPids()) {
    for (const file of ["cmdline", "environ"]) {
      const text = Deno.readTextFileSync(`/proc/${pid}/${file}`);
      for (const token of seen) assert.ok(!text.includes(token), file);
    }
  }
});

Deno.test("auth refuses a server that does not advertise S256", async () => {
  await using s = await setup({ advertiseS256: false });
  const result = await authorize(s.home);
  assert.equal(result.code, 78, result.stderr);
  assert.match(result.stderr, /does not advertise PKCE S256/);
});

Deno.test("auth refuses a wrong iss (RFC 9207)", async () => {
  await using s = await setup({ issParameter: "wrong" });
  const result = await authorize(s.home);
  assert.equal(result.code, 69, result.stderr);
  assert.match(result.stderr, /RFC 9207\); refused/);
  assert.equal(s.as.counts.authorization_code, 0, "no code was exchanged");
});

Deno.test("resource is sent: without it the server refuses", async () => {
  await using s = await setup({}, { send_resource: false });
  const log = `${s.home.root}/browser.log`;
  const result = await authorize(s.home, log);
  assert.notEqual(result.code, 0);
  assert.equal(urlsOpened(log)[0].searchParams.get("resource"), null);
});

Deno.test("metadata that names the server's origin: that resource, verbatim, in every request; its tokens work, refreshed too", async () => {
  await using s = await setup();
  const { home, remote } = s;
  // The server's URL has a path; its metadata names the origin alone,
  // which a URL parser would write with a trailing slash.
  const origin = new URL(remote.url).origin;
  assert.notEqual(origin, remote.url);
  s.prm.resource = origin;
  const log = `${home.root}/browser.log`;
  const auth = await authorize(home, log);
  assert.equal(auth.code, 0, auth.stderr);
  assert.equal(urlsOpened(log)[0].searchParams.get("resource"), origin);
  // The server takes only tokens for its origin: the code exchange and the
  // refresh asked for that one.
  const capability = await session(home);
  const get = async () =>
    (await fetchToken(home.socket, { service: "remote", capability })).token;
  assert.equal(await callRemote(remote.url, await get()), 200);
  home.advanceClock(2100);
  const before = s.as.counts.refresh;
  assert.equal(await callRemote(remote.url, await get()), 200);
  assert.equal(s.as.counts.refresh - before, 1);
});

Deno.test("a changed issuer gets a new registration, said on auth's line; a down server a clear error", async () => {
  await using s = await setup();
  const first = await authorize(s.home);
  assert.equal(first.code, 0);
  assert.equal(s.as.counts.registration, 1);
  assert.doesNotMatch(first.stdout, /re-registered/);
  const before = s.as.issuer;
  await s.as.changeIssuer();
  s.as.resetCounts();
  const again = await authorize(s.home);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(s.as.counts.registration, 1, "registered at the new issuer");
  assert.match(again.stdout, /issuer-/);
  // SEP-2352: the client of one server is never reused at another.
  assert.ok(
    again.stdout.trimEnd().endsWith(
      `; re-registered: its authorization server was ${before}`,
    ),
    again.stdout,
  );
  // The same server again: its registration reused, nothing said.
  s.as.resetCounts();
  const third = await authorize(s.home);
  assert.equal(third.code, 0, third.stderr);
  assert.equal(s.as.counts.registration, 0);
  assert.doesNotMatch(third.stdout, /re-registered/);

  await s.as.down();
  const down = await authorize(s.home);
  assert.equal(down.code, 69, down.stderr);
  assert.match(down.stderr, /cannot be reached/);
  assert.equal(down.stderr.trim().split("\n").length, 1);
  const status = await s.home.sherlock(["auth", "status"]);
  assert.equal(status.code, 0, "the daemon keeps serving");
  await s.as.up();
  s.as.setFailure({ mode: "garbage" });
  const garbage = await authorize(s.home);
  assert.equal(garbage.code, 69, garbage.stderr);
  assert.match(garbage.stderr, /not JSON|no authorization server metadata/);
});

Deno.test("an AS that is down, slow or answers garbage: clear errors, other services served", async () => {
  await using s = await setup();
  const { as, home } = s;
  home.writeService(
    "other",
    `[service]\nname = "other"\n[server]\ncommand = "true"\n[token]\nsource = "secret"\nenv = "T"\n`,
  );
  const stored = await home.sherlock(["secret", "set", "other"], {
    stdin: "other-secret\n",
  });
  assert.equal(stored.code, 0, stored.stderr);
  assert.equal((await authorize(home)).code, 0);
  const { capability } = await registerSession({
    socket: home.socket,
    session: "0123456789ab",
    agent: AGENT,
    services: ["remote", "other"],
    pid: Deno.pid,
  });
  const get = (service: string) =>
    fetchToken(home.socket, { service, capability });
  const expire = () => home.advanceClock(2100);

  expire();
  as.setFailure({ mode: "garbage", endpoints: ["token"] });
  await assert.rejects(() => get("remote"), /answered no bearer token/);
  assert.equal((await get("other")).token, "other-secret");
  as.setFailure(null);
  assert.ok((await get("remote")).token);

  expire();
  await as.down();
  await assert.rejects(() => get("remote"), /cannot be reached/);
  assert.equal((await get("other")).token, "other-secret");
  await as.up();
  assert.ok((await get("remote")).token);

  // A refused refresh (invalid_grant): needs `sherlock auth`, the issuer kept.
  expire();
  as.setFailure({ mode: "invalid_grant" });
  await assert.rejects(
    () => get("remote"),
    (error: Error & { exitCode?: number }) =>
      /needs authorization: run "sherlock auth remote"/.test(error.message) &&
      error.exitCode === 77,
  );
  const status = JSON.parse(
    (await home.sherlock(["auth", "status", "--json"])).stdout,
  ).services[0];
  assert.equal(status.authorized, false);
  assert.equal(status.issuer, as.issuer);
  as.setFailure(null);

  // Slow: a request waits at most the timeout; the other service meanwhile.
  assert.equal((await authorize(home)).code, 0);
  expire();
  as.setFailure({ mode: "slow", delayMs: 20_000, endpoints: ["token"] });
  const slow = get("remote").then(() => "served", (error) => error.message);
  const started = Date.now();
  assert.equal((await get("other")).token, "other-secret");
  assert.ok(Date.now() - started < 2000, "the other service did not wait");
  assert.match(await slow, /did not answer within 15 s/);
  as.setFailure(null);
});

Deno.test("client registration: the service's client_id, a CIMD, else a clear error", async (t) => {
  await t.step("client_id: no dynamic registration", async () => {
    await using s = await setup({
      clients: [{
        client_id: "sherlock-test",
        redirect_uris: ["http://127.0.0.1/callback"],
        application_type: "native",
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
      }],
    }, { client_id: "sherlock-test" });
    const log = `${s.home.root}/browser.log`;
    const result = await authorize(s.home, log);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(s.as.counts.registration, 0);
    assert.equal(
      urlsOpened(log)[0].searchParams.get("client_id"),
      "sherlock-test",
    );
  });
  await t.step("no registration, no client_id: a clear error", async () => {
    await using s = await setup({ registration: false });
    const result = await authorize(s.home);
    assert.equal(result.code, 78, result.stderr);
    assert.match(result.stderr, /set \[token\] client_id/);
  });
  await t.step(
    "a client metadata document when the server takes them",
    async () => {
      const document = Deno.serve(
        { hostname: "127.0.0.1", port: 0, onListen() {} },
        (request) =>
          Response.json({
            client_id: `https://127.0.0.1:${
              new URL(request.url).port
            }/client.json`,
            client_name: "sherlock",
            application_type: "native",
            redirect_uris: ["http://127.0.0.1/callback"],
            grant_types: ["authorization_code", "refresh_token"],
            response_types: ["code"],
            token_endpoint_auth_method: "none",
          }),
      );
      try {
        const url = `https://127.0.0.1:${document.addr.port}/client.json`;
        await using s = await setup({ clientIdMetadataDocuments: true }, {
          client_metadata_url: url,
        });
        const log = `${s.home.root}/browser.log`;
        const result = await authorize(s.home, log);
        assert.equal(result.code, 0, result.stderr);
        assert.equal(s.as.counts.registration, 0);
        assert.equal(urlsOpened(log)[0].searchParams.get("client_id"), url);
      } finally {
        await document.shutdown();
      }
    },
  );
});

Deno.test("a refused token (a bridge's 401): one refresh for all who refused it", async () => {
  await using s = await setup({ accessTokenTtlSeconds: 60 });
  const { as, home } = s;
  assert.equal((await authorize(home)).code, 0);
  const capability = await session(home);
  const first = await fetchToken(home.socket, {
    service: "remote",
    capability,
  });
  const refused = sha256(first.token);
  const before = as.counts.refresh;
  const burst = await Promise.all(
    Array.from(
      { length: 20 },
      () => fetchToken(home.socket, { service: "remote", capability, refused }),
    ),
  );
  assert.equal(as.counts.refresh - before, 1);
  assert.equal(new Set(burst.map((answer) => answer.token)).size, 1);
  assert.notEqual(burst[0].token, first.token);
  // A late refusal of the old token: the new one, no refresh.
  const late = await fetchToken(home.socket, {
    service: "remote",
    capability,
    refused,
  });
  assert.equal(late.token, burst[0].token);
  assert.equal(as.counts.refresh - before, 1);
});

Deno.test("discovery without resource_metadata: the well-known URI, path inserted, then the root", async (t) => {
  for (const where of ["inserted", "root"] as const) {
    await t.step(where, async () => {
      await using as = await startAuthServer({});
      const paths: string[] = [];
      const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
        { hostname: "127.0.0.1", port: 0, onListen() {} },
        (request): Response => {
          const { pathname } = new URL(request.url);
          paths.push(pathname);
          const prm = where === "inserted"
            ? "/.well-known/oauth-protected-resource/mcp"
            : "/.well-known/oauth-protected-resource";
          if (pathname === prm) {
            return Response.json({
              resource: `http://127.0.0.1:${server.addr.port}/mcp`,
              authorization_servers: [as.issuer],
              scopes_supported: ["mcp:tools"],
            });
          }
          // A 401 that names no metadata.
          return new Response("", {
            status: pathname === "/mcp" ? 401 : 404,
            headers: { "WWW-Authenticate": "Bearer" },
          });
        },
      );
      await using home = await createBrokerHome();
      try {
        home.writeService(
          "remote",
          `[service]\nname = "remote"\n[server]\nurl = "http://127.0.0.1:${server.addr.port}/mcp"\n[token]\nsource = "oauth"\n`,
        );
        await home.login();
        const result = await authorize(home);
        assert.equal(result.code, 0, result.stderr);
        assert.deepEqual(
          paths.filter((path) => path.startsWith("/.well-known/")),
          where === "inserted"
            ? ["/.well-known/oauth-protected-resource/mcp"]
            : [
              "/.well-known/oauth-protected-resource/mcp",
              "/.well-known/oauth-protected-resource",
            ],
        );
      } finally {
        await server.shutdown();
      }
    });
  }
});

/** The scopes the authorization requests asked for, in order (the AS's view). */
function requestedScopes(as: AuthServer): string[][] {
  // Without offline_access, asked for whenever the AS lists it (the first
  // test checks that): these are the scopes of the resource.
  return as.requests.filter((request) =>
    request.endpoint === "authorization" && request.scope !== undefined
  ).map((request) =>
    request.scope!.split(" ").filter((scope) => scope !== "offline_access")
      .sort()
  );
}

Deno.test("step-up: a 403 insufficient_scope through the bridge; the next sherlock auth asks for the union; the same bridge then gets through", async () => {
  const late: { as?: AuthServer; url?: string } = {};
  await using s = await setup({ accessTokenTtlSeconds: 60 }, {}, {
    // `echo` needs mcp:admin; the metadata advertises only mcp:tools.
    requireScope: {
      tool: "echo",
      scope: "mcp:admin",
      holds: (bearer) =>
        late.as!.verifyAccessToken(bearer, {
          resource: late.url!,
          requiredScopes: ["mcp:admin"],
        }).then(() => true, () => false),
    },
  });
  const { as, remote, home } = s;
  late.as = as;
  late.url = remote.url;
  const first = await authorize(home);
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(requestedScopes(as), [["mcp:tools"]]);

  const sessionId = "5e55104deb09";
  const { capability } = await registerSession({
    socket: home.socket,
    session: sessionId,
    agent: AGENT,
    services: ["remote"],
    pid: Deno.pid,
  });
  const bridge = await startBridge(home, {
    session: sessionId,
    capability,
    url: remote.url,
  });
  const echo = (id: number) =>
    bridge.send({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "echo", arguments: { text: "stepped up" } },
    });
  await echo(2);
  const refused = await bridge.receive();
  assert.equal(refused.id, 2);
  const error = refused.error as { code: number; message: string };
  assert.equal(error.code, AUTH_ERROR_CODE);
  assert.match(
    error.message,
    /HTTP 403, insufficient scope: it needs mcp:admin\); run "sherlock auth remote"/,
  );
  assert.equal(remote.counts.insufficientScope, 1);
  assert.equal(as.counts.refresh, 0, "a 403 forces no refresh");

  // The broker recorded it on the grant: status says more scope is needed.
  const json = await home.sherlock(["auth", "status", "--json"]);
  const [entry] = JSON.parse(json.stdout).services;
  assert.equal(entry.authorized, true);
  assert.deepEqual(entry.scopes, ["mcp:tools"]);
  assert.deepEqual(entry.scopesNeeded, ["mcp:admin"]);
  const text = await home.sherlock(["auth", "status"]);
  assert.match(text.stdout, /more scope \(run "sherlock auth remote"\)/);
  assert.match(text.stdout, /NEEDS/);
  assert.match(text.stdout, /mcp:tools\s+mcp:admin/);
  const challenge = auditEntries(home).find((line) =>
    line.event === "oauth_scope_challenge"
  );
  assert.equal(challenge?.session, sessionId);
  assert.deepEqual(challenge?.scopes, ["mcp:admin"]);

  // The next authorization asks for the union (the AS's side says so).
  const second = await authorize(home);
  assert.equal(second.code, 0, second.stderr);
  assert.deepEqual(requestedScopes(as), [
    ["mcp:tools"],
    ["mcp:admin", "mcp:tools"],
  ]);
  const after = JSON.parse(
    (await home.sherlock(["auth", "status", "--json"])).stdout,
  ).services[0];
  assert.deepEqual(after.scopes.sort(), ["mcp:admin", "mcp:tools"]);
  assert.deepEqual(after.scopesNeeded, []);

  // The same bridge, not restarted: the call goes through.
  await echo(3);
  const answer = await bridge.receive();
  assert.equal(answer.id, 3, JSON.stringify(answer));
  assert.ok(answer.result, JSON.stringify(answer));
  const content = (answer.result as { content: { text: string }[] }).content;
  assert.equal(content[0].text, "stepped up");
  assert.equal(remote.counts.insufficientScope, 1);
  const { code, stderr } = await bridge.end();
  assert.equal(code, 0);
  assert.match(stderr, /needs the scope mcp:admin; run "sherlock auth remote"/);
  for (const output of [first, second, json, text]) {
    assert.doesNotMatch(output.stdout + output.stderr, /eyJ/);
  }
  assert.doesNotMatch(stderr, /eyJ/, "no JWT on the bridge's stderr");
});

Deno.test("scope route: only a registered session, only its services, only scope tokens", async () => {
  await using s = await setup({ accessTokenTtlSeconds: 60 });
  const { home } = s;
  assert.equal((await authorize(home)).code, 0);
  home.writeService(
    "other",
    `[service]\nname = "other"\n[server]\ncommand = "true"\n[token]\nsource = "secret"\nenv = "T"\n`,
  );
  const capability = await session(home);
  await assert.rejects(
    () =>
      reportScopeChallenge(home.socket, {
        service: "remote",
        capability: "0".repeat(64),
        scope: "mcp:admin",
      }),
    /session/,
  );
  await assert.rejects(
    () =>
      reportScopeChallenge(home.socket, {
        service: "other",
        capability,
        scope: "mcp:admin",
      }),
    /not one of session/,
  );
  // Both refusals are audited, as a refused token request is.
  assert.deepEqual(
    auditEntries(home).filter((entry) => entry.event === "oauth_scope_failed")
      .map(({ service, reason, session }) => ({ service, reason, session })),
    [
      { service: "remote", reason: "unknown_session", session: undefined },
      {
        service: "other",
        reason: "service_not_in_session",
        session: auditEntries(home).find((entry) =>
          entry.event === "session_start"
        )?.session,
      },
    ],
  );
  await assert.rejects(
    () =>
      reportScopeChallenge(home.socket, {
        service: "remote",
        capability,
        scope: 'mcp:admin "quoted"',
      }),
    /RFC 6749 scope tokens/,
  );
  // A scope the grant holds is not recorded; a new one is, once.
  assert.deepEqual(
    await reportScopeChallenge(home.socket, {
      service: "remote",
      capability,
      scope: "mcp:tools",
    }),
    { recorded: false, scopesNeeded: [] },
  );
  for (const recorded of [true, false]) {
    assert.deepEqual(
      await reportScopeChallenge(home.socket, {
        service: "remote",
        capability,
        scope: "mcp:tools mcp:admin",
      }),
      { recorded, scopesNeeded: ["mcp:admin"] },
    );
  }
  const status = await home.sherlock(["auth", "status"]);
  assert.equal(status.code, 0, "the daemon keeps serving");
});

/** A `$BROWSER` that only writes the URL it was given into `file`. */
function recordingBrowser(home: BrokerHome, file: string): string {
  return home.writeScript(
    "recording-browser",
    `printf '%s\\n' "$1" > ${JSON.stringify(file)}.tmp && mv ${
      JSON.stringify(file)
    }.tmp ${JSON.stringify(file)}\n`,
  );
}

/**
 * The authorization URL behind what the recording browser got in `file`
 * (sherlock's launch page), read as the operator's browser reads it.
 */
async function authorizationUrl(file: string): Promise<string> {
  const given = await waitUntil(() => {
    try {
      return Deno.readTextFileSync(file).trim();
    } catch {
      return undefined;
    }
  }, "the launch page");
  return openedUrl(given)!;
}

/** The loopback port of an authorization URL's redirect_uri. */
async function listenerPort(file: string): Promise<number> {
  const url = await authorizationUrl(file);
  const redirect = new URL(new URL(url).searchParams.get("redirect_uri")!);
  assert.equal(redirect.hostname, "127.0.0.1");
  assert.equal(redirect.pathname, "/callback");
  return Number(redirect.port);
}

async function accepts(port: number): Promise<boolean> {
  try {
    const connection = await Deno.connect({ hostname: "127.0.0.1", port });
    connection.close();
    return true;
  } catch {
    return false;
  }
}

/** Polls until nothing listens on `port` any more; fails after `limitMs`. */
async function closesWithin(port: number, limitMs: number): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (await accepts(port)) {
    if (Date.now() > deadline) {
      assert.fail(`the listener on port ${port} is still open`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

Deno.test("an interrupted sherlock auth (SIGINT) closes the daemon's listener at once; the daemon keeps serving", async () => {
  await using s = await setup();
  const { home } = s;
  const urlFile = `${home.root}/auth-url`;
  const running = startSherlock(["auth", "remote"], {
    env: { ...home.env, BROWSER: recordingBrowser(home, urlFile) },
    cwd: home.work,
  });
  const port = await listenerPort(urlFile);
  const page = new URL(Deno.readTextFileSync(urlFile).trim());
  assert.ok(Deno.statSync(page).isFile);
  assert.equal(Deno.statSync(page).mode! & 0o777, 0o600);
  assert.ok(await accepts(port), "the listener is open while auth waits");
  running.kill("SIGINT");
  const ended = await running.exited;
  assert.equal(ended.code, 130);
  assert.throws(() => Deno.statSync(page), "the launch page is removed");
  await closesWithin(port, 5_000);
  const status = await home.sherlock(["auth", "status", "--json"]);
  assert.equal(status.code, 0, status.stderr);
  assert.equal(JSON.parse(status.stdout).services[0].authorized, false);
  // …and authorizes again.
  const again = await authorize(home);
  assert.equal(again.code, 0, again.stderr);
});

Deno.test("a new sherlock auth replaces one under way: the old one ends with a clear line, its listener closes", async () => {
  await using s = await setup();
  const { home } = s;
  const urlFile = `${home.root}/auth-url`;
  const old = startSherlock(["auth", "remote"], {
    env: { ...home.env, BROWSER: recordingBrowser(home, urlFile) },
    cwd: home.work,
  });
  const port = await listenerPort(urlFile);
  const fresh = await authorize(home);
  assert.equal(fresh.code, 0, fresh.stderr);
  const replaced = await old.result;
  assert.equal(replaced.code, 69, replaced.stderr);
  assert.match(
    replaced.stderr,
    /a newer "sherlock auth remote" replaced this one/,
  );
  assert.ok(!(await accepts(port)), "the old listener is closed");
});

Deno.test("sherlock auth: no local user finds the flow's state or PKCE challenge in any process's argv", async () => {
  await using s = await setup();
  const { home } = s;
  const spy = `${home.root}/argv-spy`;
  const log = `${home.root}/browser.log`;
  const result = await home.sherlock(["auth", "remote"], {
    env: { ...browserEnv(log), OAUTH_FIXTURE_ARGV_SPY: spy },
  });
  assert.equal(result.code, 0, result.stderr);
  // The browser read every process's argv while the flow was under way.
  const lines = Deno.readTextFileSync(spy).trim().split("\n").map((line) =>
    JSON.parse(line)
  );
  const summary = lines.pop();
  assert.equal(summary.secrets, 2, "state and code_challenge were looked for");
  assert.ok(summary.scanned > 3, "the scan saw the running processes");
  assert.deepEqual(lines, [], "no argv holds the state or the challenge");
  // The browser got a launch page, not the URL; the page is gone after.
  const [visit] = Deno.readTextFileSync(log).trim().split("\n").map((line) =>
    JSON.parse(line)
  );
  assert.match(visit.given, /^file:\/\/\/.+\/launch-[0-9a-f]+\.html$/);
  assert.throws(() => Deno.statSync(new URL(visit.given)));
  const state = new URL(visit.url).searchParams.get("state")!;
  assert.ok(!result.stderr.includes(state), "nor is it printed by default");
});

Deno.test("an authorization server that answers an ID token: auth says who signed in", async () => {
  await using s = await setup({}, {}, {}, ["openid", "mcp:tools"]);
  const result = await authorize(s.home);
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stdout,
    /^authorized remote at http:\/\/127\.0\.0\.1:\d+ as tester \(scopes: /,
  );
});

Deno.test("forged redirects (no state, a wrong one, no iss, a POST) are ignored and counted; the real answer still ends the flow", async () => {
  await using s = await setup();
  const { home, as } = s;
  const urlFile = `${home.root}/auth-url`;
  const running = startSherlock(["auth", "remote"], {
    env: { ...home.env, BROWSER: recordingBrowser(home, urlFile) },
    cwd: home.work,
  });
  const url = await authorizationUrl(urlFile);
  const port = await listenerPort(urlFile);
  const state = new URL(url).searchParams.get("state")!;
  const callback = `http://127.0.0.1:${port}/callback`;
  const forged: [string, RequestInit][] = [
    [`${callback}?code=attacker-code`, {}],
    [`${callback}?code=attacker-code&state=attacker-state`, {}],
    [`${callback}?code=attacker-code&state=${state}x&iss=${as.issuer}`, {}],
    [`${callback}?error=access_denied&state=`, {}],
    [`${callback}?code=attacker-code&state=${state}`, { method: "POST" }],
  ];
  for (const [target, init] of forged) {
    const response = await fetch(target, init);
    const text = await response.text();
    assert.equal(response.status, 400, target);
    assert.ok(!text.includes("attacker"), "nothing is reflected");
  }
  assert.equal((await fetch(`http://127.0.0.1:${port}/x`)).status, 404);
  assert.ok(await accepts(port), "the flow goes on");
  const approved = await as.approve(url);
  assert.equal(approved.listenerStatus, 200);
  const result = await running.result;
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stderr,
    /the redirect listener ignored 5 requests without this flow's state/,
  );
  assert.match(result.stdout, /^authorized remote at /);
  assert.equal(as.counts.authorization_code, 1, "only the real code");
});

Deno.test("$BROWSER as a command line with arguments; a browser that cannot start says at once how to go on", async (t) => {
  await using s = await setup();
  const { home, as } = s;
  await t.step("a command with arguments, as git and gh take it", async () => {
    const env = browserEnv();
    const fixture = new URL(
      "../fixtures/oauth/approve_browser.ts",
      import.meta.url,
    ).pathname;
    const result = await home.sherlock(["auth", "remote"], {
      env: {
        BROWSER: `${sh(Deno.execPath())} run --quiet -A ${
          sh(fixture)
        } --new-window %s`,
        DENO_BIN: env.DENO_BIN,
      },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^authorized remote at /);
  });
  await t.step("a browser that does not exist", async () => {
    const running = startSherlock(["auth", "remote"], {
      env: { ...home.env, BROWSER: "/nonexistent/browser --new-window" },
      cwd: home.work,
    });
    // The operator reads the line while sherlock waits, and opens the URL
    // by hand: the flow cannot end before the line is there.
    const line = await waitUntil(
      () =>
        running.stderrSoFar().split("\n").find((text) =>
          text.includes("could not start the browser")
        ),
      "the line that says how to go on",
    );
    assert.match(line, /\/nonexistent\/browser \(no such program\)/);
    assert.match(line, /sherlock auth --device remote/);
    const url = /open this URL in a browser by hand: (\S+)/.exec(line)![1];
    await as.approve(url);
    const result = await running.result;
    assert.equal(result.code, 0, result.stderr);
  });
  await t.step("an unreadable command line", async () => {
    const running = startSherlock(["auth", "remote"], {
      env: { ...home.env, BROWSER: "'unclosed browser" },
      cwd: home.work,
    });
    const line = await waitUntil(
      () =>
        running.stderrSoFar().split("\n").find((text) =>
          text.includes("open this URL in a browser by hand")
        ),
      "the line that says how to go on",
    );
    assert.match(line, /\$BROWSER cannot be read as a command line/);
    running.kill("SIGINT");
    await running.result;
  });
});

/** The store name of the confidential client's secret, and its value. */
const SECRET_NAME = "remote-client-secret";
const CLIENT_SECRET = "fixture-client-secret-4b1d9e";

/** A pre-registered confidential client at the fixture. */
function confidentialClient(method: string) {
  return {
    client_id: "sherlock-confidential",
    client_secret: CLIENT_SECRET,
    redirect_uris: ["http://127.0.0.1/callback"],
    application_type: "native",
    token_endpoint_auth_method: method,
    grant_types: ["authorization_code", "refresh_token"],
  };
}

/** How the client authenticated on each token-endpoint request so far. */
function clientAuthSeen(as: AuthServer): string[] {
  return as.requests.filter((request) =>
    request.endpoint === "token" || request.endpoint === "revocation"
  ).map((request) =>
    `${request.grantType ?? request.endpoint}:${request.clientAuth}`
  );
}

Deno.test("a confidential client: the secret from the store, by the method the metadata names, in every token request", async (t) => {
  for (
    const [method, offered, seen] of [
      ["client_secret_basic", undefined, "basic"],
      ["client_secret_post", ["none", "client_secret_post"], "post"],
    ] as const
  ) {
    await t.step(method, async () => {
      await using s = await setup({
        clients: [confidentialClient(method)],
        clientAuthMethods: offered ? [...offered] : undefined,
      }, { client_id: "sherlock-confidential", client_secret: SECRET_NAME });
      const { as, remote, home } = s;

      // No secret stored: one line naming the command, before any browser.
      const missing = await authorize(home);
      assert.equal(missing.code, 77, missing.stderr);
      assert.equal(
        missing.stderr.trim(),
        `sherlock: service remote's client secret is not stored; run "sherlock secret set ${SECRET_NAME}"`,
      );
      assert.equal(as.counts.authorization, 0, "no browser was opened");

      const stored = await home.sherlock(["secret", "set", SECRET_NAME], {
        stdin: `${CLIENT_SECRET}\n`,
      });
      assert.equal(stored.code, 0, stored.stderr);
      const auth = await authorize(home);
      assert.equal(auth.code, 0, auth.stderr);
      assert.equal(as.counts.registration, 0, "the configured client is used");

      const capability = await session(home);
      const get = () =>
        fetchToken(home.socket, { service: "remote", capability });
      const first = await get();
      assert.equal(await callRemote(remote.url, first.token), 200);
      home.advanceClock(2100);
      const second = await get();
      assert.notEqual(second.token, first.token, "refreshed");
      assert.equal(await callRemote(remote.url, second.token), 200);

      // The secret removed: the next refresh says which command to run.
      const removed = await home.sherlock(["secret", "rm", SECRET_NAME]);
      assert.equal(removed.code, 0, removed.stderr);
      home.advanceClock(2100);
      await assert.rejects(
        get,
        (error: Error & { exitCode?: number }) =>
          error.message.includes(`run "sherlock secret set ${SECRET_NAME}"`) &&
          error.exitCode === 77,
      );
      const again = await home.sherlock(["secret", "set", SECRET_NAME], {
        stdin: `${CLIENT_SECRET}\n`,
      });
      assert.equal(again.code, 0, again.stderr);
      const revoke = await home.sherlock(["auth", "revoke", "remote"]);
      assert.equal(revoke.code, 0, revoke.stderr);
      // oidc-provider authenticates a confidential client's revocation.
      assert.match(revoke.stdout, /revoked remote's grant at its server/);
      assert.deepEqual(clientAuthSeen(as), [
        `authorization_code:${seen}`,
        `refresh_token:${seen}`,
        `revocation:${seen}`,
      ]);

      // The secret: in the encrypted store only.
      const outputs = [missing, stored, auth, removed, again, revoke].map((r) =>
        r.stdout + r.stderr
      ).join("\n");
      assert.ok(!outputs.includes(CLIENT_SECRET));
      assert.deepEqual(filesContaining(home.root, [CLIENT_SECRET]), []);
      for (const pid of home.daemonPids()) {
        for (const file of ["cmdline", "environ"]) {
          const text = Deno.readTextFileSync(`/proc/${pid}/${file}`);
          assert.ok(!text.includes(CLIENT_SECRET), file);
        }
      }
    });
  }
});

Deno.test("a registration that answers a client_secret: kept with it in the store, sent as registered", async () => {
  await using s = await setup({ registerConfidential: "client_secret_post" });
  const { as, remote, home } = s;
  const auth = await authorize(home);
  assert.equal(auth.code, 0, auth.stderr);
  assert.equal(as.counts.registration, 1);
  const capability = await session(home);
  home.advanceClock(2100);
  const { token } = await fetchToken(home.socket, {
    service: "remote",
    capability,
  });
  assert.equal(await callRemote(remote.url, token), 200);
  // Authorized again: the stored registration (and its secret) reused.
  assert.equal((await authorize(home)).code, 0);
  assert.equal(as.counts.registration, 1);
  assert.deepEqual(clientAuthSeen(as), [
    "authorization_code:post",
    "refresh_token:post",
    "authorization_code:post",
  ]);
});

Deno.test("a GitHub-like server: a token without expiry or refresh token is kept in the store, survives a restart, is served until refused; comma scopes", async () => {
  await using s = await setup(
    {
      clients: [confidentialClient("client_secret_basic")],
      githubTokenAnswers: true,
      accessTokenTtlSeconds: 8,
    },
    { client_id: "sherlock-confidential", client_secret: SECRET_NAME },
    {},
    ["mcp:tools", "mcp:admin"],
  );
  const { as, remote, home } = s;
  // A wrong secret: GitHub answers the error with HTTP 200; one line.
  const wrong = await home.sherlock(["secret", "set", SECRET_NAME], {
    stdin: "not-the-secret\n",
  });
  assert.equal(wrong.code, 0, wrong.stderr);
  const wrongAuth = await authorize(home);
  assert.equal(wrongAuth.code, 69, wrongAuth.stderr);
  assert.match(
    wrongAuth.stderr,
    /\nsherlock: the token endpoint at http:\/\/127\.0\.0\.1:\d+ answered HTTP 200 \(invalid_client\)\n$/,
  );
  const stored = await home.sherlock(["secret", "set", SECRET_NAME], {
    stdin: `${CLIENT_SECRET}\n`,
  });
  assert.equal(stored.code, 0, stored.stderr);
  const auth = await authorize(home);
  assert.equal(auth.code, 0, auth.stderr);
  assert.equal(as.counts.token, 2);

  const json = await home.sherlock(["auth", "status", "--json"]);
  const [entry] = JSON.parse(json.stdout).services;
  assert.equal(entry.authorized, true);
  assert.equal(entry.accessTokenExpiresAt, "never");
  assert.equal(entry.refreshToken, false);
  assert.deepEqual(entry.scopes, ["mcp:tools", "mcp:admin"]);
  const text = await home.sherlock(["auth", "status"]);
  assert.match(
    text.stdout,
    /\byes\s.*mcp:tools mcp:admin\s+-\s+never\s+no\s*$/m,
  );

  // The daemon restarts: the token comes from the store, no server asked.
  const oldDaemons = home.daemonPids();
  const stop = await home.sherlock(["broker", "stop"]);
  assert.equal(stop.code, 0, stop.stderr);
  await home.login();
  const newDaemons = home.daemonPids();
  assert.ok(newDaemons.length > 0, "a new daemon runs");
  assert.ok(newDaemons.every((pid) => !oldDaemons.includes(pid)));
  const sessionId = "91f7a0c2d4e6";
  const capability = await session(home, sessionId);
  const { token } = await fetchToken(home.socket, {
    service: "remote",
    capability,
  });
  assert.equal(await callRemote(remote.url, token), 200);
  assert.equal(as.counts.token, 2, "no token request after the restart");

  // A real bridge gets it; once the server refuses it (here: the JWT
  // expired, as a revoked GitHub token would be refused), the grant needs
  // `sherlock auth`.
  const bridge = await startBridge(home, {
    session: sessionId,
    capability,
    url: remote.url,
  });
  const deadline = Date.now() + 15_000;
  while (await callRemote(remote.url, token) !== 401) {
    assert.ok(Date.now() < deadline, "the remote server never refused it");
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  await bridge.send({
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "echo", arguments: { text: "hi" } },
  });
  const refused = await bridge.receive();
  const error = refused.error as { code: number; message: string };
  assert.equal(error?.code, AUTH_ERROR_CODE, JSON.stringify(refused));
  assert.match(error.message, /run "sherlock auth remote"/);
  const after = JSON.parse(
    (await home.sherlock(["auth", "status", "--json"])).stdout,
  ).services[0];
  assert.equal(after.authorized, false);
  assert.equal(after.accessTokenExpiresAt, null);
  assert.equal(as.counts.token, 2, "nothing to refresh with");
  const { stderr } = await bridge.end();

  // The token: in the encrypted store only, never printed.
  for (const output of [auth, json, text, stop]) {
    assert.ok(!(output.stdout + output.stderr).includes(token));
  }
  assert.ok(!stderr.includes(token));
  assert.deepEqual(filesContaining(home.root, [token, CLIENT_SECRET]), []);

  // Authorized again: a new token is served.
  assert.equal((await authorize(home)).code, 0);
  const fresh = await fetchToken(home.socket, {
    service: "remote",
    capability,
  });
  assert.notEqual(fresh.token, token);
  assert.equal(await callRemote(remote.url, fresh.token), 200);
});

/** `sherlock auth --device remote` started; its user code once printed. */
async function startDeviceAuth(home: BrokerHome) {
  const running = startSherlock(["auth", "--device", "remote"], {
    env: home.env,
    cwd: home.work,
  });
  const line = await waitUntil(
    () =>
      /open (\S+) on any device and enter the code (\S+)/.exec(
        running.stderrSoFar(),
      ) ?? undefined,
    "the device grant's user code",
  );
  return { running, url: line[1], userCode: line[2] };
}

Deno.test("auth --device: the operator approves elsewhere; the broker polls, keeps the grant", async () => {
  await using s = await setup();
  const { as, remote, home } = s;
  const { running, url, userCode } = await startDeviceAuth(home);
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/device/);
  // Nothing opened a browser: the URL is for another device.
  assert.equal(as.counts.authorization, 0);
  const approved = await as.approveDevice(userCode);
  assert.match(approved.page, /device approved/);
  const result = await whileAdvancing(home, running.result);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^authorized remote at http:\/\/127\.0\.0\.1/);
  assert.ok(as.counts.device_authorization >= 1);
  // The poll waited for the approval at the server's interval, not faster.
  const polls = as.requests.filter((r) =>
    r.grantType === "urn:ietf:params:oauth:grant-type:device_code"
  );
  assert.ok(polls.length >= 1 && polls.length <= 4, `${polls.length} polls`);
  assert.ok(polls.every((p) => p.status === 200 || p.status === 400));

  const capability = await session(home);
  const { token } = await fetchToken(home.socket, {
    service: "remote",
    capability,
  });
  assert.equal(await callRemote(remote.url, token), 200);
  assert.ok(!(result.stdout + result.stderr).includes(token));
  assert.deepEqual(filesContaining(home.root, [token]), []);
});

Deno.test("auth --device: refused at the server is 77; no device endpoint is 78", async (t) => {
  await t.step("refused", async () => {
    await using s = await setup();
    const { running, url } = await startDeviceAuth(s.home);
    await s.as.approveDevice(url, { decision: "deny" });
    const result = await whileAdvancing(s.home, running.result);
    assert.equal(result.code, 77, result.stderr);
    assert.match(
      result.stderr,
      /refused at the server; run "sherlock auth --device remote"/,
    );
  });
  await t.step("no device_authorization_endpoint", async () => {
    await using s = await setup({ deviceFlow: false });
    const result = await s.home.sherlock(["auth", "--device", "remote"]);
    assert.equal(result.code, 78, result.stderr);
    assert.match(
      result.stderr,
      /^sherlock: the authorization server http:\S+ offers no device authorization .* without --device\n$/,
    );
  });
});

Deno.test("on a terminal, auth shows a waiting line with the seconds while the browser takes its time, cleared when authorized", async () => {
  await using s = await setup();
  const { home } = s;
  const env = browserEnv();
  const slowBrowser = home.writeScript(
    "slow-browser",
    `sleep 2\nexec ${sh(env.BROWSER)} "$@"`,
  );
  const terminal = await runSherlockOnPty(["auth", "remote"], {
    env: { ...home.env, ...env, BROWSER: slowBrowser },
    steps: [],
  });
  assert.equal(terminal.code, 0, terminal.screen);
  const waiting =
    "sherlock: waiting for the authorization of remote in the browser (Ctrl-C to stop)… ";
  const { screen } = terminal;
  assert.ok(screen.includes(`${waiting}0s`), JSON.stringify(screen));
  assert.ok(screen.includes(`${waiting}1s`), JSON.stringify(screen));
  const cleared = screen.lastIndexOf(waiting);
  const after = screen.slice(cleared);
  assert.match(after, /\r {20,}\r[\s\S]*authorized remote/);
  // Through a pipe: no waiting line.
  const piped = await authorize(home);
  assert.equal(piped.code, 0, piped.stderr);
  assert.doesNotMatch(piped.stderr, /waiting/);
});
