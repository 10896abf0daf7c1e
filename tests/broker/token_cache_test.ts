/**
 * The daemon's token cache in-process: the refresh margin, single flight,
 * failures, and `clear()` while a fetch is running (logout, idle lock).
 */

import assert from "node:assert/strict";
import {
  isFresh,
  type Token,
  TokenCache,
} from "../../lib/broker/daemon/token_cache.ts";

/** A fetch whose calls resolve or reject when the test says (latest first). */
function deferredFetch() {
  const pending: {
    resolve: (token: Token) => void;
    reject: (error: Error) => void;
  }[] = [];
  const fetch = () =>
    new Promise<Token>((resolve, reject) => pending.push({ resolve, reject }));
  return {
    fetch,
    get calls() {
      return pending.length;
    },
    /** Resolves call `index` (default: the latest). */
    resolve: (token: Token, index = pending.length - 1) =>
      pending[index].resolve(token),
    reject: (error: Error, index = pending.length - 1) =>
      pending[index].reject(error),
  };
}

Deno.test("isFresh: a tenth of the lifetime before expiry, at most a minute", () => {
  const fetchedAt = 1_000_000;
  const tenSeconds = { token: "t", expiresAt: fetchedAt + 10_000, fetchedAt };
  assert.equal(isFresh(tenSeconds, fetchedAt), true);
  assert.equal(isFresh(tenSeconds, fetchedAt + 8_999), true);
  assert.equal(isFresh(tenSeconds, fetchedAt + 9_000), false);
  assert.equal(isFresh(tenSeconds, fetchedAt + 20_000), false);
  const hour = { token: "t", expiresAt: fetchedAt + 3_600_000, fetchedAt };
  assert.equal(isFresh(hour, fetchedAt + 3_539_999), true);
  assert.equal(isFresh(hour, fetchedAt + 3_540_000), false, "60 s margin");
  assert.equal(isFresh({ token: "t", fetchedAt }, fetchedAt), false);
});

Deno.test("TokenCache: concurrent requests share one fetch; a fresh token is reused", async () => {
  const cache = new TokenCache();
  const fetch = deferredFetch();
  const first = cache.get("k", fetch.fetch);
  const second = cache.get("k", fetch.fetch);
  fetch.resolve({ token: "a", expiresAt: Date.now() + 3_600_000 });
  const [one, two] = await Promise.all([first, second]);
  assert.equal(fetch.calls, 1);
  assert.equal(one.token, "a");
  assert.equal(one.cached, false);
  assert.equal(two.token, "a");
  assert.equal(two.cached, true);
  const third = await cache.get("k", fetch.fetch);
  assert.equal(third.cached, true);
  assert.equal(fetch.calls, 1);
  assert.equal(cache.size, 1);
  // Another key is fetched on its own.
  const other = cache.get("other", fetch.fetch);
  assert.equal(fetch.calls, 2);
  fetch.resolve({ token: "b" });
  assert.equal((await other).token, "b");
});

Deno.test("TokenCache: a token without expiry, or a failed fetch, is not kept", async () => {
  const cache = new TokenCache();
  const fetch = deferredFetch();
  const waiting = [cache.get("k", fetch.fetch), cache.get("k", fetch.fetch)];
  fetch.reject(new Error("helper failed"));
  for (const result of await Promise.allSettled(waiting)) {
    assert.equal(result.status, "rejected");
  }
  const next = cache.get("k", fetch.fetch);
  assert.equal(fetch.calls, 2, "a failure is fetched again");
  fetch.resolve({ token: "bare" });
  assert.equal((await next).token, "bare");
  const again = cache.get("k", fetch.fetch);
  assert.equal(fetch.calls, 3, "a token without expiry is fetched each time");
  fetch.resolve({ token: "bare" });
  await again;
  assert.equal(cache.size, 0);
});

Deno.test("TokenCache: clear() during a fetch keeps nothing of it and starts anew", async () => {
  const cache = new TokenCache();
  const fetch = deferredFetch();
  const before = cache.get("k", fetch.fetch);
  cache.clear(); // logout while the helper runs
  const after = cache.get("k", fetch.fetch);
  assert.equal(fetch.calls, 2, "a request after clear() does not join");
  fetch.resolve({ token: "old", expiresAt: Date.now() + 3_600_000 }, 0);
  assert.equal((await before).token, "old");
  assert.equal(cache.size, 0, "the old fetch's token is not kept");
  fetch.resolve({ token: "new", expiresAt: Date.now() + 3_600_000 }, 1);
  assert.equal((await after).token, "new");
  assert.equal((await cache.get("k", fetch.fetch)).token, "new");
  assert.equal(fetch.calls, 2);
});

Deno.test("TokenCache: a refused token is dropped; concurrent requests then share one fetch", async () => {
  const cache = new TokenCache();
  const fetch = deferredFetch();
  const hour = () => Date.now() + 3_600_000;
  const first = cache.get("k", fetch.fetch);
  fetch.resolve({ token: "old", expiresAt: hour() });
  assert.equal((await first).token, "old");
  // Not the kept token: nothing is dropped.
  cache.forgetIf("k", (token) => token === "other");
  assert.equal((await cache.get("k", fetch.fetch)).token, "old");
  cache.forgetIf("k", (token) => token === "old");
  const refreshes = [
    cache.get("k", fetch.fetch),
    cache.get("k", fetch.fetch),
    cache.get("k", fetch.fetch),
  ];
  assert.equal(fetch.calls, 2, "one fetch for the burst");
  fetch.resolve({ token: "new", expiresAt: hour() });
  const served = await Promise.all(refreshes);
  assert.deepEqual(served.map((token) => token.token), ["new", "new", "new"]);
  assert.deepEqual(served.map((token) => token.cached), [false, true, true]);
  const later = await cache.get("k", fetch.fetch);
  assert.equal(later.token, "new", "the new token is kept");
  assert.equal(fetch.calls, 2);
});

Deno.test("TokenCache: with an injected clock, a token is served until its margin, then fetched anew", async () => {
  let now = 1_000_000;
  const cache = new TokenCache({ now: () => now });
  let fetches = 0;
  const fetch = () => {
    fetches++;
    return Promise.resolve({ token: `t${fetches}`, expiresAt: now + 600_000 });
  };
  assert.equal((await cache.get("k", fetch)).token, "t1");
  now += 539_000; // 1 s before the one-minute margin of a 10-minute token
  assert.deepEqual(await cache.get("k", fetch), {
    token: "t1",
    expiresAt: 1_600_000,
    cached: true,
  });
  now += 2_000;
  assert.equal((await cache.get("k", fetch)).token, "t2");
  assert.equal(fetches, 2);
});
