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
