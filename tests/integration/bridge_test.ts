/**
 * `sherlock bridge` as a real process, between the official SDK's stdio
 * client (which spawns it, as an agent does) and a remote MCP server
 * written with the SDK (tests/fixtures/remote_mcp_server.ts), with its
 * tokens from a real, logged-in broker whose credential helper the test
 * controls: the handshake, tools, the server's notifications on the GET
 * stream, a 401 healed by a refresh, a server that refuses every token,
 * the legacy SSE transport, and the end of the session.
 */

import assert from "node:assert/strict";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { join } from "node:path";
import {
  auditEntries,
  type BrokerHome,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { registerSession } from "../../lib/broker/client.ts";
import { CAPABILITY_ENV } from "../../lib/render/servers.ts";
import { randomToken } from "../helpers/leaks.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { sh } from "../helpers/shell.ts";
import { lines, sherlockCommand } from "../helpers/sherlock.ts";
import { waitUntil } from "../helpers/wait.ts";
import {
  INITIALIZE,
  type RawBridge,
  startRawBridge,
} from "../helpers/raw_bridge.ts";
import {
  type RemoteMcpServer,
  type RemoteMcpServerOptions,
  sha256,
  startRemoteMcpServer,
} from "../fixtures/remote_mcp_server.ts";

const SERVICE = "remote";
const SESSION = "s-bridge-test";
const AGENT = "fake";

/** A logged-in broker whose service `remote` gets `tokens` from a helper. */
async function brokerWithService(
  home: BrokerHome,
  url: string,
  helper: { token: string; expiresIn?: number } | { script: string },
): Promise<{ runs: () => number }> {
  let command: string;
  let runs: () => number;
  if ("script" in helper) {
    command = home.writeScript("remote-helper", helper.script);
    runs = () => 0;
  } else {
    const made = home.tokenHelper(SERVICE, helper);
    command = made.path;
    runs = made.runs;
  }
  home.writeService(
    SERVICE,
    tokenServiceToml({ name: SERVICE, url, command: [command] }),
  );
  await home.login();
  // As `sherlock run` does (this process stands in for its sherlock): the
  // bridge presents the session's capability from its entry's env.
  const { capability } = await registerSession({
    socket: home.socket,
    session: SESSION,
    agent: AGENT,
    services: [SERVICE],
    pid: Deno.pid,
  });
  sessionEnv.set(home, { [CAPABILITY_ENV]: capability });
  return { runs };
}

/** The capability variable of each home's registered session. */
const sessionEnv = new WeakMap<BrokerHome, Record<string, string>>();

function bridgeArgs(
  home: BrokerHome,
  url: string,
  extra: string[] = [],
): string[] {
  return [
    "bridge",
    "--socket",
    home.socket,
    "--session",
    SESSION,
    "--agent",
    AGENT,
    "--url",
    url,
    ...extra,
    SERVICE,
  ];
}

/** The SDK's client, connected through a bridge it spawned. */
async function connectClient(
  home: BrokerHome,
  args: string[],
): Promise<{ client: Client; stderr: () => string; notes: string[] }> {
  const [command, ...rest] = sherlockCommand(args);
  const transport = new StdioClientTransport({
    command,
    args: rest,
    env: { ...home.env, ...sessionEnv.get(home) },
    cwd: home.work,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => stderr += String(chunk));
  const client = new Client({ name: "bridge-test", version: "1.0.0" });
  const notes: string[] = [];
  client.setNotificationHandler(
    LoggingMessageNotificationSchema,
    (notification) => {
      notes.push(String(notification.params.data));
    },
  );
  await client.connect(transport);
  return { client, stderr: () => stderr, notes };
}

function textOf(result: unknown): string {
  const content = (result as { content: { type: string; text: string }[] })
    .content;
  return content.map((part) => part.text).join("");
}

/** The bridge's token requests to the broker, from the audit log. */
function tokenRequests(home: BrokerHome): number {
  return auditEntries(home).filter((entry) =>
    entry.session === SESSION && entry.service === SERVICE
  ).length;
}

for (const jsonResponse of [false, true]) {
  Deno.test(
    `bridge: initialize, tools, a server notification on the GET stream, DELETE at the end (${
      jsonResponse ? "JSON" : "SSE"
    } answers)`,
    async () => {
      const token = randomToken();
      await using remote = await startRemoteMcpServer({ token, jsonResponse });
      await using home = await createBrokerHome();
      const helper = await brokerWithService(home, remote.url, {
        token,
        expiresIn: 3600,
      });
      const { client, stderr, notes } = await connectClient(
        home,
        bridgeArgs(home, remote.url),
      );
      try {
        assert.equal(
          client.getServerVersion()?.name,
          "sherlock-remote-test-server",
        );
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((tool) => tool.name).sort(), [
          "echo",
          "whoami",
        ]);
        assert.equal(
          textOf(await client.callTool({ name: "whoami", arguments: {} })),
          sha256(token),
        );
        assert.equal(
          textOf(
            await client.callTool({ name: "echo", arguments: { text: "hé" } }),
          ),
          "hé",
        );
        // The bridge's server/discover probe named 2026-07-28 (the server
        // is a 2025 one); every request after initialize named the
        // session's protocol version.
        const [probe, ...versions] = remote.counts.protocolVersions;
        assert.equal(probe, "2026-07-28");
        assert.equal(remote.counts.methods["server/discover"], 1);
        assert.ok(versions.length >= 3);
        assert.ok(versions.every((version) => version === versions[0]));

        await waitUntil(
          () => remote.counts.getStreams >= 1,
          "the bridge to open the GET stream",
        );
        // The stream may be open on the bridge's side a moment after the
        // server counted it; notify until the message arrives.
        await waitUntil(() => {
          if (notes.length > 0) return true;
          remote.notify("hello from the server");
          return false;
        }, "the server's notification");
        assert.equal(notes[0], "hello from the server");

        // One token from the broker: the bridge kept it (it expires in an hour).
        assert.equal(helper.runs(), 1);
        assert.equal(tokenRequests(home), 1);
      } finally {
        await client.close();
      }
      await waitUntil(() => remote.counts.deletes === 1, "the DELETE");
      assert.equal(remote.counts.unauthorized, 0);
      assert.ok(!stderr().includes(token));
    },
  );
}

Deno.test("bridge: a 401 is healed by one forced refresh and one retry", async () => {
  const stale = randomToken("stale");
  const fresh = randomToken("fresh");
  await using remote = await startRemoteMcpServer({ token: fresh });
  await using home = await createBrokerHome();
  // The helper's first token is refused; every later run prints the good one.
  const marker = join(home.scratch, "helper-ran");
  await brokerWithService(home, remote.url, {
    script: `if [ -e ${sh(marker)} ]; then echo ${sh(fresh)}; else touch ${
      sh(marker)
    }; echo ${sh(stale)}; fi`,
  });
  const { client, stderr } = await connectClient(
    home,
    bridgeArgs(home, remote.url),
  );
  try {
    assert.equal(remote.counts.unauthorized, 1);
    assert.equal(
      textOf(await client.callTool({ name: "whoami", arguments: {} })),
      sha256(fresh),
    );
    assert.equal(remote.counts.unauthorized, 1);
  } finally {
    await client.close();
  }
  assert.ok(!stderr().includes(stale) && !stderr().includes(fresh));
});

/** A bridge spoken to line by line: for what the SDK's client hides. */
function rawBridge(home: BrokerHome, args: string[]): RawBridge {
  return startRawBridge({
    args,
    env: { ...home.env, ...sessionEnv.get(home) },
    cwd: home.work,
  });
}

Deno.test("bridge: a server that refuses every token gets two tries per request; each request is answered with an error naming sherlock auth; the bridge keeps running and exits 0", async () => {
  const token = randomToken();
  await using remote = await startRemoteMcpServer({
    token,
    unauthorizedForever: true,
  });
  await using home = await createBrokerHome();
  await brokerWithService(home, remote.url, { token });
  const bridge = rawBridge(home, bridgeArgs(home, remote.url));
  await bridge.send(INITIALIZE);
  const first = await bridge.receive();
  assert.equal(first.id, 1);
  const error = first.error as { code: number; message: string };
  assert.match(error.message, /sherlock auth remote/);
  assert.equal(remote.counts.unauthorized, 2);

  await bridge.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  await bridge.send({ jsonrpc: "2.0", id: "two", method: "tools/list" });
  const second = await bridge.receive();
  assert.equal(second.id, "two");
  assert.match(
    (second.error as { message: string }).message,
    /sherlock auth remote/,
  );
  const { code, rest, stderr } = await bridge.end();
  assert.equal(code, 0);
  assert.equal(rest, "");
  // Each request's server/discover probe got two tries (the notification
  // between them, with no server reached, was dropped).
  assert.equal(remote.counts.unauthorized, 4);
  assert.equal(remote.counts.requests, 4);
  assert.equal(remote.counts.deletes, 0);
  // The dropped notification is one line on stderr.
  assert.equal(lines(stderr).length, 1, stderr);
  assert.match(stderr, /dropped a notification/);
  assert.ok(!stderr.includes(token));
});

Deno.test("bridge: with no token to be had (no broker), requests are answered with an error naming sherlock auth and the cause", async () => {
  await using remote = await startRemoteMcpServer({ token: randomToken() });
  await using home = await createBrokerHome();
  const args = bridgeArgs(home, remote.url);
  // A private folder, as the runtime folder is, with nothing listening.
  const folder = join(home.scratch, "no-broker");
  Deno.mkdirSync(folder, { mode: 0o700 });
  Deno.chmodSync(folder, 0o700);
  args[args.indexOf("--socket") + 1] = join(folder, "broker.sock");
  sessionEnv.set(home, { [CAPABILITY_ENV]: "0".repeat(64) });
  const bridge = rawBridge(home, args);
  await bridge.send(INITIALIZE);
  const answer = await bridge.receive();
  const error = answer.error as { code: number; message: string };
  assert.match(error.message, /no token for service remote/);
  assert.match(error.message, /broker/);
  assert.match(error.message, /sherlock auth remote/);
  const { code } = await bridge.end();
  assert.equal(code, 0);
  assert.equal(remote.counts.requests, 0);
});

Deno.test("bridge: stdin closed → the remote session is deleted and the bridge exits 0", async () => {
  const token = randomToken();
  await using remote = await startRemoteMcpServer({ token });
  await using home = await createBrokerHome();
  await brokerWithService(home, remote.url, { token, expiresIn: 3600 });
  const bridge = rawBridge(home, bridgeArgs(home, remote.url));
  await bridge.send(INITIALIZE);
  const answer = await bridge.receive();
  assert.ok(answer.result);
  await bridge.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  await waitUntil(() => remote.openSessions() === 1, "the session");
  const { code, rest, stderr } = await bridge.end();
  assert.equal(code, 0);
  assert.equal(rest, "");
  assert.equal(stderr, "");
  assert.equal(remote.counts.deletes, 1);
  assert.equal(remote.openSessions(), 0);
});

Deno.test("bridge: the legacy HTTP+SSE transport, with a deprecation line", async () => {
  const token = randomToken();
  await using remote: RemoteMcpServer = await startRemoteMcpServer(
    { token } satisfies RemoteMcpServerOptions,
  );
  await using home = await createBrokerHome();
  await brokerWithService(home, remote.sseUrl, { token, expiresIn: 3600 });
  const { client, stderr, notes } = await connectClient(
    home,
    bridgeArgs(home, remote.sseUrl, ["--transport", "sse"]),
  );
  try {
    assert.equal(remote.counts.sseStreams, 1);
    assert.equal(
      textOf(await client.callTool({ name: "whoami", arguments: {} })),
      sha256(token),
    );
    assert.ok(remote.counts.ssePosts >= 3);
    await remote.notify("over the legacy stream");
    await waitUntil(() => notes.length > 0, "the server's notification");
    assert.equal(notes[0], "over the legacy stream");
  } finally {
    await client.close();
  }
  assert.equal(remote.counts.unauthorized, 0);
  assert.ok(!stderr().includes(token));
  // Said once per start: the transport is deprecated.
  assert.equal(
    stderr().match(/HTTP\+SSE transport of MCP 2024-11-05, deprecated/g)
      ?.length,
    1,
    stderr(),
  );
});

/**
 * A CA and a certificate for 127.0.0.1 signed by it, made with openssl in
 * `folder`: the certificate and key for `Deno.serve`, the CA's file for
 * DENO_CERT.
 */
async function localCertificate(
  folder: string,
): Promise<{ cert: string; key: string; caFile: string }> {
  Deno.mkdirSync(folder, { recursive: true });
  const at = (name: string) => join(folder, name);
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
  Deno.writeTextFileSync(
    at("ext"),
    "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
  );
  for (
    const args of [
      ["req", "-x509", ...ec, "-nodes", "-days", "1", "-subj", "/CN=test-ca"]
        .concat(["-keyout", at("ca.key"), "-out", at("ca.pem")]),
      ["req", ...ec, "-nodes", "-subj", "/CN=127.0.0.1"]
        .concat(["-keyout", at("key.pem"), "-out", at("leaf.csr")]),
      ["x509", "-req", "-in", at("leaf.csr"), "-CA", at("ca.pem")]
        .concat(["-CAkey", at("ca.key"), "-CAcreateserial", "-days", "1"])
        .concat(["-extfile", at("ext"), "-out", at("cert.pem")]),
    ]
  ) {
    const made = await new Deno.Command("openssl", {
      args,
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.equal(made.code, 0, new TextDecoder().decode(made.stderr));
  }
  return {
    cert: Deno.readTextFileSync(at("cert.pem")),
    key: Deno.readTextFileSync(at("key.pem")),
    caFile: at("ca.pem"),
  };
}

/** A server on 127.0.0.1 that records the headers of every request. */
function recordingServer(
  answer: (request: Request, url: URL) => Response,
): { url: string; seen: Headers[]; [Symbol.asyncDispose](): Promise<void> } {
  const seen: Headers[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      seen.push(request.headers);
      await request.body?.cancel();
      return answer(request, new URL(request.url));
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    seen,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

Deno.test("bridge: a redirect to another origin is not followed, so the token (a custom header, or Authorization) never reaches it; the agent's request gets an error saying why; a redirect within the origin is followed", async (t) => {
  const token = randomToken();
  // Another port on 127.0.0.1 is another origin.
  await using elsewhere = recordingServer(() =>
    Response.json({ jsonrpc: "2.0", id: 1, result: { stolen: true } })
  );
  await using remote = recordingServer((request, url) => {
    if (url.pathname === "/away") {
      return new Response(null, {
        status: 307,
        headers: { location: `${elsewhere.url}/mcp` },
      });
    }
    if (url.pathname === "/moved") {
      return new Response(null, { status: 308, headers: { location: "/mcp" } });
    }
    return Response.json({
      jsonrpc: "2.0",
      id: 1,
      result: { method: request.method, key: request.headers.get("x-api-key") },
    });
  });
  await using home = await createBrokerHome();
  await brokerWithService(home, `${remote.url}/mcp`, { token });
  const tokenArgs = [
    "--token-header",
    "X-Api-Key",
    "--token-format",
    "{token}",
  ];

  for (
    const [name, extra] of [
      ["X-Api-Key", tokenArgs],
      ["Authorization", []],
    ] as const
  ) {
    await t.step(`to another origin, the token in ${name}`, async () => {
      elsewhere.seen.length = 0;
      const bridge = rawBridge(
        home,
        bridgeArgs(home, `${remote.url}/away`, [...extra]),
      );
      await bridge.send(INITIALIZE);
      const answer = await bridge.receive();
      const { code, stderr } = await bridge.end();
      assert.equal(code, 0);
      assert.ok(!stderr.includes(token));
      for (const headers of elsewhere.seen) {
        const values = [...headers.values()];
        assert.ok(
          !values.some((value) => value.includes(token)),
          `the token reached the other origin in ${name}`,
        );
      }
      assert.equal(elsewhere.seen.length, 0, "the other origin was asked");
      assert.equal(answer.id, 1);
      const error = answer.error as { code: number; message: string };
      assert.ok(error, JSON.stringify(answer));
      assert.match(
        error.message,
        new RegExp(
          `redirected the request to ${elsewhere.url} \\(HTTP 307\\); sherlock sends the token only to ${remote.url}`,
        ),
      );
    });
  }

  await t.step("from https to http (same host)", async () => {
    // A certificate for 127.0.0.1 from a CA of the test's own, which the
    // bridge trusts through DENO_CERT; the https server redirects to http.
    const tls = await localCertificate(join(home.scratch, "tls"));
    const secure = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      onListen() {},
      cert: tls.cert,
      key: tls.key,
    }, async (request) => {
      await request.body?.cancel();
      return new Response(null, {
        status: 308,
        headers: { location: `${elsewhere.url}/mcp` },
      });
    });
    try {
      const url = `https://127.0.0.1:${secure.addr.port}/mcp`;
      const bridge = startRawBridge({
        args: bridgeArgs(home, url, tokenArgs),
        env: {
          ...home.env,
          ...sessionEnv.get(home),
          DENO_CERT: tls.caFile,
        },
        cwd: home.work,
      });
      await bridge.send(INITIALIZE);
      const answer = await bridge.receive();
      const error = answer.error as { code: number; message: string };
      assert.ok(error, JSON.stringify(answer));
      assert.match(
        error.message,
        new RegExp(
          `redirected the request to ${elsewhere.url} \\(HTTP 308\\); sherlock sends the token only to https://127\\.0\\.0\\.1:${secure.addr.port}`,
        ),
      );
      assert.equal((await bridge.end()).code, 0);
      assert.equal(elsewhere.seen.length, 0, "the http origin was asked");
    } finally {
      await secure.shutdown();
    }
  });

  await t.step("within the origin: followed, with the token", async () => {
    const bridge = rawBridge(
      home,
      bridgeArgs(home, `${remote.url}/moved`, tokenArgs),
    );
    await bridge.send(INITIALIZE);
    const answer = await bridge.receive();
    assert.deepEqual(answer.result, { method: "POST", key: token });
    const { code } = await bridge.end();
    assert.equal(code, 0);
    assert.equal(elsewhere.seen.length, 0);
  });
});
