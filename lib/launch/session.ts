/**
 * One agent session: load the profile, services and settings, plan the
 * session (`plan.ts`, pure), then carry the plan out — fetch the tokens,
 * render and write the config, start the agent, clean up whatever happens.
 *
 * @module
 */

import { formatProblem } from "../config/toml_files.ts";
import { NoPermissionError } from "../errors.ts";
import type { Env, SherlockPaths } from "../config/sherlock_paths.ts";
import { loadProfile } from "../profiles/loader.ts";
import {
  type DeliveryPlan,
  inlineFetch,
  servicesNeedingTokens,
  settleDelivery,
} from "../render/delivery.ts";
import {
  writeMergedConfig,
  writeRenderedConfig,
} from "../session/rendered_config.ts";
import {
  endSession,
  newSessionId,
  newSessionRecord,
  recordAgent,
  sweepStaleSessions,
} from "../session/records.ts";
import { importLazily } from "../runtime/lazy_import.ts";
import { selfCommand } from "../self_command.ts";
import { loadServices } from "../services/loader.ts";
import { loadSettings } from "../config/settings.ts";
import { ValidationCache } from "../config/validation_cache.ts";

import {
  buildArgs,
  planSession,
  renderSessionConfig,
  type SessionPlan,
} from "./plan.ts";
import {
  requireExecutable,
  signalNumber,
  SignalRelay,
  spawnError,
} from "./spawn.ts";

/** What `sherlock run` asks for. */
export interface SessionOptions {
  /** The profile name. */
  agent: string;
  /** Everything after the agent's name, verbatim. */
  userArgs: string[];
  /** The operator's environment. */
  env: Env;
  /** The operator's user id. */
  uid: number;
  /** sherlock's locations. */
  paths: SherlockPaths;
  /** Called for each problem that does not stop the session. */
  onWarning: (message: string) => void;
}

/**
 * Loads what a session is made of (a malformed service is a warning, and
 * the session runs without it) and plans it with a new session id. Reads
 * the operator's files (and saves the validation cache), starts nothing and
 * fetches no token.
 */
export async function prepareSession(
  options: SessionOptions,
): Promise<SessionPlan> {
  const { paths } = options;
  const cache = new ValidationCache(paths.cacheDir);
  const profile = await loadProfile(options.agent, { paths, cache });
  const { services, problems } = await loadServices({ paths, cache });
  const settings = await loadSettings({ paths, cache });
  cache.save();
  for (const problem of problems) {
    options.onWarning(`skipping service: ${formatProblem(problem)}`);
  }
  return planSession({
    agent: options.agent,
    profile,
    services,
    settings,
    userArgs: options.userArgs,
    context: { env: options.env, uid: options.uid },
    session: newSessionId(),
    runtimeDir: paths.runtimeDir,
    socket: paths.socket,
    selfCommand: selfCommand(),
  });
}

/**
 * Carries a plan out: ends the sessions of dead sherlocks, registers the
 * session with the broker and fetches its tokens (when a service needs
 * one), writes the config, runs the agent and cleans up — the broker
 * session too, whatever the exit. Returns the agent's exit code (128+N if
 * signal N ended it or sherlock).
 */
export async function executeSession(
  plan: SessionPlan,
  options: { paths: SherlockPaths; onWarning: (message: string) => void },
): Promise<number> {
  const { paths } = options;
  sweepStaleSessions(paths.stateDir, options.onWarning);
  const broker = await openBrokerSession({
    delivery: plan.delivery,
    socket: paths.socket,
    session: plan.session,
    agent: plan.agent,
  });
  try {
    return await runSession(plan, { ...options, broker });
  } finally {
    // Also when the fetch or the config failed: the capability must not
    // outlive the session (a killed sherlock's goes with its pid).
    await broker?.end();
  }
}

async function runSession(
  plan: SessionPlan,
  options: {
    paths: SherlockPaths;
    onWarning: (message: string) => void;
    broker: BrokerSession | undefined;
  },
): Promise<number> {
  const { paths, broker } = options;
  const fetched = broker === undefined
    ? { tokens: new Map<string, string>(), deferred: [] }
    : await broker.fetchTokens();
  const shim = broker === undefined
    ? plan.shim
    : { ...plan.shim, capability: broker.capability };
  const document = renderSessionConfig({ ...plan, shim }, {
    delivery: settleDelivery(plan.delivery, fetched),
    tokens: fetched.tokens,
  });
  const args = document.kind === "argv"
    ? argsWithValues(plan, document.values)
    : plan.args;
  const executable = requireExecutable({
    name: plan.executable,
    searchPath: plan.env.PATH,
    agent: plan.agent,
  });
  const relay = new SignalRelay();
  const record = newSessionRecord(plan.session, plan.agent);
  try {
    if (document.kind === "json" && plan.config.kind === "merge") {
      await writeMergedConfig({
        stateDir: paths.stateDir,
        record,
        path: plan.config.path,
        document: document.document,
        onWarning: options.onWarning,
      });
    } else if (document.kind === "json" && plan.config.kind === "file") {
      writeRenderedConfig({
        stateDir: paths.stateDir,
        runtimeDir: paths.runtimeDir,
        record,
        path: plan.config.path,
        text: document.text,
      });
    }
    if (relay.pending) return 128 + signalNumber(relay.pending);
    return await relay.spawn({
      path: executable,
      args,
      env: plan.env,
      // The session lives as long as its agent, even if sherlock is killed.
      onSpawn: (pid) => recordAgent(paths.stateDir, record, pid),
    });
  } catch (error) {
    throw spawnError(error, {
      notFound:
        `${executable} (agent ${plan.agent}) could not be started: not found; install the agent`,
      notExecutable:
        `${executable} (agent ${plan.agent}) could not be started: permission denied; check its mode and interpreter`,
      tooLong:
        `${executable} (agent ${plan.agent}) could not be started: its arguments and environment are larger than the system allows (one argument at most 128 KiB on Linux); shorten the profile's [argv] or [env], or the arguments`,
    });
  } finally {
    // Clean up while signals are still caught: once the relay is closed, a
    // SIGTERM or SIGHUP would end sherlock before the files are removed.
    for (const warning of endSession(paths.stateDir, record)) {
      options.onWarning(warning);
    }
    await broker?.end();
    relay.close();
  }
}

/**
 * The plan's argv with an argv format's values rendered again (they now
 * hold the capability): the same layout as `buildArgs` made, `<prefix…>
 * <delivery…> <user args…> <suffix…>`, with the user's arguments kept.
 */
function argsWithValues(plan: SessionPlan, values: string[]): string[] {
  const planned = plan.document.kind === "argv" ? plan.document.values : [];
  const { argv, mcp } = plan.profile.profile;
  const perValue = mcp.joined ? 1 : 2;
  const start = argv.prefix.length + planned.length * perValue;
  const userArgs = plan.args.slice(
    start,
    plan.args.length - argv.suffix.length,
  );
  return buildArgs({ loaded: plan.profile, config: { values }, userArgs });
}

/** The tokens a session fetched, and those the broker keeps for the shim. */
export interface FetchedTokens {
  /** The inline tokens, by service. */
  tokens: Map<string, string>;
  /** The services whose token the broker deferred to the session's shim. */
  deferred: string[];
}

/** A session registered with the broker. */
export interface BrokerSession {
  /** The capability the session's shims present. */
  capability: string;
  /**
   * Makes sure the operator is logged in (not logged in → exit 77 with
   * what to do), then fetches the inline tokens, all at once.
   */
  fetchTokens(): Promise<FetchedTokens>;
  /** Ends the broker session; never throws, does nothing the second time. */
  end(): Promise<void>;
}

/**
 * Registers the session with the broker (starting the broker when nothing
 * answers) for the services that need a token. Returns undefined, without
 * talking to the broker, when none does. `sherlock services test` opens
 * one the same way.
 */
export async function openBrokerSession(
  options: {
    delivery: DeliveryPlan;
    socket: string;
    session: string;
    agent: string;
  },
): Promise<BrokerSession | undefined> {
  const needing = servicesNeedingTokens(options.delivery);
  if (needing.length === 0) return undefined;
  // Only sessions with tokens load the broker client.
  const client = await importLazily<typeof import("../broker/client.ts")>(
    new URL("../broker/client.ts", import.meta.url),
  );
  const { capability } = await client.registerSession({
    socket: options.socket,
    session: options.session,
    agent: options.agent,
    services: needing,
    pid: Deno.pid,
  });
  let ended = false;
  return {
    capability,
    async fetchTokens() {
      const { services, defer } = inlineFetch(options.delivery);
      try {
        // With no inline service, this only checks the login (for the shims).
        return await client.fetchTokens({
          socket: options.socket,
          services,
          defer,
          capability,
        });
      } catch (error) {
        if (!(error instanceof client.NotLoggedInError)) throw error;
        throw new NoPermissionError(
          `not logged in to the broker (${
            needing.length === 1
              ? `service ${needing[0]} needs a token`
              : `services ${needing.join(", ")} need tokens`
          }); run "sherlock login"`,
        );
      }
    },
    async end() {
      if (ended) return;
      ended = true;
      try {
        await client.endBrokerSession({
          socket: options.socket,
          session: options.session,
          capability,
        });
      } catch {
        // A broker that is gone forgets the session with it; one that is
        // wedged forgets it once this sherlock's pid is gone.
      }
    },
  };
}
