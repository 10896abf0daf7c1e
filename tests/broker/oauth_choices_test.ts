/**
 * The MCP authorization's choices, through a real daemon, `sherlock auth`
 * with the headless browser and a real HTTP server on 127.0.0.1 that
 * plays the MCP server, its protected-resource metadata (RFC 9728) and its
 * authorization server, each word of which a test sets (oidc-provider
 * cannot drop its RFC 8414 document or its registration endpoint):
 *
 * - the scope: the 401 challenge's first, then the metadata's
 *   `scopes_supported`, omitted when neither names one;
 * - the authorization server's metadata: RFC 8414 first, then OpenID
 *   Connect discovery;
 * - the client: the service's `client_id`, else its Client ID Metadata
 *   Document when the server says `client_id_metadata_document_supported`,
 *   else dynamic registration;
 * - step-ups: the union of the held and the challenged scopes, at most
 *   `MAX_STEP_UPS` recorded between two authorizations.
 */

import assert from "node:assert/strict";
import { browserEnv } from "../fixtures/oauth/mod.ts";
import {
  AGENT,
  type BrokerHome,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import {
  registerSession,
  reportScopeChallenge,
} from "../../lib/broker/client.ts";
import { MAX_STEP_UPS } from "../../lib/broker/daemon/oauth/rules.ts";

/** A request the server saw. */
interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  form: URLSearchParams;
}

/** What the server says; each absent key leaves that word out. */
interface ServerWords {
  /** The 401 challenge's `scope`. */
  challengeScope?: string;
  /** The protected-resource metadata's `scopes_supported`. */
  scopesSupported?: string[];
  /** Where the AS's metadata is: RFC 8414's URL or OpenID's. */
  discovery: "rfc8414" | "openid";
  /** `client_id_metadata_document_supported: true`. */
  cimd?: boolean;
}

/** The issuer's path: RFC 8414 and OpenID insert it differently. */
const ISSUER_PATH = "/as";

function mcpServer(words: ServerWords) {
  const seen: Seen[] = [];
  const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request): Promise<Response> => {
      const url = new URL(request.url);
      const base = `http://127.0.0.1:${server.addr.port}`;
      const issuer = `${base}${ISSUER_PATH}`;
      const form = new URLSearchParams(
        request.method === "POST" ? await request.text() : "",
      );
      const path = url.pathname;
      seen.push({
        method: request.method,
        path,
        query: url.searchParams,
        form,
      });
      if (path === "/mcp") {
        const parameters = [
          `resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
          ...(words.challengeScope ? [`scope="${words.challengeScope}"`] : []),
        ];
        return Response.json({ error: "invalid_token" }, {
          status: 401,
          headers: { "WWW-Authenticate": `Bearer ${parameters.join(", ")}` },
        });
      }
      if (path === "/.well-known/oauth-protected-resource/mcp") {
        return Response.json({
          resource: `${base}/mcp`,
          authorization_servers: [issuer],
          ...(words.scopesSupported
            ? { scopes_supported: words.scopesSupported }
            : {}),
        });
      }
      const metadataPath = words.discovery === "rfc8414"
        ? `/.well-known/oauth-authorization-server${ISSUER_PATH}`
        : `/.well-known/openid-configuration${ISSUER_PATH}`;
      if (path === metadataPath) {
        return Response.json({
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          registration_endpoint: `${issuer}/register`,
          response_types_supported: ["code"],
          code_challenge_methods_supported: ["S256"],
          token_endpoint_auth_methods_supported: ["none"],
          ...(words.discovery === "openid"
            ? {
              jwks_uri: `${issuer}/jwks`,
              subject_types_supported: ["public"],
              id_token_signing_alg_values_supported: ["RS256"],
            }
            : {}),
          ...(words.cimd
            ? { client_id_metadata_document_supported: true }
            : {}),
        });
      }
      if (path === `${ISSUER_PATH}/register` && request.method === "POST") {
        return Response.json({ client_id: "registered-client" }, {
          status: 201,
        });
      }
      if (path === `${ISSUER_PATH}/authorize`) {
        const back = new URL(url.searchParams.get("redirect_uri")!);
        back.searchParams.set("code", "the-code");
        back.searchParams.set("state", url.searchParams.get("state")!);
        return Response.redirect(back.href, 302);
      }
      if (path === `${ISSUER_PATH}/token` && request.method === "POST") {
        return Response.json({
          access_token: `token-${crypto.randomUUID()}`,
          token_type: "Bearer",
          expires_in: 3600,
          refresh_token: `refresh-${crypto.randomUUID()}`,
        });
      }
      return new Response("not found", { status: 404 });
    },
  );
  return {
    seen,
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    /** The authorization requests' query strings, in order. */
    authorizations: () =>
      seen.filter((one) => one.path === `${ISSUER_PATH}/authorize`).map((
        one,
      ) => one.query),
    /** The metadata URLs asked for, in order (paths only). */
    metadataAsked: () =>
      seen.map((one) => one.path).filter((path) =>
        path.startsWith("/.well-known/oauth-authorization-server") ||
        path.includes("openid-configuration")
      ),
    registrations: () =>
      seen.filter((one) => one.path === `${ISSUER_PATH}/register`).length,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

/** A logged-in home with service "remote" at `url`, `[token]` plus `extra`. */
async function homeFor(url: string, extra = ""): Promise<BrokerHome> {
  const home = await createBrokerHome();
  home.writeService(
    "remote",
    `[service]\nname = "remote"\n[server]\nurl = "${url}"\n[token]\nsource = "oauth"\n${extra}`,
  );
  await home.login();
  return home;
}

async function authorize(home: BrokerHome): Promise<void> {
  const result = await home.sherlock(["auth", "remote"], {
    env: browserEnv(),
  });
  assert.equal(result.code, 0, result.stderr);
}

Deno.test("scope: the 401 challenge's first, then scopes_supported, omitted when neither names one", async (t) => {
  const cases: [string, Omit<ServerWords, "discovery">, string | null][] = [
    [
      "the challenge's over scopes_supported",
      {
        challengeScope: "mcp:basic",
        scopesSupported: ["mcp:read", "mcp:write"],
      },
      "mcp:basic",
    ],
    [
      "scopes_supported without a challenge scope",
      { scopesSupported: ["mcp:read", "mcp:write"] },
      "mcp:read mcp:write",
    ],
    ["neither: no scope parameter", {}, null],
  ];
  for (const [name, words, expected] of cases) {
    await t.step(name, async () => {
      await using server = mcpServer({ ...words, discovery: "rfc8414" });
      await using home = await homeFor(server.url);
      await authorize(home);
      const [query] = server.authorizations();
      assert.equal(query.get("scope"), expected);
    });
  }
});

Deno.test("discovery: RFC 8414 metadata first, then OpenID Connect discovery", async (t) => {
  await t.step("RFC 8414 only: found at its path-inserted URL", async () => {
    await using server = mcpServer({ discovery: "rfc8414" });
    await using home = await homeFor(server.url);
    await authorize(home);
    assert.deepEqual(server.metadataAsked(), [
      `/.well-known/oauth-authorization-server${ISSUER_PATH}`,
    ]);
    assert.equal(server.authorizations().length, 1);
  });
  await t.step("OpenID only: RFC 8414 asked first, then OpenID", async () => {
    await using server = mcpServer({ discovery: "openid" });
    await using home = await homeFor(server.url);
    await authorize(home);
    assert.deepEqual(server.metadataAsked(), [
      `/.well-known/oauth-authorization-server${ISSUER_PATH}`,
      `/.well-known/openid-configuration${ISSUER_PATH}`,
    ]);
    assert.equal(server.authorizations().length, 1);
  });
});

Deno.test("client: the service's client_id, else its metadata document where the server takes them, else dynamic registration", async (t) => {
  const document = "https://sherlock.example/client-metadata.json";
  await t.step(
    "client_id first, even where CIMD and DCR are offered",
    async () => {
      await using server = mcpServer({ discovery: "rfc8414", cimd: true });
      await using home = await homeFor(
        server.url,
        `client_id = "pre-registered"\nclient_metadata_url = "${document}"\n`,
      );
      await authorize(home);
      assert.equal(
        server.authorizations()[0].get("client_id"),
        "pre-registered",
      );
      assert.equal(server.registrations(), 0);
    },
  );
  await t.step(
    "the metadata document where the server says it takes them",
    async () => {
      await using server = mcpServer({ discovery: "rfc8414", cimd: true });
      await using home = await homeFor(
        server.url,
        `client_metadata_url = "${document}"\n`,
      );
      await authorize(home);
      assert.equal(server.authorizations()[0].get("client_id"), document);
      assert.equal(server.registrations(), 0);
    },
  );
  await t.step("dynamic registration where it does not", async () => {
    await using server = mcpServer({ discovery: "rfc8414" });
    await using home = await homeFor(
      server.url,
      `client_metadata_url = "${document}"\n`,
    );
    await authorize(home);
    assert.equal(server.registrations(), 1);
    assert.equal(
      server.authorizations()[0].get("client_id"),
      "registered-client",
    );
  });
});

Deno.test("step-up: the next authorization asks for the union; at most MAX_STEP_UPS challenges recorded between two authorizations", async () => {
  await using server = mcpServer({
    discovery: "rfc8414",
    scopesSupported: ["mcp:basic"],
  });
  await using home = await homeFor(server.url);
  await authorize(home);
  const { capability } = await registerSession({
    socket: home.socket,
    session: "5e55104deb09",
    agent: AGENT,
    services: ["remote"],
    pid: Deno.pid,
  });
  const challenge = (scope: string) =>
    reportScopeChallenge(home.socket, { service: "remote", capability, scope });
  const extra = ["mcp:a", "mcp:b", "mcp:c", "mcp:d", "mcp:e"];
  assert.ok(extra.length > MAX_STEP_UPS);
  const answers = [];
  for (const scope of extra) answers.push(await challenge(scope));
  const recorded = extra.slice(0, MAX_STEP_UPS);
  assert.deepEqual(answers.map((answer) => answer.recorded), [
    ...recorded.map(() => true),
    ...extra.slice(MAX_STEP_UPS).map(() => false),
  ]);
  assert.deepEqual(answers.at(-1)?.scopesNeeded, recorded);

  // The next authorization: the held scope and the recorded ones.
  await authorize(home);
  const second = server.authorizations()[1].get("scope")!.split(" ");
  assert.deepEqual(second.sort(), ["mcp:basic", ...recorded].sort());
  // A new authorization starts the count again.
  const again = await challenge("mcp:e");
  assert.equal(again.recorded, true);
  assert.deepEqual(again.scopesNeeded, ["mcp:e"]);
});
