/**
 * The agent's argv and environment as the profile describes them, and the
 * whole session plan (lib/launch/plan.ts), for every delivery mode.
 */

import assert from "node:assert/strict";
import {
  buildArgs,
  buildEnv,
  configFilePath,
  noSessionArgument,
  planSession,
  type PlanSessionOptions,
  renderSessionConfig,
  sessionSummary,
} from "../../lib/launch/plan.ts";
import { DEFAULT_SETTINGS } from "../../lib/config/settings.ts";
import { REDACTED } from "../../lib/render/servers.ts";
import type { LoadedProfile } from "../../lib/profiles/loader.ts";
import { docs, github, plain } from "../helpers/services.ts";
import type { Profile } from "../../lib/profiles/schema.ts";
import { loadedProfile as loaded } from "../helpers/profiles.ts";
import { ConfigError } from "../../lib/errors.ts";

const PATH = "/run/user/1000/sherlock/fake.0123456789ab.mcp.json";

Deno.test("buildArgs: cli-flag passes the flag and the path as two words", () => {
  assert.deepEqual(
    buildArgs({
      loaded: loaded({ flag: "--mcp-config" }),
      config: { path: PATH },
      userArgs: ["-p", "hi"],
    }),
    ["--mcp-config", PATH, "-p", "hi"],
  );
});

Deno.test("buildArgs: joined = true makes --flag=value ONE word", () => {
  const args = buildArgs({
    loaded: loaded({ flag: "--mcp-config", joined: true }),
    config: { path: PATH },
    userArgs: ["a", "b"],
  });
  assert.deepEqual(args, [`--mcp-config=${PATH}`, "a", "b"]);
});

Deno.test("buildArgs: the value template wraps the path (@{path} for Copilot)", () => {
  assert.deepEqual(
    buildArgs({
      loaded: loaded({ flag: "--additional-mcp-config", value: "@{path}" }),
      config: { path: PATH },
      userArgs: [],
    }),
    ["--additional-mcp-config", `@${PATH}`],
  );
  assert.deepEqual(
    buildArgs({
      loaded: loaded({ flag: "--cfg", value: "file:{path}", joined: true }),
      config: { path: PATH },
      userArgs: [],
    }),
    [`--cfg=file:${PATH}`],
  );
});

Deno.test("buildArgs: every {path} in the template is replaced", () => {
  assert.deepEqual(
    buildArgs({
      loaded: loaded({ flag: "-c", value: "{path}#{path}" }),
      config: { path: "/p" },
      userArgs: [],
    }),
    ["-c", "/p#/p"],
  );
});

Deno.test("buildArgs and buildEnv: a $ in the path is not a replacement pattern", () => {
  const odd = "/run/a$&b$1$$/fake.mcp.json";
  assert.deepEqual(
    buildArgs({
      loaded: loaded({ flag: "--m", value: "@{path}", joined: true }),
      config: { path: odd },
      userArgs: [],
    }),
    [`--m=@${odd}`],
  );
  assert.equal(
    buildEnv({
      loaded: loaded({ mode: "env-var", var: "V" }),
      configPath: odd,
      context: context({}),
    }).env.V,
    odd,
  );
});

Deno.test("buildArgs: order is prefix, flag value, user args, suffix", () => {
  const profile = loaded({ flag: "--mcp" }, {
    argv: { prefix: ["p1", "p2"], suffix: ["s1", "s2"], no_session: [] },
  });
  assert.deepEqual(
    buildArgs({
      loaded: profile,
      config: { path: PATH },
      userArgs: ["u1", "u2"],
    }),
    [
      "p1",
      "p2",
      "--mcp",
      PATH,
      "u1",
      "u2",
      "s1",
      "s2",
    ],
  );
});

Deno.test("buildArgs: env-var and config-file modes add no flag", () => {
  const argv = { prefix: ["pre"], suffix: ["post"], no_session: [] };
  for (
    const mcp of [
      { mode: "env-var", var: "MCP" },
      { mode: "config-file", path: "/x.json" },
    ] as Partial<Profile["mcp"]>[]
  ) {
    assert.deepEqual(
      buildArgs({
        loaded: loaded(mcp, { argv }),
        config: { path: PATH },
        userArgs: ["u"],
      }),
      [
        "pre",
        "u",
        "post",
      ],
    );
  }
});

Deno.test("buildArgs: user arguments pass through verbatim, whatever they look like", () => {
  const user = [
    "--help",
    "--",
    "",
    "two words",
    `it's "quoted"`,
    "$HOME",
    "${HOME}",
    "~",
    "{path}",
    "*",
    "-",
    "line\nbreak",
    "--mcp-config=/elsewhere",
  ];
  assert.deepEqual(
    buildArgs({
      loaded: loaded({ flag: "--m" }),
      config: { path: PATH },
      userArgs: user,
    }),
    [
      "--m",
      PATH,
      ...user,
    ],
  );
});

Deno.test("buildArgs: does not mutate the profile's prefix or suffix", () => {
  const profile = loaded({ flag: "--m" }, {
    argv: { prefix: ["a"], suffix: ["z"], no_session: [] },
  });
  buildArgs({ loaded: profile, config: { path: PATH }, userArgs: ["u"] });
  buildArgs({ loaded: profile, config: { path: PATH }, userArgs: ["v"] });
  assert.deepEqual(profile.profile.argv, {
    prefix: ["a"],
    suffix: ["z"],
    no_session: [],
  });
});

const context = (env: Record<string, string | undefined>) => ({ env });

Deno.test("buildEnv: the operator's environment passes through unchanged", () => {
  const result = buildEnv({
    loaded: loaded({ flag: "--m" }),
    configPath: PATH,
    context: context({
      HOME: "/home/op",
      PATH: "/usr/bin",
      EMPTY: "",
    }),
  });
  assert.deepEqual(result.env, {
    HOME: "/home/op",
    PATH: "/usr/bin",
    EMPTY: "",
  });
  assert.deepEqual(result.envSet, {});
  assert.deepEqual(result.envRemoved, []);
});

Deno.test("buildEnv: env-var mode puts the path in the variable", () => {
  const result = buildEnv({
    loaded: loaded({ mode: "env-var", var: "MCP_CONFIG" }),
    configPath: PATH,
    context: context({ HOME: "/h" }),
  });
  assert.equal(result.env.MCP_CONFIG, PATH);
  assert.deepEqual(result.envSet, { MCP_CONFIG: PATH });
});

Deno.test("buildEnv: env-var mode applies the value template", () => {
  const result = buildEnv({
    loaded: loaded({ mode: "env-var", var: "MCP_CONFIG", value: "@{path}" }),
    configPath: PATH,
    context: context({}),
  });
  assert.equal(result.env.MCP_CONFIG, `@${PATH}`);
});

Deno.test("buildEnv: env-var mode replaces an operator's value of the variable", () => {
  const result = buildEnv({
    loaded: loaded({ mode: "env-var", var: "MCP_CONFIG" }),
    configPath: PATH,
    context: context({ MCP_CONFIG: "/operator/own.json" }),
  });
  assert.equal(result.env.MCP_CONFIG, PATH);
});

Deno.test("buildEnv: [env] values are expanded against the operator's environment", () => {
  const result = buildEnv({
    loaded: loaded({ flag: "--m" }, {
      env: {
        KIND: "oauth",
        CACHE: "${HOME}/.cache/agent",
        CFG: "${XDG_CONFIG_HOME}/agent",
        LITERAL: "$HOME and $ and ${",
      },
    }),
    configPath: PATH,
    context: context({ HOME: "/home/op" }),
  });
  assert.deepEqual(result.envSet, {
    KIND: "oauth",
    CACHE: "/home/op/.cache/agent",
    CFG: "/home/op/.config/agent",
    LITERAL: "$HOME and $ and ${",
  });
  assert.equal(result.env.CACHE, "/home/op/.cache/agent");
  assert.equal(result.env.HOME, "/home/op");
});

Deno.test("buildEnv: [env] overrides the operator's value", () => {
  const result = buildEnv({
    loaded: loaded({ flag: "--m" }, { env: { EDITOR: "vi" } }),
    configPath: PATH,
    context: context({ EDITOR: "emacs" }),
  });
  assert.equal(result.env.EDITOR, "vi");
  assert.deepEqual(result.envSet, { EDITOR: "vi" });
});

Deno.test("buildEnv: forbid strips an operator variable", () => {
  const result = buildEnv({
    loaded: loaded({ flag: "--m" }, {
      forbid: { env: ["ANTHROPIC_API_KEY", "UNSET"] },
    }),
    configPath: PATH,
    context: context({ ANTHROPIC_API_KEY: "sk-secret", HOME: "/h" }),
  });
  assert.equal("ANTHROPIC_API_KEY" in result.env, false);
  assert.equal(result.env.HOME, "/h");
  assert.deepEqual(result.envRemoved, ["ANTHROPIC_API_KEY"]);
  assert.deepEqual(result.envSet, {});
});

Deno.test("buildEnv: forbid reports only variables that were there", () => {
  const result = buildEnv({
    loaded: loaded({ flag: "--m" }, {
      forbid: { env: ["constructor", "NOT_SET", "B", "A"] },
    }),
    configPath: PATH,
    context: context({ A: "1", B: "2", C: "3" }),
  });
  assert.deepEqual(result.envRemoved, ["A", "B"]);
  assert.deepEqual(result.env, { C: "3" });
});

Deno.test("buildEnv: forbid wins over a variable that [env] set", () => {
  const result = buildEnv({
    loaded: loaded({ flag: "--m" }, {
      env: { GH_TOKEN: "from-profile", KEEP: "yes" },
      forbid: { env: ["GH_TOKEN"] },
    }),
    configPath: PATH,
    context: context({}),
  });
  assert.equal("GH_TOKEN" in result.env, false);
  assert.equal("GH_TOKEN" in result.envSet, false);
  assert.equal(result.env.KEEP, "yes");
});

Deno.test("buildEnv: an unset variable is a config error naming file, key and variable", () => {
  const profile = loaded({ flag: "--m" }, { env: { TOKEN_FILE: "${NOPE}/t" } });
  assert.throws(
    () =>
      buildEnv({
        loaded: profile,
        configPath: PATH,
        context: context({ HOME: "/h" }),
      }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.exitCode, 78);
      assert.equal(
        error.message,
        "/cfg/sherlock/agents.d/fake.toml: env.TOKEN_FILE: ${NOPE} is not set and has no default; set it or change the profile",
      );
      return true;
    },
  );
});

Deno.test("buildEnv: does not change the context's environment", () => {
  const env = { SECRET: "x", HOME: "/h" };
  buildEnv({
    loaded: loaded({ mode: "env-var", var: "V" }, {
      env: { A: "1" },
      forbid: { env: ["SECRET"] },
    }),
    configPath: PATH,
    context: context(env),
  });
  assert.deepEqual(env, { SECRET: "x", HOME: "/h" });
});

Deno.test("configFilePath: an absolute path is used as it is", () => {
  assert.equal(
    configFilePath(
      loaded({ mode: "config-file", path: "/etc/agent/mcp.json" }),
      context({}),
    ),
    "/etc/agent/mcp.json",
  );
});

Deno.test("configFilePath: ${XDG_CONFIG_HOME} unset falls back to $HOME/.config", () => {
  const profile = loaded({
    mode: "config-file",
    path: "${XDG_CONFIG_HOME}/claude-code/sherlock.mcp.json",
  });
  assert.equal(
    configFilePath(profile, context({ HOME: "/home/op" })),
    "/home/op/.config/claude-code/sherlock.mcp.json",
  );
  assert.equal(
    configFilePath(profile, context({ HOME: "/home/op", XDG_CONFIG_HOME: "" })),
    "/home/op/.config/claude-code/sherlock.mcp.json",
  );
  assert.equal(
    configFilePath(
      profile,
      context({ HOME: "/home/op", XDG_CONFIG_HOME: "/xdg" }),
    ),
    "/xdg/claude-code/sherlock.mcp.json",
  );
});

Deno.test("configFilePath: ~ at the start is $HOME", () => {
  const profile = loaded({ mode: "config-file", path: "~/.agent/mcp.json" });
  assert.equal(
    configFilePath(profile, context({ HOME: "/home/op" })),
    "/home/op/.agent/mcp.json",
  );
});

Deno.test("configFilePath: a relative result is a config error", () => {
  const profile = loaded({ mode: "config-file", path: "agent/mcp.json" });
  assert.throws(
    () => configFilePath(profile, context({ HOME: "/h" })),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.message.startsWith(
        '/cfg/sherlock/agents.d/fake.toml: mcp.path: "agent/mcp.json" is not an absolute path',
      ),
  );
});

Deno.test("configFilePath: an unset variable names the key and the variable", () => {
  const profile = loaded({
    mode: "config-file",
    path: "${AGENT_HOME}/mcp.json",
  });
  assert.throws(
    () => configFilePath(profile, context({ HOME: "/h" })),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.message ===
        "/cfg/sherlock/agents.d/fake.toml: mcp.path: ${AGENT_HOME} is not set and has no default; set it or change the profile",
  );
});

Deno.test("configFilePath: ~ without HOME is an error, not a relative path", () => {
  const profile = loaded({ mode: "config-file", path: "~/mcp.json" });
  assert.throws(
    () => configFilePath(profile, context({})),
    (error: unknown) =>
      error instanceof ConfigError && error.message.includes("${HOME}"),
  );
});

/** The session plan's options for `profile`, with github, docs and plain. */
function sessionOptions(
  profile: LoadedProfile,
  more: Partial<PlanSessionOptions> = {},
): PlanSessionOptions {
  return {
    agent: "fake",
    profile,
    services: [github, docs, plain],
    settings: DEFAULT_SETTINGS,
    userArgs: ["-p", "hi"],
    context: context({ HOME: "/home/me", PATH: "/usr/bin" }),
    session: "0123456789ab",
    runtimeDir: "/run/user/1000/sherlock",
    socket: "/run/user/1000/sherlock/broker.sock",
    selfCommand: ["/opt/sherlock"],
    strict: false,
    ...more,
  };
}

Deno.test("planSession: cli-flag, a per-session file, tokens inline and redacted", () => {
  const plan = planSession(sessionOptions(loaded({ flag: "--mcp-config" })));
  assert.deepEqual(plan.config, { kind: "file", path: PATH });
  assert.deepEqual(plan.args, ["--mcp-config", PATH, "-p", "hi"]);
  assert.equal(plan.executable, "fake");
  assert.deepEqual(plan.envSet, {});
  assert.equal(plan.env.PATH, "/usr/bin");
  assert.deepEqual(
    Object.fromEntries([...plan.delivery].map(([name, d]) => [name, d.kind])),
    { github: "inline", docs: "inline", plain: "none" },
  );
  assert.deepEqual(plan.shim, {
    command: ["/opt/sherlock"],
    socket: "/run/user/1000/sherlock/broker.sock",
    session: "0123456789ab",
    agent: "fake",
  });
  assert.equal(plan.document.kind, "json");
  if (plan.document.kind !== "json") return;
  const servers = plan.document.document.mcpServers as Record<
    string,
    Record<string, Record<string, string>>
  >;
  assert.equal(servers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN, REDACTED);
  assert.equal(servers.docs.headers.Authorization, `Bearer ${REDACTED}`);
});

Deno.test("planSession: env-var mode names the file in the variable", () => {
  const plan = planSession(
    sessionOptions(loaded({ mode: "env-var", var: "MCP_CONFIG" })),
  );
  assert.deepEqual(plan.envSet, { MCP_CONFIG: PATH });
  assert.deepEqual(plan.args, ["-p", "hi"]);
});

Deno.test("planSession: config-file mode writes the profile's path; merge = true merges into it, tokens through the shim", () => {
  // A remote service with a token (docs) cannot go through the shim.
  const file = planSession(sessionOptions(
    loaded({ mode: "config-file", path: "~/.agent/mcp.json" }),
    { services: [github, plain] },
  ));
  assert.deepEqual(file.config, {
    kind: "file",
    path: "/home/me/.agent/mcp.json",
  });
  const merge = planSession(sessionOptions(
    loaded({
      mode: "config-file",
      path: "~/.gemini/settings.json",
      merge: true,
      format: "gemini",
    }),
    { services: [github, plain] },
  ));
  assert.deepEqual(merge.config, {
    kind: "merge",
    path: "/home/me/.gemini/settings.json",
  });
  assert.deepEqual(merge.delivery.get("github"), {
    kind: "shim",
    reason:
      "agent fake would write it into /home/me/.gemini/settings.json, a file of yours",
  });
});

Deno.test("planSession: an argv format puts the servers in the flag values, never a token", () => {
  const profile = loaded({ flag: "-c", format: "codex-overrides" });
  const plan = planSession(sessionOptions(profile, {
    services: [github, plain],
  }));
  assert.deepEqual(plan.config, { kind: "argv" });
  assert.equal(plan.document.kind, "argv");
  if (plan.document.kind !== "argv") return;
  assert.equal(plan.args.length, 2 * plan.document.values.length + 2);
  assert.deepEqual(plan.args.slice(0, 2), ["-c", plan.document.values[0]]);
  assert.match(
    plan.document.values[0],
    /^mcp_servers\.github=\{command="\/opt\/sherlock",args=\["shim"/,
  );
  // Whatever the broker answers, the flag values stay as planned: the
  // session's capability where the plan shows it redacted, never a token.
  const fetched = renderSessionConfig(
    { ...plan, shim: { ...plan.shim, capability: "cap_session" } },
    {
      delivery: plan.delivery,
      tokens: new Map([["github", "ghp_secret"]]),
    },
  );
  assert.match(
    plan.document.values[0],
    /env=\{GITHUB_TOOLSETS="repos,issues",SHERLOCK_SESSION_CAPABILITY="<redacted>"\}/,
  );
  assert.deepEqual(fetched, {
    kind: "argv",
    values: plan.document.values.map((value) =>
      value.replace("<redacted>", "cap_session")
    ),
  });
});

Deno.test("planSession: a service the agent cannot use is left out with its reason; the others stay", () => {
  const profile = loaded({ flag: "-c", format: "codex-overrides" });
  const plan = planSession(sessionOptions(profile));
  assert.deepEqual(plan.leftOut, [{
    service: "docs",
    reason:
      "service docs is a remote server with a token, and agent fake would put it in argv, " +
      "which every local user can read; " +
      'remove its [token] delivery = "inline" (the bridge carries it), or use another agent',
    exitCode: 78,
  }]);
  assert.deepEqual(plan.services.map((service) => service.service.name), [
    "github",
    "plain",
  ]);
  assert.deepEqual([...plan.delivery.keys()], ["github", "plain"]);
  assert.equal(plan.document.kind, "argv");
  if (plan.document.kind !== "argv") return;
  assert.equal(plan.document.values.length, 2);
  assert.equal(
    plan.document.values.some((value) => value.includes("docs")),
    false,
  );
});

Deno.test("planSession: strict, a service the agent cannot use is a config error before anything else", () => {
  const profile = loaded({ flag: "-c", format: "codex-overrides" });
  assert.throws(
    () => planSession(sessionOptions(profile, { strict: true })),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.message ===
        "service docs is a remote server with a token, and agent fake would put it in argv, " +
          "which every local user can read; " +
          'remove its [token] delivery = "inline" (the bridge carries it), or use another agent',
  );
});

Deno.test("planSession: a first argument in [argv] no_session: no services, no config, [env] and [forbid] kept", () => {
  for (
    const profile of [
      loaded({ flag: "--mcp-config" }),
      loaded({ mode: "env-var", var: "MCP_CONFIG", flag: undefined }),
      loaded({ flag: "-c", format: "codex-overrides" }),
      loaded({
        mode: "config-file",
        path: "/home/me/.agent/settings.json",
        merge: true,
        flag: undefined,
      }),
    ]
  ) {
    profile.profile.argv = {
      prefix: ["--pre"],
      suffix: [],
      no_session: ["--help", "-v"],
    };
    profile.profile.env = { AGENT_MODE: "x" };
    profile.profile.forbid = { env: ["SECRET_KEY"] };
    const plan = planSession(sessionOptions(profile, {
      userArgs: ["--help", "more"],
      context: context({ PATH: "/usr/bin", SECRET_KEY: "k" }),
    }));
    const mode = profile.profile.mcp.mode;
    assert.deepEqual(plan.config, { kind: "none", argument: "--help" }, mode);
    assert.deepEqual(plan.args, ["--pre", "--help", "more"], mode);
    assert.deepEqual(plan.envSet, { AGENT_MODE: "x" }, mode);
    assert.deepEqual(plan.envRemoved, ["SECRET_KEY"], mode);
    assert.deepEqual(plan.services, [], mode);
    assert.deepEqual(plan.leftOut, [], mode);
    assert.equal(plan.delivery.size, 0, mode);
  }
  // Only the first argument counts: `-p --help` is a session.
  const profile = loaded({ flag: "--mcp-config" });
  profile.profile.argv = { prefix: [], suffix: [], no_session: ["--help"] };
  const session = planSession(sessionOptions(profile, {
    userArgs: ["-p", "--help"],
  }));
  assert.deepEqual(session.config, { kind: "file", path: PATH });
  assert.deepEqual(session.args, ["--mcp-config", PATH, "-p", "--help"]);
  assert.equal(
    noSessionArgument(profile, []),
    undefined,
    "no argument: a session",
  );
});

Deno.test('planSession: mode = "none" has no services, no config, only [env] and [forbid]', () => {
  const profile = loaded({ flag: "--mcp-config" });
  profile.profile.mcp = { mode: "none" };
  profile.profile.argv = {
    prefix: ["--pre"],
    suffix: ["--post"],
    no_session: [],
  };
  profile.profile.env = { AGENT_MODE: "x" };
  profile.profile.forbid = { env: ["SECRET_KEY"] };
  const plan = planSession(sessionOptions(profile, {
    context: context({ PATH: "/usr/bin", SECRET_KEY: "k" }),
  }));
  assert.deepEqual(plan.config, { kind: "none" });
  assert.deepEqual(plan.args, ["--pre", "-p", "hi", "--post"]);
  assert.deepEqual(plan.envSet, { AGENT_MODE: "x" });
  assert.deepEqual(plan.envRemoved, ["SECRET_KEY"]);
  assert.deepEqual(plan.services, []);
  assert.deepEqual(plan.leftOut, []);
  assert.deepEqual(plan.excluded, []);
  assert.equal(plan.delivery.size, 0);
  assert.equal(
    sessionSummary(plan, { delivery: plan.delivery, leftOut: [] }),
    'agent fake: no session for mode = "none" (no MCP config, no broker)',
  );
});

Deno.test("sessionSummary: the agent, each service with its token's way, and those left out", () => {
  const plan = planSession(sessionOptions(loaded({ flag: "--mcp-config" })));
  assert.equal(
    sessionSummary(plan, { delivery: plan.delivery, leftOut: ["broken"] }),
    "agent fake: services github (token inline), docs (token inline), plain (no token); left out: broken",
  );
  const codex = planSession(sessionOptions(
    loaded({ flag: "-c", format: "codex-overrides" }),
  ));
  assert.equal(
    sessionSummary(codex, { delivery: codex.delivery, leftOut: ["docs"] }),
    "agent fake: services github (token through the shim), plain (no token); left out: docs",
  );
  assert.equal(
    sessionSummary(plan, { delivery: new Map(), leftOut: [] }),
    "agent fake: no services",
  );
  assert.equal(
    sessionSummary(
      { agent: "fake", config: { kind: "none", argument: "-h" } },
      {
        delivery: new Map(),
        leftOut: [],
      },
    ),
    "agent fake: no session for -h (no MCP config, no broker)",
  );
});

Deno.test("planSession: config.toml's [render] tokens = shim", () => {
  const plan = planSession(sessionOptions(loaded({ flag: "--m" }), {
    settings: { ...DEFAULT_SETTINGS, render: { tokens: "shim" } },
  }));
  assert.equal(plan.delivery.get("github")?.kind, "shim");
  assert.equal(plan.delivery.get("docs")?.kind, "inline");
});

Deno.test("planSession: an unset variable in [env] is a config error", () => {
  const profile = loaded({ flag: "--m" }, { env: { X: "${NOPE}" } });
  assert.throws(
    () => planSession(sessionOptions(profile)),
    (error: unknown) =>
      error instanceof ConfigError && error.message.includes("${NOPE}"),
  );
});
