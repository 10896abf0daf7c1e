/**
 * Where sherlock keeps things, following the XDG Base Directory spec.
 *
 * Pure: every function takes the environment as input, so that tests and
 * the launcher compute the same locations without touching the process's
 * own environment.
 *
 * @module
 */

import { join } from "../runtime/path.ts";
import { ConfigError } from "../errors.ts";

/** The environment as a plain lookup table. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Every location sherlock reads or writes. */
export interface SherlockPaths {
  /** `$XDG_CONFIG_HOME/sherlock`: the operator's configuration. */
  configDir: string;
  /** `agents.d/`: operator profiles that add to or shadow the built-ins. */
  agentsDir: string;
  /** `services.d/`: one MCP server per file. */
  servicesDir: string;
  /** `config.toml`: sherlock's own settings. */
  configFile: string;
  /** `$XDG_DATA_HOME/sherlock`: the encrypted secret store. */
  dataDir: string;
  /** `$XDG_STATE_HOME/sherlock`: session records and the audit log. */
  stateDir: string;
  /** `$XDG_CACHE_HOME/sherlock`: the validation cache. */
  cacheDir: string;
  /**
   * Per-user, private, preferably tmpfs: rendered configs and the socket.
   * `$XDG_RUNTIME_DIR/sherlock`, else `run` in the state folder.
   */
  runtimeDir: string;
  /** The broker's Unix socket, in the runtime folder. */
  socket: string;
  /** The local provider's encrypted secret store, in the data folder. */
  secretStore: string;
  /** The audit log (JSON lines), in the state folder. */
  auditLog: string;
  /** The background daemon's own log, in the state folder. */
  brokerLog: string;
}

/** The XDG variables that have a default below `$HOME`. */
const XDG_HOME_DEFAULTS: Readonly<Record<string, string>> = {
  XDG_CONFIG_HOME: ".config",
  XDG_DATA_HOME: ".local/share",
  XDG_STATE_HOME: ".local/state",
  XDG_CACHE_HOME: ".cache",
};

/**
 * The default of an XDG base directory variable, used when the variable is
 * unset, empty or relative (the spec says to ignore all three alike).
 * `XDG_RUNTIME_DIR` has no default in the spec; sherlock uses its own
 * (see {@linkcode fallbackRuntimeDir}). Returns undefined for any other
 * name, or when `HOME` is needed and unset.
 */
export function xdgDefault(name: string, env: Env): string | undefined {
  if (name === "XDG_RUNTIME_DIR") return fallbackRuntimeDir(env);
  if (!Object.hasOwn(XDG_HOME_DEFAULTS, name) || !env.HOME) return undefined;
  return join(env.HOME, XDG_HOME_DEFAULTS[name]);
}

/**
 * A variable's value as sherlock reads it: the environment's, except that
 * an XDG base directory variable whose value is not an absolute path gives
 * its default (see {@linkcode xdgDefault}). Undefined when it is unset (or
 * empty) and has no default. Only the environment's own keys count, never
 * a property that every object inherits.
 */
export function lookupVariable(name: string, env: Env): string | undefined {
  const value = Object.hasOwn(env, name) ? env[name] : undefined;
  const isXdg = name === "XDG_RUNTIME_DIR" ||
    Object.hasOwn(XDG_HOME_DEFAULTS, name);
  if (value && (!isXdg || value.startsWith("/"))) return value;
  return xdgDefault(name, env);
}

/** Computes every location from the environment. */
export function sherlockPaths(env: Env): SherlockPaths {
  const base = (name: string): string => {
    const value = lookupVariable(name, env);
    if (value === undefined) {
      throw new ConfigError(`neither ${name} nor HOME is set; set HOME`);
    }
    return value;
  };
  const configDir = join(base("XDG_CONFIG_HOME"), "sherlock");
  const dataDir = join(base("XDG_DATA_HOME"), "sherlock");
  const stateDir = join(base("XDG_STATE_HOME"), "sherlock");
  const runtime = env.XDG_RUNTIME_DIR;
  const runtimeDir = runtime && runtime.startsWith("/")
    ? join(runtime, "sherlock")
    : join(stateDir, "run");
  return {
    configDir,
    agentsDir: join(configDir, "agents.d"),
    servicesDir: join(configDir, "services.d"),
    configFile: join(configDir, "config.toml"),
    dataDir,
    stateDir,
    cacheDir: join(base("XDG_CACHE_HOME"), "sherlock"),
    runtimeDir,
    socket: join(runtimeDir, "broker.sock"),
    secretStore: join(dataDir, "secrets.enc"),
    auditLog: join(stateDir, "audit.log"),
    brokerLog: join(stateDir, "broker.log"),
  };
}

/**
 * The runtime folder when `XDG_RUNTIME_DIR` is unset: `run` in sherlock's
 * state folder, inside the user's own home, where no other user can create
 * it beforehand (a folder in /tmp could be planted, with a socket in it, by
 * anyone: docs/security.md). Undefined when neither `XDG_STATE_HOME` nor
 * `HOME` is set.
 */
export function fallbackRuntimeDir(env: Env): string | undefined {
  const state = lookupVariable("XDG_STATE_HOME", env);
  return state === undefined ? undefined : join(state, "sherlock", "run");
}
