/**
 * One agent session: load the profile, services and settings, plan the
 * session (`plan.ts`, pure), then carry the plan out — fetch the tokens,
 * render and write the config, start the agent, clean up whatever happens.
 *
 * @module
 */

import type { FetchedTokens } from "../broker/client.ts";
import {
  type FileProblem,
  formatProblem,
  skippedMalformed,
} from "../config/toml_files.ts";
import { ConfigError, NoPermissionError, SherlockError } from "../errors.ts";
import type { Env, SherlockPaths } from "../config/sherlock_paths.ts";
import { type LoadedProfile, loadProfile } from "../profiles/loader.ts";
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
import { loadServices, type Service } from "../services/loader.ts";
import { loadSettings, type Settings } from "../config/settings.ts";
import { ValidationCache } from "../config/validation_cache.ts";

import {
  buildArgs,
  planSession,
  renderSessionConfig,
  type SessionPlan,
  sessionSummary,
} from "./plan.ts";
import {
  helperCommandProblems,
  rememberedLookup,
  serverCommandProblems,
} from "./server_commands.ts";
import {
  findExecutable,
  requireExecutable,
  SignalledBeforeStart,
  signalNumber,
  SignalRelay,
  spawnError,
} from "./spawn.ts";
import type { ServiceFlags } from "./service_selection.ts";
import {
  apiKeyHelperArgs,
  credentialEnv,
  credentialNames,
} from "./agent_credentials.ts";
import { CAPABILITY_ENV } from "../render/servers.ts";

/** What `sherlock run` asks for. */
export interface SessionOptions {
  /** The profile name. */
  agent: string;
  /** Everything after the agent's name, verbatim. */
  userArgs: string[];
  /** The operator's environment. */
  env: Env;
  /** sherlock's locations. */
  paths: SherlockPaths;
  /** Called for each problem that does not stop the session. */
  onWarning: (message: string) => void;
  /**
   * `--strict`: a service that cannot be part of the session stops it with
   * the failure's exit code instead of being left out (config.toml's
   * `[run] strict` asks the same).
   */
  strict: boolean;
  /** `-v`: bridges say which revision their server speaks. */
  verbose?: boolean;
  /** `--service` / `--no-service` (`service_selection.ts`). */
  serviceFlags: ServiceFlags;
}

/**
 * Loads what a session is made of and plans it with a new session id. A
 * malformed service, and one the agent cannot use, is left out with a
 * warning (or, when strict, stops the session); a stdio server whose
 * command cannot start is a warning. Reads the operator's files (and saves
 * the validation cache), starts nothing and fetches no token.
 */
export async function prepareSession(
  options: SessionOptions,
): Promise<SessionPlan> {
  const { paths } = options;
  const cache = new ValidationCache(paths.cacheDir);
  const profile = await loadProfile(options.agent, { paths, cache });
  const { services, problems } = await loadServices({ paths, cache });
  const settings = await loadSettings({ paths, cache });
  try {
    return checkedPlan({
      options,
      profile,
      services,
      problems,
      settings,
      cache,
    });
  } finally {
    // After the command lookups, which remember where they found each one.
    cache.save();
  }
}

/** {@linkcode prepareSession} once its files are loaded. */
function checkedPlan(
  loaded: {
    options: SessionOptions;
    profile: LoadedProfile;
    services: Service[];
    problems: FileProblem[];
    settings: Settings;
    cache: ValidationCache;
  },
): SessionPlan {
  const { options, profile, services, problems, settings, cache } = loaded;
  const { paths } = options;
  const strict = options.strict || settings.run.strict;
  const plan = planSession({
    agent: options.agent,
    profile,
    services,
    selection: {
      flags: options.serviceFlags,
      malformed: problems.map((problem) => serviceNameOf(problem.path)),
    },
    settings,
    userArgs: options.userArgs,
    context: { env: options.env },
    session: newSessionId(),
    runtimeDir: paths.runtimeDir,
    socket: paths.socket,
    selfCommand: selfCommand(),
    strict,
    verbose: options.verbose,
  });
  // A session without MCP config (`--help`) needs no service at all.
  if (plan.config.kind === "none") return plan;
  const excluded = new Set(plan.excluded.map((left) => left.service));
  for (const problem of problems) {
    // A malformed file the session would not get anyway is not its problem.
    if (excluded.has(serviceNameOf(problem.path))) continue;
    if (strict) throw new ConfigError(formatProblem(problem));
    options.onWarning(skippedMalformed("service", problem));
  }
  for (const left of plan.leftOut) {
    options.onWarning(leftOutLine(left.service, left.reason));
  }
  const commands = [
    ...serverCommandProblems(
      plan.services,
      rememberedLookup({
        cache,
        searchPath: plan.env.PATH,
        find: findExecutable,
      }),
    ),
    // The broker runs helpers with the environment it was started with:
    // the operator's, not the agent's.
    ...helperCommandProblems(plan.services, {
      delivery: plan.delivery,
      lookup: rememberedLookup({
        cache,
        searchPath: options.env.PATH,
        find: findExecutable,
      }),
    }),
  ];
  for (const problem of commands) options.onWarning(problem);
  return plan;
}

/** A services.d file's service name: its basename (file = name). */
function serviceNameOf(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1).replace(/\.toml$/, "");
}

/** The warning for a service the session starts without. */
function leftOutLine(service: string, reason: string): string {
  return `${reason}; starting the session without service ${service}`;
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
  options: {
    paths: SherlockPaths;
    onWarning: (message: string) => void;
    /** Called with {@linkcode sessionSummary}'s line before the agent starts (`-v`). */
    onSummary?: (line: string) => void;
    /**
     * Wraps the token fetch (credential helpers may be slow), so that the
     * CLI can show that it waits.
     */
    waitFor?: <T>(what: string, work: Promise<T>) => Promise<T>;
  },
): Promise<number> {
  const { paths } = options;
  // Signals are caught from here until the agent has exited: one that
  // comes before the agent starts (Ctrl-C while a token is fetched) ends
  // the session with 128+N after cleaning up, and the agent never starts.
  const relay = new SignalRelay();
  try {
    sweepStaleSessions(paths.stateDir, options.onWarning);
    const broker = await relay.unlessSignalled(openBrokerSession({
      delivery: plan.delivery,
      // A session without MCP config (`--help`) needs no credential either.
      credentials: plan.config.kind === "none"
        ? []
        : credentialNames(plan.profile.profile),
      socket: paths.socket,
      session: plan.session,
      agent: plan.agent,
    }));
    try {
      return await runSession(plan, { ...options, broker, relay });
    } finally {
      // The one end of the broker session, also when the fetch or the
      // config failed: the capability must not outlive the session (a
      // killed sherlock's goes with its pid). Before the relay closes: while
      // signals are caught, a SIGTERM or SIGHUP cannot end sherlock before
      // it is told.
      await broker?.end();
    }
  } catch (error) {
    if (error instanceof SignalledBeforeStart) {
      return 128 + signalNumber(error.signal);
    }
    throw error;
  } finally {
    relay.close();
  }
}

async function runSession(
  plan: SessionPlan,
  options: {
    paths: SherlockPaths;
    onWarning: (message: string) => void;
    onSummary?: (line: string) => void;
    waitFor?: <T>(what: string, work: Promise<T>) => Promise<T>;
    broker: BrokerSession | undefined;
    relay: SignalRelay;
  },
): Promise<number> {
  const { paths, broker, relay } = options;
  const waitFor = options.waitFor ?? ((_what, work) => work);
  const fetched = broker === undefined
    ? {
      tokens: new Map<string, string>(),
      deferred: [],
      failed: new Map<string, SherlockError>(),
    }
    : await waitFor(
      "the services' tokens",
      relay.unlessSignalled(broker.fetchTokens()),
    );
  const unready = broker === undefined
    ? new Map<string, SherlockError>()
    : await relay.unlessSignalled(broker.unreadyServices(plan.services));
  const failures = [...fetched.failed, ...unready];
  if (plan.strict && failures.length > 0) throw failures[0][1];
  for (const [service, error] of fetched.failed) {
    options.onWarning(leftOutLine(service, error.message));
  }
  for (const [service, error] of unready) {
    options.onWarning(
      `${error.message}; service ${service} answers the agent with this error until then (no restart needed)`,
    );
  }
  // An inline token that did not come is a server that could not start:
  // the session goes on without it. A shim's or a bridge's is fetched each
  // time the agent starts it, so it stays, and works once fixed.
  const services = plan.services.filter((service) =>
    !fetched.failed.has(service.service.name)
  );
  const delivery = new Map(plan.delivery);
  for (const service of fetched.failed.keys()) delivery.delete(service);
  const shim = broker === undefined
    ? plan.shim
    : { ...plan.shim, capability: broker.capability };
  const settled = settleDelivery(delivery, fetched);
  const document = renderSessionConfig({ ...plan, services, shim }, {
    delivery: settled,
    tokens: fetched.tokens,
  });
  const planned = document.kind === "argv" && plan.config.kind === "argv"
    ? argsWithValues(plan, document.values)
    : plan.args;
  const agent = await relay.unlessSignalled(agentCredentials(plan, broker));
  const args = [...agent.args, ...planned];
  const executable = requireExecutable({
    name: plan.executable,
    searchPath: plan.env.PATH,
    agent: plan.agent,
  });
  options.onSummary?.(sessionSummary(plan, {
    delivery: settled,
    leftOut: [
      ...plan.leftOut.map((left) => left.service),
      ...fetched.failed.keys(),
    ],
  }));
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
      env: { ...plan.env, ...agent.env },
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
    // Clean up while signals are still caught (executeSession closes the
    // relay): a SIGTERM or SIGHUP would end sherlock before the files are
    // removed.
    for (const warning of endSession(paths.stateDir, record)) {
      options.onWarning(warning);
    }
  }
}

/**
 * What the agent's own credentials add to its start: the `[credentials]`
 * variables fetched from the broker, and with `[api_key_helper]` the
 * settings that name the helper plus the session's capability, which the
 * helper (run by the agent with its environment) presents. A credential
 * the broker cannot give, the helper's included, stops the session: the
 * agent would start without its key.
 */
async function agentCredentials(
  plan: SessionPlan,
  broker: BrokerSession | undefined,
): Promise<{ args: string[]; env: Record<string, string> }> {
  const { profile } = plan.profile;
  if (broker === undefined || plan.config.kind === "none") {
    return { args: [], env: {} };
  }
  // The helper's credential too: one that cannot come stops the session
  // here, with one line, not inside the agent at its first request.
  const fetched = await broker.fetchCredentials(credentialNames(profile));
  const env = credentialEnv(profile.credentials, fetched);
  const helper = profile.api_key_helper;
  if (helper === undefined) return { args: [], env };
  return {
    args: apiKeyHelperArgs({
      credential: helper.credential,
      socket: plan.shim.socket,
      selfCommand: plan.shim.command,
    }),
    env: { ...env, [CAPABILITY_ENV]: broker.capability },
  };
}

/**
 * The plan's argv with an argv format's values rendered again (they now
 * hold the capability): the same layout as `buildArgs` made, `<prefix…>
 * <delivery…> <user args…> <suffix…>`, with the user's arguments kept.
 */
function argsWithValues(plan: SessionPlan, values: string[]): string[] {
  const planned = plan.document.kind === "argv" ? plan.document.values : [];
  const { argv, mcp } = plan.profile.profile;
  const perValue = mcp.mode !== "none" && mcp.joined ? 1 : 2;
  const start = argv.prefix.length + planned.length * perValue;
  const userArgs = plan.args.slice(
    start,
    plan.args.length - argv.suffix.length,
  );
  return buildArgs({ loaded: plan.profile, config: { values }, userArgs });
}

/** A session registered with the broker. */
export interface BrokerSession {
  /** The capability the session's shims present. */
  capability: string;
  /**
   * Makes sure the operator is logged in (not logged in → exit 77 with
   * what to do), then fetches the inline tokens, all at once; a service
   * whose token the broker could not get is in `failed`.
   */
  fetchTokens(): Promise<FetchedTokens>;
  /**
   * The services among `services` whose token their shim or bridge will
   * fetch, and that the broker already knows it cannot serve: no OAuth
   * grant (`sherlock auth`), no stored secret (`sherlock secret set`). By
   * name, in the services' order, each with the error its shim or bridge
   * would meet.
   */
  unreadyServices(
    services: readonly Service[],
  ): Promise<Map<string, SherlockError>>;
  /**
   * The agent's own credentials by name (`[credentials]` values), all at
   * once; throws the first one's error, naming it, when the broker cannot
   * give one.
   */
  fetchCredentials(names: readonly string[]): Promise<Map<string, string>>;
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
    /** The agent's own credentials the session may fetch (`[credentials]`). */
    credentials?: readonly string[];
    socket: string;
    session: string;
    agent: string;
  },
): Promise<BrokerSession | undefined> {
  const needing = servicesNeedingTokens(options.delivery);
  const credentials = options.credentials ?? [];
  if (needing.length === 0 && credentials.length === 0) return undefined;
  // Only sessions with tokens load the broker client.
  const client = await importLazily<typeof import("../broker/client.ts")>(
    "lib/broker/client.ts",
  );
  const { capability } = await client.registerSession({
    socket: options.socket,
    session: options.session,
    agent: options.agent,
    services: needing,
    credentials: [...credentials],
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
        throw notLoggedIn(needing, credentials);
      }
    },
    async fetchCredentials(names) {
      if (names.length === 0) return new Map();
      let fetched: FetchedTokens;
      try {
        fetched = await client.fetchTokens({
          socket: options.socket,
          services: names,
          capability,
          credentials: true,
        });
      } catch (error) {
        if (!(error instanceof client.NotLoggedInError)) throw error;
        throw notLoggedIn(needing, credentials);
      }
      for (const [name, error] of fetched.failed) {
        throw new SherlockError(
          `the agent's own credential ${name}: ${error.message}`,
          error.exitCode,
        );
      }
      return fetched.tokens;
    },
    async unreadyServices(services) {
      const later = services.filter((service) => {
        const kind = options.delivery.get(service.service.name)?.kind;
        return kind === "shim" || kind === "bridge";
      });
      const sources = new Set(later.map((service) => service.token.source));
      const authorized = sources.has("oauth")
        ? new Set(
          (await client.authorizationStatus(options.socket)).services
            // EMA: no grant, the SSO login gets the token.
            .filter((status) => status.authorized || status.ema === true)
            .map((status) => status.service),
        )
        : new Set<string>();
      const stored = sources.has("secret")
        ? new Set(
          (await client.listSecrets(options.socket)).secrets.map((secret) =>
            secret.name
          ),
        )
        : new Set<string>();
      const unready = new Map<string, SherlockError>();
      // The grants are kept in the local store: while it is locked (an SSO
      // login alone) none shows as authorized, and "sherlock auth" is not
      // the advice. Asked only when a grant is missing.
      const storeAdvice =
        later.some((service) =>
            service.token.source === "oauth" &&
            !authorized.has(service.service.name)
          )
          ? client.loginAdvice(
            client.loginState(await client.whoami(options.socket)),
            "store",
          )
          : undefined;
      for (const service of later) {
        const name = service.service.name;
        // The same lines the broker answers a shim or a bridge with.
        if (service.token.source === "oauth" && !authorized.has(name)) {
          unready.set(
            name,
            new NoPermissionError(
              storeAdvice === undefined
                ? `service ${name} needs authorization: run "sherlock auth ${name}"`
                : `service ${name}'s OAuth grant is kept in the local store, which is locked: ${storeAdvice}`,
            ),
          );
        } else if (service.token.source === "secret" && !stored.has(name)) {
          unready.set(
            name,
            new NoPermissionError(
              `no secret stored for service ${name}; run "sherlock secret set ${name}"`,
            ),
          );
        }
      }
      return unready;
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

/** "Not logged in", naming what the session needs the broker for. */
function notLoggedIn(
  services: readonly string[],
  credentials: readonly string[],
): NoPermissionError {
  const needs = [
    ...(services.length === 0 ? [] : [
      services.length === 1
        ? `service ${services[0]} needs a token`
        : `services ${services.join(", ")} need tokens`,
    ]),
    ...(credentials.length === 0
      ? []
      : [`the agent needs ${credentials.join(", ")} ([credentials])`]),
  ];
  return new NoPermissionError(
    `not logged in to the broker (${needs.join("; ")}); run "sherlock login"`,
  );
}
