/** Path functions without node: imports (lib/runtime/path.ts), against node:path. */

import assert from "node:assert/strict";
import nodePath from "node:path";
import { fileURLToPath } from "node:url";
import * as paths from "../../lib/runtime/path.ts";

const SAMPLES = [
  "",
  ".",
  "..",
  "/",
  "//",
  "///",
  "a",
  "a/",
  "a//",
  "/a",
  "/a/",
  "a/b",
  "a//b",
  "a/./b",
  "a/../b",
  "../a",
  "../../a/b",
  "/..",
  "/../a",
  "./",
  "./a",
  "a/..",
  "a/../..",
  "/a/b/../../..",
  "a/b/c/../../../..",
  ".a",
  "..a",
  "a..",
  "/x/y/.",
  "/x/y/./",
  "~",
  "~/.config",
  "foo bar/baz",
  "é/ü",
];

Deno.test("posix: join, dirname and isAbsolute equal node:path's POSIX ones", () => {
  const { posix } = paths;
  assert.equal(posix.join(), nodePath.posix.join());
  assert.equal(posix.delimiter, nodePath.posix.delimiter);
  for (const a of SAMPLES) {
    assert.equal(posix.dirname(a), nodePath.posix.dirname(a), `dirname ${a}`);
    assert.equal(posix.isAbsolute(a), nodePath.posix.isAbsolute(a), a);
    assert.equal(posix.join(a), nodePath.posix.join(a), `join ${a}`);
    for (const b of SAMPLES) {
      assert.equal(
        posix.join(a, b, "c"),
        nodePath.posix.join(a, b, "c"),
        `join ${a} ${b} c`,
      );
      assert.equal(posix.join(a, b), nodePath.posix.join(a, b), `${a} ${b}`);
    }
  }
});

Deno.test("posix: fromFileUrl equals node:url's fileURLToPath, refuses what it refuses", () => {
  if (Deno.build.os === "windows") return;
  for (
    const url of [
      "file:///a/b",
      "file:///a%20b/c%C3%A9",
      "file:///",
      "file:///a/b/",
      "file://localhost/a",
      new URL("../main.ts", import.meta.url),
    ]
  ) {
    assert.equal(paths.posix.fromFileUrl(url), fileURLToPath(url), `${url}`);
  }
  for (const url of ["https://a/b", "file://host/a", "file:///a%2Fb"]) {
    assert.throws(() => paths.posix.fromFileUrl(url), TypeError, url);
    assert.throws(() => fileURLToPath(url), Error, url);
  }
});

Deno.test("the exported functions are the platform's", () => {
  const platform = Deno.build.os === "windows"
    ? nodePath.win32
    : nodePath.posix;
  assert.equal(
    paths.join("a", "..", "b", "c"),
    platform.join("a", "..", "b", "c"),
  );
  assert.equal(paths.dirname(platform.join("a", "b")), "a");
  assert.equal(paths.delimiter, platform.delimiter);
  assert.equal(paths.isAbsolute(Deno.cwd()), true);
});
