/**
 * A client-credentials service through the real daemon: `sherlock login`,
 * the client's secret (`client_secret_post`) and private key
 * (`private_key_jwt`) stored with `sherlock secret set`, then a session —
 * with no `sherlock auth` and no browser, the agent's config carries the
 * access tokens the authorization server (a real one on 127.0.0.1, written
 * here: see client_credentials_test.ts) issued. The secret and the key are
 * then searched for in everything sherlock printed, the agent's argv and
 * environment, the daemon's argv, and every file left behind.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { renderedServers } from "../helpers/agent.ts";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { filesContaining, randomToken } from "../helpers/leaks.ts";
import type { SherlockResult } from "../helpers/sherlock.ts";

Deno.test("client credentials: tokens with no person, and the secret and key nowhere but the store", async () => {
  const secret = randomToken("clientsecret");
  const pair = await crypto.subtle.generateKey(
    { name: "ECDSA", namedCurve: "P-256" },
    true,
    ["sign", "verify"],
  ) as CryptoKeyPair;
  const der = new Uint8Array(
    await crypto.subtle.exportKey("pkcs8", pair.privateKey),
  );
  const keyBody = btoa(String.fromCharCode(...der));
  const pem = `-----BEGIN PRIVATE KEY-----${keyBody}-----END PRIVATE KEY-----`;
  const issued: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const url = new URL(request.url);
      const base = url.origin;
      if (url.pathname.startsWith("/mcp")) {
        return new Response("", {
          status: 401,
          headers: {
            "WWW-Authenticate":
              `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource${url.pathname}"`,
          },
        });
      }
      if (url.pathname.startsWith("/.well-known/oauth-protected-resource/")) {
        return Response.json({
          resource: `${base}${
            url.pathname.slice("/.well-known/oauth-protected-resource".length)
          }`,
          authorization_servers: [base],
        });
      }
      if (url.pathname === "/.well-known/oauth-authorization-server") {
        return Response.json({
          issuer: base,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${base}/token`,
          token_endpoint_auth_methods_supported: [
            "client_secret_post",
            "private_key_jwt",
          ],
        });
      }
      if (url.pathname === "/token") {
        const form = new URLSearchParams(await request.text());
        const bySecret = form.get("client_secret") === secret;
        const byKey = form.get("client_assertion_type") ===
          "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
        if (
          form.get("grant_type") !== "client_credentials" ||
          !(bySecret || byKey)
        ) {
          return Response.json({ error: "invalid_client" }, { status: 401 });
        }
        const token = randomToken("access");
        issued.push(token);
        return Response.json({
          access_token: token,
          token_type: "Bearer",
          expires_in: 3600,
        });
      }
      return new Response("", { status: 404 });
    },
  );
  try {
    await using home = await createBrokerHome();
    home.addAgent();
    const base = `http://127.0.0.1:${server.addr.port}`;
    for (
      const [name, credential] of [
        ["bysecret", 'client_secret = "ci-secret"'],
        ["bykey", 'client_key = "ci-key"'],
      ]
    ) {
      home.writeService(
        name,
        [
          "[service]",
          `name = "${name}"`,
          "[server]",
          `url = "${base}/mcp/${name}"`,
          "[token]",
          'source = "oauth"',
          'grant = "client_credentials"',
          'client_id = "ci-runner"',
          credential,
          'delivery = "inline"',
          "",
        ].join("\n"),
      );
    }
    const printed: SherlockResult[] = [await home.login()];
    const sherlock = async (args: string[], stdin?: string) => {
      const result = await home.sherlock(args, { stdin });
      printed.push(result);
      return result;
    };
    assert.equal(
      (await sherlock(["secret", "set", "ci-secret"], secret)).code,
      0,
    );
    assert.equal((await sherlock(["secret", "set", "ci-key"], pem)).code, 0);
    const authStep = await sherlock(["auth", "bysecret"]);
    assert.notEqual(authStep.code, 0);
    assert.match(authStep.stderr, /needs no authorization/);

    const session = await home.runAgent();
    printed.push(session.result);
    assert.equal(session.result.code, 0, session.result.stderr);
    const servers = renderedServers(session.record!);
    assert.equal(issued.length, 2);
    assert.ok(issued.includes(
      String(servers.bysecret.headers?.Authorization).replace("Bearer ", ""),
    ));
    assert.ok(issued.includes(
      String(servers.bykey.headers?.Authorization).replace("Bearer ", ""),
    ));
    const status = await sherlock(["auth", "status", "--json"]);
    assert.equal(status.code, 0, status.stderr);
    for (const entry of JSON.parse(status.stdout).services) {
      assert.equal(entry.clientCredentials, true);
      assert.equal(entry.authorized, true);
    }
    printed.push(await home.sherlock(["broker", "log", "-n", "200"]));

    const needles = [secret, keyBody, keyBody.slice(20, 80)];
    const record = session.record!;
    const agentSaw = JSON.stringify({
      args: record.args,
      env: record.env,
      config: servers,
    });
    for (const needle of needles) {
      assert.equal(agentSaw.includes(needle), false, "what the agent got");
    }
    const [daemon] = home.daemonPids();
    assert.ok(daemon);
    const cmdline = Deno.readTextFileSync(`/proc/${daemon}/cmdline`);
    for (const needle of needles) assert.equal(cmdline.includes(needle), false);
    const sweep = () => filesContaining(home.root, needles, [home.scratch]);
    assert.deepEqual(sweep(), [], "files left while the daemon runs");
    printed.push(await home.sherlock(["broker", "stop"]));
    assert.deepEqual(sweep(), [], "files left after the daemon stopped");
    for (const result of printed) {
      for (const needle of needles) {
        assert.equal(result.stdout.includes(needle), false, "stdout");
        assert.equal(result.stderr.includes(needle), false, "stderr");
      }
    }
    const state = join(home.stateHome, "sherlock");
    assert.ok(Deno.statSync(join(state, "broker.log")).size > 0);
  } finally {
    await server.shutdown();
  }
});
