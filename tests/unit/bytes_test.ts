/**
 * The byte helpers (lib/runtime/bytes.ts): chunks joined, base64 both ways
 * (a session record keeps an operator's original file in it), comparison.
 */

import assert from "node:assert/strict";
import {
  concatBytes,
  equalBytes,
  fromBase64,
  toBase64,
} from "../../lib/runtime/bytes.ts";

Deno.test("concatBytes: the chunks in order, empty ones included", () => {
  const joined = concatBytes([
    new Uint8Array([1, 2]),
    new Uint8Array(),
    new Uint8Array([3]),
  ]);
  assert.deepEqual([...joined], [1, 2, 3]);
});

Deno.test("toBase64/fromBase64: every byte value, and more than one slice, round trip", () => {
  const bytes = new Uint8Array(0x8000 * 2 + 7).map((_, index) => index % 256);
  const text = toBase64(bytes);
  assert.ok(equalBytes(fromBase64(text), bytes));
  assert.equal(toBase64(new Uint8Array()), "");
  assert.equal(toBase64(new TextEncoder().encode("{}\n")), "e30K");
});

Deno.test("equalBytes: same length and bytes", () => {
  assert.ok(equalBytes(new Uint8Array([1, 2]), new Uint8Array([1, 2])));
  assert.ok(!equalBytes(new Uint8Array([1, 2]), new Uint8Array([1, 3])));
  assert.ok(!equalBytes(new Uint8Array([1]), new Uint8Array([1, 0])));
});
