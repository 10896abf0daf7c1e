/**
 * Credential helpers (`[token] source = "command"`) run by a real daemon
 * for real `sherlock run` sessions: failures, time limits, processes left
 * holding the helper's pipes, junk output, expiry and re-fetching, and one
 * run per service however many sessions ask at once. Helpers count their
 * runs in a file; nothing here depends on how long anything takes.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { renderedServers } from "../helpers/agent.ts";
import {
  auditEntries,
  type BrokerHome,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { isAlive } from "../helpers/daemon_processes.ts";
import { countLines } from "../helpers/files.ts";
import { randomToken } from "../helpers/leaks.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { sh } from "../helpers/shell.ts";
import { lines } from "../helpers/sherlock.ts";
import { waitUntil } from "../helpers/wait.ts";

/** A logged-in HOME with the fake agent. */
async function loggedIn(): Promise<BrokerHome> {
  const home = await createBrokerHome();
  home.addAgent();
  await home.login();
  return home;
}

/** One service whose helper is the given script body. */
function helperService(
  home: BrokerHome,
  name: string,
  body: string,
  options: { timeout?: number } = {},
): string {
  const path = home.writeScript(`${name}-helper`, body);
  home.writeService(
    name,
    tokenServiceToml({ name, command: [path], timeout: options.timeout }),
  );
  return path;
}

Deno.test("--strict, a failing helper: exit 69 with its stderr and the service's name, never its stdout", async () => {
  await using home = await loggedIn();
  const printed = randomToken("ghp");
  helperService(
    home,
    "failing",
    `echo ${printed}\necho "boom" >&2\nexit 3`,
  );
  const { result, record } = await home.runAgent({ runOptions: ["--strict"] });
  assert.equal(result.code, 69, result.stderr);
  assert.equal(record, undefined, "the agent is not started");
  assert.equal(lines(result.stderr).length, 1);
  assert.match(result.stderr, /service failing/);
  assert.match(result.stderr, /exited with 3: boom/);
  for (const text of [result.stdout, result.stderr]) {
    assert.equal(text.includes(printed), false);
  }
  const logs = [
    join(home.stateHome, "sherlock", "audit.log"),
    join(home.stateHome, "sherlock", "broker.log"),
  ].map((path) => Deno.readTextFileSync(path)).join("\n");
  assert.equal(logs.includes(printed), false);
  const failed = auditEntries(home).find((entry) =>
    entry.event === "token_failed"
  );
  assert.equal(failed?.service, "failing");
  assert.equal(failed?.reason, "helper_failed");
});

Deno.test("--strict, a helper past its [token] timeout is stopped with its children; the daemon is fine", async () => {
  await using home = await loggedIn();
  const pids = join(home.scratch, "hang.pids");
  home.killAtEnd(pids);
  helperService(
    home,
    "hang",
    `echo $$ >> ${sh(pids)}\nsleep 600 &\necho $! >> ${
      sh(pids)
    }\nwait\necho tok_never`,
    { timeout: 1 },
  );
  const before = await home.health();
  const { result, record } = await home.runAgent({ runOptions: ["--strict"] });
  assert.equal(result.code, 69, result.stderr);
  assert.equal(record, undefined);
  assert.equal(lines(result.stderr).length, 1);
  assert.match(
    result.stderr,
    /service hang .* did not finish within 1 s and was stopped; raise \[token\] timeout/,
  );
  for (const pid of lines(Deno.readTextFileSync(pids)).map(Number)) {
    await waitUntil(() => !isAlive(pid), `helper process ${pid} to be gone`);
  }
  assert.equal((await home.health())?.pid, before?.pid);
  assert.equal((await home.sherlock(["whoami"])).code, 0);
});

Deno.test("a grandchild in its own session holding the pipe cannot hold the request", async () => {
  await using home = await loggedIn();
  const grandchild = join(home.scratch, "grandchild.pid");
  home.killAtEnd(grandchild);
  const detach = `setsid sh -c 'echo $$ >> ${
    sh(grandchild)
  }; exec sleep 600' &`;
  // Out of time, with the grandchild still writing nowhere.
  helperService(home, "stuck", `${detach}\nsleep 600`, { timeout: 1 });
  const stuck = await home.runAgent({ runOptions: ["--strict"] });
  assert.equal(stuck.result.code, 69, stuck.result.stderr);
  assert.match(stuck.result.stderr, /did not finish within 1 s/);
  await waitUntil(() => countLines(grandchild) === 1, "the grandchild's pid");
  assert.equal(
    isAlive(Number(Deno.readTextFileSync(grandchild).trim())),
    true,
    "the grandchild outlived the helper, holding its pipes",
  );

  // Successful, with the grandchild left behind: the token is served.
  Deno.removeSync(join(home.servicesDir, "stuck.toml"));
  const token = randomToken();
  helperService(home, "leaves", `${detach}\necho ${token}`, { timeout: 60 });
  const leaves = await home.runAgent();
  assert.equal(leaves.result.code, 0, leaves.result.stderr);
  assert.deepEqual(renderedServers(leaves.record).leaves.env, {
    LEAVES_TOKEN: token,
  });
  assert.ok(await home.health());
});

Deno.test("--strict, helpers that print junk, or an expired token: a clear error that never quotes it", async () => {
  await using home = await loggedIn();
  const pid = (await home.health())?.pid;
  const secret = randomToken("leak");
  const cases: [string, string, RegExp][] = [
    ["two words", `echo "${secret} second"`, /printed more than one word/],
    ["two lines", `printf '%s\\n%s\\n' ${secret} more`, /more than one word/],
    ["invalid JSON", `echo '{"token": "${secret}"'`, /printed invalid JSON/],
    [
      "JSON without token",
      `echo '{"access_token": "${secret}"}'`,
      /printed JSON without a string "token"/,
    ],
    ["token not a string", `echo '{"token": 42}'`, /without a string "token"/],
    ["nothing", "true", /printed no token/],
    [
      "expired",
      `echo '{"token": "${secret}", "expires_at": "2001-02-03T04:05:06Z"}'`,
      /printed a token that already expired at 2001-02-03T04:05:06\.000Z/,
    ],
    [
      "expiry not a time",
      `echo '{"token": "${secret}", "expires_at": "tomorrow"}'`,
      /"expires_at" that is not an RFC 3339 time/,
    ],
    [
      "control characters",
      `printf '{"token": "${secret}\\\\r\\\\nX-Evil: 1"}\\n'`,
      /"token" with control characters/,
    ],
    [
      "megabytes",
      "head -c 1000000 /dev/zero | tr '\\\\0' a",
      /printed more than 65536 bytes/,
    ],
  ];
  for (const [name, body, message] of cases) {
    helperService(home, "junk", body);
    const { result, record } = await home.runAgent({
      runOptions: ["--strict"],
    });
    assert.equal(result.code, 69, `${name}: ${result.stderr}`);
    assert.equal(record, undefined, name);
    assert.equal(lines(result.stderr).length, 1, name);
    assert.match(result.stderr, /credential helper of service junk/, name);
    assert.match(result.stderr, message, name);
    assert.equal(result.stderr.includes(secret), false, name);
  }
  home.writeService(
    "junk",
    tokenServiceToml({ name: "junk", command: ["/nonexistent/helper"] }),
  );
  const missing = await home.runAgent({ runOptions: ["--strict"] });
  assert.equal(missing.result.code, 69);
  assert.match(missing.result.stderr, /could not be started: not found/);
  assert.equal((await home.health())?.pid, pid, "the same daemon throughout");
});

Deno.test("a helper gets no terminal, stdin at its end, and HOME as its folder", async () => {
  await using home = await loggedIn();
  helperService(
    home,
    "checks",
    [
      `[ -t 0 ] && { echo "stdin is a terminal" >&2; exit 5; }`,
      `if read line; then echo "stdin had data" >&2; exit 6; fi`,
      `[ "$(pwd)" = ${sh(home.home)} ] || { echo "cwd $(pwd)" >&2; exit 7; }`,
      "echo tok_checked",
    ].join("\n"),
  );
  const { result, record } = await home.runAgent({ readStdin: false });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(renderedServers(record).checks.env, {
    CHECKS_TOKEN: "tok_checked",
  });
});

Deno.test("tokens are cached until shortly before they expire, then fetched again", async () => {
  await using home = await loggedIn();
  const short = home.tokenHelper("short", { expiresIn: 6 });
  const long = home.tokenHelper("long", { expiresIn: 3600 });
  const ttl = home.tokenHelper("ttl");
  const bare = home.tokenHelper("bare");
  for (
    const [name, helper] of [["short", short], ["long", long], [
      "bare",
      bare,
    ]] as const
  ) {
    home.writeService(name, tokenServiceToml({ name, command: [helper.path] }));
  }
  home.writeService(
    "ttl",
    tokenServiceToml({ name: "ttl", command: [ttl.path], ttl: 2 }),
  );

  const first = await home.runAgent();
  assert.equal(first.result.code, 0, first.result.stderr);
  const servers = renderedServers(first.record);
  assert.equal(servers.short.env?.SHORT_TOKEN, short.token);
  assert.equal(servers.long.env?.LONG_TOKEN, long.token);
  assert.deepEqual([short, long, ttl, bare].map((h) => h.runs()), [1, 1, 1, 1]);

  // New tokens behind the helpers: a refetch shows, a cached token does not.
  const newToken = randomToken();
  for (const name of ["short", "long", "ttl", "bare"]) {
    Deno.writeTextFileSync(join(home.scratch, `${name}.token`), newToken);
  }
  const expiry = (service: string) =>
    Date.parse(
      auditEntries(home).find((entry) =>
        entry.event === "token" && entry.service === service
      )?.expiresAt as string,
    );
  const shortExpires = expiry("short");
  const ttlExpires = expiry("ttl");
  assert.ok(Number.isFinite(shortExpires) && Number.isFinite(ttlExpires));
  assert.ok(Number.isNaN(expiry("bare")), "a bare token has no expiry");
  // Inside the refresh margin (a tenth of the lifetime: 0.6 s) of the short
  // token, past the ttl token's.
  await waitUntil(
    () => Date.now() > Math.max(shortExpires - 500, ttlExpires),
    "the tokens to be near their expiry",
    20_000,
  );
  const second = await home.runAgent();
  assert.equal(second.result.code, 0, second.result.stderr);
  const again = renderedServers(second.record);
  assert.deepEqual([short, long, ttl, bare].map((h) => h.runs()), [2, 1, 2, 2]);
  assert.equal(again.short.env?.SHORT_TOKEN, newToken);
  assert.equal(again.ttl.env?.TTL_TOKEN, newToken);
  assert.equal(again.bare.env?.BARE_TOKEN, newToken);
  assert.equal(again.long.env?.LONG_TOKEN, long.token, "still cached");
  const cached = auditEntries(home).filter((entry) =>
    entry.event === "token" && entry.cached === true
  ).map((entry) => entry.service);
  assert.deepEqual(cached, ["long"]);
});

Deno.test("single flight: 20 sessions at once on a cold cache run the helper once", async () => {
  await using home = await loggedIn();
  const helper = home.addHelperService("github", {
    expiresIn: 3600,
    before: "sleep 1",
  });
  const runs = await Promise.all(
    Array.from({ length: 20 }, () => home.runAgent()),
  );
  for (const { result, record } of runs) {
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      renderedServers(record).github.env?.GITHUB_TOKEN,
      helper.token,
    );
  }
  assert.equal(helper.runs(), 1);
  const tokens = auditEntries(home).filter((entry) => entry.event === "token");
  assert.equal(tokens.length, 20, "one audit line per session");
  assert.equal(new Set(tokens.map((entry) => entry.session)).size, 20);
});

Deno.test("the services of one session are fetched in parallel", async () => {
  await using home = await loggedIn();
  const started = join(home.scratch, "started");
  const count = 4;
  // Each helper waits (bounded) until all of them have started: with
  // fetches one after another, the first would never see the others.
  const wait = [
    `echo x >> ${sh(started)}`,
    "i=0",
    `while [ "$(wc -l < ${sh(started)})" -lt ${count} ]; do`,
    "  i=$((i + 1)); [ $i -gt 1200 ] && { echo alone >&2; exit 9; }",
    "  sleep 0.05",
    "done",
  ].join("\n");
  for (let index = 0; index < count; index++) {
    helperService(home, `svc${index}`, `${wait}\necho tok_${index}`, {
      timeout: 120,
    });
  }
  const { result, record } = await home.runAgent();
  assert.equal(result.code, 0, result.stderr);
  const servers = renderedServers(record);
  for (let index = 0; index < count; index++) {
    assert.equal(
      servers[`svc${index}`].env?.[`SVC${index}_TOKEN`],
      `tok_${index}`,
    );
  }
});
