/**
 * Issue 20's trap: logged in by SSO (a real OpenID provider,
 * tests/fixtures/oauth/) with the local store locked, every command gives
 * the same advice, from the broker's actual state: what the store holds
 * needs `sherlock login --local`, never `sherlock login` (held already) nor
 * `sherlock auth` (the grant is held, in the locked store). The remote MCP
 * server and its protected-resource metadata are real HTTP servers too.
 */

import assert from "node:assert/strict";
import { browserEnv, startAuthServer } from "../fixtures/oauth/mod.ts";
import { createBrokerHome, PASSPHRASE } from "../helpers/broker_home.ts";
import { startProtectedServer } from "../helpers/protected_server.ts";

const CLIENT_ID = "sherlock-cli";
const LOCAL = 'run "sherlock login --local"';

Deno.test("logged in by SSO with the local store locked: services, doctor, services test and auth all say sherlock login --local", async () => {
  await using as = await startAuthServer({
    requireResource: false,
    clients: [{
      client_id: CLIENT_ID,
      redirect_uris: ["http://127.0.0.1/callback"],
    }],
  });
  await using server = await startProtectedServer({ as });
  const { remote } = server;
  await using home = await createBrokerHome();
  home.writeConfig(
    `[login]\nprovider = "oidc"\nissuer = "${as.issuer}"\nclient_id = "${CLIENT_ID}"\n`,
  );
  home.writeService(
    "remote",
    `[service]\nname = "remote"\n[server]\nurl = "${remote.url}"\n[token]\nsource = "oauth"\n`,
  );
  home.writeService(
    "stored",
    `[service]\nname = "stored"\n[server]\ncommand = "true"\n[token]\nsource = "secret"\nenv = "STORED_TOKEN"\n`,
  );
  // Yesterday: the local store, a secret and a grant in it.
  const local = await home.sherlock(["login", "--local"], {
    stdin: `${PASSPHRASE}\n`,
  });
  assert.equal(local.code, 0, local.stderr);
  const set = await home.sherlock(["secret", "set", "stored"], {
    stdin: "s3cret-value\n",
  });
  assert.equal(set.code, 0, set.stderr);
  const auth = await home.sherlock(["auth", "remote"], { env: browserEnv() });
  assert.equal(auth.code, 0, auth.stderr);
  // Today: a new broker (the store locked), and the SSO login.
  const stop = await home.sherlock(["broker", "stop"]);
  assert.equal(stop.code, 0, stop.stderr);
  const sso = await home.sherlock(["login"], { env: browserEnv() });
  assert.equal(sso.code, 0, sso.stderr);

  // `sherlock login` is held; `sherlock auth` would make a grant that is
  // held already: neither is the advice anywhere.
  const outputs: string[] = [];
  const run = async (args: string[]) => {
    const result = await home.sherlock(args, { env: browserEnv() });
    outputs.push(result.stdout + result.stderr);
    return result;
  };

  const services = await run(["services"]);
  assert.equal(services.code, 0, services.stderr);
  assert.match(
    services.stdout,
    /^remote .* unknown \(run "sherlock login --local"\)$/m,
  );
  assert.match(
    services.stdout,
    /^stored .* unknown \(run "sherlock login --local"\)$/m,
  );
  const json = await run(["services", "--json"]);
  const statuses = JSON.parse(json.stdout).services.map((
    service: { name: string; tokenStatus: string; token: string },
  ) => [service.name, service.tokenStatus, service.token]);
  assert.deepEqual(statuses, [
    ["remote", "unknown", `unknown (${LOCAL})`],
    ["stored", "unknown", `unknown (${LOCAL})`],
  ]);

  const doctor = await run(["doctor", "--json"]);
  const checks = JSON.parse(doctor.stdout).checks as {
    group: string;
    name: string;
    verdict: string;
    detail: string;
    fix: string | null;
  }[];
  for (const name of ["remote", "stored"]) {
    const check = checks.find((c) => c.group === "service" && c.name === name);
    assert.ok(check, doctor.stdout);
    assert.equal(check.verdict, "warn", check.detail);
    assert.equal(
      check.detail.endsWith(`token unknown (${LOCAL})`),
      true,
      check.detail,
    );
    assert.equal(check.fix, `${LOCAL}, then doctor sees the store`);
  }

  const testRemote = await run(["services", "test", "remote"]);
  assert.equal(testRemote.code, 77, testRemote.stderr);
  assert.match(
    testRemote.stderr,
    /^sherlock: service remote's OAuth grant is kept in the local store, which is locked: run "sherlock login --local"$/m,
  );
  const testStored = await run(["services", "test", "stored"]);
  assert.equal(testStored.code, 77, testStored.stderr);
  assert.match(testStored.stderr, /run "sherlock login --local"$/m);

  const authAgain = await run(["auth", "remote"]);
  assert.equal(authAgain.code, 77, authAgain.stderr);
  assert.equal(
    authAgain.stderr,
    `sherlock: sherlock auth keeps the grant in the local store, which is locked: ${LOCAL}\n`,
  );
  const revoke = await run(["auth", "revoke", "remote"]);
  assert.equal(revoke.code, 77, revoke.stderr);
  assert.match(revoke.stderr, /run "sherlock login --local"\n$/);

  for (const output of outputs) {
    assert.doesNotMatch(output, /run "sherlock login"/, output);
    assert.doesNotMatch(output, /sherlock auth remote"/, output);
    assert.doesNotMatch(output, /not logged in/, output);
  }

  // Unlocked, the grant and the secret are there: the advice was right.
  const unlock = await home.sherlock(["login", "--local"], {
    stdin: `${PASSPHRASE}\n`,
  });
  assert.equal(unlock.code, 0, unlock.stderr);
  const after = await home.sherlock(["services"]);
  assert.match(after.stdout, /^remote .* OAuth grant held$/m);
  assert.match(after.stdout, /^stored .* secret stored$/m);
});
