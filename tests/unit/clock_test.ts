/**
 * The daemon's clock (`lib/broker/daemon/clock.ts`): the test clock a
 * daemon takes from `SHERLOCK_TEST_CLOCK_FILE` reads its offset at every
 * use, and a raised offset ends a sleep that would otherwise last a minute.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  daemonClock,
  offsetClock,
  systemClock,
  TEST_CLOCK_ENV,
} from "../../lib/broker/daemon/clock.ts";

function envOf(values: Record<string, string>) {
  return { get: (name: string) => values[name] };
}

Deno.test("daemonClock: a compiled binary ignores the test clock's variable", () => {
  const env = envOf({ [TEST_CLOCK_ENV]: "/tmp/any-clock" });
  assert.equal(daemonClock(env, { compiled: true }), systemClock);
  assert.notEqual(daemonClock(env, { compiled: false }), systemClock);
});

Deno.test("daemonClock: the system clock unless the variable names a file; the file's offset read at each use", async () => {
  assert.equal(daemonClock(envOf({})), systemClock);
  const dir = await Deno.makeTempDir();
  try {
    const file = join(dir, "clock");
    const clock = daemonClock(envOf({ [TEST_CLOCK_ENV]: file }));
    // No file yet: no offset.
    assert.ok(Math.abs(clock.now() - Date.now()) < 60_000);
    Deno.writeTextFileSync(file, String(3_600_000));
    assert.ok(clock.now() - Date.now() > 3_500_000);
    Deno.writeTextFileSync(file, "not a number");
    assert.ok(Math.abs(clock.now() - Date.now()) < 60_000);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("offsetClock: a raised offset ends a minute's sleep; an abort ends it too", async () => {
  let offset = 0;
  const clock = offsetClock(() => offset);
  const abort = new AbortController();
  let slept = false;
  const sleeping = clock.sleep(60_000, abort.signal).then(() => slept = true);
  assert.equal(slept, false);
  offset += 60_000;
  await sleeping;
  assert.equal(slept, true);

  const aborted = new AbortController();
  const cut = clock.sleep(60_000, aborted.signal);
  aborted.abort();
  await cut;
});
