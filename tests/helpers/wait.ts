/**
 * Waiting for something to happen (a file to appear, a process to record a
 * signal) without assuming how long it takes: polls until a condition
 * holds, with a generous deadline that only guards against a hang.
 *
 * @module
 */

/** How long {@linkcode waitUntil} waits before it gives up. */
export const WAIT_LIMIT_MS = 60_000;

/**
 * Calls `probe` until it returns something other than undefined (or false)
 * and returns that; throws, naming `what`, when the limit passes first.
 */
export async function waitUntil<T>(
  probe: () => T | undefined | false,
  what: string,
  limitMs = WAIT_LIMIT_MS,
): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) {
      throw new Error(`gave up waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** True when something exists at `path` (a dangling symlink counts). */
export function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * Settles `promise` while moving a broker daemon's test clock `stepMs`
 * ahead every half second (`TestHome.advanceClock`): the daemon's waits on
 * its clock — a device grant's poll interval, 5 s by default — pass one per
 * tick without the test waiting them out. For a step that waits on such a
 * wait; `promise` guards its own hang.
 */
export async function whileAdvancing<T>(
  home: { advanceClock(ms: number): void },
  promise: Promise<T>,
  stepMs = 5_000,
): Promise<T> {
  let settled = false;
  const done = promise.then(
    () => settled = true,
    () => settled = true,
  );
  while (!settled) {
    home.advanceClock(stepMs);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      done,
      new Promise((resolve) => timer = setTimeout(resolve, 500)),
    ]);
    clearTimeout(timer);
  }
  return await promise;
}
