/**
 * How each token reaches its server (lib/render/servers.ts,
 * lib/launch/session_tokens.ts): inline or through the shim, the shim's
 * entries, the `$` rule, and the formats that force the shim.
 */

import assert from "node:assert/strict";
import { parse } from "smol-toml";
import { ConfigError } from "../../lib/errors.ts";
import { planTokens } from "../../lib/launch/session_tokens.ts";
import {
  REDACTED,
  serverEntries,
  type ServerEntry,
  type ShimContext,
  tokenDelivery,
} from "../../lib/render/servers.ts";
import type { Service } from "../../lib/services/loader.ts";
import { serviceSchema } from "../../lib/services/schema.ts";

/** A service as the schema normalizes it from TOML text. */
function service(toml: string): Service {
  return serviceSchema.parse(parse(toml));
}

/** A stdio service with a token; `more` goes into its [token] table. */
function stdio(name: string, more = ""): Service {
  return service(`
[service]
name = "${name}"
[server]
command = "/opt/mcp/${name}"
args = ["--port", "0"]
env = { LOG = "debug" }
[token]
source = "secret"
env = "API_TOKEN"
${more}
`);
}

/** A remote service with a token; `more` goes into its [token] table. */
function remote(name: string, more = ""): Service {
  return service(`
[service]
name = "${name}"
[server]
url = "https://${name}.example.com/mcp"
[token]
source = "secret"
header = "Authorization"
${more}
`);
}

const free = service(`
[service]
name = "free"
[server]
command = "free-server"
`);

const SHIM: ShimContext = {
  command: ["/usr/bin/deno", "run", "--allow-all", "--quiet", "/src/main.ts"],
  socket: "/run/user/1000/sherlock/broker.sock",
  session: "0123456789ab",
  agent: "claude",
};

/** The entries with the given tokens and deliveries. */
function entries(
  services: Service[],
  options: {
    tokens?: Record<string, string>;
    delivery?: (service: Service) => "inline" | "shim";
  } = {},
): Record<string, ServerEntry> {
  return serverEntries(services, {
    tokens: new Map(Object.entries(options.tokens ?? {})),
    delivery: options.delivery ?? (() => "inline"),
    shim: SHIM,
  });
}

/** The shim entry sherlock renders for the `stdio(name)` service. */
function shimEntry(name: string, format?: string): ServerEntry {
  return {
    kind: "stdio",
    command: "/usr/bin/deno",
    args: [
      "run",
      "--allow-all",
      "--quiet",
      "/src/main.ts",
      "shim",
      "--socket",
      "/run/user/1000/sherlock/broker.sock",
      "--session",
      "0123456789ab",
      "--agent",
      "claude",
      "--token-env",
      "API_TOKEN",
      ...(format === undefined ? [] : ["--token-format", format]),
      name,
      "--",
      `/opt/mcp/${name}`,
      "--port",
      "0",
    ],
    env: { LOG: "debug" },
  };
}

Deno.test("shim entry: sherlock shim … <service> -- <server>, the server's env without the token", () => {
  const result = entries([stdio("api")], {
    tokens: { api: "must-not-appear" },
    delivery: () => "shim",
  });
  assert.deepEqual(result.api, shimEntry("api"));
  assert.equal(JSON.stringify(result).includes("must-not-appear"), false);
});

Deno.test("shim entry: a [token] format other than {token} is passed as --token-format", () => {
  const result = entries([stdio("api", 'format = "Bearer {token}"')], {
    delivery: () => "shim",
  });
  assert.deepEqual(result.api, shimEntry("api", "Bearer {token}"));
});

Deno.test("shim entry: a compiled sherlock is a one-word command", () => {
  const result = serverEntries([stdio("api")], {
    tokens: new Map(),
    delivery: () => "shim",
    shim: { ...SHIM, command: ["/usr/local/bin/sherlock"] },
  });
  const entry = result.api;
  assert.equal(entry.kind, "stdio");
  if (entry.kind !== "stdio") return;
  assert.equal(entry.command, "/usr/local/bin/sherlock");
  assert.deepEqual(entry.args.slice(0, 2), ["shim", "--socket"]);
});

Deno.test("shim entry: without the session's shim context it is a bug, not a silent inline", () => {
  assert.throws(
    () =>
      serverEntries([stdio("api")], {
        tokens: new Map(),
        delivery: () => "shim",
      }),
    /shim context/,
  );
});

Deno.test("shim delivery: services without a token, and remote ones, are rendered as usual", () => {
  const result = entries([free, remote("docs")], {
    tokens: { docs: "tok" },
    delivery: () => "shim",
  });
  assert.deepEqual(result.free, {
    kind: "stdio",
    command: "free-server",
    args: [],
    env: {},
  });
  assert.deepEqual(result.docs, {
    kind: "remote",
    url: "https://docs.example.com/mcp",
    transport: "http",
    headers: { Authorization: "Bearer tok" },
  });
});

Deno.test("the $ rule: an inline stdio token containing $ is rendered as a shim entry", () => {
  for (const token of ["a$b", "$HOME", "${HOME}", "$$", "tok$", "$&$1"]) {
    const result = entries([stdio("api")], { tokens: { api: token } });
    assert.deepEqual(result.api, shimEntry("api"), token);
    assert.equal(JSON.stringify(result).includes(token), false, token);
  }
});

Deno.test("the $ rule: the service's own --token-format goes along", () => {
  const result = entries([stdio("api", 'format = "token {token}"')], {
    tokens: { api: "p$ss" },
  });
  assert.deepEqual(result.api, shimEntry("api", "token {token}"));
});

Deno.test("the $ rule: a $ in the [token] format takes the shim as well", () => {
  // The agent would expand the format's $ just as it would the token's.
  const result = entries([stdio("api", 'format = "$literal:{token}"')], {
    tokens: { api: "plain" },
  });
  assert.deepEqual(result.api, shimEntry("api", "$literal:{token}"));
});

Deno.test("the $ rule: tokens without $ stay inline; other services are not affected", () => {
  const result = entries([stdio("api"), stdio("other")], {
    tokens: { api: "a$b", other: "plain-token" },
  });
  assert.deepEqual(result.api, shimEntry("api"));
  assert.deepEqual(result.other, {
    kind: "stdio",
    command: "/opt/mcp/other",
    args: ["--port", "0"],
    env: { LOG: "debug", API_TOKEN: "plain-token" },
  });
});

Deno.test("the $ rule: a remote token with $ stays in its header (no shim for remote servers)", () => {
  const result = entries([remote("docs")], { tokens: { docs: "a$b" } });
  assert.deepEqual(result.docs, {
    kind: "remote",
    url: "https://docs.example.com/mcp",
    transport: "http",
    headers: { Authorization: "Bearer a$b" },
  });
});

Deno.test("the $ rule: a redacted token (dry run) is not a $ token", () => {
  const result = entries([stdio("api")], {});
  assert.deepEqual(result.api, {
    kind: "stdio",
    command: "/opt/mcp/api",
    args: ["--port", "0"],
    env: { LOG: "debug", API_TOKEN: REDACTED },
  });
});

Deno.test("tokenDelivery: the service's own delivery wins over config.toml", () => {
  const service = stdio("api", 'delivery = "inline"');
  assert.equal(
    tokenDelivery({ service, configured: "shim", forceShim: false }),
    "inline",
  );
  assert.equal(
    tokenDelivery({
      service: stdio("api", 'delivery = "shim"'),
      configured: "inline",
      forceShim: false,
    }),
    "shim",
  );
  assert.equal(
    tokenDelivery({
      service: stdio("api"),
      configured: "shim",
      forceShim: false,
    }),
    "shim",
  );
  assert.equal(
    tokenDelivery({
      service: stdio("api"),
      configured: "inline",
      forceShim: false,
    }),
    "inline",
  );
});

Deno.test("tokenDelivery: a forced shim wins over everything", () => {
  assert.equal(
    tokenDelivery({
      service: stdio("api", 'delivery = "inline"'),
      configured: "inline",
      forceShim: true,
    }),
    "shim",
  );
});

Deno.test("tokenDelivery: a remote server cannot use the shim, so [render] tokens = shim leaves it inline", () => {
  assert.equal(
    tokenDelivery({
      service: remote("docs"),
      configured: "shim",
      forceShim: false,
    }),
    "inline",
  );
});

Deno.test("planTokens: which services need a token, and which are fetched for inline use", () => {
  const services = [
    free,
    stdio("api"),
    stdio("gh", 'delivery = "shim"'),
    remote("docs"),
  ];
  const inline = planTokens({
    services,
    configured: "inline",
    agent: "claude",
  });
  assert.deepEqual(inline.needing, ["api", "gh", "docs"]);
  assert.deepEqual(inline.inline, ["api", "docs"]);

  const shim = planTokens({ services, configured: "shim", agent: "claude" });
  assert.deepEqual(shim.needing, ["api", "gh", "docs"]);
  // The remote service's token must still be fetched: it goes in a header.
  assert.deepEqual(shim.inline, ["docs"]);
  assert.equal(shim.delivery(services[1]), "shim");
  assert.equal(shim.delivery(services[3]), "inline");
});

Deno.test("planTokens: [render] tokens = shim renders a remote service with its real token", () => {
  const services = [stdio("api"), remote("docs")];
  const plan = planTokens({ services, configured: "shim", agent: "claude" });
  // What the session fetches: the inline services' tokens.
  const tokens = new Map(plan.inline.map((name) => [name, `${name}-token`]));
  const result = serverEntries(services, {
    tokens,
    delivery: plan.delivery,
    shim: SHIM,
  });
  assert.deepEqual(result.api, shimEntry("api"));
  assert.deepEqual(result.docs, {
    kind: "remote",
    url: "https://docs.example.com/mcp",
    transport: "http",
    headers: { Authorization: "Bearer docs-token" },
  });
});

Deno.test("planTokens: a forced shim fetches nothing inline, even against the service's wish", () => {
  const services = [free, stdio("api", 'delivery = "inline"'), stdio("gh")];
  const plan = planTokens({
    services,
    configured: "inline",
    agent: "codex",
    forceShimBecause: "put it in argv, which every local user can read",
  });
  assert.deepEqual(plan.needing, ["api", "gh"]);
  assert.deepEqual(plan.inline, []);
  for (const service of services.slice(1)) {
    assert.equal(plan.delivery(service), "shim");
  }
});

Deno.test("planTokens: a forced shim and a remote service with a token is a config error naming both", () => {
  const services = [stdio("api"), remote("docs")];
  assert.throws(
    () =>
      planTokens({
        services,
        configured: "inline",
        agent: "codex",
        forceShimBecause: "put it in argv, which every local user can read",
      }),
    (error) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(
        error.message,
        "service docs is a remote server with a token, and agent codex would put it in argv, " +
          "which every local user can read; use a stdio server for it, or another agent",
      );
      return true;
    },
  );
});

Deno.test("planTokens: a forced shim with a remote service that needs no token is fine", () => {
  const open = service(`
[service]
name = "open"
[server]
url = "https://open.example.com/mcp"
`);
  const plan = planTokens({
    services: [open, stdio("api")],
    configured: "inline",
    agent: "codex",
    forceShimBecause: "put it in argv",
  });
  assert.deepEqual(plan.needing, ["api"]);
});
