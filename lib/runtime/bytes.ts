/**
 * Joining byte chunks read from a stream, a socket or a pipe. Not
 * `@std/bytes` (no JSR where sherlock is developed) nor `Buffer.concat`
 * (a `node:` import would start Node compatibility on the launch path).
 *
 * @module
 */

/** The chunks one after another, in one new array. */
export function concatBytes(
  chunks: readonly Uint8Array[],
): Uint8Array<ArrayBuffer> {
  const total = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  const all = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.length;
  }
  return all;
}
