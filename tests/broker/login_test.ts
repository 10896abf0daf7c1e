/**
 * `sherlock login`, `logout` and `whoami` against a real daemon: creating
 * the store, wrong passphrases, damaged stores (left byte-identical),
 * input without a terminal, `--passphrase-file`, the no-echo prompt on a
 * real pseudo-terminal, and the idle timeout.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import {
  auditEntries,
  type BrokerHome,
  createBrokerHome,
  PASSPHRASE,
} from "../helpers/broker_home.ts";
import { MIN_PASSPHRASE_LENGTH } from "../../lib/broker/protocol.ts";
import { modeOf } from "../helpers/files.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import {
  HANG_GUARD_MS,
  lines,
  sherlockCommand,
  type SherlockResult,
} from "../helpers/sherlock.ts";
import { rawExchange } from "../helpers/socket_http.ts";
import { runSherlockNullStdin, runSherlockOnPty } from "../helpers/terminal.ts";
import { exists } from "../helpers/wait.ts";

/** Runs `sh -c script sh args…` and collects its output. */
async function runShell(
  script: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command("/bin/sh", {
    args: ["-c", script, "sh", ...args],
    env,
    clearEnv: true,
    stdin: "null",
    signal: AbortSignal.timeout(HANG_GUARD_MS),
  }).output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

function storePath(home: BrokerHome): string {
  return join(home.dataHome, "sherlock", "secrets.enc");
}

/** Asserts one line on stderr and nothing of the passphrase anywhere. */
function assertOneLine(result: SherlockResult, secret = PASSPHRASE): void {
  assert.equal(lines(result.stderr).length, 1, result.stderr);
  assert.equal(result.stdout.includes(secret), false);
  assert.equal(result.stderr.includes(secret), false);
}

Deno.test("the first login creates the store from stdin: 0600 in a 0700 folder", async () => {
  await using home = await createBrokerHome();
  const whoBefore = await home.sherlock(["whoami"]);
  assert.equal(whoBefore.code, 77);
  assert.match(whoBefore.stdout, /not logged in \(the broker is not running\)/);

  const login = await home.login();
  assert.match(
    login.stdout,
    /^created the store; logged in: .+ via the local provider, since /,
  );
  assertOneLine({ ...login, stderr: "x\n" });
  assert.equal(modeOf(storePath(home)), 0o600);
  assert.equal(modeOf(join(home.dataHome, "sherlock")), 0o700);
  const text = Deno.readTextFileSync(storePath(home));
  assert.equal(text.includes(PASSPHRASE), false);

  const who = await home.sherlock(["whoami"]);
  assert.equal(who.code, 0, who.stderr);
  assert.match(who.stdout, /via the local provider, since \d{4}-/);
  // A second login unlocks the same store.
  const again = await home.login();
  assert.match(again.stdout, /^logged in: /);
});

Deno.test("a new store's passphrase must be long enough; nothing is created otherwise", async () => {
  await using home = await createBrokerHome();
  const result = await home.sherlock(["login"], { stdin: "abc123\n" });
  assert.equal(result.code, 2);
  assertOneLine(result, "abc123");
  assert.match(result.stderr, /too short/);
  assert.equal(exists(storePath(home)), false);
});

Deno.test("a wrong passphrase: exit 77 with one clear line; the right one works next", async () => {
  await using home = await createBrokerHome();
  await home.login();
  const logout = await home.sherlock(["logout"]);
  assert.equal(logout.code, 0);
  const bytes = Deno.readFileSync(storePath(home));

  const wrong = await home.sherlock(["login"], {
    stdin: "not the passphrase\n",
  });
  assert.equal(wrong.code, 77, wrong.stderr);
  assertOneLine(wrong, "not the passphrase");
  assert.match(
    wrong.stderr,
    /^sherlock: wrong passphrase for the secret store /,
  );
  assert.deepEqual(Deno.readFileSync(storePath(home)), bytes);
  assert.equal((await home.sherlock(["whoami"])).code, 77);

  const right = await home.login();
  assert.match(right.stdout, /^logged in: /);
  assert.equal((await home.sherlock(["whoami"])).code, 0);
  const events = auditEntries(home).map((entry) => entry.event);
  assert.deepEqual(events, ["login", "logout", "login_failed", "login"]);
});

Deno.test("a damaged or newer store: a clear error, the file byte-identical", async () => {
  await using home = await createBrokerHome();
  await home.login();
  const good = Deno.readTextFileSync(storePath(home));
  const [header, body] = good.split("\n");
  const newer = JSON.stringify({ ...JSON.parse(header), version: 99 });
  const variants: [string, Uint8Array, RegExp][] = [
    ["empty", new Uint8Array(), /is damaged/],
    [
      "truncated",
      new TextEncoder().encode(`${header}\n${body.slice(0, 10)}`),
      /is damaged \(.*truncated/,
    ],
    ["header only", new TextEncoder().encode(`${header}\n`), /is damaged/],
    [
      "garbage bytes",
      crypto.getRandomValues(new Uint8Array(300)),
      /is damaged/,
    ],
    [
      "garbage text",
      new TextEncoder().encode("hello, world\n"),
      /is damaged/,
    ],
    [
      "altered ciphertext",
      new TextEncoder().encode(
        `${header}\n${(body[0] === "A" ? "B" : "A") + body.slice(1)}\n`,
      ),
      /is damaged/,
    ],
    [
      "newer version",
      new TextEncoder().encode(`${newer}\n${body}\n`),
      /format version 99, newer than this sherlock reads \(2\); upgrade sherlock/,
    ],
  ];
  for (const [name, bytes, message] of variants) {
    await home.sherlock(["logout"]);
    Deno.writeFileSync(storePath(home), bytes, { mode: 0o600 });
    const result = await home.sherlock(["login"], {
      stdin: `${PASSPHRASE}\n`,
    });
    assert.equal(result.code, 78, `${name}: ${result.stderr}`);
    assertOneLine(result);
    assert.match(result.stderr, message, name);
    assert.ok(result.stderr.includes(storePath(home)), name);
    assert.deepEqual(Deno.readFileSync(storePath(home)), bytes, name);
    assert.equal(modeOf(storePath(home)), 0o600, name);
    const who = await home.sherlock(["whoami"]);
    assert.equal(who.code, 77, name);
  }
  // The daemon is fine, and the real store still opens.
  Deno.writeTextFileSync(storePath(home), good, { mode: 0o600 });
  await home.login();
});

Deno.test("login with no terminal and stdin from /dev/null fails at once: exit 2, one line, no daemon", async () => {
  await using home = await createBrokerHome();
  const result = await runSherlockNullStdin(["login"], {
    env: home.env,
    cwd: home.work,
    guardMs: 30_000,
  });
  assert.equal(result.hung, false, "it returned well within the guard");
  assert.equal(result.code, 2, result.stderr);
  assert.equal(lines(result.stderr).length, 1);
  assert.match(
    result.stderr,
    /no passphrase: stdin is not a terminal and is empty/,
  );
  assert.deepEqual(home.daemonPids(), [], "nothing was started for it");

  const empty = await home.sherlock(["login"], { stdin: "" });
  assert.equal(empty.code, 2);
  assert.equal(lines(empty.stderr).length, 1);
  const blank = await home.sherlock(["login"], { stdin: "\nsecond line\n" });
  assert.equal(blank.code, 2);
  assert.match(blank.stderr, /starts with an empty line/);
  assert.equal(exists(storePath(home)), false);
});

Deno.test("login reads the first line of a pipe that stays open", async () => {
  await using home = await createBrokerHome();
  const [program, ...args] = sherlockCommand(["login"]);
  const child = spawn(program, args, {
    env: home.env,
    cwd: home.work,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  child.stdout!.setEncoding("utf8").on("data", (text) => stdout += text);
  child.stderr!.resume();
  const guard = setTimeout(() => child.kill("SIGKILL"), HANG_GUARD_MS);
  child.stdin!.write(`${PASSPHRASE}\n`);
  const code = await new Promise<number | null>((resolve) =>
    child.on("close", resolve)
  );
  clearTimeout(guard);
  child.stdin!.end();
  assert.equal(code, 0);
  assert.match(stdout, /^created the store; logged in/);
});

Deno.test("--passphrase-file: a file, a file descriptor, a missing or empty file", async () => {
  await using home = await createBrokerHome();
  const file = join(home.scratch, "passphrase");
  Deno.writeTextFileSync(file, `${PASSPHRASE}\n`, { mode: 0o600 });
  const created = await home.sherlock(["login", "--passphrase-file", file]);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /^created the store; /);
  await home.sherlock(["logout"]);

  // /dev/fd/3, as CI systems pass secrets: a real pipe on fd 3.
  const fd3 = await runShell(
    `printf '%s\\n' "$PASS" | (unset PASS; exec "$@" 3<&0 </dev/null)`,
    sherlockCommand(["login", "--passphrase-file", "/dev/fd/3"]),
    { ...home.env, PASS: PASSPHRASE },
  );
  assert.equal(fd3.code, 0, fd3.stderr);
  assert.match(fd3.stdout, /^logged in: /);

  const missing = await home.sherlock([
    "login",
    "--passphrase-file",
    join(home.scratch, "nope"),
  ]);
  assert.equal(missing.code, 2);
  assert.equal(lines(missing.stderr).length, 1);
  assert.match(
    missing.stderr,
    /cannot read the passphrase from .*nope: no such file/,
  );
  Deno.writeTextFileSync(file, "\n");
  const empty = await home.sherlock(["login", "--passphrase-file", file]);
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /holds no passphrase/);
  const usage = await home.sherlock(["login", "--passphrase", "x"]);
  assert.equal(usage.code, 2);
  assert.equal(usage.stderr.includes(" x"), false, "the value is not echoed");
});

Deno.test("--passphrase-file: a FIFO works, /dev/zero is refused at once, only the first line is read", async () => {
  await using home = await createBrokerHome();
  // A FIFO is a legitimate passphrase file: a writer process feeds it.
  const fifo = join(home.scratch, "passphrase.fifo");
  assert.equal(
    new Deno.Command("mkfifo", { args: [fifo] }).outputSync().code,
    0,
  );
  const writer = new Deno.Command("/bin/sh", {
    args: ["-c", 'printf "%s\\n" "$PASS" > "$1"', "sh", fifo],
    env: { PASS: PASSPHRASE },
    stdin: "null",
  }).spawn();
  const created = await home.sherlock(["login", "--passphrase-file", fifo], {
    timeoutMs: 10_000,
  });
  assert.equal((await writer.status).code, 0);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /^created the store; /);
  await home.sherlock(["logout"]);

  // Endless input without a line end: refused by the bound, not read to
  // the end (this hung, filling the memory).
  const zero = await home.sherlock(
    ["login", "--passphrase-file", "/dev/zero"],
    {
      timeoutMs: 10_000,
    },
  );
  assert.equal(zero.code, 2);
  assert.deepEqual(lines(zero.stderr), [
    "sherlock: /dev/zero: no line end in its first 64 KiB; the passphrase must be its first line",
  ]);

  // A first line followed by much more: the rest is never needed.
  const long = join(home.scratch, "long");
  Deno.writeTextFileSync(long, `${PASSPHRASE}\r\n${"x".repeat(1 << 20)}`);
  const loggedIn = await home.sherlock(["login", "--passphrase-file", long]);
  assert.equal(loggedIn.code, 0, loggedIn.stderr);
  assert.match(loggedIn.stdout, /^logged in: /);
});

Deno.test("on a terminal, the passphrase prompt does not echo; Ctrl-C exits 130", async () => {
  await using home = await createBrokerHome();
  const created = await runSherlockOnPty(["login"], {
    env: home.env,
    steps: [
      {
        expect: /New passphrase for the sherlock store: /,
        send: `${PASSPHRASE}\r`,
      },
      { expect: /Repeat it: /, send: `${PASSPHRASE}\r` },
    ],
  });
  assert.equal(created.code, 0, created.screen);
  assert.match(created.screen, /created the store; logged in/);
  assert.equal(created.screen.includes(PASSPHRASE), false, "no echo");
  assert.equal(created.screen.includes(PASSPHRASE.slice(0, 6)), false);

  await home.sherlock(["logout"]);
  // Three tries, as sudo gives, then exit 77.
  const wrong = await runSherlockOnPty(["login"], {
    env: home.env,
    steps: [
      { expect: /Passphrase: /, send: "typed-wrongly\r" },
      {
        expect:
          /wrong passphrase for the secret store \S+; try again\s+Passphrase: /,
        send: "again\r",
      },
      { expect: /try again\s+Passphrase: /, send: "and-again\r" },
    ],
  });
  assert.equal(wrong.code, 77, wrong.screen);
  assert.equal(wrong.screen.includes("typed-wrongly"), false, "no echo");
  assert.equal(wrong.screen.match(/Passphrase: /g)?.length, 3);
  assert.equal(wrong.screen.match(/try again/g)?.length, 2);
  assert.match(wrong.screen, /wrong passphrase for the secret store \S+\s*$/);

  const interrupted = await runSherlockOnPty(["login"], {
    env: home.env,
    steps: [{ expect: /Passphrase: /, send: "half\x03" }],
  });
  assert.equal(interrupted.code, 130, interrupted.screen);
  assert.match(interrupted.screen, /interrupted/);
  assert.doesNotMatch(interrupted.screen, /internal error/);

  const right = await runSherlockOnPty(["login"], {
    env: home.env,
    steps: [{ expect: /Passphrase: /, send: `${PASSPHRASE}\r` }],
  });
  assert.equal(right.code, 0, right.screen);
  assert.equal(right.screen.includes(PASSPHRASE), false);
});

Deno.test("on a terminal, a mistyped passphrase is asked again: the second try logs in", async () => {
  await using home = await createBrokerHome();
  await home.login();
  await home.sherlock(["logout"]);
  const retried = await runSherlockOnPty(["login"], {
    env: home.env,
    steps: [
      { expect: /Passphrase: /, send: "typo\r" },
      { expect: /try again\s+Passphrase: /, send: `${PASSPHRASE}\r` },
    ],
  });
  assert.equal(retried.code, 0, retried.screen);
  assert.match(retried.screen, /logged in: /);
  assert.equal(retried.screen.includes(PASSPHRASE), false, "no echo");
});

Deno.test("on a terminal, a too-short new passphrase is refused before it is repeated, and asked again", async () => {
  await using home = await createBrokerHome();
  const created = await runSherlockOnPty(["login"], {
    env: home.env,
    steps: [
      { expect: /New passphrase for the sherlock store: /, send: "short\r" },
      {
        expect:
          /too short: a new store needs at least 8 characters; try again\s+New passphrase for the sherlock store: /,
        send: `${PASSPHRASE}\r`,
      },
      { expect: /Repeat it: /, send: `${PASSPHRASE}x\r` },
      {
        expect: /the two passphrases differ; try again\s+New passphrase/,
        send: `${PASSPHRASE}\r`,
      },
      { expect: /Repeat it: /, send: `${PASSPHRASE}\r` },
    ],
  });
  assert.equal(created.code, 0, created.screen);
  // "Repeat it" came only after a long enough passphrase.
  const firstRepeat = created.screen.indexOf("Repeat it");
  assert.ok(created.screen.indexOf("too short") < firstRepeat, created.screen);
  assert.match(created.screen, /created the store; logged in/);

  await home.sherlock(["broker", "stop"]);
  Deno.removeSync(storePath(home));
  const gaveUp = await runSherlockOnPty(["login"], {
    env: home.env,
    steps: [
      { expect: /store: /, send: "a\r" },
      {
        expect: /try again\s+New passphrase for the sherlock store: /,
        send: "b\r",
      },
      {
        expect: /try again\s+New passphrase for the sherlock store: /,
        send: "c\r",
      },
    ],
  });
  assert.equal(gaveUp.code, 2, gaveUp.screen);
  assert.doesNotMatch(gaveUp.screen, /Repeat it/);
  assert.match(gaveUp.screen, /too short: .*; nothing was created/);
  assert.equal(exists(storePath(home)), false);
});

Deno.test("a second logout says it was not logged in", async () => {
  await using home = await createBrokerHome();
  await home.login();
  const first = await home.sherlock(["logout"]);
  assert.equal(first.code, 0);
  assert.match(first.stdout, /^logged out: /);
  const second = await home.sherlock(["logout"]);
  assert.equal(second.code, 0);
  assert.equal(
    second.stdout,
    "was not logged in: the store was already locked\n",
  );
  await home.sherlock(["broker", "stop"]);
  const stopped = await home.sherlock(["logout"]);
  assert.equal(stopped.stdout, "not logged in (the broker is not running)\n");
  assert.deepEqual(home.daemonPids(), []);
});

Deno.test("logout drops cached tokens and locks: the next run says to log in, then re-runs the helper", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  const helper = home.addHelperService("github", { expiresIn: 3600 });
  await home.login();
  assert.equal((await home.runAgent()).result.code, 0);
  assert.equal((await home.runAgent()).result.code, 0);
  assert.equal(helper.runs(), 1, "the second run used the cached token");

  const logout = await home.sherlock(["logout"]);
  assert.equal(logout.code, 0);
  assert.match(logout.stdout, /store is locked and cached tokens are dropped/);
  const locked = await home.runAgent();
  assert.equal(locked.result.code, 77);
  assert.equal(locked.record, undefined);
  assert.match(locked.result.stderr, /not logged in .*github.*sherlock login/);
  assert.equal(helper.runs(), 1);

  await home.login();
  const again = await home.runAgent();
  assert.equal(again.result.code, 0, again.result.stderr);
  assert.equal(helper.runs(), 2, "the helper ran again after logout");

  const stopped = await home.sherlock(["broker", "stop"]);
  assert.equal(stopped.code, 0);
  const logoutDown = await home.sherlock(["logout"]);
  assert.equal(logoutDown.code, 0);
  assert.match(logoutDown.stdout, /broker is not running/);
});

Deno.test("whoami: what it says and its exit code in each state", async () => {
  await using home = await createBrokerHome();
  // The idle timeout is on by default: this store never locks by itself.
  Deno.mkdirSync(join(home.configHome, "sherlock"), { recursive: true });
  Deno.writeTextFileSync(
    join(home.configHome, "sherlock", "config.toml"),
    "[broker]\nidle_timeout = 0\n",
  );
  const down = await home.sherlock(["whoami"]);
  assert.equal(down.code, 77);
  assert.match(down.stdout, /the broker is not running/);
  assert.deepEqual(home.daemonPids(), [], "whoami does not start the broker");

  await home.sherlock(["broker", "start"]);
  const noStore = await home.sherlock(["whoami"]);
  assert.equal(noStore.code, 77);
  assert.match(
    noStore.stdout,
    /no local store yet; "sherlock login" creates it/,
  );

  await home.login();
  const user = Deno.env.get("USER") ?? "";
  const logged = await home.sherlock(["whoami"]);
  assert.equal(logged.code, 0);
  assert.match(
    logged.stdout,
    / via the local provider, since \d{4}-\d\d-\d\dT/,
  );
  if (user) assert.ok(logged.stdout.startsWith(user), logged.stdout);
  assert.doesNotMatch(logged.stdout, /locks when idle/, "no idle timeout set");

  await home.sherlock(["logout"]);
  const locked = await home.sherlock(["whoami"]);
  assert.equal(locked.code, 77);
  assert.match(locked.stdout, /local store locked; run "sherlock login"/);
  const usage = await home.sherlock(["whoami", "extra"]);
  assert.equal(usage.code, 2);
});

Deno.test("[broker] idle_timeout locks the store again", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  home.writeService(
    "github",
    tokenServiceToml({ name: "github", command: ["/bin/echo", "tok_x"] }),
  );
  Deno.mkdirSync(join(home.configHome, "sherlock"), { recursive: true });
  Deno.writeTextFileSync(
    join(home.configHome, "sherlock", "config.toml"),
    "[broker]\nidle_timeout = 1\n",
  );
  const login = await home.login();
  assert.match(login.stdout, /locks when idle at \d{4}-/);

  const deadline = Date.now() + 60_000;
  let who = await home.sherlock(["whoami"]);
  while (who.code !== 77) {
    assert.ok(Date.now() < deadline, "the store never locked");
    who = await home.sherlock(["whoami"]);
  }
  assert.match(who.stdout, /store locked/);
  const run = await home.runAgent();
  assert.equal(run.result.code, 77);
  assert.match(run.result.stderr, /sherlock login/);
  assert.ok(auditEntries(home).some((entry) => entry.event === "idle_lock"));
  const log = Deno.readTextFileSync(
    join(home.stateHome, "sherlock", "broker.log"),
  );
  assert.match(log, /idle timeout: store locked/);
});

Deno.test("the daemon itself refuses to create a store with a short passphrase", async () => {
  await using home = await createBrokerHome();
  const start = await home.sherlock(["broker", "start"]);
  assert.equal(start.code, 0, start.stderr);
  const body = JSON.stringify({ passphrase: "x", create: true });
  const answer = await rawExchange(
    home.socket,
    `POST /v1/login HTTP/1.1\r\nHost: sherlock\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  assert.equal(answer.status, 400, answer.text);
  const error = (answer.json as { error: { code: string; message: string } })
    .error;
  assert.equal(error.code, "bad_request");
  assert.match(
    error.message,
    new RegExp(`at least ${MIN_PASSPHRASE_LENGTH} characters`),
  );
  assert.equal(exists(storePath(home)), false);
  const who = await home.sherlock(["whoami"]);
  assert.equal(who.code, 77);
  // A long enough one creates it.
  await home.login();
  assert.equal(exists(storePath(home)), true);
});
