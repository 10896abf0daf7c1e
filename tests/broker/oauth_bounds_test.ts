/**
 * What a hostile remote MCP server or authorization server cannot make the
 * daemon's OAuth client do, seen at the HTTP boundary through a real
 * daemon (`sherlock auth`, the scope route): fetch discovery documents
 * over plain http or from another origin by redirect, re-send a token
 * request's secrets to another origin by a 307 (the SSO login's workload
 * token included), or grow a grant's scopes without bound. The misbehaving servers are small `Deno.serve` servers
 * on 127.0.0.1; the well-behaved ones the real fixtures.
 */

import assert from "node:assert/strict";
import { type AuthServer, browserEnv } from "../fixtures/oauth/mod.ts";
import {
  type RemoteMcpServer,
  startRemoteMcpServer,
} from "../fixtures/remote_mcp_server.ts";
import {
  AGENT,
  type BrokerHome,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { createOAuthHome } from "../helpers/oauth_home.ts";
import {
  registerSession,
  reportScopeChallenge,
} from "../../lib/broker/client.ts";
import { startSherlock } from "../helpers/sherlock.ts";
import { waitUntil } from "../helpers/wait.ts";
import { join } from "node:path";

interface Seen {
  method: string;
  path: string;
  body: string;
}

/** A server on 127.0.0.1 that records what arrives and answers `answer`. */
function misbehaving(answer: (url: URL, base: string) => Response) {
  const seen: Seen[] = [];
  const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request): Promise<Response> => {
      const url = new URL(request.url);
      seen.push({
        method: request.method,
        path: url.pathname,
        body: await request.text(),
      });
      return answer(url, `http://127.0.0.1:${server.addr.port}`);
    },
  );
  return {
    seen,
    url: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** Another origin a redirect points at; it answers as a token endpoint. */
function otherOrigin() {
  return misbehaving(() =>
    Response.json({ access_token: "stolen", token_type: "Bearer" })
  );
}

/** An AS's RFC 8414 metadata at `base` (PKCE S256) with `more` endpoints. */
function asMetadata(base: string, more: Record<string, string>): Response {
  return Response.json({
    issuer: base,
    authorization_endpoint: `${base}/authorize`,
    token_endpoint: `${base}/token`,
    ...more,
    code_challenge_methods_supported: ["S256"],
  });
}

/**
 * A remote MCP server that takes no token, its protected-resource metadata
 * (served by `misbehaving`) naming `issuer` as its authorization server.
 */
async function refusingRemote(
  issuer: string,
): Promise<{ url: string } & AsyncDisposable> {
  const late: { remote?: RemoteMcpServer } = {};
  const prm = misbehaving(() =>
    Response.json({
      resource: late.remote!.url,
      authorization_servers: [issuer],
    })
  );
  const remote = await startRemoteMcpServer({
    resourceMetadataUrl: `${prm.url}/prm`,
    verify: () => Promise.resolve(false),
  });
  late.remote = remote;
  return {
    url: remote.url,
    async [Symbol.asyncDispose]() {
      await remote[Symbol.asyncDispose]();
      await prm[Symbol.asyncDispose]();
    },
  };
}

/** A home with service "remote" at `remote` (`token`: more `[token]` lines). */
async function homeWith(
  remote: { url: string },
  token = "",
): Promise<BrokerHome> {
  const home = await createBrokerHome();
  home.writeService(
    "remote",
    `[service]\nname = "remote"\n[server]\nurl = "${remote.url}"\n[token]\nsource = "oauth"\n${token}\n`,
  );
  await home.login();
  return home;
}

/** One line on stderr, exit 69 (`oauth_failed`), no stack trace. */
function assertOneLine(
  result: { code: number | null; stderr: string },
  pattern: RegExp,
) {
  assert.equal(result.code, 69, result.stderr);
  assert.match(result.stderr, /^sherlock: [^\n]+\n$/);
  assert.match(result.stderr, pattern);
}

Deno.test("discovery: no authorization server, no metadata URL other than https (or loopback http)", async (t) => {
  await t.step("authorization_servers names an http server", async () => {
    await using remote = await refusingRemote("http://as.example.com");
    await using home = await homeWith(remote);
    const result = await home.sherlock(["auth", "remote"], {
      env: browserEnv(),
    });
    assertOneLine(
      result,
      /names authorization server http:\/\/as\.example\.com, which is not an https URL \(nor http on a loopback host\); refused/,
    );
  });
  await t.step("the 401 names an http resource_metadata", async () => {
    await using remote = await startRemoteMcpServer({
      resourceMetadataUrl: "http://prm.example.com/.well-known/x",
      verify: () => Promise.resolve(false),
    });
    await using home = await homeWith(remote);
    const result = await home.sherlock(["auth", "remote"], {
      env: browserEnv(),
    });
    assertOneLine(
      result,
      /refused to send an OAuth request to http:\/\/prm\.example\.com: only https \(or http on a loopback host\) is allowed/,
    );
  });
  await t.step("the metadata URL redirects to another origin", async () => {
    const late: { remote?: RemoteMcpServer } = {};
    await using elsewhere = misbehaving(() =>
      Response.json({
        resource: late.remote!.url,
        authorization_servers: ["https://as.example.com"],
      })
    );
    await using prm = misbehaving(() =>
      Response.redirect(`${elsewhere.url}/prm`, 302)
    );
    await using remote = await startRemoteMcpServer({
      resourceMetadataUrl: `${prm.url}/prm`,
      verify: () => Promise.resolve(false),
    });
    late.remote = remote;
    await using home = await homeWith(remote);
    const result = await home.sherlock(["auth", "remote"], {
      env: browserEnv(),
    });
    assertOneLine(
      result,
      /redirected to http:\/\/127\.0\.0\.1:\d+; an OAuth request follows a redirect only within its origin, refused/,
    );
    assert.equal(prm.seen.length, 1);
    assert.deepEqual(elsewhere.seen, []);
  });
});

Deno.test("a token endpoint's 307 to another origin: the device code is not re-sent there", async () => {
  await using collector = otherOrigin();
  await using as = misbehaving((url, base) => {
    if (url.pathname.startsWith("/.well-known/")) {
      return asMetadata(base, {
        device_authorization_endpoint: `${base}/device`,
      });
    }
    if (url.pathname === "/device") {
      return Response.json({
        device_code: "device-code-that-must-stay",
        user_code: "WDJB-MJHT",
        verification_uri: `${base}/verify`,
        expires_in: 60,
        interval: 1,
      });
    }
    // The token endpoint: on to another origin, method and body kept.
    return new Response(null, {
      status: 307,
      headers: { location: `${collector.url}/token` },
    });
  });
  await using remote = await refusingRemote(as.url);
  await using home = await homeWith(remote, `client_id = "fixed-client"`);
  const running = startSherlock(["auth", "--device", "remote"], {
    env: home.env,
    cwd: home.work,
  });
  await waitUntil(
    () => /enter the code WDJB-MJHT/.test(running.stderrSoFar()) || undefined,
    "the device grant's user code",
  );
  const result = await running.result;
  assert.equal(result.code, 69, result.stderr);
  assert.match(
    result.stderr,
    /redirected to http:\/\/127\.0\.0\.1:\d+; an OAuth request follows a redirect only within its origin, refused\n$/,
  );
  const polls = as.seen.filter((one) => one.path === "/token");
  assert.equal(polls.length, 1, "one poll, then the flow ended");
  assert.match(polls[0].body, /device_code=device-code-that-must-stay/);
  assert.deepEqual(collector.seen, [], "nothing reached the other origin");
  assert.ok(!result.stderr.includes("device-code-that-must-stay"));
});

/** The scopes each authorization request asked for, sorted. */
function requestedScopes(as: AuthServer): string[][] {
  // Without offline_access, asked for whenever the AS lists it
  // (oauth_test.ts checks that): these are the scopes of the resource.
  return as.requests.filter((request) =>
    request.endpoint === "authorization" && request.scope !== undefined
  ).map((request) =>
    request.scope!.split(" ").filter((scope) => scope !== "offline_access")
      .sort()
  );
}

Deno.test("step-up: a server that keeps asking grows the grant only so far; the next authorization asks only what the AS lists", async () => {
  // The AS lists mcp:tools and mcp:admin; the remote server asks for more.
  await using s = await createOAuthHome({
    authServer: { accessTokenTtlSeconds: 60 },
  });
  const { as, home } = s;
  const first = await home.sherlock(["auth", "remote"], { env: browserEnv() });
  assert.equal(first.code, 0, first.stderr);
  const { capability } = await registerSession({
    socket: home.socket,
    session: "b0bb1e5b0bb1",
    agent: AGENT,
    services: ["remote"],
    pid: Deno.pid,
  });
  const challenge = (scope: string) =>
    reportScopeChallenge(home.socket, {
      service: "remote",
      capability,
      scope,
    });
  const neededNow = async () =>
    JSON.parse((await home.sherlock(["auth", "status", "--json"])).stdout)
      .services[0].scopesNeeded;
  const reauthorize = async () => {
    const again = await home.sherlock(["auth", "remote"], {
      env: browserEnv(),
    });
    assert.equal(again.code, 0, again.stderr);
  };

  // Twenty 403s, each for one new scope: three step-ups are recorded, the
  // spec's retry limit; past it, even a scope the AS lists waits.
  const answers = [];
  for (let round = 0; round < 20; round++) {
    answers.push(await challenge(`evil:${round}`));
  }
  assert.deepEqual(answers.map((one) => one.recorded), [
    true,
    true,
    true,
    ...Array(17).fill(false),
  ]);
  assert.deepEqual(await neededNow(), ["evil:0", "evil:1", "evil:2"]);
  assert.equal((await challenge("mcp:admin")).recorded, false);
  // The next sherlock auth asks only for what the AS lists: the held one;
  // what the AS never lists is not kept pending for ever.
  await reauthorize();
  assert.deepEqual(requestedScopes(as).at(-1), ["mcp:tools"]);
  assert.deepEqual(await neededNow(), []);

  // 403s of 32 new scopes of 100 characters each: the grant keeps what
  // fits in 2 KiB (and 64 scopes), not 20 × 3 KiB.
  for (let round = 0; round < 5; round++) {
    await challenge(
      Array.from(
        { length: 32 },
        (_, i) => `evil:${round}:${i}:${"x".repeat(90)}`,
      ).join(" "),
    );
  }
  const needed: string[] = await neededNow();
  assert.ok(needed.length > 0 && needed.length <= 64);
  assert.ok(
    ["mcp:tools", ...needed].join(" ").length <= 2048,
    `${needed.join(" ").length} characters needed`,
  );
  await reauthorize();
  assert.deepEqual(requestedScopes(as).at(-1), ["mcp:tools"]);
  const authorizationUrls = as.requests.filter((request) =>
    request.endpoint === "authorization"
  );
  assert.ok(!JSON.stringify(authorizationUrls).includes("evil:"));
  assert.deepEqual(await neededNow(), []);

  // A new authorization resets the limit: a listed scope is recorded and
  // asked for next time.
  assert.equal((await challenge("mcp:admin")).recorded, true);
  await reauthorize();
  assert.deepEqual(requestedScopes(as).at(-1), ["mcp:admin", "mcp:tools"]);
});

Deno.test("SSO login: a provider's token endpoint that redirects elsewhere gets the workload token once, the other origin never", async () => {
  await using collector = otherOrigin();
  await using provider = misbehaving((url, base) => {
    if (url.pathname.startsWith("/.well-known/")) {
      return asMetadata(base, { jwks_uri: `${base}/jwks` });
    }
    return new Response(null, {
      status: 308,
      headers: { location: `${collector.url}/token` },
    });
  });
  await using home = await createBrokerHome();
  home.writeConfig(
    `[login]\nprovider = "oidc"\nissuer = "${provider.url}"\nclient_id = "sherlock-cli"\n`,
  );
  const path = join(home.work, "workload.jwt");
  Deno.writeTextFileSync(path, "workload-token-that-must-stay", {
    mode: 0o600,
  });
  const result = await home.sherlock(["login", "--subject-token-file", path]);
  assertOneLine(
    result,
    /redirected to http:\/\/127\.0\.0\.1:\d+; an OAuth request follows a redirect only within its origin, refused/,
  );
  const exchanges = provider.seen.filter((one) => one.path === "/token");
  assert.equal(exchanges.length, 1);
  assert.match(
    exchanges[0].body,
    /subject_token=workload-token-that-must-stay/,
  );
  assert.deepEqual(collector.seen, [], "nothing reached the other origin");
});
