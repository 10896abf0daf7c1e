/** sherlock's XDG locations (lib/config/sherlock_paths.ts). */

import assert from "node:assert/strict";
import {
  fallbackRuntimeDir,
  sherlockPaths,
  xdgDefault,
} from "../../lib/config/sherlock_paths.ts";
import { ConfigError } from "../../lib/errors.ts";

Deno.test("sherlockPaths: every location from the XDG variables", () => {
  assert.deepEqual(
    sherlockPaths({
      HOME: "/home/op",
      XDG_CONFIG_HOME: "/c",
      XDG_DATA_HOME: "/d",
      XDG_STATE_HOME: "/s",
      XDG_CACHE_HOME: "/k",
      XDG_RUNTIME_DIR: "/run/user/1000",
    }),
    {
      configDir: "/c/sherlock",
      agentsDir: "/c/sherlock/agents.d",
      servicesDir: "/c/sherlock/services.d",
      configFile: "/c/sherlock/config.toml",
      dataDir: "/d/sherlock",
      stateDir: "/s/sherlock",
      cacheDir: "/k/sherlock",
      runtimeDir: "/run/user/1000/sherlock",
      socket: "/run/user/1000/sherlock/broker.sock",
      secretStore: "/d/sherlock/secrets.enc",
      auditLog: "/s/sherlock/audit.log",
      brokerLog: "/s/sherlock/broker.log",
    },
  );
});

Deno.test("sherlockPaths: the XDG defaults below HOME", () => {
  assert.deepEqual(sherlockPaths({ HOME: "/home/op" }), {
    configDir: "/home/op/.config/sherlock",
    agentsDir: "/home/op/.config/sherlock/agents.d",
    servicesDir: "/home/op/.config/sherlock/services.d",
    configFile: "/home/op/.config/sherlock/config.toml",
    dataDir: "/home/op/.local/share/sherlock",
    stateDir: "/home/op/.local/state/sherlock",
    cacheDir: "/home/op/.cache/sherlock",
    runtimeDir: "/home/op/.local/state/sherlock/run",
    socket: "/home/op/.local/state/sherlock/run/broker.sock",
    secretStore: "/home/op/.local/share/sherlock/secrets.enc",
    auditLog: "/home/op/.local/state/sherlock/audit.log",
    brokerLog: "/home/op/.local/state/sherlock/broker.log",
  });
});

Deno.test("sherlockPaths: empty and relative XDG values are ignored", () => {
  const paths = sherlockPaths({
    HOME: "/home/op",
    XDG_CONFIG_HOME: "",
    XDG_STATE_HOME: "relative/state",
    XDG_RUNTIME_DIR: "run",
  });
  assert.equal(paths.configDir, "/home/op/.config/sherlock");
  assert.equal(paths.stateDir, "/home/op/.local/state/sherlock");
  assert.equal(paths.runtimeDir, "/home/op/.local/state/sherlock/run");
});

Deno.test("sherlockPaths: without HOME every XDG variable is needed", () => {
  assert.throws(
    () => sherlockPaths({ XDG_CONFIG_HOME: "/c" }),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.message === "neither XDG_DATA_HOME nor HOME is set; set HOME",
  );
  const paths = sherlockPaths({
    XDG_CONFIG_HOME: "/c",
    XDG_DATA_HOME: "/d",
    XDG_STATE_HOME: "/s",
    XDG_CACHE_HOME: "/k",
  });
  assert.equal(paths.configDir, "/c/sherlock");
  assert.equal(paths.runtimeDir, "/s/sherlock/run");
});

Deno.test("fallbackRuntimeDir: in the state folder, which no other user can create first", () => {
  assert.equal(
    fallbackRuntimeDir({ HOME: "/home/op" }),
    "/home/op/.local/state/sherlock/run",
  );
  assert.equal(
    fallbackRuntimeDir({ HOME: "/home/op", XDG_STATE_HOME: "/s" }),
    "/s/sherlock/run",
  );
  // Never the system's temp folder, whatever TMPDIR says.
  assert.equal(
    fallbackRuntimeDir({ HOME: "/home/op", TMPDIR: "/var/tmp" }),
    "/home/op/.local/state/sherlock/run",
  );
  assert.equal(fallbackRuntimeDir({ TMPDIR: "/tmp" }), undefined);
  assert.equal(
    sherlockPaths({ HOME: "/home/op" }).runtimeDir,
    fallbackRuntimeDir({ HOME: "/home/op" }),
  );
});

Deno.test("xdgDefault: only the XDG base directories have one", () => {
  assert.equal(xdgDefault("XDG_CONFIG_HOME", { HOME: "/h" }), "/h/.config");
  assert.equal(xdgDefault("XDG_CONFIG_HOME", {}), undefined);
  assert.equal(xdgDefault("HOME", { HOME: "/h" }), undefined);
  assert.equal(xdgDefault("PATH", { HOME: "/h" }), undefined);
  assert.equal(
    xdgDefault("XDG_RUNTIME_DIR", { HOME: "/h" }),
    "/h/.local/state/sherlock/run",
  );
  assert.equal(xdgDefault("XDG_RUNTIME_DIR", {}), undefined);
  assert.equal(xdgDefault("toString", { HOME: "/h" }), undefined);
});
