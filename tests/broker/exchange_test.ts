/**
 * `[token] source = "exchange"` against a real OpenID provider
 * (oidc-provider, tests/fixtures/oauth/, with a token-exchange grant the
 * fixture registers): what arrives at the provider per service, one
 * exchange per service for twenty sessions, the audit log, a refusal, the
 * refresh-token fallback where discovery lists no token exchange, and no
 * token in any file.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type AuthServer,
  type AuthServerOptions,
  browserEnv,
  startAuthServer,
} from "../fixtures/oauth/mod.ts";
import {
  AGENT,
  auditEntries,
  type BrokerHome,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { filesContaining } from "../helpers/leaks.ts";
import { fetchToken, registerSession } from "../../lib/broker/client.ts";
import { SherlockError } from "../../lib/errors.ts";

const CLIENT_ID = "sherlock-cli";

interface Setup extends AsyncDisposable {
  as: AuthServer;
  home: BrokerHome;
}

async function setup(
  options: AuthServerOptions,
  services: Record<string, string>,
): Promise<Setup> {
  const as = await startAuthServer({
    requireResource: false,
    clients: [{
      client_id: CLIENT_ID,
      redirect_uris: ["http://127.0.0.1/callback"],
    }],
    ...options,
  });
  const home = await createBrokerHome();
  Deno.mkdirSync(join(home.configHome, "sherlock"), { recursive: true });
  Deno.writeTextFileSync(
    join(home.configHome, "sherlock", "config.toml"),
    `[login]\nprovider = "oidc"\nissuer = "${as.issuer}"\nclient_id = "${CLIENT_ID}"\n`,
  );
  for (const [name, token] of Object.entries(services)) {
    home.writeService(
      name,
      `[service]\nname = "${name}"\n[server]\nurl = "https://${name}.example/mcp"\n[token]\nsource = "exchange"\n${token}\n`,
    );
  }
  const login = await home.sherlock(["login"], { env: browserEnv() });
  assert.equal(login.code, 0, login.stderr);
  return {
    as,
    home,
    async [Symbol.asyncDispose]() {
      await home[Symbol.asyncDispose]();
      await as[Symbol.asyncDispose]();
    },
  };
}

async function session(home: BrokerHome, services: string[]) {
  const { capability } = await registerSession({
    socket: home.socket,
    session: crypto.randomUUID().replaceAll("-", "").slice(0, 12),
    agent: AGENT,
    services,
    pid: Deno.pid,
  });
  return (service: string) =>
    fetchToken(home.socket, { service, capability }).then((t) => t.token);
}

Deno.test("exchange: per-service audience, resource and scope at the provider; one exchange per service for twenty sessions", async () => {
  await using s = await setup({ tokenExchange: true }, {
    alpha: `audience = "api-alpha"\nscopes = ["mcp:tools"]`,
    beta:
      `resource = "https://beta.example/mcp"\naudience = "api-beta"\nrequested_token_type = "urn:ietf:params:oauth:token-type:access_token"`,
    gamma: `subject = "id_token"\naudience = "api-gamma"`,
  });
  const { as, home } = s;
  const sessions = await Promise.all(
    Array.from(
      { length: 20 },
      () => session(home, ["alpha", "beta", "gamma"]),
    ),
  );
  const tokens = await Promise.all(
    sessions.flatMap((get) => [get("alpha"), get("beta")]),
  );
  const alpha = new Set(tokens.filter((_, i) => i % 2 === 0));
  const beta = new Set(tokens.filter((_, i) => i % 2 === 1));
  assert.equal(alpha.size, 1);
  assert.equal(beta.size, 1);
  assert.notDeepEqual([...alpha], [...beta], "each service its own token");
  const byAudience = (audience: string) =>
    as.exchanges.filter((e) => e.audience === audience);
  assert.equal(byAudience("api-alpha").length, 1, "one exchange for alpha");
  assert.equal(byAudience("api-beta").length, 1, "one exchange for beta");
  const [a] = byAudience("api-alpha");
  assert.equal(a.scope, "mcp:tools");
  assert.equal(a.resource, undefined);
  assert.equal(a.clientId, CLIENT_ID);
  assert.equal(
    a.subjectTokenType,
    "urn:ietf:params:oauth:token-type:access_token",
  );
  assert.equal(
    a.requestedTokenType,
    "urn:ietf:params:oauth:token-type:access_token",
  );
  assert.equal(a.issued, [...alpha][0]);
  const [b] = byAudience("api-beta");
  assert.equal(b.resource, "https://beta.example/mcp");
  assert.equal(b.scope, undefined);

  // The ID token as the subject.
  const gamma = await sessions[0]("gamma");
  const [g] = byAudience("api-gamma");
  assert.equal(g.subjectTokenType, "urn:ietf:params:oauth:token-type:id_token");
  assert.equal(g.issued, gamma);

  // Audited like every token: source exchange, cached after the first.
  const served = auditEntries(home).filter((e) =>
    e.event === "token" && e.service === "alpha"
  );
  assert.equal(served.length, 20);
  assert.ok(served.every((e) => e.source === "exchange"));
  assert.equal(served.filter((e) => e.cached === false).length, 1);

  // whoami --verbose says the provider offers token exchange.
  const who = await home.sherlock(["whoami", "--verbose"]);
  assert.equal(who.code, 0, who.stderr);
  assert.match(who.stdout, /token exchange \(RFC 8693\): offered/);

  // No issued token in any file of the home.
  const issued = as.exchanges.map((e) => e.issued!).filter((t) => t);
  assert.deepEqual(filesContaining(home.root, issued), []);
  assert.ok(!who.stdout.includes(issued[0]));
  // …nor in the daemon's argv or environment.
  for (const pid of home.daemonPids()) {
    for (const file of ["cmdline", "environ"]) {
      const text = Deno.readTextFileSync(`/proc/${pid}/${file}`);
      for (const token of issued) assert.ok(!text.includes(token), file);
    }
  }
});

Deno.test("exchange: a refusal names the service and the provider's error (77); no login is 77", async () => {
  await using s = await setup({ tokenExchange: true }, {
    denied: `audience = "forbidden"`,
  });
  const get = await session(s.home, ["denied"]);
  await assert.rejects(get("denied"), (error: Error) => {
    assert.ok(error instanceof SherlockError);
    assert.equal(error.exitCode, 77);
    assert.match(
      error.message,
      /^the provider http:\S+ refused a token for service denied: invalid_target \(audience forbidden is not allowed for this client\)$/,
    );
    return true;
  });
  const logout = await s.home.sherlock(["logout"]);
  assert.equal(logout.code, 0, logout.stderr);
  const after = await session(s.home, ["denied"]);
  await assert.rejects(after("denied"), (error: Error) => {
    assert.equal((error as SherlockError).exitCode, 77);
    assert.match(error.message, /not logged in.*run "sherlock login"/);
    return true;
  });
});

Deno.test("exchange: without token exchange in discovery, a refresh-token grant with the service's resource", async () => {
  await using s = await setup({ tokenExchange: false }, {
    delta: `resource = "https://delta.example/mcp"`,
  });
  const { as, home } = s;
  const who = await home.sherlock(["whoami", "--verbose"]);
  assert.match(who.stdout, /token exchange \(RFC 8693\): not offered/);
  const before = as.counts.refresh;
  const get = await session(home, ["delta"]);
  const [first, second] = await Promise.all([get("delta"), get("delta")]);
  assert.equal(first, second);
  assert.equal(as.counts.refresh - before, 1, "one refresh-token grant");
  assert.equal(as.exchanges.length, 0);
  const claims = await as.verifyAccessToken(first, {
    resource: "https://delta.example/mcp",
  });
  assert.equal(claims.sub, "tester");
});
