/**
 * The comments `sherlock agents override` and `agents show` add to a
 * built-in profile: one for every table and key of every built-in, each for
 * a key the schema knows, and the text still parses to the same profile.
 */

import assert from "node:assert/strict";
import { parse } from "smol-toml";
import { allowedKeys } from "../../lib/config/schema_problems.ts";
import { BUILTIN_PROFILES } from "../../lib/profiles/builtin.ts";
import {
  annotateProfile,
  KEY_COMMENTS,
  overrideText,
} from "../../lib/profiles/profile_comments.ts";
import { profileSchema } from "../../lib/profiles/schema.ts";

for (const [name, text] of Object.entries(BUILTIN_PROFILES)) {
  Deno.test(`${name}: the override's text is the built-in's, every key explained`, () => {
    const written = overrideText(name, text);
    assert.deepEqual(parse(written), parse(text));
    assert.match(written, new RegExp(`agents override ${name}"`));
    const lines = written.split("\n");
    lines.forEach((line, index) => {
      if (!/^\s*(\[|[a-z_]+\s*=)/.test(line)) return;
      assert.match(
        lines[index - 1],
        /^# /,
        `${name}.toml: "${line}" has a comment above it`,
      );
    });
  });
}

Deno.test("every comment is for a table or key the profile schema has", () => {
  for (const key of Object.keys(KEY_COMMENTS)) {
    const [table, field] = key.split(".");
    if (field === undefined) {
      assert.ok(allowedKeys(profileSchema, [])!.includes(table), key);
    } else if (table !== "env") {
      assert.ok(allowedKeys(profileSchema, [table])!.includes(field), key);
    }
  }
});

Deno.test("annotateProfile keeps every line and adds comments only", () => {
  const text = '[agent]\nname = "x" # mine\nunknown_key = 1\n';
  const annotated = annotateProfile(text);
  assert.deepEqual(
    annotated.split("\n").filter((line) => !line.startsWith("# ")),
    text.split("\n"),
  );
});
