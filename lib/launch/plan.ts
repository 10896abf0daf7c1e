/**
 * The agent's argv and environment, built from its profile. Pure: no
 * process, no file, so every rule here is tested without spawning.
 *
 * @module
 */

import { ConfigError } from "../errors.ts";
import {
  type ExpandContext,
  expandPath,
  expandVariables,
  UnsetVariableError,
} from "../config/expand.ts";
import type { LoadedProfile } from "../profiles/loader.ts";

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

/** Where the rendered config is: a file, or flag values (argv formats). */
export type RenderedDelivery = { path: string } | { values: string[] };

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
  if (mcp.mode === "cli-flag" && mcp.flag !== undefined) {
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
 * `[mcp] var` in env-var mode; then every `[forbid] env` name is removed,
 * including one that `[env]` set — forbid wins.
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
  const forbidden = new Set(profile.forbid.env);
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
  const path = loaded.profile.mcp.path ?? "";
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
