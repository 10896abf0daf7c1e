/**
 * Byte helpers: joining chunks read from a stream, a socket or a pipe, and
 * base64 for bytes kept in JSON (a session record holds an operator's
 * original file). Not `@std/bytes` or `@std/encoding` (no JSR where sherlock
 * is developed) nor `Buffer` (a `node:` import would start Node
 * compatibility on the launch path).
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

/** True when both hold the same bytes. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, index) => byte === b[index]);
}

/** Bytes as base64. */
export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  // In slices: spreading a whole large file would overflow the call stack.
  for (let index = 0; index < bytes.length; index += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(index, index + 0x8000));
  }
  return btoa(binary);
}

/** The bytes of a base64 text (the inverse of {@linkcode toBase64}). */
export function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (character) => character.charCodeAt(0));
}
