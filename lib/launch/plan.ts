/**
 * A session's plan — the agent's argv and environment, where its config
 * goes, how each token reaches its server, and the config itself with the
 * tokens redacted — built from the profile, the services, the settings and
 * the operator's environment. Pure: no process, no file, no broker, so
 * every rule here is tested without spawning; `--dry-run` prints the plan,
 * and `session.ts` carries it out.
 *
 * @module
 */

import { ConfigError, ExitCode, type ExitCodeValue } from "../errors.ts";
import {
  type ExpandContext,
  expandPath,
  expandVariables,
  UnsetVariableError,
} from "../config/expand.ts";
import type { Settings } from "../config/settings.ts";
import type { LoadedProfile } from "../profiles/loader.ts";
import { isArgvFormat, type McpFormat } from "../profiles/mcp_formats.ts";
import {
  type DeliveryPlan,
  planDelivery,
  refusal,
  type ServiceDelivery,
} from "../render/delivery.ts";
import { renderDocument, type RenderedDocument } from "../render/formats.ts";
import {
  REDACTED,
  serverEntries,
  type ShimContext,
} from "../render/servers.ts";
import type { Service } from "../services/loader.ts";
import { runtimeConfigPath } from "../session/rendered_config.ts";
import {
  type ExcludedService,
  selectServices,
  type ServiceFlags,
} from "./service_selection.ts";

/** What a session is planned from. */
export interface PlanSessionOptions {
  /** The agent's profile name, as the operator gave it. */
  agent: string;
  /** The profile as loaded. */
  profile: LoadedProfile;
  /** Every valid service of services.d. */
  services: readonly Service[];
  /**
   * Which of them the session gets (`service_selection.ts`): the command
   * line's `--service` / `--no-service` and the names of malformed
   * services.d files. Without it every service of `services` is the
   * session's, whatever the profile and config.toml say (`sherlock
   * services test`, which plans one service).
   */
  selection?: { flags: ServiceFlags; malformed?: readonly string[] };
  /** config.toml. */
  settings: Settings;
  /** Everything after the agent's name, verbatim. */
  userArgs: readonly string[];
  /** The operator's environment and user id. */
  context: ExpandContext;
  /** The session's id (`lib/session/records.ts`). */
  session: string;
  /** sherlock's private runtime folder (per-session config files). */
  runtimeDir: string;
  /** The broker's socket (for the shim entries). */
  socket: string;
  /** How to start sherlock itself, for the shim entries (`self_command.ts`). */
  selfCommand: readonly string[];
  /**
   * Stop at a service the agent cannot use (exit 78) instead of leaving it
   * out (`--strict`, config.toml's `[run] strict`).
   */
  strict: boolean;
  /**
   * `-v`: the bridges say on stderr which MCP revision their server speaks
   * (`sherlock bridge --verbose`).
   */
  verbose?: boolean;
}

/**
 * Where the rendered config goes: flag values in argv (Codex), a file that
 * sherlock writes and removes, or the operator's own file it merges into.
 */
export type ConfigTarget =
  | { kind: "argv" }
  | { kind: "file"; path: string }
  | { kind: "merge"; path: string }
  /**
   * No session: the first argument is one of the profile's `no_session`
   * (`argument`), or the profile's `[mcp] mode = "none"` (no `argument`).
   */
  | { kind: "none"; argument?: string };

/**
 * A service the session starts without: one line saying why and what to
 * do, and the exit code the failure has when the session is strict.
 */
export interface LeftOutService {
  /** The service's name. */
  service: string;
  /** What is wrong and what fixes it. */
  reason: string;
  /** The exit code `--strict` stops the session with. */
  exitCode: ExitCodeValue;
}

/** Everything a session does, decided before it does any of it. */
export interface SessionPlan {
  /** The agent's profile name. */
  agent: string;
  /** The profile as loaded. */
  profile: LoadedProfile;
  /** The session's id. */
  session: string;
  /** The session's services (without those left out). */
  services: readonly Service[];
  /** The services the agent cannot use, left out (none when strict). */
  leftOut: LeftOutService[];
  /**
   * The services left out by choice: `--service`, `--no-service`, the
   * profile's `[services]`, a service's `[service] agents`, config.toml's
   * `[services] default`.
   */
  excluded: ExcludedService[];
  /** Whether a service that cannot be part of the session stops it. */
  strict: boolean;
  /** How each service's token reaches its server. */
  delivery: DeliveryPlan;
  /** What the shim entries start. */
  shim: ShimContext;
  /** The profile's executable, looked up on the agent's PATH at start. */
  executable: string;
  /** The arguments after the executable. */
  args: string[];
  /** The agent's whole environment. */
  env: Record<string, string>;
  /** Variables sherlock sets or changes for the agent. */
  envSet: Record<string, string>;
  /** Variables of the operator's environment that the profile forbids. */
  envRemoved: string[];
  /** Where the config goes. */
  config: ConfigTarget;
  /** The rendered config with every inline token redacted. */
  document: RenderedDocument;
}

/**
 * Plans a session. A service the agent cannot use is left out (in
 * `leftOut`), or, when strict, throws {@linkcode ConfigError}; so do an
 * unset variable and a relative `[mcp] path`. When the first argument is
 * one of the profile's `[argv] no_session` (`--help`), the plan has no
 * services and no config: the agent starts with its `[env]` and `[forbid]`
 * only.
 */
export function planSession(options: PlanSessionOptions): SessionPlan {
  const { profile: loaded, context, agent } = options;
  const { mcp } = loaded.profile;
  const argument = noSessionArgument(loaded, options.userArgs);
  const chosen = options.selection === undefined
    ? { selected: [...options.services], excluded: [], refused: [] }
    : selectServices({
      agent,
      profile: loaded,
      services: options.services,
      malformed: options.selection.malformed,
      defaultSet: options.settings.services.default,
      flags: options.selection.flags,
    });
  const config: ConfigTarget = argument !== undefined
    ? { kind: "none", argument }
    : mcp.mode === "none"
    ? { kind: "none" }
    : isArgvFormat(mcp.format)
    ? { kind: "argv" }
    : mcp.mode === "config-file"
    ? {
      kind: mcp.merge ? "merge" : "file",
      path: configFilePath(loaded, context),
    }
    : {
      kind: "file",
      path: runtimeConfigPath({
        runtimeDir: options.runtimeDir,
        agent,
        session: options.session,
        extension: "json",
      }),
    };
  if (
    chosen.refused.length > 0 && options.strict && config.kind !== "none"
  ) {
    throw new ConfigError(chosen.refused[0].reason);
  }
  const planned = planDelivery({
    services: config.kind === "none" ? [] : chosen.selected,
    format: renderedFormat(loaded),
    mergePath: config.kind === "merge" ? config.path : undefined,
    configFilePath: mcp.mode === "config-file" && config.kind === "file"
      ? config.path
      : undefined,
    configured: options.settings.render.tokens,
    agent,
  });
  const refused = refusal(planned);
  if (refused !== undefined && options.strict) {
    throw new ConfigError(refused);
  }
  const { delivery, leftOut } = withoutRefused(planned);
  const plan = {
    agent,
    profile: loaded,
    session: options.session,
    services: config.kind === "none"
      ? []
      : chosen.selected.filter((service) => delivery.has(service.service.name)),
    leftOut: config.kind === "none" ? [] : [
      ...chosen.refused.map((refused) => ({
        ...refused,
        exitCode: ExitCode.Config,
      })),
      ...leftOut,
    ],
    excluded: config.kind === "none" ? [] : chosen.excluded,
    strict: options.strict,
    delivery,
    shim: {
      command: [...options.selfCommand],
      socket: options.socket,
      session: options.session,
      agent,
      ...(options.verbose ? { verbose: true } : {}),
    },
  };
  // Argv formats send every token through the shim (and refuse the rest),
  // so flag values never hold one: rendering them now is rendering them.
  // The capability is known only once the session registers; rendered
  // redacted, the plan's document (what `--dry-run` prints) has every
  // variable the real run puts in a shim's or bridge's env.
  const document = renderSessionConfig(
    { ...plan, shim: { ...plan.shim, capability: REDACTED } },
    { delivery, tokens: new Map() },
  );
  const configPath = config.kind === "file" || config.kind === "merge"
    ? config.path
    : undefined;
  const args = buildArgs({
    loaded,
    config: config.kind === "none"
      ? undefined
      : document.kind === "argv"
      ? { values: document.values }
      : { path: configPath ?? "" },
    userArgs: options.userArgs,
  });
  return {
    ...plan,
    executable: loaded.profile.agent.executable,
    args,
    ...buildEnv({ loaded, configPath, context }),
    config,
    document,
  };
}

/**
 * The agent's first argument when it is one of the profile's
 * `[argv] no_session` (such as `--help`), which needs no MCP config.
 */
export function noSessionArgument(
  loaded: LoadedProfile,
  userArgs: readonly string[],
): string | undefined {
  const [first] = userArgs;
  return first !== undefined && loaded.profile.argv.no_session.includes(first)
    ? first
    : undefined;
}

/** The plan without its refused services, and each of them left out. */
function withoutRefused(
  planned: DeliveryPlan,
): { delivery: DeliveryPlan; leftOut: LeftOutService[] } {
  const delivery = new Map(planned);
  const leftOut: LeftOutService[] = [];
  for (const [service, entry] of planned) {
    if (entry.kind !== "refused") continue;
    delivery.delete(service);
    leftOut.push({
      service,
      reason: entry.reason,
      exitCode: ExitCode.Config,
    });
  }
  return { delivery, leftOut };
}

/**
 * The session's config with the tokens it fetched, rendered as `delivery`
 * (the plan's, settled after the fetch) says; tokens not in `tokens` are
 * redacted.
 */
export function renderSessionConfig(
  plan: Pick<SessionPlan, "profile" | "services" | "shim">,
  fetched: { delivery: DeliveryPlan; tokens: ReadonlyMap<string, string> },
): RenderedDocument {
  return renderDocument(
    renderedFormat(plan.profile),
    serverEntries(plan.services, {
      delivery: fetched.delivery,
      tokens: fetched.tokens,
      shim: plan.shim,
    }),
  );
}

/**
 * The format of the profile's config. A `mode = "none"` profile renders
 * nothing (its sessions have no services); an empty mcp-json stands in.
 */
function renderedFormat(loaded: LoadedProfile): McpFormat {
  const { mcp } = loaded.profile;
  return mcp.mode === "none" ? "mcp-json" : mcp.format;
}

/** What the agent is started with. */
export interface AgentCommand {
  /** The arguments after the executable. */
  args: string[];
  /** The agent's whole environment. */
  env: Record<string, string>;
  /** Variables sherlock set or changed (from `[env]` and `[mcp] var`). */
  envSet: Record<string, string>;
  /** Variables of the operator's environment that `[forbid] env` removed. */
  envRemoved: string[];
}

/**
 * Where the rendered config is: a file, or flag values (argv formats);
 * undefined when the session has none (`no_session`).
 */
export type RenderedDelivery =
  | { path: string }
  | { values: string[] }
  | undefined;

/**
 * The arguments after the executable:
 * `<prefix…> [flag value…] <user args…> <suffix…>`. For a file, the flag's
 * value is `[mcp] value` with `{path}` replaced; for an argv format (Codex)
 * the flag is repeated once per value. With `[mcp] joined = true` each flag
 * and value is one `flag=value` token. User arguments are passed verbatim,
 * whatever they look like.
 */
export function buildArgs(
  options: {
    loaded: LoadedProfile;
    config: RenderedDelivery;
    userArgs: readonly string[];
  },
): string[] {
  const { mcp, argv } = options.loaded.profile;
  const delivery: string[] = [];
  if (
    mcp.mode === "cli-flag" && mcp.flag !== undefined &&
    options.config !== undefined
  ) {
    const flag = mcp.flag;
    const values = "values" in options.config
      ? options.config.values
      : [deliveryValue(mcp.value, options.config.path)];
    for (const value of values) {
      delivery.push(...(mcp.joined ? [`${flag}=${value}`] : [flag, value]));
    }
  }
  return [...argv.prefix, ...delivery, ...options.userArgs, ...argv.suffix];
}

/**
 * The agent's environment: the operator's, plus `[env]` (expanded), plus
 * `[mcp] var` in env-var mode; then every `[forbid] env` name and every
 * `[credentials]` variable is removed, including one that `[env]` set —
 * forbid wins.
 */
export function buildEnv(
  options: {
    loaded: LoadedProfile;
    configPath: string | undefined;
    context: ExpandContext;
  },
): Omit<AgentCommand, "args"> {
  const { loaded, context } = options;
  const { profile } = loaded;
  const envSet: Record<string, string> = {};
  for (const [name, value] of Object.entries(profile.env)) {
    envSet[name] = expandOrThrow(
      loaded,
      `env.${name}`,
      () => expandVariables(value, context),
    );
  }
  if (
    profile.mcp.mode === "env-var" && profile.mcp.var !== undefined &&
    options.configPath !== undefined
  ) {
    envSet[profile.mcp.var] = deliveryValue(
      profile.mcp.value,
      options.configPath,
    );
  }
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(context.env)) {
    if (value !== undefined) env[name] = value;
  }
  Object.assign(env, envSet);
  // A credential's shell copy goes as [forbid] does: the broker's is the
  // only one the agent sees (set once fetched, `agent_credentials.ts`).
  const forbidden = new Set([
    ...profile.forbid.env,
    ...Object.keys(profile.credentials ?? {}),
  ]);
  const envRemoved = [...forbidden].filter((name) => Object.hasOwn(env, name));
  for (const name of forbidden) {
    delete env[name];
    delete envSet[name];
  }
  return { env, envSet, envRemoved: envRemoved.sort() };
}

/**
 * The `[mcp] value` template with every `{path}` replaced (literally: a `$`
 * in the path is not a replacement pattern).
 */
function deliveryValue(template: string, renderedPath: string): string {
  return template.replaceAll("{path}", () => renderedPath);
}

/** The expanded `[mcp] path` of a config-file profile. */
export function configFilePath(
  loaded: LoadedProfile,
  context: ExpandContext,
): string {
  const { mcp } = loaded.profile;
  const path = mcp.mode === "none" ? "" : mcp.path ?? "";
  const expanded = expandOrThrow(
    loaded,
    "mcp.path",
    () => expandPath(path, context),
  );
  if (!expanded.startsWith("/")) {
    throw new ConfigError(
      `${loaded.path}: mcp.path: "${expanded}" is not an absolute path; start it with / or ~ or \${VAR}`,
    );
  }
  return expanded;
}

function expandOrThrow(
  loaded: LoadedProfile,
  key: string,
  expand: () => string,
): string {
  try {
    return expand();
  } catch (error) {
    if (error instanceof UnsetVariableError) {
      throw new ConfigError(
        `${loaded.path}: ${key}: \${${error.variable}} is not set and has no default; ` +
          "set it or change the profile",
      );
    }
    throw error;
  }
}

/**
 * The one line `-v` prints before the agent starts: the agent, each of its
 * services and how its token reaches it (as `delivery`, settled after the
 * fetch, says), and the services left out.
 */
export function sessionSummary(
  plan: Pick<SessionPlan, "agent" | "config">,
  session: { delivery: DeliveryPlan; leftOut: readonly string[] },
): string {
  if (plan.config.kind === "none") {
    return `agent ${plan.agent}: no session for ${
      plan.config.argument ?? 'mode = "none"'
    } (no MCP config, no broker)`;
  }
  const services = [...session.delivery].map(([name, delivery]) =>
    `${name} (${DELIVERY_WORDS[delivery.kind]})`
  );
  const left = session.leftOut.length > 0
    ? `; left out: ${session.leftOut.join(", ")}`
    : "";
  return `agent ${plan.agent}: ${
    services.length > 0 ? `services ${services.join(", ")}` : "no services"
  }${left}`;
}

const DELIVERY_WORDS: Readonly<Record<ServiceDelivery["kind"], string>> = {
  none: "no token",
  inline: "token inline",
  shim: "token through the shim",
  bridge: "token through the bridge",
  refused: "refused",
};
