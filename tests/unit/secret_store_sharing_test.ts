/**
 * One store file open in two daemons (lib/broker/daemon/secret_store.ts):
 * `reload`, the compare-and-swap `update` and the `exclusively` lock that
 * the OAuth refresh relies on (issue 17, item 3). Real files, real flock;
 * the order of the two lock holders is read from /proc/locks, never timed.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  createStore,
  type ScryptParams,
  StoreLockedError,
  unlockStore,
} from "../../lib/broker/daemon/secret_store.ts";

const PASSPHRASE = "correct horse battery staple";
const FAST: ScryptParams = { N: 2 ** 10, r: 8, p: 1 };
const GRANT = "oauth.grant.remote";

/** Runs `body` with a store path in a fresh temp folder. */
async function withStorePath(body: (path: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "sherlock-store-sharing-" });
  try {
    await body(join(dir, "sherlock", "secrets.enc"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The pids waiting for (not holding) a flock on the file `path`. */
function flockWaiters(path: string): number[] {
  const inode = Deno.statSync(path).ino;
  return Deno.readTextFileSync("/proc/locks").split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[1] === "->" && fields[2] === "FLOCK")
    .filter((fields) => Number(fields[6]?.split(":")[2]) === inode)
    .map((fields) => Number(fields[5]));
}

Deno.test("two stores on one file: get answers what was loaded, reload what is on disk, update swaps only against what is on disk now", async () => {
  await withStorePath(async (path) => {
    const desktop = await createStore(path, PASSPHRASE, { kdf: FAST });
    await desktop.set(GRANT, "first");
    const ssh = await unlockStore(path, PASSPHRASE);
    await desktop.set(GRANT, "rotated");
    await desktop.set("github", "ghp-token");
    assert.equal(ssh.get(GRANT), "first", "memory: what the login read");

    // Compared with what is on disk, not with what this daemon last saw.
    const seen: (string | undefined)[] = [];
    const stale = await ssh.update(GRANT, (current) => {
      seen.push(current);
      return current === "first" ? "dead" : undefined;
    });
    assert.equal(stale, false);
    assert.deepEqual(seen, ["rotated"]);
    assert.equal(ssh.get(GRANT), "rotated", "the update re-read the file");

    const swapped = await ssh.update(
      GRANT,
      (current) => current === "rotated" ? "rotated-again" : undefined,
    );
    assert.equal(swapped, true);
    assert.equal(desktop.get(GRANT), "rotated");
    await desktop.reload();
    assert.equal(desktop.get(GRANT), "rotated-again");
    assert.equal(desktop.get("github"), "ghp-token", "nothing else lost");

    // A value the store refuses is refused by update too, and not written.
    await assert.rejects(ssh.update(GRANT, () => ""), /must not be empty/);
    await desktop.reload();
    assert.equal(desktop.get(GRANT), "rotated-again");
  });
});

Deno.test("exclusively: of two stores on one file, one runs a topic's work at a time; other topics and writes go on", async () => {
  await withStorePath(async (path) => {
    const desktop = await createStore(path, PASSPHRASE, { kdf: FAST });
    const ssh = await unlockStore(path, PASSPHRASE);
    const events: string[] = [];
    const release = Promise.withResolvers<void>();
    const entered = Promise.withResolvers<void>();
    const first = desktop.exclusively("oauth.refresh.remote", async () => {
      events.push("desktop in");
      entered.resolve();
      await release.promise;
      events.push("desktop out");
    });
    await entered.promise;
    const lockFile = `${path}.oauth.refresh.remote.lock`;
    assert.equal(Deno.statSync(lockFile).mode! & 0o777, 0o600);
    const second = ssh.exclusively("oauth.refresh.remote", () => {
      events.push("ssh in");
      return Promise.resolve(42);
    });
    // The second waits on the lock (the kernel says so), not on a timer.
    await waitFor(() => flockWaiters(lockFile).includes(Deno.pid));
    // Meanwhile another topic, and the store's own writes, are not held up.
    assert.equal(
      await ssh.exclusively("oauth.refresh.other", () => Promise.resolve(1)),
      1,
    );
    await ssh.set("github", "ghp-token");
    assert.deepEqual(events, ["desktop in"]);
    release.resolve();
    await first;
    assert.equal(await second, 42);
    assert.deepEqual(events, ["desktop in", "desktop out", "ssh in"]);
  });
});

Deno.test("exclusively refuses a topic that is not a plain name; a locked store refuses reload, update and exclusively", async () => {
  await withStorePath(async (path) => {
    const store = await createStore(path, PASSPHRASE, { kdf: FAST });
    for (const topic of ["../escape", "", "a/b", "UPPER"]) {
      await assert.rejects(
        store.exclusively(topic, () => Promise.resolve()),
        RangeError,
      );
    }
    store.lock();
    await assert.rejects(store.reload(), StoreLockedError);
    await assert.rejects(store.update(GRANT, () => "x"), StoreLockedError);
    await assert.rejects(
      store.exclusively("oauth.refresh.remote", () => Promise.resolve()),
      StoreLockedError,
    );
  });
});

/** Polls `probe` (a hang guard, not a timing assertion). */
async function waitFor(probe: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error("gave up waiting");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
