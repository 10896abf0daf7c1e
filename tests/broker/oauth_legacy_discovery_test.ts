/**
 * `sherlock auth` against servers of the 2025-03-26 MCP authorization,
 * which publish no protected-resource metadata (RFC 9728): the daemon
 * takes the RFC 8414 metadata at the server's origin, or, when that is
 * 404, the default `/authorize`, `/token`, `/register` there — through a
 * real daemon, the headless browser and a real HTTP server on 127.0.0.1
 * that plays such a server (oidc-provider cannot: its metadata names its
 * own origin, and that revision's server is the authorization server's
 * origin).
 */

import assert from "node:assert/strict";
import { browserEnv } from "../fixtures/oauth/mod.ts";
import { type BrokerHome, createBrokerHome } from "../helpers/broker_home.ts";
import type { SherlockResult } from "../helpers/sherlock.ts";

/** The access token the legacy server issues (searched for in output). */
const ACCESS_TOKEN = "legacy-access-token-0123456789abcdefghijklmnop";

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  form: URLSearchParams;
}

/**
 * A 2025-03-26 server: /mcp answers 401 with a challenge that names no
 * resource metadata. With `metadata`, its origin serves RFC 8414 metadata
 * (issuer `<origin>/oauth`, endpoints under /oauth, as that revision's
 * servers did; `metadata` may change it) at `metadataPath`; without, only
 * the default endpoints. `metadataStatus` answers the metadata URL with
 * that status.
 */
function legacyServer(options: {
  metadata?: (base: string) => Record<string, unknown>;
  metadataStatus?: number;
  /** Where the metadata is served; RFC 8414's well-known URL by default. */
  metadataPath?: string;
}) {
  const seen: Seen[] = [];
  const prefix = options.metadata ? "/oauth" : "";
  const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request): Promise<Response> => {
      const url = new URL(request.url);
      const base = `http://127.0.0.1:${server.addr.port}`;
      const form = new URLSearchParams(
        request.method === "POST" ? await request.text() : "",
      );
      seen.push({
        method: request.method,
        path: url.pathname,
        query: url.searchParams,
        form,
      });
      const path = url.pathname;
      if (path === "/mcp") {
        return Response.json({ error: "invalid_token" }, {
          status: 401,
          headers: { "WWW-Authenticate": 'Bearer realm="mcp"' },
        });
      }
      const metadataPath = options.metadataPath ??
        "/.well-known/oauth-authorization-server";
      if (path === metadataPath) {
        if (options.metadataStatus) {
          return new Response("no", { status: options.metadataStatus });
        }
        if (options.metadata) return Response.json(options.metadata(base));
      }
      if (path === `${prefix}/register` && request.method === "POST") {
        return Response.json({ client_id: "legacy-client" }, { status: 201 });
      }
      if (path === `${prefix}/authorize`) {
        const back = new URL(url.searchParams.get("redirect_uri")!);
        back.searchParams.set("code", "legacy-code");
        back.searchParams.set("state", url.searchParams.get("state")!);
        return Response.redirect(back.href, 302);
      }
      if (path === `${prefix}/token` && request.method === "POST") {
        return Response.json({
          access_token: ACCESS_TOKEN,
          token_type: "Bearer",
          expires_in: 3600,
        });
      }
      return new Response("not found", { status: 404 });
    },
  );
  return {
    seen,
    url: `http://127.0.0.1:${server.addr.port}`,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** The metadata of a 2025-03-26 server at `base`, endpoints under /oauth. */
function oauthMetadata(base: string): Record<string, unknown> {
  return {
    issuer: `${base}/oauth`,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    registration_endpoint: `${base}/oauth/register`,
    response_types_supported: ["code"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none"],
  };
}

async function homeFor(serverUrl: string): Promise<BrokerHome> {
  const home = await createBrokerHome();
  home.writeService(
    "legacy",
    `[service]\nname = "legacy"\n[server]\nurl = "${serverUrl}/mcp"\n[token]\nsource = "oauth"\n`,
  );
  await home.login();
  return home;
}

/** `sherlock auth legacy` in `home`, its browser the fixture's headless one. */
function authorize(home: BrokerHome): Promise<SherlockResult> {
  return home.sherlock(["auth", "legacy"], { env: browserEnv() });
}

/** The one request to `path` (with `method`); fails unless exactly one. */
function only(seen: Seen[], method: string, path: string): Seen {
  const found = seen.filter((s) => s.method === method && s.path === path);
  assert.equal(found.length, 1, `${method} ${path}: ${found.length}`);
  return found[0];
}

/** The authorization and token requests: PKCE S256, `resource`, the code. */
function assertCodeFlow(
  seen: Seen[],
  options: { base: string; prefix: string },
) {
  only(seen, "POST", `${options.prefix}/register`);
  const authorize = only(seen, "GET", `${options.prefix}/authorize`).query;
  assert.equal(authorize.get("client_id"), "legacy-client");
  assert.equal(authorize.get("code_challenge_method"), "S256");
  assert.ok(authorize.get("code_challenge"));
  assert.equal(authorize.get("resource"), `${options.base}/mcp`);
  const token = only(seen, "POST", `${options.prefix}/token`).form;
  assert.equal(token.get("grant_type"), "authorization_code");
  assert.equal(token.get("code"), "legacy-code");
  assert.ok(token.get("code_verifier"));
}

Deno.test("2025-03-26 server: its origin's RFC 8414 metadata stands in for the missing protected-resource metadata", async () => {
  await using server = legacyServer({ metadata: oauthMetadata });
  await using home = await homeFor(server.url);
  const result = await authorize(home);
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stderr,
    new RegExp(
      `the server speaks the 2025-03-26 authorization \\(no protected-resource metadata\\): using ${server.url}/oauth's metadata\n`,
    ),
  );
  assert.match(
    result.stdout,
    /^authorized legacy at http:\/\/127\.0\.0\.1:\d+\/oauth/,
  );
  // The well-known protected-resource URLs were asked first (404).
  only(server.seen, "GET", "/.well-known/oauth-protected-resource/mcp");
  only(server.seen, "GET", "/.well-known/oauth-authorization-server");
  assertCodeFlow(server.seen, { base: server.url, prefix: "/oauth" });
  assert.ok(!result.stderr.includes(ACCESS_TOKEN));
  assert.ok(!result.stdout.includes(ACCESS_TOKEN));
});

Deno.test("2025-03-26 server with OpenID discovery only: its origin's openid-configuration after RFC 8414's 404", async () => {
  await using server = legacyServer({
    metadata: oauthMetadata,
    metadataPath: "/.well-known/openid-configuration",
  });
  await using home = await homeFor(server.url);
  const result = await authorize(home);
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stderr,
    /using http:\/\/127\.0\.0\.1:\d+\/oauth's metadata/,
  );
  only(server.seen, "GET", "/.well-known/oauth-authorization-server");
  only(server.seen, "GET", "/.well-known/openid-configuration");
  assertCodeFlow(server.seen, { base: server.url, prefix: "/oauth" });
});

Deno.test("2025-03-26 server without any metadata: the default /authorize, /token, /register at its origin", async () => {
  await using server = legacyServer({});
  await using home = await homeFor(server.url);
  const result = await authorize(home);
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stderr,
    new RegExp(
      `no authorization server metadata\\): using the default endpoints of ${server.url}\n`,
    ),
  );
  only(server.seen, "GET", "/.well-known/oauth-authorization-server");
  only(server.seen, "GET", "/.well-known/openid-configuration");
  assertCodeFlow(server.seen, { base: server.url, prefix: "" });
  assert.ok(!result.stderr.includes(ACCESS_TOKEN));
});

Deno.test("2025-03-26 server: no guessing past what its origin answers", async (t) => {
  await t.step("metadata naming an issuer of another origin", async () => {
    await using server = legacyServer({
      metadata: (base) => ({
        ...oauthMetadata(base),
        issuer: "https://as.example.com",
      }),
    });
    await using home = await homeFor(server.url);
    const result = await authorize(home);
    assert.equal(result.code, 69, result.stderr);
    assert.match(result.stderr, /^sherlock: [^\n]+\n$/);
    assert.match(
      result.stderr,
      /names issuer https:\/\/as\.example\.com, not one of http:\/\/127\.0\.0\.1:\d+/,
    );
    assert.ok(!server.seen.some((s) => s.path.endsWith("/authorize")));
  });
  await t.step("the metadata URL answers 500, not 404", async () => {
    await using server = legacyServer({ metadataStatus: 500 });
    await using home = await homeFor(server.url);
    const result = await authorize(home);
    assert.equal(result.code, 69, result.stderr);
    assert.match(result.stderr, /^sherlock: [^\n]+\n$/);
    assert.match(result.stderr, /answered 500, not its metadata nor 404/);
    assert.ok(!server.seen.some((s) => s.path === "/register"));
  });
});
