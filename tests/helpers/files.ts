/**
 * Reading what a test's processes left in files: permission bits, and the
 * lines a script appended (a helper counting its runs).
 *
 * @module
 */

/** The file's permission bits. */
export function modeOf(path: string): number {
  return (Deno.lstatSync(path).mode ?? 0) & 0o777;
}

/** The number of lines in a file (0 when it does not exist). */
export function countLines(path: string): number {
  try {
    return Deno.readTextFileSync(path).split("\n").filter((line) => line)
      .length;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return 0;
    throw error;
  }
}
