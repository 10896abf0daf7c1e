/**
 * The daemon's one clock: every token expiry, refresh margin and device
 * poll interval of the broker reads `now` and waits with `sleep` of the
 * {@linkcode Clock} it was given, so that a test moves time instead of
 * waiting it out, the authorization flows' five-minute timeout too (the
 * HTTP time limit stays on the system's timers). The daemon's is {@linkcode daemonClock}: the system clock,
 * or — only when {@linkcode TEST_CLOCK_ENV} names a file — the system clock
 * plus the offset (ms) that file holds, which a test raises to make tokens
 * expire and poll intervals pass in a real daemon process.
 *
 * @module
 */

import { sleep as systemSleep } from "../../runtime/sleep.ts";

/** The environment variable naming a test clock's offset file. */
export const TEST_CLOCK_ENV = "SHERLOCK_TEST_CLOCK_FILE";

/** Time as the daemon sees it. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Resolves once `ms` have passed on this clock, or as soon as `signal`
   * aborts (resolving, not rejecting: callers check their signal).
   */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

/** The system clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: systemSleep,
};

/** How often a test clock's sleep looks at the clock again. */
const TEST_CLOCK_TICK_MS = 20;

/**
 * The daemon's clock: {@linkcode systemClock}, or the test clock when
 * `env` names an offset file (see the module's documentation) and sherlock
 * runs from source, as the tests run it. A compiled binary, which is what
 * operators run, never takes it: whoever starts the broker (an agent that
 * turned hostile, say) must not move the clock its tokens expire by. An
 * absent or unreadable file is an offset of 0.
 */
export function daemonClock(
  env: { get(name: string): string | undefined },
  options: { compiled?: boolean } = {},
): Clock {
  const file = env.get(TEST_CLOCK_ENV);
  if (!file || (options.compiled ?? Deno.build.standalone)) return systemClock;
  return offsetClock(() => readOffset(file));
}

/**
 * The system clock moved by `offset()` ms (read at every use). Its sleep
 * ends when the moved clock has passed the time, so a raised offset cuts
 * a wait short; real time passing ends it too.
 */
export function offsetClock(offset: () => number): Clock {
  const now = () => Date.now() + offset();
  return {
    now,
    async sleep(ms: number, signal: AbortSignal): Promise<void> {
      const until = now() + ms;
      while (!signal.aborted && now() < until) {
        await systemSleep(Math.min(TEST_CLOCK_TICK_MS, until - now()), signal);
      }
    },
  };
}

function readOffset(file: string): number {
  try {
    const offset = Number(Deno.readTextFileSync(file).trim());
    return Number.isFinite(offset) ? offset : 0;
  } catch {
    return 0;
  }
}
