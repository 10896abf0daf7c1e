/**
 * The signal sherlock may send itself to learn that every earlier signal
 * has reached its listener (`launch/spawn.ts`): one that does nothing when
 * it comes, and that this process does not block. A parent may start
 * sherlock with signals blocked, and a blocked signal sent to oneself never
 * arrives: `perf stat` blocks SIGWINCH, and every `sherlock run` under it
 * waited 2 s (two 1 s deadlines) before the agent started. Linux says
 * which signals a thread blocks in `/proc/thread-self/status`; elsewhere
 * SIGWINCH is taken unchecked.
 *
 * @module
 */

/**
 * Signals whose default is to be ignored, in the order sherlock prefers
 * them, with their numbers on Linux (x86-64 and arm64, Deno's Linux builds).
 */
const HARMLESS_SIGNALS: readonly (readonly [Deno.Signal, number])[] = [
  ["SIGWINCH", 28],
  ["SIGURG", 23],
];

/**
 * The first of the harmless signals that `status` (the text of Linux's
 * `/proc/<pid>/status`) does not list as blocked (`SigBlk:`, a hex mask
 * in which bit N-1 is signal N); undefined when it blocks them all. A text
 * without a readable mask (not Linux, or unreadable) gives the first.
 */
export function unblockedHarmlessSignal(
  status: string | undefined,
): Deno.Signal | undefined {
  const mask = /^SigBlk:\s*([0-9a-fA-F]{1,16})\s*$/m.exec(status ?? "");
  if (mask === null) return HARMLESS_SIGNALS[0][0];
  const blocked = BigInt(`0x${mask[1]}`);
  const free = HARMLESS_SIGNALS.find(([, number]) =>
    ((blocked >> BigInt(number - 1)) & 1n) === 0n
  );
  return free?.[0];
}

/** Read once: a process's mask does not change under sherlock. */
let chosen: { signal: Deno.Signal | undefined } | undefined;

/**
 * The signal sherlock sends itself as a sentinel, or undefined when this
 * process blocks every harmless one (then no sentinel would ever come).
 */
export function sentinelSignal(): Deno.Signal | undefined {
  if (chosen === undefined) {
    let status: string | undefined;
    if (Deno.build.os === "linux") {
      try {
        status = Deno.readTextFileSync("/proc/thread-self/status");
      } catch {
        // No /proc (a sandbox): as elsewhere, SIGWINCH unchecked.
      }
    }
    chosen = { signal: unblockedHarmlessSignal(status) };
  }
  return chosen.signal;
}
