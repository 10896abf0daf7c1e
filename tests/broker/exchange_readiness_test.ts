/**
 * A newcomer's first hour with `[token] source = "exchange"`: logged in at
 * a real OpenID provider (oidc-provider, tests/fixtures/oauth/), a
 * services.d file taking its token from the SSO login, then `sherlock
 * services` and `sherlock doctor`. Neither may call the working service
 * "no secret" (readiness once judged every unknown source as a secret).
 */

import assert from "node:assert/strict";
import { browserEnv, startAuthServer } from "../fixtures/oauth/mod.ts";
import { createBrokerHome } from "../helpers/broker_home.ts";

const CLIENT_ID = "sherlock-cli";

Deno.test("exchange readiness: services and doctor see the SSO login, not a missing secret", async () => {
  await using as = await startAuthServer({
    requireResource: false,
    tokenExchange: true,
    clients: [{
      client_id: CLIENT_ID,
      redirect_uris: ["http://127.0.0.1/callback"],
    }],
  });
  await using home = await createBrokerHome();
  home.writeConfig(
    `[login]\nprovider = "oidc"\nissuer = "${as.issuer}"\nclient_id = "${CLIENT_ID}"\n`,
  );
  // 127.0.0.1 resolves offline: the server column is not what is tested.
  home.writeService(
    "wiki",
    `[service]\nname = "wiki"\n[server]\nurl = "https://127.0.0.1/mcp"\n[token]\nsource = "exchange"\naudience = "api-wiki"\n`,
  );

  // Before the login: the SSO login is what is missing, not a secret.
  const before = await home.sherlock(["services"]);
  assert.equal(before.code, 0, before.stderr);
  assert.doesNotMatch(before.stdout, /no secret/);

  const login = await home.sherlock(["login"], { env: browserEnv() });
  assert.equal(login.code, 0, login.stderr);

  const table = await home.sherlock(["services"]);
  assert.equal(table.code, 0, table.stderr);
  assert.doesNotMatch(table.stdout, /no secret/);
  assert.match(table.stdout, /wiki .*SSO login held/);

  const json = await home.sherlock(["services", "--json"]);
  assert.equal(json.code, 0, json.stderr);
  const [wiki] = JSON.parse(json.stdout).services;
  assert.equal(wiki.tokenStatus, "ready");
  assert.equal(wiki.token, "SSO login held");

  const doctor = await home.sherlock(["doctor", "--json"]);
  assert.doesNotMatch(doctor.stdout, /no secret/);
  const checks = JSON.parse(doctor.stdout).checks as {
    name: string;
    verdict: string;
    detail: string;
  }[];
  const check = checks.find((c) => c.name === "wiki");
  assert.ok(check, doctor.stdout);
  // Not a failure: nothing answers MCP at that URL, which doctor (asking
  // each remote server its revision) warns of; the token is ready.
  assert.equal(check.verdict, "warn", check.detail);
  assert.match(check.detail, /but no MCP answer: .*; token SSO login held$/);

  const text = await home.sherlock(["doctor"]);
  assert.doesNotMatch(text.stdout + text.stderr, /no secret/);
});
