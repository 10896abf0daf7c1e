/**
 * The audit log: one JSON line per token served (time, agent, session,
 * service, source, expiry, whether it was cached), never the value; logins
 * and failures too; `sherlock broker log` shows them.
 */

import assert from "node:assert/strict";
import { basename, join } from "node:path";
import {
  AGENT,
  auditEntries,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { modeOf } from "../helpers/files.ts";
import { randomToken } from "../helpers/leaks.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { lines } from "../helpers/sherlock.ts";

const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

Deno.test("one audit line per token, with agent, session, service, source and expiry, never the value", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  const github = home.addHelperService("github", { expiresIn: 3600 });
  home.writeService("api", tokenServiceToml({ name: "api", source: "secret" }));
  await home.login();
  const secret = randomToken("secret");
  await home.sherlock(["secret", "set", "api"], { stdin: secret });

  const first = await home.runAgent();
  assert.equal(first.result.code, 0, first.result.stderr);
  const session = /\.([0-9a-f]{12})\.mcp\.json$/.exec(
    basename(first.record!.config!.path),
  )?.[1];
  assert.ok(session);
  const second = await home.runAgent();
  assert.equal(second.result.code, 0);

  const entries = auditEntries(home);
  assert.deepEqual(entries.map((entry) => entry.event), [
    "login",
    "secret_set",
    "session_start",
    "token",
    "token",
    "session_start",
    "token",
    "token",
  ]);
  for (const entry of entries) assert.match(entry.time as string, TIME);
  const tokens = entries.filter((entry) => entry.event === "token");
  const ofFirst = tokens.filter((entry) => entry.session === session);
  assert.equal(ofFirst.length, 2);
  const byService = Object.fromEntries(
    ofFirst.map((entry) => [entry.service, entry]),
  );
  const githubEntry = byService.github;
  assert.deepEqual(Object.keys(githubEntry).sort(), [
    "agent",
    "cached",
    "event",
    "expiresAt",
    "service",
    "session",
    "source",
    "time",
  ]);
  assert.equal(githubEntry.agent, AGENT);
  assert.equal(githubEntry.source, "command");
  assert.equal(githubEntry.cached, false);
  assert.match(githubEntry.expiresAt as string, TIME);
  assert.ok(Date.parse(githubEntry.expiresAt as string) > Date.now());
  assert.equal(byService.api.source, "secret");
  assert.equal(byService.api.expiresAt, null);
  // The second session got the cached command token.
  const later = tokens.filter((entry) => entry.session !== session);
  assert.equal(new Set(later.map((entry) => entry.session)).size, 1);
  assert.equal(
    later.find((entry) => entry.service === "github")?.cached,
    true,
  );

  const file = join(home.stateHome, "sherlock", "audit.log");
  const text = Deno.readTextFileSync(file);
  assert.equal(text.includes(github.token), false);
  assert.equal(text.includes(secret), false);
  assert.equal(modeOf(file), 0o600);
  assert.equal(modeOf(join(home.stateHome, "sherlock")), 0o700);
  for (const line of lines(text)) JSON.parse(line);

  // sherlock broker log shows them, newest last.
  const log = await home.sherlock(["broker", "log"]);
  assert.equal(log.code, 0, log.stderr);
  const rows = lines(log.stdout);
  assert.match(
    rows[0],
    /^TIME\s+EVENT\s+AGENT\s+SESSION\s+SERVICE\s+SOURCE\s+EXPIRES\s+NOTE$/,
  );
  assert.equal(rows.length, entries.length + 1);
  assert.match(rows[1], /\blogin\b.*\blocal\b/);
  assert.ok(
    rows.some((row) =>
      row.includes(session) &&
      /\btoken\s+fake\s+\S+\s+github\s+command\s/.test(row)
    ),
    log.stdout,
  );
  assert.match(rows.at(-1)!, /\bcached$|\s-$/);
  assert.equal(log.stdout.includes(github.token), false);
  const lastTwo = await home.sherlock(["broker", "log", "-n", "2"]);
  assert.equal(lines(lastTwo.stdout).length, 3);
  const bad = await home.sherlock(["broker", "log", "-n", "x"]);
  assert.equal(bad.code, 2);

  // Reading the log needs no daemon.
  await home.sherlock(["broker", "stop"]);
  const offline = await home.sherlock(["broker", "log", "-n", "1"]);
  assert.equal(offline.code, 0);
  assert.deepEqual(home.daemonPids(), []);
});

Deno.test("failures and logouts are audited too; an empty log says so", async () => {
  await using home = await createBrokerHome();
  const empty = await home.sherlock(["broker", "log"]);
  assert.equal(empty.code, 0);
  assert.equal(empty.stdout, "the audit log is empty\n");

  home.addAgent();
  home.writeService(
    "broken",
    tokenServiceToml({ name: "broken", command: ["/bin/false"] }),
  );
  await home.login();
  await home.sherlock(["login"], { stdin: "wrong passphrase\n" });
  const run = await home.runAgent({ runOptions: ["--strict"] });
  assert.equal(run.result.code, 69);
  await home.sherlock(["logout"]);
  const events = auditEntries(home).map((entry) =>
    `${entry.event}:${entry.reason ?? entry.service ?? ""}`
  );
  assert.deepEqual(events, [
    "login:",
    "login_failed:wrong_passphrase",
    "session_start:",
    "token_failed:helper_failed",
    "logout:",
  ]);
  const log = await home.sherlock(["broker", "log"]);
  assert.match(
    log.stdout,
    /token_failed\s+fake\s+[0-9a-f]{12}\s+broken\s+command\s+-\s+helper_failed/,
  );
});
