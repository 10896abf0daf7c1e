/**
 * How each token reaches its server, decided before anything is fetched
 * (lib/render/delivery.ts) and rendered as decided (lib/render/servers.ts):
 * none, inline, shim or refused, the shim's entries, the `$` rule, and the
 * formats that force the shim.
 */

import assert from "node:assert/strict";
import { parse } from "smol-toml";
import {
  type DeliveryPlan,
  inlineFetch,
  planDelivery,
  type PlanDeliveryOptions,
  refusal,
  servicesNeedingTokens,
  settleDelivery,
} from "../../lib/render/delivery.ts";
import { applyTokenFormat } from "../../lib/services/token_format.ts";
import {
  REDACTED,
  serverEntries,
  type ServerEntry,
  type ShimContext,
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

/** A remote service whose token goes inline (`[token] delivery = "inline"`). */
function inlineRemote(name: string): Service {
  return remote(name, 'delivery = "inline"');
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

/** The plan for `services` (Claude's format, `[render] tokens = inline`). */
function plan(
  services: Service[],
  options: Partial<PlanDeliveryOptions> = {},
): DeliveryPlan {
  return planDelivery({
    services,
    format: "mcp-json",
    configured: "inline",
    agent: "claude",
    ...options,
  });
}

/**
 * The entries as a session renders them: planned with `configured`, then
 * settled with what the broker answered (`tokens`, and the services whose
 * token it `deferred` to the shim).
 */
function entries(
  services: Service[],
  options: {
    tokens?: Record<string, string>;
    deferred?: string[];
    configured?: "inline" | "shim";
  } = {},
): Record<string, ServerEntry> {
  const tokens = new Map(Object.entries(options.tokens ?? {}));
  const delivery = settleDelivery(
    plan(services, { configured: options.configured ?? "inline" }),
    { deferred: options.deferred ?? [] },
  );
  return serverEntries(services, { tokens, delivery, shim: SHIM });
}

/** Each service's delivery kind. */
function kinds(delivery: DeliveryPlan): Record<string, string> {
  return Object.fromEntries(
    [...delivery].map(([name, entry]) => [name, entry.kind]),
  );
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

const ARGV_REASON = "put it in argv, which every local user can read";

Deno.test("shim entry: sherlock shim … <service> -- <server>, the server's env without the token", () => {
  const result = entries([stdio("api")], {
    tokens: { api: "must-not-appear" },
    configured: "shim",
  });
  assert.deepEqual(result.api, shimEntry("api"));
  assert.equal(JSON.stringify(result).includes("must-not-appear"), false);
});

Deno.test("shim entry: a [token] format other than {token} is passed as --token-format", () => {
  const result = entries([stdio("api", 'format = "Bearer {token}"')], {
    configured: "shim",
  });
  assert.deepEqual(result.api, shimEntry("api", "Bearer {token}"));
});

Deno.test("shim entry: a compiled sherlock is a one-word command", () => {
  const services = [stdio("api")];
  const result = serverEntries(services, {
    tokens: new Map(),
    delivery: plan(services, { configured: "shim" }),
    shim: { ...SHIM, command: ["/usr/local/bin/sherlock"] },
  });
  const entry = result.api;
  assert.equal(entry.kind, "stdio");
  if (entry.kind !== "stdio") return;
  assert.equal(entry.command, "/usr/local/bin/sherlock");
  assert.deepEqual(entry.args.slice(0, 2), ["shim", "--socket"]);
});

Deno.test("shim entry: a registered session's capability goes into the entry's env, never its argv", () => {
  const services = [stdio("api")];
  const capability = "c".repeat(64);
  const result = serverEntries(services, {
    tokens: new Map(),
    delivery: plan(services, { configured: "shim" }),
    shim: { ...SHIM, capability },
  });
  const planned = shimEntry("api");
  assert.deepEqual(result.api, {
    ...planned,
    env: { LOG: "debug", SHERLOCK_SESSION_CAPABILITY: capability },
  });
});

Deno.test("shim entry: without the session's shim context it is a bug, not a silent inline", () => {
  const services = [stdio("api")];
  assert.throws(
    () =>
      serverEntries(services, {
        tokens: new Map(),
        delivery: plan(services, { configured: "shim" }),
      }),
    /shim context/,
  );
});

Deno.test("rendering: a service the plan refuses or does not name is a bug, never rendered", () => {
  const services = [stdio("api"), inlineRemote("docs")];
  const refused = plan(services, { format: "codex-overrides" });
  assert.throws(
    () =>
      serverEntries(services, {
        tokens: new Map(),
        delivery: refused,
        shim: SHIM,
      }),
    /service docs has no delivery to render/,
  );
  assert.throws(
    () => serverEntries(services, { tokens: new Map(), delivery: new Map() }),
    /service api has no delivery to render/,
  );
});

Deno.test("shim delivery: services without a token, and remote ones, are rendered as usual", () => {
  const result = entries([free, inlineRemote("docs")], {
    tokens: { docs: "tok" },
    configured: "shim",
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

Deno.test("the $ rule: an inline stdio token is fetched deferrable; the broker's deferral renders a shim entry", () => {
  const services = [stdio("api")];
  assert.deepEqual(inlineFetch(plan(services)), {
    services: ["api"],
    defer: { services: ["api"], ifContains: ["$"] },
  });
  const result = entries(services, { deferred: ["api"] });
  assert.deepEqual(result.api, shimEntry("api"));
});

Deno.test("the $ rule: the service's own --token-format goes along", () => {
  const result = entries([stdio("api", 'format = "token {token}"')], {
    deferred: ["api"],
  });
  assert.deepEqual(result.api, shimEntry("api", "token {token}"));
});

Deno.test("the $ rule: a $ in the [token] format takes the shim as well, decided before any fetch", () => {
  // The agent would expand the format's $ just as it would the token's.
  const services = [stdio("api", 'format = "$literal:{token}"')];
  const planned = plan(services);
  assert.equal(planned.get("api")?.kind, "shim");
  assert.deepEqual(inlineFetch(planned).services, []);
  assert.deepEqual(servicesNeedingTokens(planned), ["api"]);
  const result = entries(services, { tokens: { api: "plain" } });
  assert.deepEqual(result.api, shimEntry("api", "$literal:{token}"));
});

Deno.test("the $ rule: tokens without $ stay inline; other services are not affected", () => {
  const result = entries([stdio("api"), stdio("other")], {
    tokens: { other: "plain-token" },
    deferred: ["api"],
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
  const services = [inlineRemote("docs")];
  assert.deepEqual(inlineFetch(plan(services)).defer.services, []);
  const result = entries(services, { tokens: { docs: "a$b" } });
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

Deno.test("applyTokenFormat: every {token}, literally", () => {
  assert.equal(applyTokenFormat("{token}", "a$&b$1c$$"), "a$&b$1c$$");
  assert.equal(applyTokenFormat("x={token};y={token}", "T"), "x=T;y=T");
  assert.equal(applyTokenFormat("Bearer {token}", "$'"), "Bearer $'");
});

Deno.test("planDelivery: the service's own delivery wins over config.toml", () => {
  const kind = (service: Service, configured: "inline" | "shim") =>
    plan([service], { configured }).get(service.service.name)?.kind;
  assert.equal(kind(stdio("api", 'delivery = "inline"'), "shim"), "inline");
  assert.equal(kind(stdio("api", 'delivery = "shim"'), "inline"), "shim");
  assert.equal(kind(stdio("api"), "shim"), "shim");
  assert.equal(kind(stdio("api"), "inline"), "inline");
});

Deno.test("planDelivery: a forced shim wins over everything", () => {
  for (const format of ["codex-overrides", "gemini"] as const) {
    const delivery = plan([stdio("api", 'delivery = "inline"')], {
      format,
      mergePath: format === "gemini"
        ? "/home/me/.gemini/settings.json"
        : undefined,
    });
    assert.equal(delivery.get("api")?.kind, "shim", format);
  }
});

Deno.test("planDelivery: a remote server cannot use the shim, so [render] tokens = shim leaves it inline", () => {
  assert.deepEqual(
    plan([inlineRemote("docs")], { configured: "shim" }).get("docs"),
    { kind: "inline", deferrable: false },
  );
});

Deno.test("planDelivery: which services need a token, and which are fetched for inline use", () => {
  const services = [
    free,
    stdio("api"),
    stdio("gh", 'delivery = "shim"'),
    inlineRemote("docs"),
  ];
  const inline = plan(services, { configured: "inline" });
  assert.deepEqual(servicesNeedingTokens(inline), ["api", "gh", "docs"]);
  assert.deepEqual(inlineFetch(inline).services, ["api", "docs"]);
  assert.deepEqual(kinds(inline), {
    free: "none",
    api: "inline",
    gh: "shim",
    docs: "inline",
  });

  const shim = plan(services, { configured: "shim" });
  assert.deepEqual(servicesNeedingTokens(shim), ["api", "gh", "docs"]);
  // The remote service's token must still be fetched: it goes in a header.
  assert.deepEqual(inlineFetch(shim).services, ["docs"]);
  assert.equal(shim.get("api")?.kind, "shim");
  assert.equal(shim.get("docs")?.kind, "inline");
});

Deno.test("planDelivery: [render] tokens = shim renders a remote service with its real token", () => {
  const services = [stdio("api"), inlineRemote("docs")];
  const delivery = plan(services, { configured: "shim" });
  // What the session fetches: the inline services' tokens.
  const tokens = new Map(
    inlineFetch(delivery).services.map((name) => [name, `${name}-token`]),
  );
  const result = serverEntries(services, { tokens, delivery, shim: SHIM });
  assert.deepEqual(result.api, shimEntry("api"));
  assert.deepEqual(result.docs, {
    kind: "remote",
    url: "https://docs.example.com/mcp",
    transport: "http",
    headers: { Authorization: "Bearer docs-token" },
  });
});

Deno.test("planDelivery: a forced shim fetches nothing inline, even against the service's wish", () => {
  const services = [free, stdio("api", 'delivery = "inline"'), stdio("gh")];
  const delivery = plan(services, {
    format: "codex-overrides",
    agent: "codex",
  });
  assert.deepEqual(servicesNeedingTokens(delivery), ["api", "gh"]);
  assert.deepEqual(inlineFetch(delivery).services, []);
  for (const service of services.slice(1)) {
    assert.deepEqual(delivery.get(service.service.name), {
      kind: "shim",
      reason: `agent codex would ${ARGV_REASON}`,
    });
  }
});

Deno.test("planDelivery: a forced shim and a remote service with a token is a config error naming both", () => {
  const services = [stdio("api"), inlineRemote("docs")];
  const delivery = plan(services, {
    format: "codex-overrides",
    agent: "codex",
  });
  assert.equal(delivery.get("docs")?.kind, "refused");
  assert.equal(
    refusal(delivery),
    "service docs is a remote server with a token, and agent codex would put it in argv, " +
      "which every local user can read; " +
      'remove its [token] delivery = "inline" (the bridge carries it), or use another agent',
  );
  const merge = plan(services, {
    format: "gemini",
    agent: "gemini",
    mergePath: "/home/me/.gemini/settings.json",
  });
  assert.equal(
    refusal(merge),
    "service docs is a remote server with a token, and agent gemini would write it into " +
      "/home/me/.gemini/settings.json, a file of yours; " +
      'remove its [token] delivery = "inline" (the bridge carries it), or use another agent',
  );
});

Deno.test("planDelivery: a config-file path gets every stdio token through the shim, even one asked inline", () => {
  const inline = service(`
[service]
name = "api"
[server]
command = "api-server"
[token]
source = "secret"
env = "API_TOKEN"
delivery = "inline"
`);
  const delivery = plan([inline, inlineRemote("docs")], {
    format: "mcp-json",
    agent: "fake",
    configFilePath: "/home/me/.fake/mcp.json",
  });
  assert.deepEqual(delivery.get("api"), {
    kind: "shim",
    reason:
      "agent fake would write it into /home/me/.fake/mcp.json, on disk outside sherlock's private runtime folder",
  });
  assert.equal(
    refusal(delivery),
    "service docs is a remote server with a token, and agent fake would write it into " +
      "/home/me/.fake/mcp.json, on disk outside sherlock's private runtime folder; " +
      'remove its [token] delivery = "inline" (the bridge carries it), or use another agent',
  );
});

Deno.test("planDelivery: a forced shim with a remote service that needs no token is fine", () => {
  const open = service(`
[service]
name = "open"
[server]
url = "https://open.example.com/mcp"
`);
  const delivery = plan([open, stdio("api")], {
    format: "codex-overrides",
    agent: "codex",
  });
  assert.equal(refusal(delivery), undefined);
  assert.deepEqual(servicesNeedingTokens(delivery), ["api"]);
});

Deno.test("planDelivery: an SSE server with Codex is refused, and said before a token refusal", () => {
  const sse = service(`
[service]
name = "sse"
[server]
url = "https://sse.example.com/sse"
transport = "sse"
`);
  const delivery = plan([inlineRemote("docs"), sse], {
    format: "codex-overrides",
    agent: "codex",
  });
  assert.deepEqual(kinds(delivery), { docs: "refused", sse: "refused" });
  assert.equal(
    refusal(delivery),
    'service sse is an SSE server, and Codex speaks only streamable HTTP (transport = "http"); ' +
      "agent codex cannot use it",
  );
  assert.equal(plan([sse]).get("sse")?.kind, "none");
});

/** The bridge entry sherlock renders for `remote(name)` with `SHIM`. */
function bridgeEntry(
  name: string,
  more: string[] = [],
  capability?: string,
): ServerEntry {
  return {
    kind: "stdio",
    command: "/usr/bin/deno",
    args: [
      "run",
      "--allow-all",
      "--quiet",
      "/src/main.ts",
      "bridge",
      "--socket",
      SHIM.socket,
      "--session",
      SHIM.session,
      "--agent",
      SHIM.agent,
      "--url",
      `https://${name}.example.com/mcp`,
      ...more,
      name,
    ],
    env: capability === undefined
      ? {}
      : { SHERLOCK_SESSION_CAPABILITY: capability },
  };
}

Deno.test("planDelivery: a remote service with a token goes through the bridge, for every agent and format", () => {
  const services = [remote("docs"), free];
  for (
    const options of [
      {},
      { format: "codex-overrides", agent: "codex" },
      {
        format: "gemini",
        agent: "gemini",
        mergePath: "/home/me/.gemini/settings.json",
      },
      {
        format: "mcp-json",
        agent: "fake",
        configFilePath: "/home/me/.fake/mcp.json",
      },
      { configured: "shim" },
    ] as Partial<PlanDeliveryOptions>[]
  ) {
    const delivery = plan(services, options);
    assert.deepEqual(kinds(delivery), { docs: "bridge", free: "none" });
    assert.equal(refusal(delivery), undefined);
    assert.deepEqual(servicesNeedingTokens(delivery), ["docs"]);
    // The bridge asks the broker itself: nothing is fetched to render.
    assert.deepEqual(inlineFetch(delivery).services, []);
  }
  assert.equal(
    plan([remote("docs", 'delivery = "bridge"')]).get("docs")?.kind,
    "bridge",
  );
});

Deno.test("planDelivery: an SSE server with a token works for Codex through the bridge; without one it is refused", () => {
  const sse = service(`
[service]
name = "sse"
[server]
url = "https://sse.example.com/sse"
transport = "sse"
[token]
source = "secret"
header = "Authorization"
`);
  const delivery = plan([sse], { format: "codex-overrides", agent: "codex" });
  assert.deepEqual(kinds(delivery), { sse: "bridge" });
  const inline = service(`
[service]
name = "sse"
[server]
url = "https://sse.example.com/sse"
transport = "sse"
[token]
source = "secret"
header = "Authorization"
delivery = "inline"
`);
  assert.match(
    refusal(plan([inline], { format: "codex-overrides", agent: "codex" })) ??
      "",
    /Codex speaks only streamable HTTP/,
  );
});

Deno.test("bridge entry: sherlock bridge with the url, no token anywhere, the capability in its env", () => {
  const services = [remote("docs")];
  const delivery = plan(services);
  const dry = serverEntries(services, {
    delivery,
    tokens: new Map(),
    shim: SHIM,
  });
  assert.deepEqual(dry.docs, bridgeEntry("docs"));
  const rendered = serverEntries(services, {
    delivery,
    // A token the broker answered by mistake is still not rendered.
    tokens: new Map([["docs", "docs-secret"]]),
    shim: { ...SHIM, capability: "cap-123" },
  });
  assert.deepEqual(rendered.docs, bridgeEntry("docs", [], "cap-123"));
  assert.ok(!JSON.stringify(rendered).includes("docs-secret"));
  assert.ok(!JSON.stringify(rendered).includes(REDACTED));
});

Deno.test("bridge entry: the transport, the server's headers (never the token's), a custom token header and format", () => {
  const custom = service(`
[service]
name = "docs"
[server]
url = "https://docs.example.com/mcp"
transport = "sse"
headers = { "X-Team" = "platform", "x-api-key" = "placeholder" }
[token]
source = "secret"
header = "X-Api-Key"
format = "key {token}"
`);
  const result = serverEntries([custom], {
    delivery: plan([custom]),
    tokens: new Map(),
    shim: SHIM,
  });
  assert.deepEqual(
    result.docs,
    bridgeEntry("docs", [
      "--transport",
      "sse",
      "--token-header",
      "X-Api-Key",
      "--token-format",
      "key {token}",
      "--header",
      "X-Team=platform",
    ]),
  );
});
