/**
 * The client-credentials grant (`[token] grant = "client_credentials"`,
 * SEP-1046): the broker's OAuth client gets a token with no browser from a
 * real authorization server on 127.0.0.1 — discovery (protected-resource
 * metadata, then RFC 8414), `grant_type=client_credentials` with
 * `resource` and `scope` — authenticated by `client_secret_basic`,
 * `client_secret_post` or a `private_key_jwt` assertion (RS256 and ES256,
 * checked with WebCrypto); keeps it until shortly before its expiry (an
 * injected clock, no sleeping) and then fetches a new one; and names no
 * secret in an error. The server is a small one written here, not the
 * oidc-provider fixture: that one's client-credentials grant would need
 * its configuration reworked (resource indicators per client), and every
 * check made here is on the request the client sends.
 *
 * The end-to-end path (real `sherlock` processes, `sherlock bridge` to a
 * protected MCP server) runs in tests/conformance/ (the suite's
 * `auth/client-credentials-basic` and `auth/client-credentials-jwt`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { OAuthClient } from "../../lib/broker/daemon/oauth/client.ts";
import {
  createStore,
  type ScryptParams,
  type SecretStore,
} from "../../lib/broker/daemon/secret_store.ts";
import { BrokerRequestError } from "../../lib/broker/daemon/request_error.ts";
import { type Service, serviceSchema } from "../../lib/services/schema.ts";

const FAST: ScryptParams = { N: 2 ** 10, r: 8, p: 1 };
const CLIENT_ID = "ci-runner";
const SECRET = "s3cr3t-value-of-the-ci-client";

interface TokenRequest {
  form: URLSearchParams;
  authorization: string | null;
}

/** A protected MCP server and its authorization server, on one port. */
function startServers(
  options: {
    authMethods: string[];
    verify: (request: TokenRequest, issuer: string) => Promise<boolean>;
  },
) {
  const requests: TokenRequest[] = [];
  let issued = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const url = new URL(request.url);
      const base = url.origin;
      if (url.pathname === "/mcp") {
        return new Response("", {
          status: 401,
          headers: {
            "WWW-Authenticate":
              `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`,
          },
        });
      }
      if (url.pathname === "/.well-known/oauth-protected-resource/mcp") {
        return Response.json({
          resource: `${base}/mcp`,
          authorization_servers: [base],
        });
      }
      if (url.pathname === "/.well-known/oauth-authorization-server") {
        return Response.json({
          issuer: base,
          authorization_endpoint: `${base}/authorize`,
          token_endpoint: `${base}/token`,
          grant_types_supported: ["client_credentials"],
          token_endpoint_auth_methods_supported: options.authMethods,
          token_endpoint_auth_signing_alg_values_supported: ["RS256", "ES256"],
        });
      }
      if (url.pathname === "/token" && request.method === "POST") {
        const form = new URLSearchParams(await request.text());
        const seen = {
          form,
          authorization: request.headers.get("authorization"),
        };
        requests.push(seen);
        if (
          form.get("grant_type") !== "client_credentials" ||
          form.get("resource") !== `${base}/mcp` ||
          form.get("scope") !== "mcp:tools" ||
          !await options.verify(seen, base)
        ) {
          return Response.json({ error: "invalid_client" }, { status: 401 });
        }
        issued++;
        return Response.json({
          access_token: `access-${issued}`,
          token_type: "Bearer",
          expires_in: 600,
        });
      }
      return new Response("not found", { status: 404 });
    },
  );
  const url = `http://127.0.0.1:${server.addr.port}/mcp`;
  return { server, url, requests };
}

function service(url: string, credential: Record<string, string>): Service {
  return serviceSchema.parse({
    service: { name: "ci" },
    server: { url },
    token: {
      source: "oauth",
      grant: "client_credentials",
      client_id: CLIENT_ID,
      ...credential,
    },
  });
}

async function withStore(
  entries: Record<string, string>,
  body: (store: SecretStore) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    const store = await createStore(join(dir, "store"), "passphrase-123", {
      kdf: FAST,
    });
    for (const [name, value] of Object.entries(entries)) {
      await store.set(name, value);
    }
    await body(store);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Checks `basic`'s header: `client_id:secret`, form-encoded. */
function basicIs(request: TokenRequest): boolean {
  return request.authorization === `Basic ${btoa(`${CLIENT_ID}:${SECRET}`)}` &&
    !request.form.has("client_secret");
}

/** Runs one grant with `clock` advanced past the token's margin. */
async function fetchTwiceAcrossExpiry(
  options: {
    authMethods: string[];
    credential: Record<string, string>;
    entries: Record<string, string>;
    verify: (request: TokenRequest, issuer: string) => Promise<boolean>;
  },
): Promise<TokenRequest[]> {
  const { server, url, requests } = startServers(options);
  try {
    let now = Date.now();
    const oauth = new OAuthClient({
      clock: { now: () => now, sleep: () => Promise.resolve() },
    });
    await withStore(options.entries, async (store) => {
      const spec = service(url, options.credential);
      const first = await oauth.clientCredentialsToken(spec, store);
      assert.equal(first.token, "access-1");
      // Still fresh: served from memory, no second request.
      now += 60_000;
      assert.equal(
        (await oauth.clientCredentialsToken(spec, store)).token,
        "access-1",
      );
      assert.equal(requests.length, 1);
      // Within a minute of its 10-minute lifetime: fetched anew.
      now += 490_000;
      assert.equal(
        (await oauth.clientCredentialsToken(spec, store)).token,
        "access-2",
      );
      assert.equal(requests.length, 2);
      const status = oauth.clientCredentialsStatus(spec, store);
      assert.equal(status.authorized, true);
      assert.equal(status.refreshToken, false);
      assert.equal(status.clientCredentials, true);
    });
    return requests;
  } finally {
    await server.shutdown();
  }
}

Deno.test("client credentials: client_secret_basic, no browser, re-fetched after expiry", async () => {
  await fetchTwiceAcrossExpiry({
    authMethods: ["client_secret_basic"],
    credential: { client_secret: "ci-secret" },
    entries: { "ci-secret": SECRET },
    verify: (request) => Promise.resolve(basicIs(request)),
  });
});

Deno.test("client credentials: client_secret_post when the server takes only the form", async () => {
  const requests = await fetchTwiceAcrossExpiry({
    authMethods: ["client_secret_post"],
    credential: { client_secret: "ci-secret" },
    entries: { "ci-secret": SECRET },
    verify: (request) =>
      Promise.resolve(
        request.authorization === null &&
          request.form.get("client_id") === CLIENT_ID &&
          request.form.get("client_secret") === SECRET,
      ),
  });
  assert.equal(requests.length, 2);
});

for (
  const [algorithm, params] of [
    ["ES256", { name: "ECDSA", namedCurve: "P-256" }],
    ["RS256", {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    }],
  ] as const
) {
  Deno.test(`client credentials: private_key_jwt signed ${algorithm}, a fresh assertion each time`, async () => {
    const pair = await crypto.subtle.generateKey(params, true, [
      "sign",
      "verify",
    ]) as CryptoKeyPair;
    const der = new Uint8Array(
      await crypto.subtle.exportKey("pkcs8", pair.privateKey),
    );
    const body = btoa(String.fromCharCode(...der));
    // One line, as `tr -d '\n' < key.pem | sherlock secret set` stores it.
    const pem = `-----BEGIN PRIVATE KEY-----${body}-----END PRIVATE KEY-----`;
    const jtis = new Set<string>();
    const requests = await fetchTwiceAcrossExpiry({
      authMethods: ["private_key_jwt"],
      credential: { client_key: "ci-key" },
      entries: { "ci-key": pem },
      verify: async (request, issuer) => {
        const form = request.form;
        const assertion = form.get("client_assertion") ?? "";
        const [header, payload, signature] = assertion.split(".");
        const verified = await crypto.subtle.verify(
          algorithm === "RS256"
            ? { name: "RSASSA-PKCS1-v1_5" }
            : { name: "ECDSA", hash: "SHA-256" },
          pair.publicKey,
          fromBase64url(signature),
          new TextEncoder().encode(`${header}.${payload}`),
        );
        const head = JSON.parse(decode(header));
        const claims = JSON.parse(decode(payload));
        const fresh = !jtis.has(claims.jti);
        jtis.add(claims.jti);
        return verified && head.alg === algorithm &&
          form.get("client_assertion_type") ===
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" &&
          request.authorization === null && !form.has("client_secret") &&
          claims.iss === CLIENT_ID && claims.sub === CLIENT_ID &&
          claims.aud === issuer && typeof claims.jti === "string" && fresh &&
          claims.exp - claims.iat <= 60 && claims.exp > claims.iat;
      },
    });
    assert.equal(requests.length, 2);
    // The key itself is never sent.
    for (const request of requests) {
      assert.ok(!request.form.toString().includes(encodeURIComponent(body)));
      assert.ok(!request.form.toString().includes(body.slice(0, 40)));
    }
  });
}

Deno.test("client credentials: a refused client is one line naming the service, not the secret", async () => {
  const { server, url } = startServers({
    authMethods: ["client_secret_basic"],
    verify: () => Promise.resolve(false),
  });
  try {
    await withStore({ "ci-secret": SECRET }, async (store) => {
      const oauth = new OAuthClient();
      const error = await oauth.clientCredentialsToken(
        service(url, { client_secret: "ci-secret" }),
        store,
      ).catch((error) => error);
      assert.ok(error instanceof BrokerRequestError);
      assert.equal(error.code, "oauth_failed");
      assert.match(error.message, /refused service ci's client ci-runner/);
      assert.ok(!error.message.includes(SECRET));
      assert.ok(!error.message.includes("\n"));
    });
  } finally {
    await server.shutdown();
  }
});

Deno.test("client credentials: no secret stored names the command; a bad key names the recipe", async () => {
  const { server, url, requests } = startServers({
    authMethods: ["client_secret_basic", "private_key_jwt"],
    verify: () => Promise.resolve(true),
  });
  try {
    await withStore({ "ci-key": "not a key at all" }, async (store) => {
      const oauth = new OAuthClient();
      const missing = await oauth.clientCredentialsToken(
        service(url, { client_secret: "ci-secret" }),
        store,
      ).catch((error) => error);
      assert.equal(missing.code, "no_secret");
      assert.match(missing.message, /sherlock secret set ci-secret/);
      const bad = await oauth.clientCredentialsToken(
        service(url, { client_key: "ci-key" }),
        store,
      ).catch((error) => error);
      assert.equal(bad.code, "invalid_config");
      assert.match(bad.message, /not a PKCS#8 PEM private key/);
      assert.ok(!bad.message.includes("not a key at all"));
      assert.equal(requests.length, 0);
    });
  } finally {
    await server.shutdown();
  }
});

Deno.test("client credentials: sherlock auth on such a service says it needs none", async () => {
  await withStore({}, async (store) => {
    const error = await new OAuthClient().start(
      service("https://mcp.example.com/mcp", { client_secret: "ci-secret" }),
      store,
    ).catch((error) => error);
    assert.ok(error instanceof BrokerRequestError);
    assert.match(error.message, /needs no authorization/);
  });
});

function decode(part: string): string {
  return new TextDecoder().decode(fromBase64url(part));
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}
