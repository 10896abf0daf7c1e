/**
 * Enterprise-Managed Authorization for a remote `source = "oauth"` service,
 * against two real oidc-provider servers (tests/fixtures/oauth/): the
 * operator's OpenID provider, whose token-exchange grant issues ID-JAGs,
 * and the MCP server's authorization server, which advertises the ID-JAG
 * grant profile and redeems them with the JWT-bearer grant; the remote MCP
 * server fixture checks the access token. What arrives at each server, one
 * exchange and one redemption for twenty requests, a new pair after
 * expiry, a real bridge reaching the server, refusals (77), `auth status`,
 * `ema = false`, and no token in any file, argv or environment.
 */

import assert from "node:assert/strict";
import {
  type AuthServer,
  browserEnv,
  ID_JAG_TOKEN_TYPE,
  startAuthServer,
} from "../fixtures/oauth/mod.ts";
import type { RemoteMcpServer } from "../fixtures/remote_mcp_server.ts";
import { startProtectedServer } from "../helpers/protected_server.ts";
import {
  AGENT,
  type BrokerHome,
  createBrokerHome,
  PASSPHRASE,
} from "../helpers/broker_home.ts";
import { filesContaining } from "../helpers/leaks.ts";
import { INITIALIZE, startRawBridge } from "../helpers/raw_bridge.ts";
import { fetchToken, registerSession } from "../../lib/broker/client.ts";
import { CAPABILITY_ENV } from "../../lib/render/servers.ts";
import { SherlockError } from "../../lib/errors.ts";

const LOGIN_CLIENT = "sherlock-cli";
/** The client id the provider names in ID-JAGs for the MCP server's AS. */
const EMA_CLIENT = "sherlock-ema";
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";

interface Setup extends AsyncDisposable {
  provider: AuthServer;
  as: AuthServer;
  remote: RemoteMcpServer;
  home: BrokerHome;
  audiences: string[];
}

/**
 * The provider, the MCP server's AS (trusting the provider), the remote
 * MCP server, and a home logged in at the provider with service "remote"
 * (`token` adds `[token]` lines).
 */
async function setup(
  token = `client_id = "${EMA_CLIENT}"\nema_audiences = ["{AS}"]`,
  signal?: "profile",
): Promise<Setup> {
  const clientIds: Record<string, string> = {};
  const audiences: string[] = [];
  const provider = await startAuthServer({
    tokenExchange: true,
    requireResource: false,
    idJagClientIds: clientIds,
    idJagAudiences: audiences,
    clients: [{
      client_id: LOGIN_CLIENT,
      redirect_uris: ["http://127.0.0.1/callback"],
    }],
  });
  const as = await startAuthServer({
    accessTokenTtlSeconds: 3,
    idJag: { issuer: provider.issuer, jwksUrl: provider.jwksUrl, signal },
    clients: [EMA_CLIENT, "sherlock-other"].map((client_id) => ({
      client_id,
      redirect_uris: ["http://127.0.0.1/callback"],
      grant_types: ["authorization_code", "refresh_token", JWT_BEARER],
    })),
  });
  clientIds[as.issuer] = EMA_CLIENT;
  audiences.push(as.issuer);
  const server = await startProtectedServer({ as });
  const { remote } = server;
  const home = await createBrokerHome();
  home.writeConfig(
    `[login]\nprovider = "oidc"\nissuer = "${provider.issuer}"\nclient_id = "${LOGIN_CLIENT}"\n`,
  );
  home.writeService(
    "remote",
    `[service]\nname = "remote"\n[server]\nurl = "${remote.url}"\n[token]\nsource = "oauth"\n${
      token.replaceAll("{AS}", as.issuer)
    }\n`,
  );
  const login = await home.sherlock(["login"], { env: browserEnv() });
  assert.equal(login.code, 0, login.stderr);
  return {
    provider,
    as,
    remote,
    home,
    audiences,
    async [Symbol.asyncDispose]() {
      await home[Symbol.asyncDispose]();
      await server[Symbol.asyncDispose]();
      await as[Symbol.asyncDispose]();
      await provider[Symbol.asyncDispose]();
    },
  };
}

async function session(home: BrokerHome) {
  const id = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
  const { capability } = await registerSession({
    socket: home.socket,
    session: id,
    agent: AGENT,
    services: ["remote"],
    pid: Deno.pid,
  });
  return {
    id,
    capability,
    get: () =>
      fetchToken(home.socket, { service: "remote", capability }).then((t) =>
        t.token
      ),
  };
}

Deno.test("EMA: a token by ID-JAG with no browser; one exchange and one redemption for twenty requests; a real bridge reaches the server", async () => {
  await using s = await setup();
  const { provider, as, remote, home } = s;
  const sessions = await Promise.all(
    Array.from({ length: 20 }, () => session(home)),
  );
  const tokens = await Promise.all(sessions.map((one) => one.get()));
  assert.equal(new Set(tokens).size, 1, "one token for all");
  const [token] = tokens;

  // What started it: the JWT-bearer grant in the AS's metadata (the
  // ext-auth extension's signal), no grant profile.
  const metadata = await (await fetch(as.metadataUrl)).json();
  assert.ok(metadata.grant_types_supported.includes(JWT_BEARER));
  assert.equal(metadata.authorization_grant_profiles_supported, undefined);

  // At the provider: one exchange for an ID-JAG, for the AS and the server.
  assert.equal(provider.exchanges.length, 1, "one exchange");
  const [exchange] = provider.exchanges;
  assert.equal(exchange.requestedTokenType, ID_JAG_TOKEN_TYPE);
  assert.equal(
    exchange.subjectTokenType,
    "urn:ietf:params:oauth:token-type:id_token",
  );
  assert.equal(exchange.audience, as.issuer);
  assert.equal(exchange.resource, remote.url);
  assert.equal(exchange.scope, "mcp:tools");
  assert.equal(exchange.clientId, LOGIN_CLIENT);
  assert.equal(exchange.issuedTokenType, ID_JAG_TOKEN_TYPE);

  // At the AS: one redemption of that ID-JAG, validated, by the client.
  assert.equal(as.redemptions.length, 1, "one redemption");
  const [redemption] = as.redemptions;
  assert.equal(redemption.problem, undefined);
  assert.equal(redemption.assertion, exchange.issued);
  assert.equal(redemption.typ, "oauth-id-jag+jwt");
  assert.equal(redemption.clientId, EMA_CLIENT);
  assert.equal(redemption.claims?.iss, provider.issuer);
  assert.equal(redemption.claims?.aud, as.issuer);
  assert.equal(redemption.claims?.resource, remote.url);
  assert.equal(redemption.claims?.sub, "tester");
  assert.equal(redemption.issued, token);
  const claims = await as.verifyAccessToken(token, { resource: remote.url });
  assert.equal(claims.sub, "tester");
  assert.equal(claims.client_id, EMA_CLIENT);

  // No browser at the AS: no authorization request, no code grant.
  assert.equal(as.counts.authorization, 0);
  assert.equal(as.counts.authorization_code, 0);

  // A real bridge reaches the remote MCP server with it.
  const bridge = startRawBridge({
    args: [
      "bridge",
      "--socket",
      home.socket,
      "--session",
      sessions[0].id,
      "--agent",
      AGENT,
      "--url",
      remote.url,
      "remote",
    ],
    env: { ...home.env, [CAPABILITY_ENV]: sessions[0].capability },
    cwd: home.root,
  });
  await bridge.send(INITIALIZE);
  const initialized = await bridge.receive();
  assert.ok("result" in initialized, JSON.stringify(initialized));
  await bridge.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  await bridge.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
  const listed = await bridge.receive() as { result?: { tools: unknown[] } };
  assert.ok((listed.result?.tools.length ?? 0) > 0, JSON.stringify(listed));
  const ended = await bridge.end();
  assert.equal(ended.code, 0, ended.stderr);
  for (const secret of [token]) assert.ok(!ended.stderr.includes(secret));

  // auth status says EMA.
  const status = await home.sherlock(["auth", "status"]);
  assert.equal(status.code, 0, status.stderr);
  assert.match(status.stdout, /^remote\s+EMA\s/m);
  // So do `sherlock services` and `doctor`: ready, not "no grant".
  const services = await home.sherlock(["services", "--json"]);
  assert.equal(services.code, 0, services.stderr);
  const [row] = JSON.parse(services.stdout).services;
  assert.equal(row.tokenStatus, "ready");
  assert.equal(row.token, "from the SSO login (EMA)");

  // Neither the ID token, the ID-JAG nor the access token in any file,
  // output, argv or environment of the daemon.
  const secrets = [exchange.subjectToken!, exchange.issued!, token];
  assert.ok(secrets.every((one) => one.length > 20));
  assert.deepEqual(filesContaining(home.root, secrets), []);
  for (const text of [status.stdout, status.stderr]) {
    for (const secret of secrets) assert.ok(!text.includes(secret));
  }
  for (const pid of home.daemonPids()) {
    for (const file of ["cmdline", "environ"]) {
      const text = Deno.readTextFileSync(`/proc/${pid}/${file}`);
      for (const secret of secrets) assert.ok(!text.includes(secret), file);
    }
  }
});

Deno.test("EMA: once the access token expires, a new exchange and redemption (no refresh token)", async () => {
  await using s = await setup();
  const { provider, as, home } = s;
  const one = await session(home);
  const first = await one.get();
  assert.equal(as.redemptions.length, 1);
  // The AS's tokens live 3 s; the broker serves one until shortly before.
  home.advanceClock(3_100);
  const second = await one.get();
  assert.notEqual(second, first);
  assert.equal(provider.exchanges.length, 2, "a new ID-JAG");
  assert.equal(as.redemptions.length, 2, "redeemed anew");
  assert.equal(as.counts.refresh, 0, "no refresh token used");
  assert.notEqual(provider.exchanges[1].issued, provider.exchanges[0].issued);
});

Deno.test("EMA: the provider's refusal, the AS's refusal and no OIDC login are 77 lines naming the service", async () => {
  await using s = await setup();
  const { as, home, audiences } = s;
  // The provider issues no ID-JAG for this AS.
  audiences.length = 0;
  const one = await session(home);
  await assert.rejects(one.get(), (error: Error) => {
    assert.ok(error instanceof SherlockError);
    assert.equal(error.exitCode, 77);
    assert.match(
      error.message,
      /^the provider http:\S+ refused an ID-JAG for service remote: invalid_target \(no ID-JAG for audience http:\S+\)$/,
    );
    return true;
  });
  audiences.push(as.issuer);

  // The AS refuses an assertion made out to another client.
  home.writeService(
    "remote",
    `[service]\nname = "remote"\n[server]\nurl = "${s.remote.url}"\n[token]\nsource = "oauth"\nclient_id = "sherlock-other"\nema_audiences = ["${as.issuer}"]\n`,
  );
  await assert.rejects(one.get(), (error: Error) => {
    assert.ok(error instanceof SherlockError);
    assert.equal(error.exitCode, 77);
    assert.match(
      error.message,
      /^the authorization server http:\S+ refused the ID-JAG for service remote: invalid_grant/,
    );
    return true;
  });
  assert.equal(as.redemptions.at(-1)?.problem, "another client");
  home.writeService(
    "remote",
    `[service]\nname = "remote"\n[server]\nurl = "${s.remote.url}"\n[token]\nsource = "oauth"\nclient_id = "${EMA_CLIENT}"\nema_audiences = ["${as.issuer}"]\n`,
  );
  assert.ok(await one.get(), "served again once the client is right");

  // Logged out at the provider, logged in to the local store only.
  const logout = await home.sherlock(["logout"]);
  assert.equal(logout.code, 0, logout.stderr);
  const local = await home.sherlock(["login", "--local"], {
    stdin: `${PASSPHRASE}\n`,
  });
  assert.equal(local.code, 0, local.stderr);
  const stored = await session(home);
  await assert.rejects(stored.get(), (error: Error) => {
    assert.ok(error instanceof SherlockError);
    assert.equal(error.exitCode, 77);
    assert.match(
      error.message,
      /^service remote's authorization server http:\S+ takes the SSO login .*run "sherlock login"/,
    );
    return true;
  });
});

Deno.test("EMA: an authorization server that lists the ID-JAG grant profile instead of the JWT-bearer grant is served too", async () => {
  await using s = await setup(undefined, "profile");
  const metadata = await (await fetch(s.as.metadataUrl)).json();
  assert.ok(!metadata.grant_types_supported.includes(JWT_BEARER));
  assert.deepEqual(metadata.authorization_grant_profiles_supported, [
    "urn:ietf:params:oauth:grant-profile:id-jag",
  ]);
  const one = await session(s.home);
  assert.ok(await one.get());
  assert.equal(s.provider.exchanges.length, 1);
  assert.equal(s.as.redemptions.length, 1);
  assert.equal(s.as.redemptions[0].problem, undefined);
});

Deno.test("EMA: ema = false keeps the service on sherlock auth", async () => {
  await using s = await setup(
    `client_id = "${EMA_CLIENT}"\nema_audiences = ["{AS}"]\nema = false`,
  );
  const one = await session(s.home);
  await assert.rejects(one.get(), (error: Error) => {
    assert.equal((error as SherlockError).exitCode, 77);
    // Without EMA the grant is in the store, locked with the SSO login only.
    assert.match(error.message, /run "sherlock login --local"/);
    return true;
  });
  assert.equal(s.provider.exchanges.length, 0);
  assert.equal(s.as.redemptions.length, 0);
});

Deno.test("EMA: only for an authorization server the service's ema_audiences names; none by default", async () => {
  await using s = await setup(`client_id = "${EMA_CLIENT}"`);
  const { provider, as, remote, home } = s;
  const write = (audiences: string) =>
    home.writeService(
      "remote",
      `[service]\nname = "remote"\n[server]\nurl = "${remote.url}"\n[token]\nsource = "oauth"\nclient_id = "${EMA_CLIENT}"\n${audiences}\n`,
    );
  const one = await session(home);
  const withoutEma = (error: Error) => {
    assert.equal((error as SherlockError).exitCode, 77);
    // The usual answer without EMA: the grant is in the locked store.
    assert.match(error.message, /run "sherlock login --local"/);
    return true;
  };
  const status = async () =>
    JSON.parse((await home.sherlock(["auth", "status", "--json"])).stdout)
      .services[0].ema;

  // No ema_audiences: the server's metadata names the AS, and that is not
  // enough for the provider to be asked to vouch for the operator to it.
  await assert.rejects(one.get(), withoutEma);
  assert.equal(await status(), undefined);
  // Another AS named: still none.
  write(`ema_audiences = ["https://as.example.com"]`);
  await assert.rejects(one.get(), withoutEma);
  assert.equal(await status(), undefined);
  assert.equal(provider.exchanges.length, 0, "no ID-JAG asked for");
  assert.equal(as.redemptions.length, 0);

  write(`ema_audiences = ["https://as.example.com", "${as.issuer}"]`);
  assert.ok(await one.get());
  assert.equal(provider.exchanges.length, 1);
  assert.equal(provider.exchanges[0].audience, as.issuer);
});

Deno.test("EMA: services test of a service served from the SSO login (the local store locked) reaches the server; neither sherlock auth nor the store is asked for", async () => {
  await using s = await setup();
  const { home } = s;
  const result = await home.sherlock(["services", "test", "remote"]);
  assert.equal(result.code, 0, result.stderr);
  assert.doesNotMatch(result.stderr, /sherlock auth|login --local/);
  assert.match(result.stdout, /^tools:$/m);
});

/** An unsigned JWT with `claims` (the broker decodes, the provider verifies). */
function jwt(claims: Record<string, unknown>): string {
  const part = (value: unknown) =>
    btoa(JSON.stringify(value)).replaceAll("=", "").replaceAll("+", "-")
      .replaceAll("/", "_");
  return `${part({ alg: "ES256" })}.${part(claims)}.c2lnbmF0dXJl`;
}

Deno.test("EMA from an ID token handed in: sherlock login --id-token-file holds it, the provider exchanges it for an ID-JAG; a wrong or expired one is one line", async () => {
  await using s = await setup();
  const { provider, as, home } = s;
  // An ID token the provider issued to sherlock's client: the browser
  // login's, as another SSO client of the operator's would hold it.
  assert.ok(await (await session(home)).get());
  const idToken = provider.exchanges[0].subjectToken!;
  const logout = await home.sherlock(["logout"]);
  assert.equal(logout.code, 0, logout.stderr);

  const outside = await Deno.makeTempDir();
  try {
    const file = `${outside}/id-token`;
    Deno.writeTextFileSync(file, `${idToken}\n`);
    const login = await home.sherlock(["login", "--id-token-file", file]);
    assert.equal(login.code, 0, login.stderr);
    assert.match(
      login.stdout,
      /^logged in: subject tester \(the ID token's claims, decoded, not verified\) at http:\S+ with an ID token, since /,
    );
    const token = await (await session(home)).get();
    assert.ok(token);
    assert.equal(provider.exchanges.length, 2, "a new ID-JAG");
    assert.equal(provider.exchanges[1].subjectToken, idToken);
    assert.equal(as.redemptions.length, 2);
    assert.equal(as.redemptions[1].problem, undefined);
    // The ID token in no file of sherlock's, no argv or environment.
    assert.deepEqual(filesContaining(home.root, [idToken]), []);
    for (const pid of home.daemonPids()) {
      for (const name of ["cmdline", "environ"]) {
        const text = Deno.readTextFileSync(`/proc/${pid}/${name}`);
        assert.ok(!text.includes(idToken), name);
      }
    }
    const whoami = await home.sherlock(["whoami", "--verbose"]);
    assert.match(whoami.stdout, /logged in with: an ID token/);

    // Refused before anything is held: one line, no token quoted.
    const now = Math.floor(Date.now() / 1000);
    const cases: [Record<string, unknown>, number, RegExp][] = [
      [
        {
          iss: "https://other.example",
          sub: "x",
          aud: LOGIN_CLIENT,
          exp: now + 60,
        },
        78,
        /^sherlock: the ID token handed to sherlock login was issued by https:\/\/other\.example, not by \[login\] issuer; it must be one the provider http:\S+ issued to \[login\] client_id sherlock-cli$/,
      ],
      [
        { iss: provider.issuer, sub: "x", aud: "someone-else", exp: now + 60 },
        78,
        /^sherlock: the ID token handed to sherlock login is for another client; /,
      ],
      [
        { iss: provider.issuer, sub: "x", aud: LOGIN_CLIENT, exp: now - 60 },
        77,
        /^sherlock: the ID token handed to sherlock login has expired; run "sherlock login --id-token-file PATH"/,
      ],
    ];
    for (const [claims, code, message] of cases) {
      const bad = jwt(claims);
      const result = await home.sherlock(["login", "--id-token-env", "ID"], {
        env: { ID: bad },
      });
      assert.equal(result.code, code, result.stderr);
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
      assert.match(result.stderr.trim(), message);
      assert.ok(!result.stderr.includes(bad));
    }
    const mixed = await home.sherlock([
      "login",
      "--id-token-file",
      file,
      "--subject-token-type",
      "jwt",
    ]);
    assert.equal(mixed.code, 2, mixed.stderr);
  } finally {
    await Deno.remove(outside, { recursive: true });
  }
});
