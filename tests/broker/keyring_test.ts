/**
 * `sherlock login --remember`: the OS keyring keeps a key that unlocks the
 * store, so a broker that starts again serves a session with no prompt;
 * where the keyring is absent, locked, stalled or holds a stale key, the
 * broker falls back at once to "not logged in" (exit 77) and `sherlock
 * login` to the passphrase. Against a real gnome-keyring on a private
 * D-Bus (tests/helpers/keyring.ts), shared by the cases of this file;
 * skipped, saying why, where its programs are not installed.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { renderedServers } from "../helpers/agent.ts";
import {
  auditEntries,
  type BrokerHome,
  createBrokerHome,
  PASSPHRASE,
} from "../helpers/broker_home.ts";
import {
  missingKeyringPrograms,
  type PrivateKeyring,
  startPrivateKeyring,
} from "../helpers/keyring.ts";
import { filesContaining, randomToken } from "../helpers/leaks.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { lines } from "../helpers/sherlock.ts";
import { runSherlockOnPty } from "../helpers/terminal.ts";
import { waitUntil } from "../helpers/wait.ts";

const missing = missingKeyringPrograms();
const ignore = missing.length > 0;
if (ignore) {
  console.error(
    `keyring_test: skipped, not installed: ${
      missing.join(", ")
    } (Debian: apt-get install gnome-keyring libsecret-tools dbus; scripts/test.sh does)`,
  );
}

let shared: PrivateKeyring | undefined;
/** The file's one private keyring, started by the first case that needs it. */
async function keyring(): Promise<PrivateKeyring> {
  shared ??= await startPrivateKeyring();
  if (!shared) throw new Error("the private keyring did not start");
  return shared;
}
globalThis.addEventListener("unload", () => shared?.stop());

/**
 * A broker HOME whose sherlock sees the private keyring, with a `secret`
 * service `api` holding a random value, and a wrapper around secret-tool
 * first on PATH that records every argv it is run with (to search them).
 */
async function homeWithSecret(
  options: { ring?: PrivateKeyring } = {},
): Promise<{ home: BrokerHome; value: string; argvLog: string }> {
  const home = await createBrokerHome();
  Object.assign(home.env, (options.ring ?? await keyring()).env);
  const argvLog = join(home.scratch, "secret-tool.argv");
  home.writeScript(
    "secret-tool",
    `printf '%s\\n' "$*" >> '${argvLog}'\nexec /usr/bin/secret-tool "$@"`,
  );
  home.addAgent();
  home.writeService(
    "api",
    tokenServiceToml({ name: "api", source: "secret", env: "API_KEY" }),
  );
  const value = randomToken("stored");
  await home.login();
  const set = await home.sherlock(["secret", "set", "api"], { stdin: value });
  assert.equal(set.code, 0, set.stderr);
  return { home, value, argvLog };
}

function storeHeader(home: BrokerHome): { version: number; id?: string } {
  return JSON.parse(
    Deno.readTextFileSync(
      join(home.dataHome, "sherlock", "secrets.enc"),
    ).split("\n")[0],
  );
}

function storeBytes(home: BrokerHome): Uint8Array {
  return Deno.readFileSync(join(home.dataHome, "sherlock", "secrets.enc"));
}

async function restartBroker(home: BrokerHome): Promise<void> {
  const stop = await home.sherlock(["broker", "stop"]);
  assert.equal(stop.code, 0, stop.stderr);
}

/** The session's `api` value, or undefined when the agent did not start. */
async function sessionValue(
  home: BrokerHome,
): Promise<{ code: number | null; stderr: string; value?: string }> {
  const { result, record } = await home.runAgent({ runOptions: ["--strict"] });
  return {
    code: result.code,
    stderr: result.stderr,
    value: record ? renderedServers(record).api?.env?.API_KEY : undefined,
  };
}

Deno.test({
  name:
    "login --remember: after a broker restart a session gets its token with no prompt; no key or passphrase in any file, log or argv",
  ignore,
  async fn() {
    const { home, value, argvLog } = await homeWithSecret();
    await using _ = home;
    const remember = await home.sherlock(["login", "--remember"], {
      stdin: `${PASSPHRASE}\n`,
    });
    assert.equal(remember.code, 0, remember.stderr);
    assert.match(remember.stdout, /remembered: the Secret Service keyring/);
    const header = storeHeader(home);
    assert.equal(header.version, 2);
    const key = await (await keyring()).lookup(header.id!);
    assert.ok(key, "the keyring holds the item");
    assert.match(key, /^[A-Za-z0-9+/]{43}=$/);

    await restartBroker(home);
    const session = await sessionValue(home);
    assert.equal(session.code, 0, session.stderr);
    assert.equal(session.value, value);
    const who = await home.sherlock(["whoami", "--verbose"]);
    assert.equal(who.code, 0, who.stderr);
    assert.match(
      who.stdout,
      /remembered key: in the Secret Service keyring; it unlocked the store/,
    );
    assert.ok(
      auditEntries(home).some((entry) =>
        entry.event === "login" && entry.keyring === "Secret Service"
      ),
    );
    const json = JSON.parse(
      (await home.sherlock(["whoami", "--json"])).stdout,
    );
    assert.deepEqual(json.remembered, {
      keyring: "Secret Service",
      state: "unlocked",
      reason: null,
    });
    const log = await home.sherlock(["broker", "log", "-n", "20"]);
    assert.match(log.stdout, /remember .*keyring: Secret Service/);
    assert.match(log.stdout, /login .*local.*keyring: Secret Service/);

    // An explicit logout is not undone by the keyring; whoami still says
    // that a key is remembered.
    assert.equal((await home.sherlock(["logout"])).code, 0);
    const afterLogout = await sessionValue(home);
    assert.equal(afterLogout.code, 77, afterLogout.stderr);
    const locked = await home.sherlock(["whoami", "--verbose"]);
    assert.equal(locked.code, 77);
    assert.match(
      locked.stdout,
      /remembered key: in the Secret Service keyring/,
    );

    // Searched: every file of the HOME (store, logs, audit, sessions),
    // the keyring tool's argv.
    const found = filesContaining(home.root, [key, PASSPHRASE]);
    assert.deepEqual(found, []);
    const argv = Deno.readTextFileSync(argvLog);
    assert.ok(argv.includes("lookup service sherlock store"), argv);
    assert.ok(!argv.includes(key) && !argv.includes(PASSPHRASE));
  },
});

Deno.test({
  name:
    "no session bus (SSH, a server, CI): the broker falls back to 'not logged in' at once, and login --remember says why",
  ignore,
  async fn() {
    const { home } = await homeWithSecret();
    await using _ = home;
    assert.equal(
      (await home.sherlock(["login", "--remember"], {
        stdin: `${PASSPHRASE}\n`,
      })).code,
      0,
    );
    await restartBroker(home);
    const noBus = { DBUS_SESSION_BUS_ADDRESS: "" };
    // The broker started by this session has no bus to find the keyring on.
    const { result } = await home.runAgent({
      runOptions: ["--strict"],
      env: noBus,
    });
    assert.equal(result.code, 77, result.stderr);
    assert.match(result.stderr, /not logged in/);
    assert.equal(lines(result.stderr).length, 1, result.stderr);
    const who = await home.sherlock(["whoami", "--verbose"], { env: noBus });
    assert.equal(who.code, 77);
    assert.match(
      who.stdout,
      /Secret Service keyring cannot be asked \(no D-Bus session bus/,
    );
    // The passphrase still works, and remembering there fails with one line.
    const again = await home.sherlock(["login", "--remember"], {
      stdin: `${PASSPHRASE}\n`,
      env: noBus,
    });
    assert.equal(again.code, 69, again.stderr);
    assert.match(again.stdout, /logged in/);
    assert.equal(lines(again.stderr).length, 1, again.stderr);
    assert.match(again.stderr, /Secret Service keyring cannot be used/);
  },
});

Deno.test({
  name:
    "a locked or stalled keyring: 'not logged in' within the bound, then the passphrase works",
  ignore,
  async fn() {
    // A keyring of its own: it is locked for good.
    const ring = await startPrivateKeyring();
    assert.ok(ring);
    const { home, value } = await homeWithSecret({ ring });
    await using _ = home;
    try {
      await lockedAndStalled(home, ring);
    } finally {
      ring.stop();
    }
    await home.login();
    const session = await sessionValue(home);
    assert.equal(session.value, value);
  },
});

async function lockedAndStalled(
  home: BrokerHome,
  ring: PrivateKeyring,
): Promise<void> {
  assert.equal(
    (await home.sherlock(["login", "--remember"], {
      stdin: `${PASSPHRASE}\n`,
    })).code,
    0,
  );
  await restartBroker(home);
  ring.stall(true);
  try {
    // A keyring that never answers: the lookup is killed at its bound.
    const stalled = await sessionValue(home);
    assert.equal(stalled.code, 77, stalled.stderr);
    const who = await home.sherlock(["whoami", "--verbose"]);
    assert.match(who.stdout, /did not answer within 1.5 s/);
  } finally {
    ring.stall(false);
  }
  await restartBroker(home);
  await ring.lock();
  const locked = await sessionValue(home);
  assert.equal(locked.code, 77, locked.stderr);
  const who = await home.sherlock(["whoami", "--verbose"]);
  assert.match(who.stdout, /holds no item for it \(or is locked\)/);
}

Deno.test({
  name:
    "a stale or wrong item: one clear line, then the prompt; the store is untouched",
  ignore,
  async fn() {
    const { home, value } = await homeWithSecret();
    await using _ = home;
    const ring = await keyring();
    assert.equal(
      (await home.sherlock(["login", "--remember"], {
        stdin: `${PASSPHRASE}\n`,
      })).code,
      0,
    );
    const id = storeHeader(home).id!;
    await restartBroker(home);
    // Another random key in the item (as a copy of the store elsewhere, or
    // a second --remember whose store write was lost, would leave it).
    await ring.store(id, btoa(String.fromCharCode(...new Uint8Array(32))));
    const before = storeBytes(home);
    const session = await sessionValue(home);
    assert.equal(session.code, 77, session.stderr);
    assert.deepEqual(storeBytes(home), before, "the store is unchanged");
    const login = await home.sherlock(["login"], { stdin: `${PASSPHRASE}\n` });
    assert.equal(login.code, 0, login.stderr);
    assert.equal(lines(login.stderr).length, 1, login.stderr);
    assert.match(
      login.stderr,
      /the keyring's remembered key does not open the secret store .*stale.*sherlock login --remember/,
    );
    assert.deepEqual(storeBytes(home), before, "a login writes nothing");
    assert.equal((await sessionValue(home)).value, value);
    // Remembering again replaces the item in place: one item per store.
    for (let i = 0; i < 2; i++) {
      assert.equal(
        (await home.sherlock(["login", "--remember"], {
          stdin: `${PASSPHRASE}\n`,
        })).code,
        0,
      );
    }
    assert.equal(await ring.count(id), 1);
    await restartBroker(home);
    assert.equal((await sessionValue(home)).value, value);
  },
});

Deno.test({
  name:
    "changing the passphrase keeps the item valid; --forget removes item and slot",
  ignore,
  async fn() {
    const { home, value } = await homeWithSecret();
    await using _ = home;
    const ring = await keyring();
    assert.equal(
      (await home.sherlock(["login", "--remember"], {
        stdin: `${PASSPHRASE}\n`,
      })).code,
      0,
    );
    const id = storeHeader(home).id!;
    const key = await ring.lookup(id);
    const newPassphrase = `new ${randomToken("pass")}`;
    const change = await home.sherlock(["login", "--change-passphrase"], {
      stdin: `${PASSPHRASE}\n${newPassphrase}\n`,
    });
    assert.equal(change.code, 0, change.stderr);
    assert.match(change.stdout, /changed the passphrase/);
    assert.equal(await ring.lookup(id), key, "the item is unchanged");
    await restartBroker(home);
    assert.equal((await sessionValue(home)).value, value, "the item works");
    // The old passphrase no longer does, the new one does.
    await home.sherlock(["logout"]);
    const old = await home.sherlock(["login"], { stdin: `${PASSPHRASE}\n` });
    assert.equal(old.code, 77);
    await home.login(newPassphrase);

    const forget = await home.sherlock(["login", "--forget"]);
    assert.equal(forget.code, 0, forget.stderr);
    assert.match(forget.stdout, /removed the remembered key from the Secret/);
    assert.equal(await ring.lookup(id), undefined, "the item is gone");
    const header = storeHeader(home) as { slots?: { kind: string }[] };
    assert.deepEqual(header.slots?.map((slot) => slot.kind), ["passphrase"]);
    await restartBroker(home);
    const after = await sessionValue(home);
    assert.equal(after.code, 77, "a restart asks for the passphrase again");
    assert.deepEqual(
      filesContaining(home.root, [key!, PASSPHRASE, newPassphrase]),
      [],
    );
  },
});

Deno.test({
  name: "after the idle lock the keyring unlocks the store again, no prompt",
  ignore,
  async fn() {
    const { home, value } = await homeWithSecret();
    await using _ = home;
    assert.equal(
      (await home.sherlock(["login", "--remember"], {
        stdin: `${PASSPHRASE}\n`,
      })).code,
      0,
    );
    // Set after --remember, which a one-second lock could overtake.
    home.writeConfig("[broker]\nidle_timeout = 1\n");
    await restartBroker(home); // reads the idle timeout
    await home.login();
    // Waits for the lock by the audit log, without asking the broker
    // (which would unlock it again).
    await waitUntil(
      () => auditEntries(home).some((entry) => entry.event === "idle_lock"),
      "the idle lock",
    );
    const session = await sessionValue(home);
    assert.equal(session.code, 0, session.stderr);
    assert.equal(session.value, value);
    assert.ok(
      auditEntries(home).some((entry) =>
        entry.event === "login" && entry.keyring === "Secret Service"
      ),
    );
  },
});

Deno.test("login --change-passphrase on a terminal: the current one, then the new one twice, never echoed", async () => {
  await using home = await createBrokerHome();
  await home.login();
  const next = `next ${randomToken("pass")}`;
  const changed = await runSherlockOnPty(["login", "--change-passphrase"], {
    env: home.env,
    steps: [
      { expect: /Passphrase: /, send: `${PASSPHRASE}\r` },
      { expect: /New passphrase for the sherlock store: /, send: `${next}\r` },
      { expect: /Repeat it: /, send: `${next}\r` },
    ],
  });
  assert.equal(changed.code, 0, changed.screen);
  assert.match(changed.screen, /changed the passphrase/);
  assert.ok(!changed.screen.includes(next), "not echoed");
  assert.ok(!changed.screen.includes(PASSPHRASE), "not echoed");
  await home.sherlock(["logout"]);
  await home.login(next);
  const usage = await home.sherlock(["login", "--forget", "--remember"]);
  assert.equal(usage.code, 2);
  assert.equal(lines(usage.stderr).length, 1);
});
