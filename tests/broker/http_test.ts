/**
 * The daemon's HTTP surface from raw socket clients: malformed HTTP,
 * invalid or wrongly typed JSON, unknown paths, wrong methods, bodies over
 * the limit (honest, chunked, lying), clients that stall. Every such
 * request gets a 4xx with a JSON error body, and the daemon keeps
 * answering.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { MAX_BODY_BYTES } from "../../lib/broker/protocol.ts";
import { registerSession } from "../../lib/broker/client.ts";
import { type BrokerHome, createBrokerHome } from "../helpers/broker_home.ts";
import { rawExchange } from "../helpers/socket_http.ts";

/** A request with a JSON (or any) body and an honest Content-Length. */
function post(path: string, body: string, method = "POST"): string {
  return `${method} ${path} HTTP/1.1\r\nHost: sherlock\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${
      new TextEncoder().encode(body).length
    }\r\n\r\n${body}`;
}

function get(path: string, method = "GET"): string {
  return `${method} ${path} HTTP/1.1\r\nHost: sherlock\r\n\r\n`;
}

/** Sends one raw request; asserts a 4xx JSON error and a healthy daemon. */
async function assertRefused(
  home: BrokerHome,
  name: string,
  request: string | Uint8Array,
  expected: { status: number; code: string; closeWrite?: boolean },
): Promise<void> {
  const answer = await rawExchange(home.socket, request, expected);
  assert.equal(answer.status, expected.status, `${name}: ${answer.text}`);
  const error =
    (answer.json as { error?: { code?: unknown; message?: unknown } })
      ?.error;
  assert.equal(error?.code, expected.code, `${name}: ${answer.text}`);
  assert.equal(typeof error?.message, "string", name);
  assert.ok((error!.message as string).length > 0, name);
  assert.match(answer.text, /\r\ncontent-type: application\/json\r\n/, name);
  assert.ok(await home.health(), `${name}: the daemon still answers`);
}

/**
 * For each `[what, session, agent]`, a `POST /v1/token` and a
 * `POST /v1/tokens` with them, and the answer `expected`.
 */
function badCallers<T>(
  cases: [string, string, string][],
  expected: T,
): [string, string, T][] {
  // Session and agent reach the audit log through a session's registration.
  return cases.map(([what, session, agent]): [string, string, T] => [
    `sessions: ${what}`,
    post(
      "/v1/sessions",
      JSON.stringify({ session, agent, services: ["github"], pid: Deno.pid }),
    ),
    expected,
  ]);
}

Deno.test("malformed requests get a JSON 4xx and the daemon goes on", async () => {
  await using home = await createBrokerHome();
  const start = await home.sherlock(["broker", "start"]);
  assert.equal(start.code, 0);
  const health = await home.health();
  assert.ok(health);
  // A registered session (this process stands in for its sherlock), so
  // that the valid requests below are refused for the login only.
  const { capability } = await registerSession({
    socket: home.socket,
    session: "s",
    agent: "a",
    services: ["github"],
    pid: Deno.pid,
  });
  const token = JSON.stringify({ service: "github", capability });
  const bad = { status: 400, code: "bad_request" };
  const cases: [
    string,
    string | Uint8Array,
    { status: number; code: string },
  ][] = [
    ["garbage", "GARBAGE\r\n\r\n", bad],
    ["not HTTP, one line", "hello world\n", bad],
    [
      "binary",
      crypto.getRandomValues(new Uint8Array(64)).map((b) => b | 1),
      bad,
    ],
    ["HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", bad],
    ["lowercase method", "get /v1/health HTTP/1.1\r\n\r\n", bad],
    ["absolute URL", "GET http://x/v1/health HTTP/1.1\r\n\r\n", bad],
    ["bad header", "GET /v1/health HTTP/1.1\r\nno colon here\r\n\r\n", bad],
    ["NUL in a header", "GET /v1/health HTTP/1.1\r\nX: a\0b\r\n\r\n", bad],
    [
      "header too large",
      `GET /v1/health HTTP/1.1\r\nX: ${"a".repeat(20_000)}\r\n\r\n`,
      { status: 431, code: "bad_request" },
    ],
    [
      "bad Content-Length",
      "POST /v1/token HTTP/1.1\r\nContent-Length: ten\r\n\r\n",
      bad,
    ],
    [
      "conflicting Content-Length",
      "POST /v1/token HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
      bad,
    ],
    [
      "Content-Length and chunked",
      "POST /v1/token HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
      bad,
    ],
    [
      "gzip transfer encoding",
      "POST /v1/token HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
      bad,
    ],
    [
      "bad chunk",
      "POST /v1/token HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n",
      bad,
    ],
    ["invalid JSON", post("/v1/token", "{service: github}"), bad],
    ["not UTF-8", post("/v1/token", '"\xff"'), bad],
    ["empty body", post("/v1/token", ""), bad],
    ["JSON array", post("/v1/token", "[]"), bad],
    ["JSON string", post("/v1/token", '"github"'), bad],
    ["JSON number", post("/v1/token", "42"), bad],
    ["JSON null", post("/v1/token", "null"), bad],
    [
      "service not a string",
      post(
        "/v1/token",
        JSON.stringify({ service: 42, session: "s", agent: "a" }),
      ),
      bad,
    ],
    [
      "session missing",
      post("/v1/token", JSON.stringify({ service: "github", agent: "a" })),
      bad,
    ],
    // The audit log records session and agent: ids and names only.
    ...badCallers([
      ["session with a terminal escape", "s\x1b[2J", "a"],
      ["session with a newline", "s\nforged line", "a"],
      ["session of 400 KB", "s".repeat(400_000), "a"],
      ["agent with a C1 control", "s", "a\u009b31m"],
      ["agent with a space", "s", "a b"],
      ["agent of 65 characters", "s", "a".repeat(65)],
    ], bad),
    [
      "service not a name",
      post(
        "/v1/token",
        JSON.stringify({ service: "../x", session: "s", agent: "a" }),
      ),
      bad,
    ],
    [
      "tokens: services not a list",
      post(
        "/v1/tokens",
        JSON.stringify({ services: "github", session: "s", agent: "a" }),
      ),
      bad,
    ],
    [
      "tokens: a service not a name",
      post(
        "/v1/tokens",
        JSON.stringify({ services: ["ok", "../x"], session: "s", agent: "a" }),
      ),
      bad,
    ],
    [
      "tokens: a service twice",
      post(
        "/v1/tokens",
        JSON.stringify({ services: ["a", "a"], session: "s", agent: "a" }),
      ),
      bad,
    ],
    [
      "tokens: too many services",
      post(
        "/v1/tokens",
        JSON.stringify({
          services: Array.from({ length: 257 }, (_, i) => `s${i}`),
          session: "s",
          agent: "a",
        }),
      ),
      bad,
    ],
    ["passphrase not a string", post("/v1/login", '{"passphrase": 5}'), bad],
    [
      "create not a boolean",
      post("/v1/login", '{"passphrase": "p", "create": "yes"}'),
      bad,
    ],
    [
      "secret value not a string",
      post("/v1/secrets/github", '{"value": ["x"]}', "PUT"),
      bad,
    ],
    [
      "secret name not a name",
      post("/v1/secrets/A%20B", '{"value": "x"}', "PUT"),
      bad,
    ],
    [
      "secret name bad percent-encoding",
      post("/v1/secrets/%E0%A4%A", '{"value": "x"}', "PUT"),
      bad,
    ],
    ["unknown path", get("/v2/health"), { status: 404, code: "not_found" }],
    ["root", get("/"), { status: 404, code: "not_found" }],
    ["near miss", get("/v1/healthz"), { status: 404, code: "not_found" }],
    [
      "POST health",
      post("/v1/health", "{}"),
      { status: 405, code: "method_not_allowed" },
    ],
    ["GET token", get("/v1/token"), {
      status: 405,
      code: "method_not_allowed",
    }],
    [
      "DELETE whoami",
      get("/v1/whoami", "DELETE"),
      { status: 405, code: "method_not_allowed" },
    ],
    [
      "GET a secret",
      get("/v1/secrets/github"),
      { status: 405, code: "method_not_allowed" },
    ],
    [
      "TRACE",
      get("/v1/health", "TRACE"),
      { status: 405, code: "method_not_allowed" },
    ],
    // Valid requests that need a login: refused as such, not as malformed.
    ["token while locked", post("/v1/token", token), {
      status: 401,
      code: "not_logged_in",
    }],
    [
      "tokens while locked, even none",
      post(
        "/v1/tokens",
        JSON.stringify({ services: [], capability }),
      ),
      { status: 401, code: "not_logged_in" },
    ],
    ["secrets while locked", get("/v1/secrets"), {
      status: 401,
      code: "not_logged_in",
    }],
  ];
  for (const [name, request, expected] of cases) {
    await assertRefused(home, name, request, expected);
  }
  // The same daemon answered throughout, and logged no internal error.
  assert.equal((await home.health())?.pid, health.pid);
  const log = Deno.readTextFileSync(
    join(home.stateHome, "sherlock", "broker.log"),
  );
  assert.doesNotMatch(log, /internal error/);
});

Deno.test("bodies over the limit: honest, chunked or lying lengths get a 4xx at once", async () => {
  await using home = await createBrokerHome();
  await home.sherlock(["broker", "start"]);
  const big = "x".repeat(MAX_BODY_BYTES + 1);
  const tooLarge = { status: 413, code: "too_large" };
  // Announced honestly: refused before the body is read.
  await assertRefused(
    home,
    "honest length, no body sent",
    `POST /v1/token HTTP/1.1\r\nContent-Length: ${big.length}\r\n\r\n`,
    tooLarge,
  );
  await assertRefused(
    home,
    "honest length, whole body",
    post("/v1/token", JSON.stringify({ service: big })),
    tooLarge,
  );
  await assertRefused(
    home,
    "huge length",
    "POST /v1/login HTTP/1.1\r\nContent-Length: 99999999999999\r\n\r\n",
    tooLarge,
  );
  // Chunked: counted as it comes.
  const chunk = "a".repeat(16 * 1024);
  const chunks = Math.ceil((MAX_BODY_BYTES + 1) / chunk.length);
  await assertRefused(
    home,
    "chunked over the limit",
    "POST /v1/token HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
      `${chunk.length.toString(16)}\r\n${chunk}\r\n`.repeat(chunks) +
      "0\r\n\r\n",
    tooLarge,
  );
  await assertRefused(
    home,
    "one chunk announced over the limit",
    "POST /v1/token HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
      `${(MAX_BODY_BYTES + 1).toString(16)}\r\nabc`,
    tooLarge,
  );
  // A length smaller than what follows: the rest is not a second request.
  await assertRefused(
    home,
    "lying length, more sent",
    `POST /v1/token HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}${big}`,
    { status: 400, code: "bad_request" },
  );
  // A body that ends before its length: the client closed its side.
  await assertRefused(
    home,
    "lying length, less sent",
    `POST /v1/token HTTP/1.1\r\nContent-Length: 100\r\n\r\n{}`,
    { status: 400, code: "bad_request", closeWrite: true },
  );
  await assertRefused(
    home,
    "head cut short",
    "GET /v1/health HTTP/1.1\r\nHost: x\r\n",
    { status: 400, code: "bad_request", closeWrite: true },
  );
});

Deno.test("a client that stalls gets 408, and others are served meanwhile", async () => {
  await using home = await createBrokerHome();
  await home.sherlock(["broker", "start"]);
  // Announces 100 bytes, sends 2, keeps the connection open.
  const stalled = await Deno.connect({ transport: "unix", path: home.socket });
  try {
    await stalled.write(
      new TextEncoder().encode(
        "POST /v1/token HTTP/1.1\r\nContent-Length: 100\r\n\r\n{}",
      ),
    );
    const head = await Deno.connect({ transport: "unix", path: home.socket });
    await head.write(new TextEncoder().encode("GET /v1/health HTTP/1.1\r\n"));
    // Other clients are not held up by the stalled ones.
    for (let index = 0; index < 5; index++) {
      assert.ok(await home.health());
    }
    for (const connection of [stalled, head]) {
      const text = await readToEnd(connection);
      assert.match(text, /^HTTP\/1\.1 408 /);
      assert.match(text, /"code":"timeout"/);
    }
    head.close();
  } finally {
    stalled.close();
  }
  assert.ok(await home.health());
});

Deno.test("many bad connections at once do not stop the daemon", async () => {
  await using home = await createBrokerHome();
  await home.sherlock(["broker", "start"]);
  const health = await home.health();
  assert.ok(health);
  const answers = await Promise.all(
    Array.from({ length: 50 }, (_, index) =>
      rawExchange(
        home.socket,
        index % 2 ? "GARBAGE\r\n\r\n" : post("/v1/token", "[1, 2, 3]"),
      )),
  );
  for (const answer of answers) assert.equal(answer.status, 400);
  // Connections that close without a byte are not an error either.
  for (let index = 0; index < 20; index++) {
    (await Deno.connect({ transport: "unix", path: home.socket })).close();
  }
  assert.equal((await home.health())?.pid, health.pid);
  const whoami = await home.sherlock(["whoami"]);
  assert.equal(whoami.code, 77);
});

async function readToEnd(connection: Deno.Conn): Promise<string> {
  const chunks: number[] = [];
  const buffer = new Uint8Array(4096);
  while (true) {
    const count = await connection.read(buffer);
    if (count === null) break;
    chunks.push(...buffer.subarray(0, count));
  }
  return new TextDecoder().decode(new Uint8Array(chunks));
}
