/** `${VAR}` and `~` expansion (lib/config/expand.ts). */

import assert from "node:assert/strict";
import {
  expandPath,
  expandVariables,
  UnsetVariableError,
} from "../../lib/config/expand.ts";

const ctx = (env: Record<string, string | undefined>) => ({ env });

function unsetVariable(name: string) {
  return (error: unknown) => {
    assert.ok(error instanceof UnsetVariableError);
    assert.equal(error.variable, name);
    assert.equal(error.message, `\${${name}} is not set and has no default`);
    return true;
  };
}

Deno.test("expandVariables: replaces every reference", () => {
  assert.equal(
    expandVariables("${A}/${B}-${A}", ctx({ A: "x", B: "y" })),
    "x/y-x",
  );
});

Deno.test("expandVariables: text without references is unchanged", () => {
  for (const text of ["", "plain", "$A", "$", "${", "${}", "${1A}", "$${A"]) {
    assert.equal(expandVariables(text, ctx({ A: "x" })), text);
  }
});

Deno.test("expandVariables: a value is inserted literally, never expanded again", () => {
  assert.equal(
    expandVariables("${A}", ctx({ A: "${B}", B: "no" })),
    "${B}",
  );
  assert.equal(expandVariables("${A}", ctx({ A: "$&$1" })), "$&$1");
});

Deno.test("expandVariables: XDG variables fall back to their defaults when unset or empty", () => {
  const env = { HOME: "/home/op" };
  assert.equal(
    expandVariables("${XDG_CONFIG_HOME}", ctx(env)),
    "/home/op/.config",
  );
  assert.equal(
    expandVariables("${XDG_DATA_HOME}", ctx(env)),
    "/home/op/.local/share",
  );
  assert.equal(
    expandVariables("${XDG_STATE_HOME}", ctx(env)),
    "/home/op/.local/state",
  );
  assert.equal(
    expandVariables("${XDG_CACHE_HOME}", ctx(env)),
    "/home/op/.cache",
  );
  assert.equal(
    expandVariables("${XDG_CONFIG_HOME}", ctx({ ...env, XDG_CONFIG_HOME: "" })),
    "/home/op/.config",
  );
  assert.equal(
    expandVariables(
      "${XDG_CONFIG_HOME}",
      ctx({ ...env, XDG_CONFIG_HOME: "/xdg" }),
    ),
    "/xdg",
  );
});

Deno.test("expandVariables: a relative XDG value is ignored, as the spec says", () => {
  // sherlock's own locations ignore it (sherlock_paths.ts); a profile's path must
  // agree, or ${XDG_CONFIG_HOME}/x would name a file relative to the cwd.
  assert.equal(
    expandVariables(
      "${XDG_CONFIG_HOME}/x",
      ctx({ HOME: "/home/op", XDG_CONFIG_HOME: "relative" }),
    ),
    "/home/op/.config/x",
  );
});

Deno.test("expandVariables: XDG_RUNTIME_DIR falls back to sherlock's runtime folder in the state folder", () => {
  assert.equal(
    expandVariables("${XDG_RUNTIME_DIR}", ctx({ HOME: "/home/op" })),
    "/home/op/.local/state/sherlock/run",
  );
  assert.equal(
    expandVariables(
      "${XDG_RUNTIME_DIR}",
      ctx({ XDG_STATE_HOME: "/s", TMPDIR: "/var/tmp" }),
    ),
    "/s/sherlock/run",
  );
});

Deno.test("expandVariables: an unset variable without a default throws, never expands to empty", () => {
  assert.throws(
    () => expandVariables("a${NOPE}b", ctx({})),
    unsetVariable("NOPE"),
  );
  // An XDG home default needs HOME.
  assert.throws(
    () => expandVariables("${XDG_CONFIG_HOME}/x", ctx({})),
    unsetVariable("XDG_CONFIG_HOME"),
  );
});

Deno.test("expandVariables: names of Object's own properties are unset variables too", () => {
  for (const name of ["constructor", "toString", "__proto__", "valueOf"]) {
    assert.throws(
      () => expandVariables(`\${${name}}`, ctx({ HOME: "/h" })),
      unsetVariable(name),
    );
  }
});

Deno.test("expandVariables: an empty variable is unset", () => {
  assert.throws(
    () => expandVariables("${EMPTY}", ctx({ EMPTY: "" })),
    unsetVariable("EMPTY"),
  );
});

Deno.test("expandVariables: the first unresolvable reference is the one named", () => {
  assert.throws(
    () => expandVariables("${A}${FIRST}${SECOND}", ctx({ A: "a" })),
    unsetVariable("FIRST"),
  );
});

Deno.test("expandPath: ~ and ~/ at the start become HOME", () => {
  const c = ctx({ HOME: "/home/op" });
  assert.equal(expandPath("~", c), "/home/op");
  assert.equal(expandPath("~/x/y", c), "/home/op/x/y");
});

Deno.test("expandPath: ~ elsewhere, and ~user, are left alone", () => {
  const c = ctx({ HOME: "/home/op" });
  assert.equal(expandPath("/a/~/b", c), "/a/~/b");
  assert.equal(expandPath("~other/x", c), "~other/x");
  assert.equal(expandPath("x~", c), "x~");
});

Deno.test("expandPath: ~ and ${VAR} together", () => {
  assert.equal(
    expandPath("~/${NAME}.json", ctx({ HOME: "/h", NAME: "n" })),
    "/h/n.json",
  );
});

Deno.test("expandPath: ~ without HOME throws naming HOME", () => {
  assert.throws(() => expandPath("~/x", ctx({})), unsetVariable("HOME"));
  assert.throws(
    () => expandPath("~/x", ctx({ HOME: "" })),
    unsetVariable("HOME"),
  );
});
