/**
 * `sherlock secret set|ls|rm` and services with `[token] source =
 * "secret"`, against a real daemon and store.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { renderedServers } from "../helpers/agent.ts";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { randomToken } from "../helpers/leaks.ts";
import { stdioServiceToml, tokenServiceToml } from "../helpers/profiles.ts";
import { lines } from "../helpers/sherlock.ts";
import { rawExchange } from "../helpers/socket_http.ts";
import { runSherlockNullStdin, runSherlockOnPty } from "../helpers/terminal.ts";

Deno.test("secret set from stdin, ls shows names and dates never values, rm", async () => {
  await using home = await createBrokerHome();
  await home.login();
  const github = randomToken("ghp");
  const slack = randomToken("xoxb");

  const set = await home.sherlock(["secret", "set", "github"], {
    stdin: `${github}\n`,
  });
  assert.equal(set.code, 0, set.stderr);
  assert.equal(set.stdout, "stored the secret of github\n");
  const setSlack = await home.sherlock(["secret", "set", "slack"], {
    stdin: slack,
  });
  assert.equal(setSlack.code, 0, setSlack.stderr);

  const ls = await home.sherlock(["secret", "ls"]);
  assert.equal(ls.code, 0);
  const rows = lines(ls.stdout);
  assert.match(rows[0], /^NAME\s+CREATED\s+UPDATED$/);
  assert.match(
    rows[1],
    /^github\s+\d{4}-\d\d-\d\dT\S+Z\s+\d{4}-\d\d-\d\dT\S+Z$/,
  );
  assert.match(rows[2], /^slack\s+/);
  assert.equal(rows.length, 3);
  for (const output of [ls.stdout, ls.stderr, set.stdout, set.stderr]) {
    assert.equal(output.includes(github), false);
    assert.equal(output.includes(slack), false);
  }
  const store = Deno.readFileSync(
    join(home.dataHome, "sherlock", "secrets.enc"),
  );
  const text = new TextDecoder().decode(store);
  assert.equal(text.includes(github), false, "the store is encrypted");

  const rm = await home.sherlock(["secret", "rm", "github"]);
  assert.equal(rm.code, 0);
  assert.equal(rm.stdout, "removed the secret of github\n");
  const rmAgain = await home.sherlock(["secret", "rm", "github"]);
  assert.equal(rmAgain.code, 1);
  assert.equal(rmAgain.stdout, "");
  assert.deepEqual(lines(rmAgain.stderr), [
    "sherlock: no secret stored for github; nothing was removed (see sherlock secret ls)",
  ]);
  const after = await home.sherlock(["secret", "ls"]);
  assert.deepEqual(
    lines(after.stdout).slice(1).map((row) => row.split(" ")[0]),
    [
      "slack",
    ],
  );
  await home.sherlock(["secret", "rm", "slack"]);
  const none = await home.sherlock(["secret", "ls"]);
  assert.equal(none.stdout, "no secrets stored\n");

  // Values survive a restart of the daemon (they are in the store).
  await home.sherlock(["secret", "set", "github"], { stdin: github });
  await home.sherlock(["broker", "stop"]);
  await home.login();
  const listed = await home.sherlock(["secret", "ls"]);
  assert.match(listed.stdout, /^github /m);
});

Deno.test("a secret service gets the stored value in its rendered env", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  home.writeService(
    "api",
    tokenServiceToml({ name: "api", source: "secret", env: "API_KEY" }),
  );
  await home.login();
  const value = randomToken("key");
  await home.sherlock(["secret", "set", "api"], { stdin: `${value}\n` });
  const { result, record } = await home.runAgent();
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(renderedServers(record).api.env, { API_KEY: value });
  assert.equal(JSON.stringify(record!.env).includes(value), false);
  assert.equal(record!.args.join(" ").includes(value), false);
  assert.equal(result.stdout + result.stderr, "");

  // A new value is served at once (the store is read per request).
  const next = randomToken("key");
  await home.sherlock(["secret", "set", "api"], { stdin: next });
  const again = await home.runAgent();
  assert.deepEqual(renderedServers(again.record).api.env, { API_KEY: next });
});

Deno.test("a value on the command line is refused and not echoed", async () => {
  await using home = await createBrokerHome();
  await home.login();
  const value = randomToken("ghp");
  const result = await home.sherlock(["secret", "set", "github", value]);
  assert.equal(result.code, 2);
  assert.equal(lines(result.stderr).length, 1);
  assert.match(result.stderr, /never from argv/);
  assert.equal(result.stderr.includes(value), false);
  const ls = await home.sherlock(["secret", "ls"]);
  assert.equal(ls.stdout, "no secrets stored\n");
  const badName = await home.sherlock(["secret", "set", value.toUpperCase()], {
    stdin: "x",
  });
  assert.equal(badName.code, 2);
  const missingName = await home.sherlock(["secret", "set"]);
  assert.equal(missingName.code, 2);
  const unknown = await home.sherlock(["secret", "show", "github"]);
  assert.equal(unknown.code, 2);
});

Deno.test("a missing secret, --strict: exit 77 naming sherlock secret set <name>", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  home.writeService("api", tokenServiceToml({ name: "api", source: "secret" }));
  await home.login();
  const { result, record } = await home.runAgent({ runOptions: ["--strict"] });
  assert.equal(result.code, 77, result.stderr);
  assert.equal(record, undefined, "the agent is not started");
  assert.equal(lines(result.stderr).length, 1);
  assert.match(result.stderr, /no secret stored for service api/);
  assert.match(result.stderr, /sherlock secret set api/);
});

Deno.test("secrets need a login; an empty stdin fails at once without a daemon", async () => {
  await using home = await createBrokerHome();
  const empty = await runSherlockNullStdin(["secret", "set", "github"], {
    env: home.env,
    cwd: home.work,
    guardMs: 30_000,
  });
  assert.equal(empty.hung, false);
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /no secret: stdin is not a terminal and is empty/);
  assert.deepEqual(home.daemonPids(), []);

  for (const args of [["secret", "set", "github"], ["secret", "ls"]]) {
    const result = await home.sherlock(args, { stdin: "value\n" });
    assert.equal(result.code, 77, `${args.join(" ")}: ${result.stderr}`);
    assert.equal(lines(result.stderr).length, 1);
    assert.match(result.stderr, /sherlock login/);
  }
});

Deno.test("on a terminal, secret set prompts without echo, and not at all when logged out", async () => {
  await using home = await createBrokerHome();
  await home.sherlock(["broker", "start"]);
  const locked = await runSherlockOnPty(["secret", "set", "api"], {
    env: home.env,
    steps: [],
  });
  assert.equal(locked.code, 77, locked.screen);
  assert.match(locked.screen, /not logged in.*sherlock login/);
  assert.doesNotMatch(locked.screen, /Secret for api/, "no prompt");

  await home.login();
  const value = randomToken("typed");
  const set = await runSherlockOnPty(["secret", "set", "api"], {
    env: home.env,
    steps: [{ expect: /Secret for api: /, send: `${value}\r` }],
  });
  assert.equal(set.code, 0, set.screen);
  assert.match(set.screen, /stored the secret of api/);
  assert.equal(set.screen.includes(value), false, "no echo");
  const ls = await home.sherlock(["secret", "ls"]);
  assert.match(ls.stdout, /^api /m);
});

Deno.test("a secret with control characters is refused (CLI and raw PUT): nothing stored", async () => {
  await using home = await createBrokerHome();
  await home.login();
  const set = await home.sherlock(["secret", "set", "github"], {
    stdin: "ghp_a\nX-Injected: yes\n",
  });
  assert.equal(set.code, 2, set.stderr);
  assert.equal(lines(set.stderr).length, 1, set.stderr);
  assert.match(set.stderr, /control characters/);
  assert.equal(set.stderr.includes("Injected"), false);

  const body = JSON.stringify({ value: "ghp_a\r\nX-Injected: yes" });
  const put = await rawExchange(
    home.socket,
    `PUT /v1/secrets/github HTTP/1.1\r\nHost: sherlock\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  assert.equal(put.status, 400, put.text);
  assert.equal(
    (put.json as { error: { code: string } }).error.code,
    "bad_request",
  );

  // A NUL could reach no server's environment: refused the same way.
  const nul = await home.sherlock(["secret", "set", "github"], {
    stdin: "ghp_a\u0000b\n",
  });
  assert.equal(nul.code, 2, nul.stderr);
  assert.equal(lines(nul.stderr).length, 1, nul.stderr);
  assert.match(nul.stderr, /control characters/);

  const ls = await home.sherlock(["secret", "ls"]);
  assert.equal(ls.code, 0);
  assert.equal(ls.stdout.includes("github"), false);
});

Deno.test("a secret for a name no service reads is stored with a warning; rm of a missing one exits 1", async () => {
  await using home = await createBrokerHome();
  home.writeService("github", tokenServiceToml({ name: "github" }));
  home.writeService("memory", stdioServiceToml("memory", { command: "mem" }));
  await home.login();
  const token = randomToken("ghp");

  // A typo of a service that reads a secret.
  const typo = await home.sherlock(["secret", "set", "githb"], {
    stdin: `${token}\n`,
  });
  assert.equal(typo.code, 0, typo.stderr);
  assert.equal(typo.stdout, "stored the secret of githb\n");
  assert.deepEqual(lines(typo.stderr), [
    "sherlock: no service in services.d is named githb (did you mean github?); stored anyway, in case a service reads it later",
  ]);
  // A service that takes no token.
  const memory = await home.sherlock(["secret", "set", "memory"], {
    stdin: token,
  });
  assert.equal(memory.code, 0, memory.stderr);
  assert.deepEqual(lines(memory.stderr), [
    'sherlock: service memory does not read a secret ([token] source = "none", not "secret"); stored anyway, in case a service reads it later',
  ]);
  // The right name: no warning.
  const right = await home.sherlock(["secret", "set", "github"], {
    stdin: token,
  });
  assert.equal(right.code, 0);
  assert.equal(right.stderr, "");
  for (const output of [typo, memory, right]) {
    assert.equal(output.stdout.includes(token), false);
    assert.equal(output.stderr.includes(token), false);
  }
  const ls = await home.sherlock(["secret", "ls"]);
  assert.deepEqual(
    lines(ls.stdout).slice(1).map((row) => row.split(" ")[0]),
    ["githb", "github", "memory"],
  );

  const missing = await home.sherlock(["secret", "rm", "nonexistent"]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^sherlock: no secret stored for nonexistent; /);
  const near = await home.sherlock(["secret", "rm", "memroy"]);
  assert.equal(near.code, 1);
  assert.match(
    near.stderr,
    /no secret stored for memroy \(did you mean memory\?\)/,
  );
  const removed = await home.sherlock(["secret", "rm", "githb"]);
  assert.equal(removed.code, 0);
});

Deno.test("secret ls and rm after broker stop: not logged in, and no daemon is started", async () => {
  await using home = await createBrokerHome();
  await home.login();
  await home.sherlock(["secret", "set", "api"], { stdin: "value\n" });
  assert.equal((await home.sherlock(["broker", "stop"])).code, 0);
  for (
    const args of [["secret", "ls"], ["secret", "rm", "api"], [
      "auth",
      "status",
    ]]
  ) {
    const result = await home.sherlock(args);
    assert.equal(result.code, 77, `${args.join(" ")}: ${result.stderr}`);
    assert.deepEqual(lines(result.stderr), [
      'sherlock: not logged in (the broker is not running); run "sherlock login"',
    ]);
    assert.equal(
      await home.health(),
      undefined,
      `${args.join(" ")} started no broker`,
    );
    assert.deepEqual(home.daemonPids(), []);
  }
});
