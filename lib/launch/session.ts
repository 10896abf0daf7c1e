/**
 * One agent session, start to end: load the profile and services, get the
 * tokens, render the config, start the agent, clean up whatever happens.
 *
 * @module
 */

import { formatProblem } from "../config/toml_files.ts";
import { ConfigError } from "../errors.ts";
import type { Env, SherlockPaths } from "../config/sherlock_paths.ts";
import { type LoadedProfile, loadProfile } from "../profiles/loader.ts";
import {
  isArgvFormat,
  renderDocument,
  unsupportedServer,
} from "../render/formats.ts";
import {
  runtimeConfigPath,
  writeMergedConfig,
  writeRenderedConfig,
} from "../session/rendered_config.ts";
import { serverEntries } from "../render/servers.ts";
import {
  endSession,
  newSessionId,
  newSessionRecord,
  sweepStaleSessions,
} from "../session/records.ts";
import { selfCommand } from "../self_command.ts";
import { loadServices } from "../services/loader.ts";
import { loadSettings } from "../config/settings.ts";
import { ValidationCache } from "../config/validation_cache.ts";
import { findExecutable, requireExecutable } from "./executable.ts";
import { buildArgs, buildEnv, configFilePath } from "./plan.ts";
import { fetchSessionTokens, planTokens } from "./session_tokens.ts";
import { signalNumber, SignalRelay, spawnError } from "./spawn.ts";

/** What `sherlock run` asks for. */
export interface SessionOptions {
  /** The profile name. */
  agent: string;
  /** Everything after the agent's name, verbatim. */
  userArgs: string[];
  /** Show what would happen instead of doing it. */
  dryRun: boolean;
  /** The operator's environment. */
  env: Env;
  /** The operator's user id. */
  uid: number;
  /** sherlock's locations. */
  paths: SherlockPaths;
  /** Called for each problem that does not stop the session. */
  onWarning: (message: string) => void;
}

/** What `--dry-run` shows. */
export interface DryRunReport {
  /** The profile as loaded. */
  profile: LoadedProfile;
  /** The session id the run would have. */
  session: string;
  /** The executable's resolved path, or its name when not found. */
  executable: string;
  /** Why the executable could not be used, if it could not. */
  executableProblem?: string;
  /** The full argv, the executable first. */
  argv: string[];
  /** Variables sherlock sets for the agent. */
  envSet: Record<string, string>;
  /** Variables of the operator's environment that the profile forbids. */
  envRemoved: string[];
  /** The rendered config's path (none for an argv format). */
  configPath?: string;
  /** True when the config is merged into the operator's file at configPath. */
  merged: boolean;
  /** The rendered config, every token redacted. */
  configText: string;
  /** The services in the config. */
  services: string[];
}

/** How a session ended. */
export type SessionOutcome =
  | { kind: "dry-run"; report: DryRunReport }
  | { kind: "exited"; exitCode: number };

/** Runs one session (or reports it, with `dryRun`). */
export async function runSession(
  options: SessionOptions,
): Promise<SessionOutcome> {
  const { paths } = options;
  const cache = new ValidationCache(paths.cacheDir);
  const loaded = await loadProfile(options.agent, { paths, cache });
  const { services, problems } = await loadServices({ paths, cache });
  const settings = await loadSettings({ paths, cache });
  cache.save();
  for (const problem of problems) {
    options.onWarning(`skipping service: ${formatProblem(problem)}`);
  }
  if (!options.dryRun) {
    sweepStaleSessions(paths.stateDir, options.onWarning);
  }

  const { mcp } = loaded.profile;
  const context = { env: options.env, uid: options.uid };
  const session = newSessionId();
  const socket = paths.socket;
  const mergePath = mcp.merge ? configFilePath(loaded, context) : undefined;
  for (const service of services) {
    const reason = unsupportedServer(mcp.format, service.server);
    if (reason !== undefined) {
      throw new ConfigError(
        `service ${service.service.name} ${reason}; agent ${options.agent} cannot use it`,
      );
    }
  }
  const plan = planTokens({
    services,
    configured: settings.render.tokens,
    agent: options.agent,
    forceShimBecause: isArgvFormat(mcp.format)
      ? "put it in argv, which every local user can read"
      : mergePath !== undefined
      ? `write it into ${mergePath}, a file of yours`
      : undefined,
  });
  const tokens = options.dryRun
    ? new Map<string, string>()
    : await fetchSessionTokens({ plan, socket, session, agent: options.agent });
  const entries = serverEntries(services, {
    tokens,
    delivery: plan.delivery,
    shim: { command: selfCommand(), socket, session, agent: options.agent },
  });
  const document = renderDocument(mcp.format, entries);
  const configPath = document.kind === "argv"
    ? undefined
    : mcp.mode === "config-file"
    ? mergePath ?? configFilePath(loaded, context)
    : runtimeConfigPath({
      runtimeDir: paths.runtimeDir,
      agent: options.agent,
      session,
      extension: "json",
    });
  const args = buildArgs({
    loaded,
    config: document.kind === "argv"
      ? { values: document.values }
      : { path: configPath ?? "" },
    userArgs: options.userArgs,
  });
  const { env, envSet, envRemoved } = buildEnv({ loaded, configPath, context });
  const executableName = loaded.profile.agent.executable;

  if (options.dryRun) {
    const lookup = findExecutable(executableName, env.PATH);
    const executable = lookup.found ? lookup.path : executableName;
    return {
      kind: "dry-run",
      report: {
        profile: loaded,
        session,
        executable,
        executableProblem: lookup.found
          ? undefined
          : lookup.reason === "missing"
          ? "not found on PATH"
          : `${lookup.path} is not executable`,
        argv: [executable, ...args],
        envSet,
        envRemoved,
        configPath,
        merged: mergePath !== undefined,
        configText: document.kind === "json"
          ? document.text
          : document.values.join("\n") + "\n",
        services: services.map((service) => service.service.name),
      },
    };
  }

  const executable = requireExecutable({
    name: executableName,
    searchPath: env.PATH,
    agent: options.agent,
  });
  const relay = new SignalRelay();
  const record = newSessionRecord(session, options.agent);
  try {
    if (document.kind === "json" && mergePath !== undefined) {
      await writeMergedConfig({
        stateDir: paths.stateDir,
        record,
        path: mergePath,
        document: document.document,
        onWarning: options.onWarning,
      });
    } else if (document.kind === "json" && configPath !== undefined) {
      writeRenderedConfig({
        stateDir: paths.stateDir,
        runtimeDir: paths.runtimeDir,
        record,
        path: configPath,
        text: document.text,
      });
    }
    if (relay.pending) {
      return { kind: "exited", exitCode: 128 + signalNumber(relay.pending) };
    }
    const exitCode = await relay.spawn({ path: executable, args, env });
    return { kind: "exited", exitCode };
  } catch (error) {
    throw spawnError(error, {
      notFound:
        `${executable} (agent ${options.agent}) could not be started: not found; install the agent`,
      notExecutable:
        `${executable} (agent ${options.agent}) could not be started: permission denied; check its mode and interpreter`,
    });
  } finally {
    // Clean up while signals are still caught: once the relay is closed, a
    // SIGTERM or SIGHUP would end sherlock before the files are removed.
    for (const warning of endSession(paths.stateDir, record)) {
      options.onWarning(warning);
    }
    relay.close();
  }
}
