/**
 * Which services a session gets (lib/launch/service_selection.ts), and the
 * plan built from that set (lib/launch/plan.ts): flags, the profile's
 * `[services]`, a service's `[service] agents`, config.toml's
 * `[services] default`. Pure: no process, no file.
 */

import assert from "node:assert/strict";
import {
  selectServices,
  type SelectServicesOptions,
} from "../../lib/launch/service_selection.ts";
import { planSession, type PlanSessionOptions } from "../../lib/launch/plan.ts";
import { DEFAULT_SETTINGS } from "../../lib/config/settings.ts";
import {
  ConfigError,
  ExitCode,
  SherlockError,
  UsageError,
} from "../../lib/errors.ts";
import type { Profile } from "../../lib/profiles/schema.ts";
import { loadedProfile } from "../helpers/profiles.ts";
import { docs, github, plain, service } from "../helpers/services.ts";
import { serviceSchema } from "../../lib/services/schema.ts";
import { profileSchema } from "../../lib/profiles/schema.ts";
import { settingsSchema } from "../../lib/config/settings_schema.ts";

/** A stdio service without a token that only codex sessions get. */
const codexOnly = service(`
[service]
name = "codexonly"
agents = ["codex"]
[server]
command = "codex-tools"
`);

const ALL = [github, docs, plain, codexOnly];

/** Selection options, `inProfile` being the profile's `[services]`. */
type Options = Partial<SelectServicesOptions> & {
  inProfile?: Profile["services"];
};

function options(more: Options = {}): SelectServicesOptions {
  const { inProfile, ...rest } = more;
  return {
    agent: "fake",
    profile: loadedProfile({ flag: "-c" }, { services: inProfile }),
    services: ALL,
    defaultSet: "all",
    flags: { only: [], without: [] },
    ...rest,
  };
}

function names(selection: ReturnType<typeof selectServices>): string[] {
  return selection.selected.map((item) => item.service.name);
}

function why(selection: ReturnType<typeof selectServices>): string[] {
  return selection.excluded.map((item) =>
    `${item.service}: ${item.cause}: ${item.reason}`
  );
}

Deno.test("selectServices: by default every service, but one whose agents leave the agent out", () => {
  const selection = selectServices(options());
  assert.deepEqual(names(selection), ["github", "docs", "plain"]);
  assert.deepEqual(why(selection), [
    "codexonly: agents: its [service] agents is codex, not fake",
  ]);
  assert.deepEqual(selection.refused, []);
  assert.deepEqual(
    names(selectServices(options({ agent: "codex" }))),
    ["github", "docs", "plain", "codexonly"],
  );
});

Deno.test("selectServices: --service names the whole set, over the profile and default none", () => {
  const selection = selectServices(options({
    flags: { only: ["plain", "github"], without: [] },
    inProfile: { include: ["docs"] },
    defaultSet: "none",
  }));
  assert.deepEqual(names(selection), ["github", "plain"]);
  assert.deepEqual(why(selection), [
    "docs: flag: not named by --service",
    "codexonly: flag: not named by --service",
  ]);
});

Deno.test("selectServices: --no-service takes away from what the profile gives", () => {
  const selection = selectServices(options({
    flags: { only: [], without: ["docs"] },
    inProfile: { exclude: ["github"] },
  }));
  assert.deepEqual(names(selection), ["plain"]);
  assert.deepEqual(why(selection), [
    "github: profile: in the profile's [services] exclude",
    "docs: flag: --no-service",
    "codexonly: agents: its [service] agents is codex, not fake",
  ]);
});

Deno.test("selectServices: the profile's include names the set", () => {
  const selection = selectServices(
    options({ inProfile: { include: ["docs"] } }),
  );
  assert.deepEqual(names(selection), ["docs"]);
  assert.deepEqual(why(selection).map((line) => line.split(":")[0]), [
    "github",
    "plain",
    "codexonly",
  ]);
  assert.ok(
    selection.excluded.every((item) =>
      item.cause === "profile" && item.reason.includes("include")
    ),
  );
});

Deno.test("selectServices: default none gives only what include or --service names", () => {
  const none = selectServices(options({ defaultSet: "none" }));
  assert.deepEqual(names(none), []);
  assert.ok(none.excluded.every((item) => item.cause === "default"));
  assert.match(none.excluded[0].reason, /\[services\] default = "none"/);
  // exclude has nothing to take from.
  assert.deepEqual(
    names(
      selectServices(
        options({ defaultSet: "none", inProfile: { exclude: ["docs"] } }),
      ),
    ),
    [],
  );
  assert.deepEqual(
    names(
      selectServices(
        options({ defaultSet: "none", inProfile: { include: ["plain"] } }),
      ),
    ),
    ["plain"],
  );
  assert.deepEqual(
    names(
      selectServices(
        options({
          defaultSet: "none",
          flags: { only: ["github"], without: [] },
        }),
      ),
    ),
    ["github"],
  );
});

Deno.test("selectServices: a service named explicitly that its agents key refuses is refused, not silently out", () => {
  for (
    const more of [
      { flags: { only: ["codexonly", "plain"], without: [] } },
      { inProfile: { include: ["codexonly", "plain"] } },
    ]
  ) {
    const selection = selectServices(options(more));
    assert.deepEqual(names(selection), ["plain"]);
    assert.equal(selection.refused.length, 1);
    assert.equal(selection.refused[0].service, "codexonly");
    assert.match(
      selection.refused[0].reason,
      /^service codexonly is named by (--service|the profile's include) but its \[service\] agents is codex, not fake$/,
    );
  }
});

Deno.test("selectServices: an unknown name gets the closest one; usage error in a flag, config error in the profile", () => {
  const cases: [Options, string, number][] = [
    [
      { flags: { only: ["gihtub"], without: [] } },
      `--service: no service named "gihtub" (did you mean github?); run "sherlock services" to list them`,
      ExitCode.Usage,
    ],
    [
      { flags: { only: [], without: ["zzz"] } },
      `--no-service: no service named "zzz"; run "sherlock services" to list them`,
      ExitCode.Usage,
    ],
    [
      { inProfile: { include: ["dcos"] } },
      `/cfg/sherlock/agents.d/fake.toml: services.include: no service named "dcos" (did you mean docs?); run "sherlock services" to list them`,
      ExitCode.Config,
    ],
    [
      { inProfile: { exclude: ["plan"] } },
      `/cfg/sherlock/agents.d/fake.toml: services.exclude: no service named "plan" (did you mean plain?); run "sherlock services" to list them`,
      ExitCode.Config,
    ],
  ];
  for (const [more, message, exitCode] of cases) {
    assert.throws(
      () => selectServices(options(more)),
      (error: unknown) =>
        error instanceof SherlockError && error.exitCode === exitCode &&
        error.message === message,
    );
  }
});

Deno.test("selectServices: a malformed file's name is known; --service with --no-service is a usage error", () => {
  const selection = selectServices(
    options({
      malformed: ["broken"],
      flags: { only: ["broken"], without: [] },
    }),
  );
  assert.deepEqual(names(selection), []);
  // A malformed file the names leave out is in excluded (no warning for it).
  assert.deepEqual(
    why(selectServices(options({
      malformed: ["broken"],
      flags: { only: ["plain"], without: [] },
    }))).filter((line) => line.startsWith("broken")),
    ["broken: flag: not named by --service"],
  );
  assert.deepEqual(
    why(selectServices(options({ malformed: ["broken"] }))).filter((line) =>
      line.startsWith("broken")
    ),
    [],
  );
  assert.throws(
    () =>
      selectServices(
        options({ flags: { only: ["github"], without: ["docs"] } }),
      ),
    (error: unknown) =>
      error instanceof UsageError &&
      error.message.startsWith("--service and --no-service cannot be combined"),
  );
});

/** A session plan's options for the fake agent with every service. */
const PLAN: PlanSessionOptions = {
  agent: "fake",
  profile: loadedProfile({ flag: "-c" }),
  services: ALL,
  settings: DEFAULT_SETTINGS,
  userArgs: [],
  context: { env: { HOME: "/home/me" } },
  session: "0123456789ab",
  runtimeDir: "/run/user/1000/sherlock",
  socket: "/run/user/1000/sherlock/broker.sock",
  selfCommand: ["/opt/sherlock"],
  strict: false,
};

Deno.test("planSession: the plan, its delivery and its config hold only the selected set", () => {
  const plan = planSession({
    ...PLAN,
    selection: { flags: { only: [], without: ["github"] } },
  });
  assert.deepEqual(plan.services.map((item) => item.service.name), [
    "docs",
    "plain",
  ]);
  assert.deepEqual([...plan.delivery.keys()], ["docs", "plain"]);
  assert.deepEqual(plan.excluded.map((item) => item.service), [
    "github",
    "codexonly",
  ]);
  assert.equal(plan.document.kind, "json");
  if (plan.document.kind !== "json") return;
  assert.deepEqual(
    Object.keys(
      (plan.document.document as { mcpServers: Record<string, unknown> })
        .mcpServers,
    ),
    ["docs", "plain"],
  );
});

Deno.test("planSession: a refused named service is left out with a warning, or stops a strict session (78)", () => {
  const base: PlanSessionOptions = {
    ...PLAN,
    selection: { flags: { only: ["codexonly", "plain"], without: [] } },
    settings: { ...DEFAULT_SETTINGS, services: { default: "none" } },
  };
  const plan = planSession(base);
  assert.deepEqual(plan.services.map((item) => item.service.name), ["plain"]);
  assert.deepEqual(plan.leftOut.map((left) => [left.service, left.exitCode]), [
    ["codexonly", 78],
  ]);
  assert.throws(
    () => planSession({ ...base, strict: true }),
    (error: unknown) =>
      error instanceof ConfigError &&
      error.message.startsWith("service codexonly is named by --service"),
  );
  // Without a selection (sherlock services test) the services given are the set.
  const all = planSession({ ...base, selection: undefined });
  assert.deepEqual(all.services.map((item) => item.service.name), [
    "github",
    "docs",
    "plain",
    "codexonly",
  ]);
});

Deno.test("schemas: [services] include/exclude, [service] agents, config.toml [services] default", () => {
  const profile = {
    agent: { name: "fake", executable: "fake" },
    mcp: { mode: "cli-flag", flag: "-c" },
  };
  assert.deepEqual(
    profileSchema.parse({ ...profile, services: { include: ["a"] } }).services,
    { include: ["a"] },
  );
  const both = profileSchema.safeParse({
    ...profile,
    services: { include: ["a"], exclude: ["b"] },
  });
  assert.equal(both.success, false);
  assert.deepEqual(both.error?.issues[0].path, ["services", "exclude"]);
  assert.equal(
    profileSchema.safeParse({ ...profile, services: { only: ["a"] } }).success,
    false,
  );
  const stdio = { command: "x" };
  assert.deepEqual(
    serviceSchema.parse({
      service: { name: "s", agents: ["claude"] },
      server: stdio,
    }).service.agents,
    ["claude"],
  );
  assert.equal(
    serviceSchema.safeParse({
      service: { name: "s", agents: [] },
      server: stdio,
    })
      .success,
    false,
  );
  assert.equal(settingsSchema.parse({}).services.default, "all");
  assert.equal(
    settingsSchema.parse({ services: { default: "none" } }).services.default,
    "none",
  );
  assert.equal(
    settingsSchema.safeParse({ services: { default: "some" } }).success,
    false,
  );
  assert.deepEqual(settingsSchema.parse({}), DEFAULT_SETTINGS);
});
