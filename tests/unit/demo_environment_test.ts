/**
 * `sherlock demo`'s children run in the throwaway home only: the
 * environment it gives them (pure) keeps none of the operator's XDG
 * folders or `SHERLOCK_*` settings (the whole demo, end to end:
 * tests/integration/demo_test.ts).
 */

import assert from "node:assert/strict";
import { demoEnvironment } from "../../lib/cli/demo.ts";

Deno.test("demo environment: HOME and every XDG folder in the throwaway home; the operator's XDG and SHERLOCK_* variables dropped; Deno's cache kept from source", () => {
  const operator = {
    HOME: "/home/op",
    PATH: "/usr/bin",
    XDG_CONFIG_HOME: "/home/op/.config",
    XDG_RUNTIME_DIR: "/run/user/1000",
    XDG_SESSION_TYPE: "wayland",
    SHERLOCK_VERBOSE: "1",
    SHERLOCK_DEBUG: "1",
  };
  const env = demoEnvironment(operator, {
    home: "/tmp/d",
    runtimeDir: "/tmp/d/run",
    fromSource: true,
  });
  assert.deepEqual(env, {
    HOME: "/tmp/d",
    PATH: "/usr/bin",
    DENO_DIR: "/home/op/.cache/deno",
    XDG_CONFIG_HOME: "/tmp/d/config",
    XDG_DATA_HOME: "/tmp/d/data",
    XDG_STATE_HOME: "/tmp/d/state",
    XDG_CACHE_HOME: "/tmp/d/cache",
    XDG_RUNTIME_DIR: "/tmp/d/run",
  });
});

Deno.test("demo environment: a DENO_DIR of the operator's is kept; a compiled binary gets none added", () => {
  const options = { home: "/tmp/d", runtimeDir: "/tmp/r", fromSource: true };
  assert.equal(
    demoEnvironment({ HOME: "/h", DENO_DIR: "/cache/deno" }, options).DENO_DIR,
    "/cache/deno",
  );
  const compiled = demoEnvironment({ HOME: "/h" }, {
    ...options,
    fromSource: false,
  });
  assert.equal(compiled.DENO_DIR, undefined);
  assert.equal(compiled.XDG_RUNTIME_DIR, "/tmp/r");
});
