/**
 * Sessions the broker can verify (lib/broker/daemon/sessions.ts), against a
 * real daemon on its real socket: a token goes only to a session that
 * registered and is still alive, only for its own services; the audit log
 * names the session and agent that registered, never what a request
 * claims; an ended session's capability, and that of a sherlock that was
 * SIGKILLed, get nothing; secret set/rm, logout and shutdown are audited.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startWaitingSession } from "../helpers/agent.ts";
import {
  AGENT,
  auditEntries,
  type BrokerHome,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { isAlive } from "../helpers/daemon_processes.ts";
import { unixHttpRequest } from "../../lib/runtime/unix_http.ts";
import { waitUntil } from "../helpers/wait.ts";

/** The variable of a shim entry that holds the session's capability. */
const CAPABILITY_ENV = "SHERLOCK_SESSION_CAPABILITY";

/** One request to the daemon, as any process of this user could send it. */
async function call(
  home: BrokerHome,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const answer = await unixHttpRequest({
    socket: home.socket,
    method,
    path,
    body,
    timeoutMs: 60_000,
  });
  return {
    status: answer.status,
    body: (answer.body ?? {}) as Record<string, unknown>,
  };
}

/** The error code of an answer. */
function codeOf(answer: { body: Record<string, unknown> }): unknown {
  return (answer.body.error as { code?: unknown } | undefined)?.code;
}

/** A logged-in home with the command services `api` and `other`. */
async function twoServiceHome() {
  const home = await createBrokerHome();
  try {
    const api = home.addHelperService("api");
    const other = home.addHelperService("other");
    await home.login();
    return { home, api, other };
  } catch (error) {
    await home[Symbol.asyncDispose]();
    throw error;
  }
}

/** Registers a session; asserts 200 and returns its capability. */
async function register(
  home: BrokerHome,
  spec: { session: string; services: string[]; pid?: number; agent?: string },
): Promise<string> {
  const answer = await call(home, "POST", "/v1/sessions", {
    session: spec.session,
    agent: spec.agent ?? AGENT,
    services: spec.services,
    pid: spec.pid ?? Deno.pid,
  });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const capability = answer.body.capability as string;
  assert.match(capability, /^[0-9a-f]{64}$/, "256 random bits, hex");
  return capability;
}

Deno.test("a made-up session gets no token: 401 unknown_session, and the helper never runs", async () => {
  const { home, api } = await twoServiceHome();
  await using _ = home;
  const claims = { session: "0123456789ab", agent: AGENT };
  const answers = [
    await call(home, "POST", "/v1/token", { service: "api", ...claims }),
    await call(home, "POST", "/v1/token", {
      service: "api",
      capability: "f".repeat(64),
      ...claims,
    }),
    await call(home, "POST", "/v1/tokens", {
      services: ["api"],
      capability: "0".repeat(64),
      ...claims,
    }),
  ];
  for (const answer of answers) {
    assert.ok(
      answer.status === 401 || answer.status === 400,
      JSON.stringify(answer.body),
    );
    assert.equal(JSON.stringify(answer.body).includes(api.token), false);
  }
  assert.equal(answers[1].status, 401);
  assert.equal(codeOf(answers[1]), "unknown_session");
  assert.equal(codeOf(answers[2]), "unknown_session");
  assert.equal(api.runs(), 0, "no token was fetched");
  // Audited as refused, with none of the caller's claims.
  const refused = auditEntries(home).filter((entry) =>
    entry.event === "token_failed"
  );
  assert.equal(refused.length, 2);
  for (const entry of refused) {
    assert.equal(entry.reason, "unknown_session");
    assert.equal(entry.service, "api");
    assert.equal(entry.session, undefined);
    assert.equal(entry.agent, undefined);
  }
});

Deno.test("a registered session gets its own services' tokens, and no other's (403)", async () => {
  const { home, api, other } = await twoServiceHome();
  await using _ = home;
  const capability = await register(home, {
    session: "aaaaaaaaaaaa",
    services: ["api"],
  });
  const own = await call(home, "POST", "/v1/token", {
    service: "api",
    capability,
  });
  assert.equal(own.status, 200, JSON.stringify(own.body));
  assert.equal(own.body.token, api.token);

  const outside = await call(home, "POST", "/v1/token", {
    service: "other",
    capability,
  });
  assert.equal(outside.status, 403);
  assert.equal(codeOf(outside), "service_not_in_session");
  const batch = await call(home, "POST", "/v1/tokens", {
    services: ["api", "other"],
    capability,
  });
  assert.equal(batch.status, 200);
  const results = batch.body.results as Record<string, unknown>[];
  assert.equal(results[0].token, api.token);
  assert.equal(
    (results[1].error as { code: string; status: number }).code,
    "service_not_in_session",
  );
  assert.equal((results[1].error as { status: number }).status, 403);
  assert.equal(other.runs(), 0, "the other service's helper never ran");
  assert.equal(JSON.stringify(batch.body).includes(other.token), false);
  assert.ok(
    auditEntries(home).some((entry) =>
      entry.event === "token_failed" && entry.service === "other" &&
      entry.reason === "service_not_in_session" &&
      entry.session === "aaaaaaaaaaaa" && entry.agent === AGENT
    ),
  );
});

Deno.test("the audit log names the registered agent and session, whatever the request claims", async () => {
  const { home } = await twoServiceHome();
  await using _ = home;
  const capability = await register(home, {
    session: "bbbbbbbbbbbb",
    services: ["api"],
  });
  const answer = await call(home, "POST", "/v1/token", {
    service: "api",
    capability,
    session: "forged-session",
    agent: "claimed-agent",
  });
  assert.equal(answer.status, 200);
  const entries = auditEntries(home);
  const start = entries.find((entry) => entry.event === "session_start");
  assert.ok(start, JSON.stringify(entries));
  assert.equal(start.agent, AGENT);
  assert.equal(start.session, "bbbbbbbbbbbb");
  assert.equal(start.pid, Deno.pid);
  assert.deepEqual(start.services, ["api"]);
  // What registered, as the daemon read it, not as anyone said.
  assert.equal(start.exe, Deno.realPathSync(Deno.execPath()));
  const served = entries.filter((entry) => entry.event === "token");
  assert.equal(served.length, 1);
  assert.equal(served[0].agent, AGENT);
  assert.equal(served[0].session, "bbbbbbbbbbbb");
  const text = Deno.readTextFileSync(
    join(home.stateHome, "sherlock", "audit.log"),
  );
  assert.equal(text.includes("forged-session"), false);
  assert.equal(text.includes("claimed-agent"), false);
  assert.equal(text.includes(capability), false, "never the capability");
});

Deno.test("an ended session's capability gets nothing; only its own capability ends it", async () => {
  const { home, api } = await twoServiceHome();
  await using _ = home;
  const capability = await register(home, {
    session: "cccccccccccc",
    services: ["api"],
  });
  const other = await register(home, {
    session: "dddddddddddd",
    services: ["api"],
  });
  // Another session's capability does not end this one.
  const wrong = await call(home, "DELETE", "/v1/sessions/cccccccccccc", {
    capability: other,
  });
  assert.deepEqual(wrong.body, { ended: false });
  const token = () =>
    call(home, "POST", "/v1/token", { service: "api", capability });
  assert.equal((await token()).status, 200);

  const end = await call(home, "DELETE", "/v1/sessions/cccccccccccc", {
    capability,
  });
  assert.deepEqual(end.body, { ended: true });
  const after = await token();
  assert.equal(after.status, 401);
  assert.equal(codeOf(after), "unknown_session");
  assert.equal(JSON.stringify(after.body).includes(api.token), false);
  const again = await call(home, "DELETE", "/v1/sessions/cccccccccccc", {
    capability,
  });
  assert.deepEqual(again.body, { ended: false });
  // The other session is untouched.
  const still = await call(home, "POST", "/v1/token", {
    service: "api",
    capability: other,
  });
  assert.equal(still.status, 200);
});

Deno.test("a session whose process is gone gets nothing; a dead or foreign pid cannot register", async () => {
  const { home } = await twoServiceHome();
  await using _ = home;
  const child = new Deno.Command("sleep", { args: ["600"] }).spawn();
  let capability: string;
  try {
    capability = await register(home, {
      session: "eeeeeeeeeeee",
      services: ["api"],
      pid: child.pid,
    });
    const alive = await call(home, "POST", "/v1/token", {
      service: "api",
      capability,
    });
    assert.equal(alive.status, 200);
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
  const gone = await call(home, "POST", "/v1/token", {
    service: "api",
    capability,
  });
  assert.equal(gone.status, 401);
  assert.equal(codeOf(gone), "unknown_session");

  const health = await home.health();
  const refusals = [
    { pid: child.pid },
    { pid: 1 },
    { pid: health!.pid },
    { pid: -5 },
    { pid: "1234" },
  ];
  for (const refusal of refusals) {
    const answer = await call(home, "POST", "/v1/sessions", {
      session: "ffffffffffff",
      agent: AGENT,
      services: ["api"],
      ...refusal,
    });
    assert.equal(answer.status, 400, JSON.stringify(refusal));
    assert.equal(codeOf(answer), "bad_request");
  }
  // One live registration per session id.
  await register(home, { session: "ffffffffffff", services: ["api"] });
  const twice = await call(home, "POST", "/v1/sessions", {
    session: "ffffffffffff",
    agent: AGENT,
    services: ["api"],
    pid: Deno.pid,
  });
  assert.equal(twice.status, 400);
});

Deno.test("a SIGKILLed sherlock's capability works while it lives, and is refused once its pid is gone", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  const api = home.addHelperService("api");
  Deno.writeTextFileSync(
    join(home.configHome, "sherlock", "config.toml"),
    '[render]\ntokens = "shim"\n',
  );
  await home.login();
  await using session = await startWaitingSession(home, ["run", AGENT], {
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const rendered = JSON.parse(session.started.config!.text!).mcpServers.api;
  const capability = rendered.env[CAPABILITY_ENV] as string;
  assert.match(capability ?? "", /^[0-9a-f]{64}$/, JSON.stringify(rendered));
  assert.equal(
    (rendered.args as string[]).some((arg) => arg.includes(capability)),
    false,
    "the capability is not in argv",
  );
  const token = () =>
    call(home, "POST", "/v1/token", { service: "api", capability });
  const live = await token();
  assert.equal(live.status, 200);
  assert.equal(live.body.token, api.token);

  session.sherlock.kill("SIGKILL");
  await session.sherlock.exited;
  await waitUntil(() => !isAlive(session.sherlock.pid), "sherlock to be gone");
  const dead = await token();
  assert.equal(dead.status, 401);
  assert.equal(codeOf(dead), "unknown_session");
});

Deno.test("secret set and rm (names only), logout and shutdown are audited", async () => {
  await using home = await createBrokerHome();
  await home.login();
  const value = `secret-${crypto.randomUUID()}`;
  assert.equal(
    (await home.sherlock(["secret", "set", "api"], { stdin: value })).code,
    0,
  );
  assert.equal((await home.sherlock(["secret", "rm", "api"])).code, 0);
  await home.sherlock(["secret", "rm", "api"]);
  assert.equal((await home.sherlock(["logout"])).code, 0);
  assert.equal((await home.sherlock(["broker", "stop"])).code, 0);
  const events = auditEntries(home).map((entry) =>
    [entry.event, entry.service, entry.reason].filter((part) => part)
      .join(":")
  );
  assert.deepEqual(events, [
    "login",
    "secret_set:api",
    "secret_rm:api",
    "secret_rm:api:no_secret",
    "logout",
    "shutdown",
  ]);
  const text = Deno.readTextFileSync(
    join(home.stateHome, "sherlock", "audit.log"),
  );
  assert.equal(text.includes(value), false, "never the secret's value");
});
