/**
 * Whole sessions whose remote service with a token goes through
 * `sherlock bridge`, the default delivery: `sherlock run` renders a stdio
 * entry that holds no token, the fake agent starts it as it starts any
 * stdio server, and the bridge reaches the remote MCP server fixture with
 * the token from the broker — a stored secret, or a helper's. A server that
 * refuses the broker's cached token gets a new one: the bridge's forced
 * refresh makes the broker drop it and run the helper again.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { renderedServers } from "../helpers/agent.ts";
import {
  AGENT,
  auditEntries,
  type BrokerHome,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { filesContaining, randomToken } from "../helpers/leaks.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { sh } from "../helpers/shell.ts";
import { sha256, startRemoteMcpServer } from "../fixtures/remote_mcp_server.ts";

/** The variable of a bridge entry that holds the session's capability. */
const CAPABILITY_ENV = "SHERLOCK_SESSION_CAPABILITY";

/** What the fake agent writes to the bridge: a handshake and one call. */
const MESSAGES = [
  {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "fake-agent", version: "1.0.0" },
    },
  },
  { jsonrpc: "2.0", method: "notifications/initialized" },
  {
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "whoami", arguments: {} },
  },
].map((message) => JSON.stringify(message) + "\n").join("");

/** The JSON-RPC answers the bridge printed, by id. */
function answers(stdout: string): Map<number, Record<string, unknown>> {
  const byId = new Map<number, Record<string, unknown>>();
  for (const line of stdout.split("\n")) {
    if (line.trim() === "") continue;
    const message = JSON.parse(line);
    if (typeof message.id === "number") byId.set(message.id, message);
  }
  return byId;
}

/** The text of the `whoami` answer: the SHA-256 of the token it came with. */
function whoami(stdout: string): string {
  const answer = answers(stdout).get(2) as {
    result?: { content?: { text?: string }[] };
  } | undefined;
  const text = answer?.result?.content?.[0]?.text;
  assert.ok(text !== undefined, `no whoami answer in ${stdout}`);
  return text;
}

/** A logged-in HOME with the fake agent. */
async function loggedIn(): Promise<BrokerHome> {
  const home = await createBrokerHome();
  home.addAgent();
  await home.login();
  return home;
}

Deno.test("bridge delivery: a stored secret reaches the remote server through the bridge the agent starts; no file holds it", async () => {
  const token = randomToken();
  await using remote = await startRemoteMcpServer({ token });
  await using home = await loggedIn();
  const set = await home.sherlock(["secret", "set", "docs"], {
    stdin: token,
  });
  assert.equal(set.code, 0, set.stderr);
  home.writeService(
    "docs",
    tokenServiceToml({ name: "docs", source: "secret", url: remote.url }),
  );
  const { result, record } = await home.runAgent({ runServers: MESSAGES });
  assert.equal(result.code, 0, result.stderr);
  const entry = renderedServers(record).docs as {
    command: string;
    args: string[];
    env: Record<string, string>;
  };
  const session = entry.args[entry.args.indexOf("--session") + 1];
  assert.deepEqual(entry.args.slice(entry.args.indexOf("bridge")), [
    "bridge",
    "--socket",
    home.socket,
    "--session",
    session,
    "--agent",
    AGENT,
    "--url",
    remote.url,
    "docs",
  ]);
  assert.deepEqual(Object.keys(entry.env), [CAPABILITY_ENV]);
  // The server got the token, from the bridge the agent started.
  const run = record!.servers!.docs;
  assert.equal(run.code, 0, run.stderr);
  assert.equal(whoami(run.stdout), sha256(token));
  assert.equal(remote.counts.methods["tools/call"], 1);
  assert.equal(remote.counts.unauthorized, 0);
  // Nothing rendered, printed or left behind holds it.
  assert.equal(record!.config!.text!.includes(token), false);
  assert.equal(JSON.stringify(record!.args).includes(token), false);
  assert.equal(JSON.stringify(record!.env).includes(token), false);
  assert.equal(run.stdout.includes(token) || run.stderr.includes(token), false);
  assert.equal(result.stdout.includes(token), false);
  assert.deepEqual(filesContaining(home.root, [token], [home.scratch]), []);
  const served = auditEntries(home).filter((line) =>
    line.event === "token" && line.service === "docs"
  );
  // A token without an expiry is asked for per request, each audited.
  assert.ok(served.length >= 1);
  assert.ok(served.every((line) => line.session === session));
});

Deno.test("bridge delivery: after a 401 the bridge forces a refresh, and the broker drops its cached token for the helper's new one", async () => {
  await using home = await loggedIn();
  const fresh = randomToken();
  // The helper's first token is kept for an hour by the broker; the server
  // accepts only the next one, which the helper prints from its second run.
  // (tokenHelper keeps its runs in <scratch>/docs.runs and its token in
  // <scratch>/docs.token.)
  const counter = join(home.scratch, "docs.runs");
  const tokenFile = join(home.scratch, "docs.token");
  const rotating = home.tokenHelper("docs", {
    expiresIn: 3600,
    before: `if [ "$(wc -l < ${sh(counter)})" -ge 2 ]; then printf %s ${
      sh(fresh)
    } > ${sh(tokenFile)}; fi`,
  });
  const stale = rotating.token;
  await using remote = await startRemoteMcpServer({ token: fresh });
  home.writeService(
    "docs",
    tokenServiceToml({
      name: "docs",
      command: [rotating.path],
      url: remote.url,
    }),
  );
  const { result, record } = await home.runAgent({ runServers: MESSAGES });
  assert.equal(result.code, 0, result.stderr);
  const run = record!.servers!.docs;
  assert.equal(run.code, 0, run.stderr);
  assert.equal(whoami(run.stdout), sha256(fresh));
  assert.equal(rotating.runs(), 2, "one run, one forced run");
  assert.equal(remote.counts.unauthorized, 1, "the stale token, refused once");
  const served = auditEntries(home).filter((line) =>
    line.event === "token" && line.service === "docs"
  );
  assert.deepEqual(served.map((line) => line.cached), [false, false]);
  assert.deepEqual(
    // The test's own helper script (in bin/) prints the fresh one.
    filesContaining(home.root, [fresh, stale], [home.scratch, home.bin]),
    [],
  );
});
