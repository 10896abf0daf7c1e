/** The "did you mean" suggestions: edit distance and the closest name. */

import assert from "node:assert/strict";
import {
  closestName,
  didYouMean,
  editDistance,
} from "../../lib/config/suggestion.ts";

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
