/** SHA-256 in plain TypeScript (lib/runtime/sha256.ts), against node:crypto. */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { sha256Hex } from "../../lib/runtime/sha256.ts";

Deno.test("sha256Hex: the FIPS 180-4 examples", () => {
  assert.equal(
    sha256Hex(""),
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  );
  assert.equal(
    sha256Hex("abc"),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  assert.equal(
    sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
  assert.equal(
    sha256Hex("a".repeat(1_000_000)),
    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
  );
});

Deno.test("sha256Hex: equals node:crypto for every length across block edges, strings as UTF-8", () => {
  for (let length = 0; length <= 200; length++) {
    const bytes = crypto.getRandomValues(new Uint8Array(length));
    assert.equal(
      sha256Hex(bytes),
      createHash("sha256").update(bytes).digest("hex"),
      `length ${length}`,
    );
  }
  for (const text of ["héllo ✓ 𝄞", "\0", "x\r\n".repeat(1000)]) {
    assert.equal(
      sha256Hex(text),
      createHash("sha256").update(text).digest("hex"),
    );
  }
});
