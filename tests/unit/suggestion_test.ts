/** The "did you mean" suggestions: edit distance and the closest name. */

import assert from "node:assert/strict";
import {
  closestName,
  didYouMean,
  editDistance,
  MAX_SUGGESTED_LENGTH,
} from "../../lib/config/suggestion.ts";
import { MAX_QUOTED_LENGTH, shortenForQuote } from "../../lib/config/names.ts";

Deno.test("editDistance counts insertions, deletions, substitutions and swaps", () => {
  assert.equal(editDistance("source", "source"), 0);
  assert.equal(editDistance("sorce", "source"), 1);
  assert.equal(editDistance("claud", "claude"), 1);
  assert.equal(editDistance("cluade", "claude"), 1, "a swap is one edit");
  assert.equal(editDistance("", "abc"), 3);
  assert.equal(editDistance("kitten", "sitting"), 3);
});

Deno.test("closestName suggests a near name, never a far one or a tie", () => {
  const keys = ["source", "command", "env", "header", "format", "ttl"];
  assert.equal(closestName("sorce", keys), "source");
  assert.equal(closestName("comand", keys), "command");
  assert.equal(closestName("evn", keys), "env");
  assert.equal(closestName("delivery", keys), undefined);
  assert.equal(closestName("source", keys), undefined, "not itself");
  assert.equal(closestName("ab", ["aa", "bb"]), undefined, "a tie");
  assert.equal(closestName("githb", ["github", "linear"]), "github");
  assert.equal(closestName("xy", ["ab"]), undefined, "short names: one edit");
  assert.equal(
    didYouMean("claud", ["claude", "codex"]),
    " (did you mean claude?)",
  );
  assert.equal(didYouMean("zzz", ["claude"]), "");
});

Deno.test("closestName: a word longer than any name is not measured, its candidates not even read (issue 17, item 13)", () => {
  // A key of ~900 K characters (under the 1 MiB file limit): measuring it
  // against each candidate took seconds and ~750 MB.
  const huge = "k".repeat(900_000);
  let read = false;
  function* candidates() {
    read = true;
    yield "command";
    yield "headers";
  }
  assert.equal(closestName(huge, candidates()), undefined);
  assert.equal(read, false, "the candidates were read: the word was measured");

  // The bound itself: one character over it, even a one-edit typo of a
  // (no less absurd) candidate gets no suggestion.
  const over = "a".repeat(MAX_SUGGESTED_LENGTH + 1);
  assert.equal(closestName(over, [over + "a"]), undefined);
  const at = "a".repeat(MAX_SUGGESTED_LENGTH);
  assert.equal(closestName(at, [at + "b"]), at + "b");
});

Deno.test("closestName: candidates whose length is too far off are skipped, with the same answers", () => {
  assert.equal(closestName("sorce", ["source", "s", "sourcesource"]), "source");
  assert.equal(closestName("abcd", ["abc", "abcde"]), undefined, "a tie");
  assert.equal(closestName("abcdef", ["abcdefgh"]), "abcdefgh");
  assert.equal(closestName("abcdef", ["abcdefghi"]), undefined);
});

Deno.test("shortenForQuote: a long key is quoted by its start and an ellipsis", () => {
  assert.equal(shortenForQuote("server.comand"), "server.comand");
  const exact = "x".repeat(MAX_QUOTED_LENGTH);
  assert.equal(shortenForQuote(exact), exact);
  assert.equal(
    shortenForQuote("k".repeat(900_000)),
    "k".repeat(MAX_QUOTED_LENGTH) + "…",
  );
  // Never half of a character outside the BMP.
  const emoji = "x".repeat(MAX_QUOTED_LENGTH - 1) + "😀" + "y";
  assert.equal(shortenForQuote(emoji), "x".repeat(MAX_QUOTED_LENGTH - 1) + "…");
});
