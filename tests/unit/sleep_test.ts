/**
 * The one `sleep` (lib/runtime/sleep.ts) of the bridge's stream reconnects
 * and the device grant's polling: cut short by an abort, including one that
 * came before, and leaving no timer (Deno's sanitizer fails a test that
 * does).
 */

import assert from "node:assert/strict";
import { sleep } from "../../lib/runtime/sleep.ts";

const HOUR_MS = 60 * 60 * 1000;

/** "woke" if `wait` settles before the next timer turn, else "asleep". */
async function firstTurn(wait: Promise<void>): Promise<string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  // A settled promise's callbacks run before any timer, however short.
  const nextTurn = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve("asleep"), 0);
  });
  const first = await Promise.race([wait.then(() => "woke"), nextTurn]);
  clearTimeout(timer);
  return first;
}

Deno.test("sleep: a signal aborted before it ends it at once, leaving no timer", async () => {
  const stop = new AbortController();
  stop.abort();
  assert.equal(await firstTurn(sleep(HOUR_MS, stop.signal)), "woke");
});

Deno.test("sleep: an abort while it waits ends it, leaving no timer", async () => {
  const stop = new AbortController();
  const wait = sleep(HOUR_MS, stop.signal);
  assert.equal(await firstTurn(wait), "asleep");
  stop.abort();
  assert.equal(await firstTurn(wait), "woke");
});

Deno.test("sleep: without an abort it ends after its time", async () => {
  await sleep(1, new AbortController().signal);
});
