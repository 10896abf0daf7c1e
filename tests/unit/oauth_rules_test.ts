/**
 * The OAuth client's pure rules (`lib/broker/daemon/oauth/rules.ts`, and
 * the readers of `discovery.ts`): the challenge parser, where metadata is
 * looked for, what metadata must hold,
 * scope choice, the authorization response's checks, PKCE, how a client
 * secret is sent, a token response's scopes.
 */

import assert from "node:assert/strict";
import {
  canonicalResource,
  checkAuthorizationResponse,
  chooseClientAuthMethod,
  chooseScopes,
  clientAuthentication,
  limitScopes,
  MAX_CHALLENGED_SCOPES,
  MAX_GRANT_SCOPE_CHARACTERS,
  MAX_GRANT_SCOPES,
  missingScopes,
  pkcePair,
  readChallengedScopes,
  readGrantedScopes,
  requestedResource,
  withOfflineAccess,
} from "../../lib/broker/daemon/oauth/rules.ts";
import {
  authorizationServerMetadataUrls,
  defaultEndpoints,
  legacyServerMetadataUrls,
  protectedResourceMetadataUrls,
  readLegacyServerMetadata,
  readResourceMetadata,
  readServerMetadata,
} from "../../lib/broker/daemon/oauth/discovery.ts";
import { parseBearerChallenge } from "../../lib/runtime/bearer_challenge.ts";
import { service } from "../helpers/services.ts";

Deno.test("parseBearerChallenge: resource_metadata, scope, error; quoted commas", () => {
  assert.deepEqual(
    parseBearerChallenge(
      'Bearer error="invalid_token", scope="a b", resource_metadata="https://x/.well-known/oauth-protected-resource/mcp"',
    ),
    {
      error: "invalid_token",
      scope: "a b",
      resourceMetadata: "https://x/.well-known/oauth-protected-resource/mcp",
    },
  );
  assert.equal(
    parseBearerChallenge('Basic realm="x", Bearer scope="a,b"')?.scope,
    "a,b",
  );
  assert.equal(parseBearerChallenge('Basic realm="x"'), undefined);
  assert.equal(parseBearerChallenge(null), undefined);
  assert.deepEqual(parseBearerChallenge("Bearer"), {
    error: undefined,
    scope: undefined,
    resourceMetadata: undefined,
  });
});

Deno.test("protected-resource metadata: path insertion first, then the root", () => {
  assert.deepEqual(
    protectedResourceMetadataUrls("https://h.example/public/mcp"),
    [
      "https://h.example/.well-known/oauth-protected-resource/public/mcp",
      "https://h.example/.well-known/oauth-protected-resource",
    ],
  );
  assert.deepEqual(protectedResourceMetadataUrls("https://h.example/"), [
    "https://h.example/.well-known/oauth-protected-resource",
  ]);
});

Deno.test("authorization-server metadata: RFC 8414 then OpenID, path insertion first", () => {
  assert.deepEqual(
    authorizationServerMetadataUrls("https://as.example/tenant1"),
    [
      "https://as.example/.well-known/oauth-authorization-server/tenant1",
      "https://as.example/.well-known/openid-configuration/tenant1",
      "https://as.example/tenant1/.well-known/openid-configuration",
    ],
  );
  assert.deepEqual(authorizationServerMetadataUrls("https://as.example"), [
    "https://as.example/.well-known/oauth-authorization-server",
    "https://as.example/.well-known/openid-configuration",
  ]);
});

Deno.test("canonicalResource: lowercase, no fragment, no lone trailing slash", () => {
  assert.equal(
    canonicalResource("HTTPS://MCP.Example.com/"),
    "https://mcp.example.com",
  );
  assert.equal(
    canonicalResource("https://mcp.example.com/mcp#x"),
    "https://mcp.example.com/mcp",
  );
});

Deno.test("requestedResource: the metadata's resource verbatim, else the canonical URL; none when told", () => {
  const serverUrl = "https://MCP.example.com/mcp";
  // A server that names its origin: that identifier, no slash added.
  assert.equal(
    requestedResource({ serverUrl, published: "https://mcp.example.com" }),
    "https://mcp.example.com",
  );
  // Verbatim, even where the canonical form would differ.
  assert.equal(
    requestedResource({ serverUrl, published: "https://MCP.example.com/" }),
    "https://MCP.example.com/",
  );
  // No protected-resource metadata (the 2025-03-26 discovery).
  assert.equal(
    requestedResource({ serverUrl }),
    "https://mcp.example.com/mcp",
  );
  assert.equal(
    requestedResource({
      sendResource: false,
      serverUrl,
      published: "https://mcp.example.com",
    }),
    null,
  );
});

Deno.test("resource metadata: must be about the server asked, and name a server", () => {
  const good = readResourceMetadata(
    { resource: "https://h/mcp", authorization_servers: ["https://as"] },
    "https://h/mcp",
  );
  assert.equal(typeof good, "object");
  assert.match(
    String(readResourceMetadata(
      { resource: "https://evil/mcp", authorization_servers: ["https://as"] },
      "https://h/mcp",
    )),
    /is for https:\/\/evil\/mcp/,
  );
  assert.match(
    String(
      readResourceMetadata({ resource: "https://h/mcp" }, "https://h/mcp"),
    ),
    /names no authorization server/,
  );
  // Sent as it is written: one with a fragment is no resource identifier.
  assert.match(
    String(readResourceMetadata(
      { resource: "https://h#top", authorization_servers: ["https://as"] },
      "https://h/mcp",
    )),
    /has a fragment/,
  );
});

Deno.test("resource metadata: every authorization server https, or http on a loopback host", () => {
  for (const as of ["https://as.example", "http://127.0.0.1:8080/t"]) {
    assert.equal(
      typeof readResourceMetadata(
        { resource: "https://h/mcp", authorization_servers: [as] },
        "https://h/mcp",
      ),
      "object",
      as,
    );
  }
  for (
    const as of [
      "http://as.example",
      "file:///etc/passwd",
      "ftp://127.0.0.1/x",
      "javascript:alert(1)",
      "as.example",
    ]
  ) {
    assert.match(
      String(readResourceMetadata(
        {
          resource: "https://h/mcp",
          authorization_servers: ["https://as.example", as],
        },
        "https://h/mcp",
      )),
      /names authorization server .*, which is not an https URL \(nor http on a loopback host\); refused/,
      as,
    );
  }
});

Deno.test("server metadata: the issuer must match; S256 and iss support read", () => {
  const body = {
    issuer: "https://as",
    authorization_endpoint: "https://as/auth",
    token_endpoint: "https://as/token",
    code_challenge_methods_supported: ["S256"],
    authorization_response_iss_parameter_supported: true,
  };
  const metadata = readServerMetadata(body, "https://as");
  assert.ok(typeof metadata === "object");
  assert.deepEqual(metadata.codeChallengeMethods, ["S256"]);
  assert.equal(metadata.issParameterSupported, true);
  assert.match(
    String(readServerMetadata(body, "https://other")),
    /names issuer https:\/\/as, not https:\/\/other/,
  );
  assert.match(
    String(readServerMetadata(
      { ...body, token_endpoint: "http://as.example/token" },
      "https://as",
    )),
    /lacks an https/,
  );
});

Deno.test("chooseScopes: the challenge's, else scopes_supported, else the service's", () => {
  assert.deepEqual(
    chooseScopes({ challenge: "a b", supported: ["c"], configured: ["d"] }),
    ["a", "b"],
  );
  assert.deepEqual(chooseScopes({ supported: ["c"], configured: ["d"] }), [
    "c",
  ]);
  assert.deepEqual(chooseScopes({ configured: ["d"] }), ["d"]);
  assert.deepEqual(chooseScopes({}), []);
});

Deno.test("chooseScopes: a step-up asks for the union of the held scopes and the challenged ones", () => {
  // The server's 403 named only the new scope: the held one is kept.
  assert.deepEqual(
    chooseScopes({
      supported: ["mcp:tools"],
      held: ["mcp:tools"],
      stepUp: ["mcp:admin"],
    }),
    ["mcp:tools", "mcp:admin"],
  );
  // It named both ("recommended approach"): no scope twice.
  assert.deepEqual(
    chooseScopes({
      held: ["a", "b"],
      stepUp: ["b", "c"],
      challenge: "z",
    }),
    ["a", "b", "c"],
  );
  // No held scopes on record (the server answered none): the first
  // authorization's choice stands in for them.
  assert.deepEqual(
    chooseScopes({ supported: ["s"], held: [], stepUp: ["x"] }),
    ["s", "x"],
  );
  assert.deepEqual(chooseScopes({ configured: ["d"], stepUp: ["x"] }), [
    "d",
    "x",
  ]);
  // Without a step-up, held scopes change nothing: the spec's first choice.
  assert.deepEqual(
    chooseScopes({ supported: ["s"], held: ["a"], stepUp: [] }),
    ["s"],
  );
});

Deno.test("chooseScopes: only scopes the authorization server lists, when it lists them; the operator's stay", () => {
  const serverSupported = ["mcp:tools", "mcp:admin"];
  assert.deepEqual(
    chooseScopes({ challenge: "mcp:tools evil:x", serverSupported }),
    ["mcp:tools"],
  );
  // None of the challenge's is listed: the resource's, then the service's.
  assert.deepEqual(
    chooseScopes({
      challenge: "evil:x",
      supported: ["evil:y", "mcp:admin"],
      serverSupported,
    }),
    ["mcp:admin"],
  );
  assert.deepEqual(
    chooseScopes({
      challenge: "evil:x",
      supported: ["evil:y"],
      configured: ["own"],
      serverSupported,
    }),
    ["own"],
  );
  assert.deepEqual(
    chooseScopes({
      held: ["mcp:tools"],
      stepUp: ["evil:1", "mcp:admin", "evil:2"],
      serverSupported,
    }),
    ["mcp:tools", "mcp:admin"],
  );
  // An AS that lists none: taken as they come.
  assert.deepEqual(
    chooseScopes({ held: ["a"], stepUp: ["b"], serverSupported: [] }),
    ["a", "b"],
  );
  // A challenge that is not scope tokens is no choice at all.
  assert.deepEqual(chooseScopes({ challenge: 'a "b"', configured: ["d"] }), [
    "d",
  ]);
});

Deno.test("chooseScopes and limitScopes: a grant's scopes stay within a count and a length", () => {
  const many = Array.from({ length: 200 }, (_, i) => `scope:${i}`);
  const chosen = chooseScopes({ held: ["held"], stepUp: many });
  assert.equal(chosen.length, MAX_GRANT_SCOPES);
  assert.equal(chosen[0], "held", "held scopes come first, kept");
  const long = Array.from(
    { length: 40 },
    (_, i) => `${i}:${"x".repeat(120)}`,
  );
  const cut = limitScopes(long);
  assert.ok(cut.join(" ").length <= MAX_GRANT_SCOPE_CHARACTERS);
  assert.ok(cut.length < long.length && cut.length > 0);
  assert.deepEqual(cut, long.slice(0, cut.length), "a prefix, in order");
  assert.deepEqual(limitScopes(["a", "b", "a"]), ["a", "b"]);
});

Deno.test("readChallengedScopes: RFC 6749 scope tokens, bounded, else one line", () => {
  assert.deepEqual(readChallengedScopes("repo  read:org repo"), [
    "repo",
    "read:org",
  ]);
  assert.equal(readChallengedScopes("  "), "the challenge names no scope");
  assert.match(
    readChallengedScopes('a "b"') as string,
    /not a list of RFC 6749 scope tokens/,
  );
  assert.match(
    readChallengedScopes("a\nb") as string,
    /not a list of RFC 6749 scope tokens/,
  );
  assert.match(
    readChallengedScopes("é") as string,
    /not a list of RFC 6749 scope tokens/,
  );
  assert.match(
    readChallengedScopes("x".repeat(129)) as string,
    /not a list of RFC 6749 scope tokens/,
  );
  const many = Array.from(
    { length: MAX_CHALLENGED_SCOPES + 1 },
    (_, i) => `s${i}`,
  );
  assert.match(readChallengedScopes(many.join(" ")) as string, /more than/);
  assert.equal(
    (readChallengedScopes(many.slice(1).join(" ")) as string[]).length,
    MAX_CHALLENGED_SCOPES,
  );
});

Deno.test("missingScopes: what the grant lacks, in the challenge's order", () => {
  assert.deepEqual(missingScopes(["c", "a", "b"], ["a"]), ["c", "b"]);
  assert.deepEqual(missingScopes(["a"], ["a", "b"]), []);
});

Deno.test("authorization response: state, iss (RFC 9207), error, code", () => {
  const expected = { state: "s", issuer: "https://as", issRequired: false };
  const check = (query: string, options = expected) =>
    checkAuthorizationResponse(new URLSearchParams(query), options);
  assert.deepEqual(check("code=c&state=s"), { code: "c" });
  assert.deepEqual(check("code=c&state=s&iss=https%3A%2F%2Fas"), { code: "c" });
  assert.match(
    (check("code=c&state=s&iss=https%3A%2F%2Fevil") as { problem: string })
      .problem,
    /RFC 9207/,
  );
  assert.match(
    (check("code=c&state=s", { ...expected, issRequired: true }) as {
      problem: string;
    }).problem,
    /lacks the iss/,
  );
  assert.match(
    (check("code=c&state=x") as { problem: string }).problem,
    /state does not match/,
  );
  assert.match(
    (check("error=access_denied&state=s") as { problem: string }).problem,
    /access_denied/,
  );
});

Deno.test("pkcePair: S256 of the verifier, base64url without padding", async () => {
  const { verifier, challenge } = await pkcePair();
  assert.match(verifier, /^[A-Za-z0-9_-]{43}$/);
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)),
  );
  const expected = btoa(String.fromCharCode(...digest)).replaceAll("+", "-")
    .replaceAll("/", "_").replace(/=+$/, "");
  assert.equal(challenge, expected);
});

Deno.test("schema: oauth needs a url, its keys only apply to it, header defaults", () => {
  const oauth = service(`
[service]
name = "r"
[server]
url = "https://mcp.example.com/mcp"
[token]
source = "oauth"
scopes = ["a"]
send_resource = false
`);
  assert.equal(oauth.token.header, "Authorization");
  assert.equal(oauth.token.format, "Bearer {token}");
  assert.deepEqual(oauth.token.scopes, ["a"]);
  assert.throws(() =>
    service(`
[service]
name = "r"
[server]
command = "x"
[token]
source = "oauth"
`)
  );
  assert.throws(() =>
    service(`
[service]
name = "r"
[server]
url = "https://mcp.example.com/mcp"
[token]
source = "secret"
header = "Authorization"
client_id = "x"
`)
  );
});

Deno.test("schema: ema_audiences is a list of issuer URLs, for oauth only", () => {
  const head =
    `[service]\nname = "r"\n[server]\nurl = "https://mcp.example.com/mcp"\n[token]\n`;
  assert.deepEqual(
    service(
      `${head}source = "oauth"\nema_audiences = ["https://as.example.com"]\n`,
    ).token.ema_audiences,
    ["https://as.example.com"],
  );
  assert.equal(
    service(`${head}source = "oauth"\n`).token.ema_audiences,
    undefined,
  );
  for (
    const [line, problem] of [
      [
        'source = "oauth"\nema_audiences = ["as.example.com"]',
        /must be the issuer URL of an authorization server/,
      ],
      ['source = "oauth"\nema_audiences = []', /must name at least one/],
      ['source = "oauth"\nema_audiences = "https://as"', /ema_audiences/],
      [
        'source = "secret"\nheader = "Authorization"\nema_audiences = ["https://as"]',
        /ema_audiences.*only applies to source/s,
      ],
    ] as const
  ) {
    assert.throws(() => service(`${head}${line}\n`), problem, line);
  }
});

Deno.test("chooseClientAuthMethod: basic when offered, else post; RFC 8414's default is basic", () => {
  assert.equal(chooseClientAuthMethod(undefined), "client_secret_basic");
  assert.equal(
    chooseClientAuthMethod(["client_secret_post", "client_secret_basic"]),
    "client_secret_basic",
  );
  assert.equal(
    chooseClientAuthMethod(["none", "client_secret_post"]),
    "client_secret_post",
  );
  assert.equal(chooseClientAuthMethod(["none", "private_key_jwt"]), undefined);
  const metadata = readServerMetadata({
    issuer: "https://as.example",
    authorization_endpoint: "https://as.example/authorize",
    token_endpoint: "https://as.example/token",
    token_endpoint_auth_methods_supported: ["client_secret_post"],
  }, "https://as.example");
  assert.ok(typeof metadata !== "string");
  assert.deepEqual(metadata.tokenEndpointAuthMethods, ["client_secret_post"]);
});

Deno.test("clientAuthentication: client_id alone, Basic of both form-encoded, or both in the form", () => {
  assert.deepEqual(clientAuthentication({ clientId: "app" }), {
    form: { client_id: "app" },
    headers: {},
  });
  assert.deepEqual(
    clientAuthentication({
      clientId: "app",
      clientSecret: "s3cr:t +/",
      method: "client_secret_post",
    }),
    { form: { client_id: "app", client_secret: "s3cr:t +/" }, headers: {} },
  );
  const basic = clientAuthentication({
    clientId: "my app",
    clientSecret: "s3cr:t",
    method: "client_secret_basic",
  });
  assert.deepEqual(basic.form, {});
  // RFC 6749 §2.3.1: each part form-encoded, then "id:secret" in base64.
  assert.equal(
    atob(basic.headers.Authorization.replace(/^Basic /, "")),
    "my+app:s3cr%3At",
  );
});

Deno.test("readGrantedScopes: spaces (RFC 6749) and commas (GitHub) separate", () => {
  assert.deepEqual(readGrantedScopes("repo,read:org"), ["repo", "read:org"]);
  assert.deepEqual(readGrantedScopes("a b  c"), ["a", "b", "c"]);
  assert.deepEqual(readGrantedScopes("a, b,a"), ["a", "b"]);
  // A hostile token answer's scope is bounded like every scope list a grant
  // keeps, so the grant stays small enough to store.
  const hostile = Array.from({ length: 20_000 }, (_, i) => `s${i}`).join(" ");
  const kept = readGrantedScopes(hostile);
  assert.ok(kept.length <= MAX_GRANT_SCOPES, `${kept.length} scopes kept`);
  assert.ok(kept.join(" ").length <= MAX_GRANT_SCOPE_CHARACTERS);
  assert.deepEqual(readGrantedScopes(""), []);
});

Deno.test("2025-03-26 discovery: the origin's metadata URLs, an issuer of that origin, the default endpoints", () => {
  assert.deepEqual(legacyServerMetadataUrls("https://mcp.example/t/mcp?x=1"), [
    "https://mcp.example/.well-known/oauth-authorization-server",
    "https://mcp.example/.well-known/openid-configuration",
  ]);
  const body = {
    issuer: "https://mcp.example/oauth",
    authorization_endpoint: "https://mcp.example/oauth/authorize",
    token_endpoint: "https://mcp.example/oauth/token",
  };
  const taken = readLegacyServerMetadata(body, "https://mcp.example/mcp");
  assert.equal(typeof taken === "string" ? taken : taken.issuer, body.issuer);
  assert.match(
    readLegacyServerMetadata(
      { ...body, issuer: "https://evil.example" },
      "https://mcp.example/mcp",
    ) as string,
    /names issuer https:\/\/evil\.example, not one of https:\/\/mcp\.example$/,
  );
  const noIssuer = readLegacyServerMetadata(
    { ...body, issuer: 7 },
    "https://mcp.example/mcp",
  );
  assert.match(noIssuer as string, /names no issuer/);
  const defaults = defaultEndpoints("https://mcp.example:8443/a/mcp");
  assert.equal(defaults.issuer, "https://mcp.example:8443");
  assert.equal(
    defaults.authorizationEndpoint,
    "https://mcp.example:8443/authorize",
  );
  assert.equal(defaults.tokenEndpoint, "https://mcp.example:8443/token");
  assert.equal(
    defaults.registrationEndpoint,
    "https://mcp.example:8443/register",
  );
  assert.deepEqual(defaults.codeChallengeMethods, ["S256"]);
  assert.equal(defaults.revocationEndpoint, undefined);
});

Deno.test("withOfflineAccess: added when the AS lists it, to a list that names scopes; never twice", () => {
  assert.deepEqual(
    withOfflineAccess(["mcp:tools"], ["mcp:tools", "offline_access"]),
    ["mcp:tools", "offline_access"],
  );
  assert.deepEqual(withOfflineAccess(["mcp:tools"], ["mcp:tools"]), [
    "mcp:tools",
  ]);
  assert.deepEqual(withOfflineAccess(["mcp:tools"], undefined), ["mcp:tools"]);
  assert.deepEqual(withOfflineAccess([], ["offline_access"]), []);
  assert.deepEqual(
    withOfflineAccess(["offline_access", "a"], ["offline_access"]),
    ["offline_access", "a"],
  );
});
