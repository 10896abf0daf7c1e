/**
 * `sherlock doctor`'s verdicts: pure functions from the facts that
 * `gather.ts` collects (files, processes, the broker's answers) to one
 * {@linkcode Check} each, so every rule tests without a process. A verdict
 * is `ok`, `warn` (worth knowing, and no reason to fail: an agent that is
 * not installed, a broker that is not running), `fail` (something the
 * operator must fix before a session works as configured) or `skip` (does
 * not apply here). No fact holds a secret: the gathering never reads one.
 *
 * @module
 */

import { skippedMalformed } from "../config/toml_files.ts";
import type { Whoami } from "../broker/protocol.ts";
import type { ExecutableLookup } from "../launch/spawn.ts";
import type { TokenReadiness } from "../mcp/readiness.ts";
import {
  describeRevision,
  revisionAdvice,
  type RevisionProbe,
} from "../mcp/revision.ts";

/** One check's verdict. */
export type Verdict = "ok" | "warn" | "fail" | "skip";

/** What a check is about. */
export type CheckGroup =
  | "sherlock"
  | "runtime"
  | "broker"
  | "profile"
  | "service"
  | "agent";

/** One line of the doctor's screen. */
export interface Check {
  /** What the check is about. */
  group: CheckGroup;
  /** What was checked (a profile's or a service's name, …). */
  name: string;
  /** The verdict. */
  verdict: Verdict;
  /** What was found, in one line. */
  detail: string;
  /** What to do about it; null when nothing. */
  fix: string | null;
}

/** How a profile's `--version` run ended. */
export type VersionRun =
  | { kind: "ok"; firstLine: string }
  | { kind: "failed"; code: number; firstLine: string }
  | { kind: "timeout"; seconds: number }
  | { kind: "not-run" };

/** What was found about one profile. */
export type ProfileFacts =
  | { name: string; valid: false; path: string; error: string }
  | {
    name: string;
    valid: true;
    /** `built-in` or the file in agents.d/. */
    source: string;
    executable: string;
    lookup: ExecutableLookup;
    version: VersionRun;
  };

/** What was found about one service. */
export type ServiceFacts =
  | { name: string; valid: false; path: string; error: string }
  | {
    name: string;
    valid: true;
    /** The command was found, or the URL's host resolves. */
    reachable: boolean;
    /** What was found about the server, as `sherlock services` says it. */
    server: string;
    token: TokenReadiness;
    /** What was found about the token, as `sherlock services` says it. */
    tokenText: string;
    /**
     * What to run when the login keeps the token from being seen or used
     * (`loginAdvice` of lib/broker/client.ts), e.g. `run "sherlock login
     * --local"`.
     */
    tokenAdvice?: string;
    /** Problems of its command as written (`lib/launch/server_commands.ts`). */
    commandProblems: readonly string[];
    /**
     * A remote server's answer when asked its MCP revision with no token
     * (`lib/mcp/probe.ts` `probeRevision`); undefined for a stdio server
     * or a host that does not resolve.
     */
    revision?: RevisionProbe;
  };

/** What the broker said, asked without starting it. */
export type BrokerFacts =
  | { running: false }
  | {
    running: true;
    pid: number;
    version: string;
    /** Why its version is not this sherlock's; undefined when it is. */
    versionProblem?: string;
    /** Its login; undefined when not asked (another version). */
    login?: Whoami;
  };

/** Gemini CLI's settings and folder trust, as files say them. */
export interface GeminiFacts {
  /** The user settings file. */
  settingsPath: string;
  /** `absent`, `json`, `jsonc` (comments or trailing commas), `invalid`. */
  settings: "absent" | "json" | "jsonc" | "invalid";
  /** `security.folderTrust.enabled` is false in the settings. */
  trustDisabled: boolean;
  /** `GEMINI_CLI_TRUST_WORKSPACE=true` is set. */
  trustFromEnv: boolean;
  /** The working folder is trusted by `trustedFolders.json`. */
  folderTrusted: boolean;
  /** The working folder. */
  cwd: string;
}

/** Copilot CLI's trusted folders, as its config file says them. */
export interface CopilotFacts {
  /** Its config file (`$COPILOT_HOME` or `~/.copilot`, `config.json`). */
  configPath: string;
  /** The working folder is one of `trusted_folders` or inside one. */
  folderTrusted: boolean;
  /** The working folder. */
  cwd: string;
}

/** Claude Code's managed policy files (system-wide, set by an admin). */
export interface ClaudeFacts {
  /** `managed-mcp.json`, when it exists. */
  managedMcp?: string;
  /** `managed-settings.json`, when it exists. */
  managedSettings?: string;
  /** The MCP policy keys `managed-settings.json` sets (names only). */
  mcpPolicyKeys: readonly string[];
}

/** Everything the doctor looks at. */
export interface DoctorFacts {
  /** sherlock's version and where it runs from. */
  sherlock: { version: string; runsFrom: string };
  /** `config.toml`. */
  configFile: string;
  /** Why `config.toml` is invalid; undefined when it is valid or absent. */
  configProblem?: string;
  /** The runtime folder and the broker's socket, and their problems. */
  runtime: {
    runtimeDir: string;
    /** Whether the runtime folder exists yet. */
    exists: boolean;
    socket: string;
    /** Why no broker could listen there (too long, not a socket). */
    socketProblem?: string;
    /** Why the folder or socket cannot be trusted. */
    trustProblem?: string;
  };
  broker: BrokerFacts;
  profiles: readonly ProfileFacts[];
  services: readonly ServiceFacts[];
  /** The folder of services.d/ (named when there are none). */
  servicesDir: string;
  /** Facts about an agent's traps; absent when its profile is not installed. */
  gemini?: GeminiFacts;
  copilot?: CopilotFacts;
  claude?: ClaudeFacts;
}

/** Every check, in the order of the screen. */
export function doctorChecks(facts: DoctorFacts): Check[] {
  return [
    {
      group: "sherlock",
      name: "version",
      verdict: "ok",
      detail:
        `sherlock ${facts.sherlock.version}, from ${facts.sherlock.runsFrom}`,
      fix: null,
    },
    facts.configProblem === undefined
      ? {
        group: "sherlock",
        name: "config",
        verdict: "ok",
        detail: `${facts.configFile} is valid (or absent)`,
        fix: null,
      }
      : {
        group: "sherlock",
        name: "config",
        verdict: "fail",
        detail: firstLine(facts.configProblem),
        fix: null,
      },
    ...runtimeChecks(facts.runtime),
    ...brokerChecks(facts.broker),
    ...facts.profiles.map(profileCheck),
    ...servicesChecks(facts.services, facts.servicesDir),
    geminiCheck(facts.gemini),
    copilotCheck(facts.copilot),
    claudeCheck(facts.claude),
  ];
}

/** True when no check failed: `sherlock doctor` exits 0. */
export function allPass(checks: readonly Check[]): boolean {
  return checks.every((check) => check.verdict !== "fail");
}

/** The runtime folder and the socket's path. */
export function runtimeChecks(runtime: DoctorFacts["runtime"]): Check[] {
  const problem = runtime.trustProblem ?? runtime.socketProblem;
  return [{
    group: "runtime",
    name: "folder",
    verdict: problem === undefined ? "ok" : "fail",
    detail: problem ??
      (runtime.exists
        ? `${runtime.runtimeDir} is yours alone`
        : `${runtime.runtimeDir} does not exist yet (the broker creates it, private)`),
    fix: problem === undefined
      ? null
      : "sessions and the broker refuse this folder until it is fixed (see the line above)",
  }];
}

/** The broker: running, its version, the login, the idle lock. */
export function brokerChecks(broker: BrokerFacts): Check[] {
  if (!broker.running) {
    return [{
      group: "broker",
      name: "broker",
      verdict: "warn",
      detail: "not running (doctor never starts it)",
      fix: '"sherlock login" starts it and unlocks the store',
    }];
  }
  if (broker.versionProblem !== undefined) {
    return [{
      group: "broker",
      name: "broker",
      verdict: "fail",
      detail: `pid ${broker.pid}, ${broker.versionProblem}`,
      fix: null,
    }];
  }
  const checks: Check[] = [{
    group: "broker",
    name: "broker",
    verdict: "ok",
    detail: `running, pid ${broker.pid}, sherlock ${broker.version}`,
    fix: null,
  }];
  const login = broker.login;
  if (login !== undefined) {
    checks.push(
      login.loggedIn
        ? {
          group: "broker",
          name: "login",
          verdict: "ok",
          detail: `${
            login.user ?? "?"
          } via the ${login.provider} provider, since ${login.since ?? "?"}${
            login.locksAt
              ? `; locks when idle at ${login.locksAt}`
              : "; no idle lock"
          }`,
          fix: null,
        }
        : {
          group: "broker",
          name: "login",
          verdict: "warn",
          detail: login.storeExists
            ? "not logged in: the store is locked"
            : "not logged in: no store yet",
          fix: '"sherlock login"',
        },
    );
    const remembered = rememberedCheck(login);
    if (remembered) checks.push(remembered);
  }
  return checks;
}

/**
 * Whether a key the OS keyring remembers unlocks the store, and in which
 * keyring; nothing when the store has none (`sherlock login --remember`).
 */
function rememberedCheck(login: Whoami): Check | undefined {
  const remembered = login.remembered;
  if (!remembered) return undefined;
  const base = { group: "broker" as const, name: "remembered key" };
  const where = `the ${remembered.keyring} keyring`;
  switch (remembered.state) {
    case "unlocked":
    case "kept":
      return {
        ...base,
        verdict: "ok",
        detail: `in ${where}${
          remembered.state === "unlocked" ? "; it unlocked the store" : ""
        }`,
        fix: null,
      };
    case "absent":
      return {
        ...base,
        verdict: "warn",
        detail:
          `the store has one, but ${where} holds no item for it (or is locked)`,
        fix: '"sherlock login --remember" (or unlock the keyring)',
      };
    case "unavailable":
      return {
        ...base,
        verdict: "warn",
        detail: `${where} cannot be asked: ${remembered.reason ?? "?"}`,
        fix: '"sherlock login" with the passphrase',
      };
    case "wrong":
      return {
        ...base,
        verdict: "warn",
        detail:
          `${where} holds a key that does not open the store (stale or wrong)`,
        fix: '"sherlock login --remember" to remember it anew',
      };
  }
}

/** One profile: valid, executable found, its `--version`. */
export function profileCheck(profile: ProfileFacts): Check {
  const base = { group: "profile" as const, name: profile.name };
  if (!profile.valid) {
    return {
      ...base,
      verdict: "fail",
      detail: skippedMalformed("profile", firstLine(profile.error)),
      fix: `fix it or remove it ("sherlock agents" lists every problem)`,
    };
  }
  const { lookup, version } = profile;
  if (!lookup.found) {
    // A built-in agent that is not installed is normal: warn, not fail.
    return {
      ...base,
      verdict: profile.source === "built-in" ? "skip" : "warn",
      detail: lookup.reason === "missing"
        ? `${profile.executable} is not on PATH (${profile.source})`
        : `${lookup.path} is not executable (${profile.source})`,
      fix: profile.source === "built-in"
        ? null
        : "install the agent, or fix [agent] executable",
    };
  }
  switch (version.kind) {
    case "ok":
      return {
        ...base,
        verdict: "ok",
        detail: `${lookup.path}: ${
          version.firstLine || "(no version printed)"
        }`,
        fix: null,
      };
    case "failed":
      return {
        ...base,
        verdict: "warn",
        detail: `${lookup.path} --version exited ${version.code}${
          version.firstLine ? `: ${version.firstLine}` : ""
        }`,
        fix: "run it by hand to see why",
      };
    case "timeout":
      return {
        ...base,
        verdict: "warn",
        detail:
          `${lookup.path} --version did not answer within ${version.seconds} s (stopped)`,
        fix: "run it by hand to see why",
      };
    default:
      return { ...base, verdict: "ok", detail: lookup.path, fix: null };
  }
}

/** Each service: valid, command or URL reachable, token available. */
export function servicesChecks(
  services: readonly ServiceFacts[],
  servicesDir: string,
): Check[] {
  if (services.length === 0) {
    return [{
      group: "service",
      name: "services",
      verdict: "warn",
      detail: `no services in ${servicesDir}`,
      fix: 'add one, or run "sherlock import"',
    }];
  }
  return services.map(serviceCheck);
}

/** One service. */
export function serviceCheck(service: ServiceFacts): Check {
  const base = { group: "service" as const, name: service.name };
  if (!service.valid) {
    return {
      ...base,
      verdict: "fail",
      detail: skippedMalformed("service", firstLine(service.error)),
      fix: `fix it ("sherlock services" lists every problem)`,
    };
  }
  const detail = `server ${service.server}${
    revisionText(service.revision)
  }; token ${service.tokenText}`;
  if (service.commandProblems.length > 0) {
    return {
      ...base,
      verdict: "fail",
      detail: service.commandProblems[0],
      fix: null,
    };
  }
  if (!service.reachable) {
    return {
      ...base,
      verdict: "fail",
      detail,
      fix:
        `install the server or fix [server] in services.d/${service.name}.toml`,
    };
  }
  if (service.token === "missing") {
    return { ...base, verdict: "fail", detail, fix: null };
  }
  if (service.token === "unknown") {
    return {
      ...base,
      verdict: "warn",
      detail,
      fix: service.tokenAdvice === undefined
        ? null
        : `${service.tokenAdvice}, then doctor sees the store`,
    };
  }
  if (service.revision?.kind === "failed") {
    return {
      ...base,
      verdict: "warn",
      detail,
      fix: `run "sherlock services test ${service.name}" to see more`,
    };
  }
  if (service.revision?.kind === "answered") {
    const fix = revisionAdvice(service.revision.revision, service.name);
    if (fix !== undefined) return { ...base, verdict: "warn", detail, fix };
  }
  return { ...base, verdict: "ok", detail, fix: null };
}

/** What a remote server said of its revision, after its host's verdict. */
function revisionText(revision: RevisionProbe | undefined): string {
  switch (revision?.kind) {
    case undefined:
      return "";
    case "answered":
      return `, answers ${describeRevision(revision.revision)}`;
    case "refused":
      return `, names its MCP revision only with a token (HTTP ${revision.status}; "sherlock services test" uses one)`;
    case "failed":
      return `, but no MCP answer: ${revision.reason}`;
  }
}

/** Gemini: its settings file must be plain JSON, and the folder trusted. */
export function geminiCheck(gemini: GeminiFacts | undefined): Check {
  const base = { group: "agent" as const, name: "gemini" };
  if (gemini === undefined) {
    return { ...base, verdict: "skip", detail: "not installed", fix: null };
  }
  if (gemini.settings === "jsonc" || gemini.settings === "invalid") {
    return {
      ...base,
      verdict: "fail",
      detail: `${gemini.settingsPath} is not plain JSON (${
        gemini.settings === "jsonc"
          ? "comments or trailing commas"
          : "not JSON, or unreadable"
      }): sherlock refuses to merge into it, so sessions exit 73`,
      fix: "remove its comments and trailing commas",
    };
  }
  if (gemini.trustDisabled || gemini.trustFromEnv || gemini.folderTrusted) {
    return {
      ...base,
      verdict: "ok",
      detail: `settings ${
        gemini.settings === "absent" ? "absent" : "plain JSON"
      }; ${
        gemini.trustDisabled
          ? "folder trust is off"
          : gemini.trustFromEnv
          ? "GEMINI_CLI_TRUST_WORKSPACE=true trusts every folder"
          : `${gemini.cwd} is trusted`
      }`,
      fix: null,
    };
  }
  return {
    ...base,
    verdict: "warn",
    detail:
      `${gemini.cwd} is not a trusted folder: Gemini starts no MCP server here (gemini -p exits 55)`,
    fix: "trust it in Gemini, or set GEMINI_CLI_TRUST_WORKSPACE=true",
  };
}

/** Copilot: it asks to trust a folder before it starts in it. */
export function copilotCheck(copilot: CopilotFacts | undefined): Check {
  const base = { group: "agent" as const, name: "copilot" };
  if (copilot === undefined) {
    return { ...base, verdict: "skip", detail: "not installed", fix: null };
  }
  return copilot.folderTrusted
    ? {
      ...base,
      verdict: "ok",
      detail: `${copilot.cwd} is a trusted folder (${copilot.configPath})`,
      fix: null,
    }
    : {
      ...base,
      verdict: "warn",
      detail:
        `${copilot.cwd} is not in trusted_folders of ${copilot.configPath}: Copilot asks before it starts here, and reads ./.mcp.json only once trusted`,
      fix: "answer its question once, or add the folder to trusted_folders",
    };
}

/** Claude Code: a managed policy can keep sherlock's servers out. */
export function claudeCheck(claude: ClaudeFacts | undefined): Check {
  const base = { group: "agent" as const, name: "claude" };
  if (claude === undefined) {
    return { ...base, verdict: "skip", detail: "not installed", fix: null };
  }
  if (claude.managedMcp !== undefined) {
    return {
      ...base,
      verdict: "fail",
      detail:
        `${claude.managedMcp} exists: Claude Code then uses only the servers it lists, never sherlock's`,
      fix: "ask whoever manages this machine; sherlock cannot override it",
    };
  }
  if (claude.managedSettings !== undefined && claude.mcpPolicyKeys.length > 0) {
    return {
      ...base,
      verdict: "warn",
      detail: `${claude.managedSettings} sets ${
        claude.mcpPolicyKeys.join(", ")
      }: servers it does not allow are dropped`,
      fix: "check that your services' names are allowed there",
    };
  }
  return {
    ...base,
    verdict: "ok",
    detail: "no managed MCP policy",
    fix: null,
  };
}

function firstLine(text: string): string {
  return text.split("\n")[0];
}
