/**
 * Waiting that an abort cuts short. Not `@std/async`'s `delay` (no JSR
 * where sherlock is developed), and unlike it an abort resolves rather than
 * rejects: the callers (the bridge's stream reconnects, the device grant's
 * polling) check their signal after the wait and say why they stop.
 *
 * @module
 */

/**
 * Resolves after `ms`, or as soon as `signal` aborts (at once if it already
 * has), leaving no timer and no listener behind either way.
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    // An aborted signal never fires "abort" again: without this the wait
    // would last its full time.
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
