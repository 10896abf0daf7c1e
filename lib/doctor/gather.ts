/**
 * What `sherlock doctor` looks at, gathered: the runtime folder's checks,
 * the broker's answers (asked, never started), every profile (with its
 * executable's `--version`, stopped after a few seconds) and service (as
 * `sherlock services` sees it), and the agents' files that can keep
 * sherlock's servers out. Reads no secret: of the agents' settings files
 * it keeps only whether they parse and the names of a few keys. The
 * verdicts are `checks.ts`'s.
 *
 * @module
 */

import { brokerHealth, versionProblem, whoami } from "../broker/client.ts";
import {
  socketPathProblem,
  untrustedSocketProblem,
} from "../broker/socket_path.ts";
import type { Env, SherlockPaths } from "../config/sherlock_paths.ts";
import {
  formatProblem,
  InvalidFileError,
  readOperatorFile,
} from "../config/toml_files.ts";
import { loadSettings } from "../config/settings.ts";
import { ValidationCache } from "../config/validation_cache.ts";
import { expandPath } from "../config/expand.ts";
import { ConfigError, errorMessage } from "../errors.ts";
import { stripJsonComments } from "../import/agent_configs.ts";
import { agentSearchPath } from "../launch/search_path.ts";
import { serverCommandProblems } from "../launch/server_commands.ts";
import { findExecutable } from "../launch/spawn.ts";
import {
  serverReadiness,
  storeView,
  tokenReadiness,
} from "../mcp/readiness.ts";
import { loadAllProfiles, type LoadedProfile } from "../profiles/loader.ts";
import type { RevisionProbe } from "../mcp/revision.ts";
import { loadServices, type Service } from "../services/loader.ts";
import { importLazily } from "../runtime/lazy_import.ts";
import { isPlainObject } from "../render/merge.ts";
import { dirname, join } from "../runtime/path.ts";
import { descendantsInGroup } from "../os/processes.ts";
import type {
  BrokerFacts,
  ClaudeFacts,
  CopilotFacts,
  DoctorFacts,
  GeminiFacts,
  ProfileFacts,
  ServiceFacts,
  VersionRun,
} from "./checks.ts";

/** How long a profile's `--version` may take before it is stopped. */
export const VERSION_TIMEOUT_MS = 3000;

/** Where Claude Code's managed policy files are on Linux. */
export const CLAUDE_MANAGED_DIR = "/etc/claude-code";

/** The settings keys of Claude Code that restrict MCP servers. */
export const CLAUDE_MCP_POLICY_KEYS: readonly string[] = [
  "allowedMcpServers",
  "deniedMcpServers",
  "allowManagedMcpServersOnly",
];

/** What the gathering needs. */
export interface GatherOptions {
  env: Env;
  paths: SherlockPaths;
  /** The working folder (the agents' trust is about it). */
  cwd: string;
  /** sherlock's version and where it runs from. */
  sherlock: { version: string; runsFrom: string };
  /** Where Claude's managed policy is ({@linkcode CLAUDE_MANAGED_DIR}). */
  claudeManagedDir?: string;
}

/** Gathers every fact the doctor's checks need. */
export async function gatherFacts(
  options: GatherOptions,
): Promise<DoctorFacts> {
  const { env, paths } = options;
  const cache = new ValidationCache(paths.cacheDir);
  const listing = await loadAllProfiles({ paths, cache });
  const serviceListing = await loadServices({ paths, cache });
  let configProblem: string | undefined;
  try {
    await loadSettings({ paths, cache });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    configProblem = error.message;
  }
  cache.save();
  const runtime = {
    runtimeDir: paths.runtimeDir,
    exists: exists(paths.runtimeDir),
    socket: paths.socket,
    socketProblem: socketPathProblem(paths.socket),
    trustProblem: untrustedSocketProblem(paths.socket),
  };
  // A socket that cannot be trusted is never asked.
  const broker: BrokerFacts = runtime.trustProblem === undefined &&
      runtime.socketProblem === undefined
    ? await brokerFacts(paths.socket)
    : { running: false };
  const profiles: Promise<ProfileFacts>[] = listing.profiles.map((loaded) =>
    profileFacts(loaded, { env })
  );
  const malformedProfiles: ProfileFacts[] = listing.problems.map((problem) => ({
    name: basename(problem.path),
    valid: false,
    path: problem.path,
    error: formatProblem(problem),
  }));
  const { services } = serviceListing;
  const store = await storeView(paths.socket, services);
  const reachability = await Promise.all(
    services.map((service) => serverReadiness(service, env.PATH)),
  );
  const revisions = await remoteRevisions(
    services.filter((_, index) => reachability[index].reachable),
  );
  const lookup = (command: string) => findExecutable(command, env.PATH);
  const serviceFacts: ServiceFacts[] = services.map((service, index) => {
    const token = tokenReadiness(service, store, env.PATH);
    const revision = revisions.get(service);
    return {
      name: service.service.name,
      valid: true,
      reachable: reachability[index].reachable,
      server: reachability[index].text,
      token: token.status,
      tokenText: token.text,
      ...(token.advice === undefined ? {} : { tokenAdvice: token.advice }),
      commandProblems: serverCommandProblems([service], lookup),
      ...(revision === undefined ? {} : { revision }),
    };
  });
  for (const problem of serviceListing.problems) {
    serviceFacts.push({
      name: basename(problem.path),
      valid: false,
      path: problem.path,
      error: formatProblem(problem),
    });
  }
  const profileList = [...await Promise.all(profiles), ...malformedProfiles]
    .sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  // An agent's traps are looked at only where the agent is installed.
  const installed = new Set(
    profileList.filter((profile) => profile.valid && profile.lookup.found)
      .map((profile) => profile.name),
  );
  const gemini = listing.profiles.find((loaded) =>
    loaded.profile.agent.name === "gemini"
  );
  return {
    sherlock: options.sherlock,
    configFile: paths.configFile,
    configProblem,
    runtime,
    broker,
    profiles: profileList,
    services: serviceFacts,
    servicesDir: paths.servicesDir,
    gemini: installed.has("gemini")
      ? geminiFacts({ env, cwd: options.cwd, profile: gemini })
      : undefined,
    copilot: installed.has("copilot")
      ? copilotFacts(env, options.cwd)
      : undefined,
    claude: installed.has("claude")
      ? claudeFacts(options.claudeManagedDir ?? CLAUDE_MANAGED_DIR)
      : undefined,
  };
}

/** The broker's health and login, asked only when one answers. */
async function brokerFacts(socket: string): Promise<BrokerFacts> {
  try {
    const health = await brokerHealth(socket);
    if (health === undefined) return { running: false };
    const problem = versionProblem(health.version);
    return {
      running: true,
      pid: health.pid,
      version: health.version,
      versionProblem: problem,
      login: problem === undefined ? await whoami(socket) : undefined,
    };
  } catch (error) {
    return {
      running: true,
      pid: 0,
      version: "?",
      versionProblem: errorMessage(error),
    };
  }
}

/** A profile's executable, looked up as a session would, and its version. */
async function profileFacts(
  loaded: LoadedProfile,
  context: { env: Env },
): Promise<ProfileFacts> {
  const { agent } = loaded.profile;
  const searchPath = agentSearchPath(loaded, context);
  const lookup = findExecutable(agent.executable, searchPath);
  return {
    name: agent.name,
    valid: true,
    source: loaded.source === "built-in" ? "built-in" : loaded.path,
    executable: agent.executable,
    lookup,
    version: lookup.found
      ? await versionOf(lookup.path, { ...context.env, PATH: searchPath })
      : { kind: "not-run" },
  };
}

/**
 * `<executable> --version`, its first line, stopped after
 * {@linkcode VERSION_TIMEOUT_MS}: a CLI that waits for a login or a
 * terminal must not hang the doctor. On time-out the executable and every
 * process it started in its group are killed (SIGKILL), and their output is
 * no longer waited for (a grandchild may hold the pipe open).
 */
export async function versionOf(
  executable: string,
  env: Env,
  timeoutMs = VERSION_TIMEOUT_MS,
): Promise<VersionRun> {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(executable, {
      args: ["--version"],
      env: definedEnv(env),
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (error) {
    return { kind: "failed", code: -1, firstLine: errorMessage(error) };
  }
  const stdout = child.stdout.getReader();
  const stderr = child.stderr.getReader();
  const output = Promise.all([readAll(stdout), readAll(stderr)]);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  try {
    const ended = await Promise.race([
      Promise.all([child.status, output]),
      timedOut,
    ]);
    if (ended === "timeout") {
      for (const pid of [...descendantsInGroup(child.pid), child.pid]) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      }
      await child.status;
      await Promise.all([stdout.cancel(), stderr.cancel()]).catch(() => {});
      return { kind: "timeout", seconds: timeoutMs / 1000 };
    }
    const [status, [out, err]] = ended;
    const text = out.trim() || err.trim();
    const firstLine = printable(text.split("\n")[0] ?? "");
    return status.code === 0
      ? { kind: "ok", firstLine }
      : { kind: "failed", code: status.code, firstLine };
  } finally {
    clearTimeout(timer);
  }
}

/** A stream's text, at most 64 KiB of it (a version is one line). */
async function readAll(
  reader: ReadableStreamDefaultReader<Uint8Array>,
): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (size < 65536) chunks.push(value);
      size += value.length;
    }
  } catch {
    // Cancelled on time-out.
  }
  const bytes = new Uint8Array(
    chunks.reduce((sum, chunk) => sum + chunk.length, 0),
  );
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return new TextDecoder().decode(bytes);
}

/** A line safe to print: no control characters, at most 100 of them. */
function printable(line: string): string {
  // deno-lint-ignore no-control-regex -- removing them is the point
  const clean = line.replace(/[\x00-\x1f\x7f-\x9f]/g, "?");
  return clean.length > 100 ? `${clean.slice(0, 99)}…` : clean;
}

function definedEnv(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** Gemini's user settings and folder trust. */
export function geminiFacts(
  options: { env: Env; cwd: string; profile?: LoadedProfile },
): GeminiFacts {
  const { env, cwd } = options;
  const geminiHome = join(env.GEMINI_CLI_HOME || env.HOME || "/", ".gemini");
  const settingsPath = geminiSettingsPath(options.profile, env) ??
    join(geminiHome, "settings.json");
  const text = readText(settingsPath);
  let settings: GeminiFacts["settings"] = "absent";
  let document: unknown;
  if (text === UNREADABLE) settings = "invalid";
  else if (text !== undefined && text.trim() === "") settings = "json";
  else if (text !== undefined) {
    document = parseJson(text);
    if (document !== undefined) settings = "json";
    else {
      document = parseJson(stripJsonComments(text));
      settings = document === undefined ? "invalid" : "jsonc";
    }
  }
  const trust = property(property(document, "security"), "folderTrust");
  const trustedFolders = parseJson(
    textOrEmpty(join(geminiHome, "trustedFolders.json")),
  );
  return {
    settingsPath,
    settings,
    trustDisabled: property(trust, "enabled") === false,
    trustFromEnv: env.GEMINI_CLI_TRUST_WORKSPACE === "true",
    folderTrusted: geminiTrusts(trustedFolders, cwd),
    cwd,
  };
}

/** How long a remote server may take to say its MCP revision. */
export const REVISION_TIMEOUT_MS = 3000;

/**
 * Each remote server's MCP revision, asked with no token (the doctor
 * never fetches one), all at once. The SDK is loaded only when there is a
 * remote server to ask.
 */
async function remoteRevisions(
  services: readonly Service[],
): Promise<Map<Service, RevisionProbe>> {
  const remote = services.filter((service) => "url" in service.server);
  const revisions = new Map<Service, RevisionProbe>();
  if (remote.length === 0) return revisions;
  const probe = await importLazily<typeof import("../mcp/probe.ts")>(
    "lib/mcp/probe.ts",
  );
  await Promise.all(remote.map(async (service) => {
    const server = service.server;
    if (!("url" in server)) return;
    revisions.set(
      service,
      await probe.probeRevision({
        url: server.url,
        transport: server.transport ?? "http",
        timeoutMs: REVISION_TIMEOUT_MS,
      }),
    );
  }));
  return revisions;
}

/** The Gemini profile's `[mcp] path` when it names a file; else undefined. */
function geminiSettingsPath(
  profile: LoadedProfile | undefined,
  env: Env,
): string | undefined {
  const mcp = profile?.profile.mcp;
  if (mcp?.mode !== "config-file" || mcp.path === undefined) return undefined;
  try {
    return expandPath(mcp.path, { env });
  } catch {
    return undefined;
  }
}

/**
 * Whether `trustedFolders.json` trusts `cwd`: the most specific rule that
 * covers it decides (`TRUST_FOLDER` covers the folder, `TRUST_PARENT` its
 * parent, `DO_NOT_TRUST` the folder, untrusted).
 */
export function geminiTrusts(rules: unknown, cwd: string): boolean {
  if (!isPlainObject(rules)) return false;
  let best: { length: number; trusted: boolean } | undefined;
  for (const [path, rule] of Object.entries(rules)) {
    const covered = rule === "TRUST_PARENT" ? dirname(path) : path;
    if (!within(cwd, covered)) continue;
    const trusted = rule === "TRUST_FOLDER" || rule === "TRUST_PARENT";
    if (best === undefined || covered.length > best.length) {
      best = { length: covered.length, trusted };
    }
  }
  return best?.trusted ?? false;
}

/** Copilot's `trusted_folders`. */
export function copilotFacts(env: Env, cwd: string): CopilotFacts {
  const home = env.COPILOT_HOME || join(env.HOME || "/", ".copilot");
  const configPath = join(home, "config.json");
  // App state in JSON; read leniently (comments), kept: trusted_folders only.
  const document = parseJson(stripJsonComments(textOrEmpty(configPath)));
  const folders = property(document, "trusted_folders");
  return {
    configPath,
    folderTrusted: Array.isArray(folders) &&
      folders.some((folder) =>
        typeof folder === "string" && within(cwd, folder)
      ),
    cwd,
  };
}

/** Claude Code's managed policy files (their names and MCP keys only). */
export function claudeFacts(folder: string): ClaudeFacts {
  const managedMcp = join(folder, "managed-mcp.json");
  const managedSettings = join(folder, "managed-settings.json");
  const settingsText = readText(managedSettings);
  const document = parseJson(
    typeof settingsText === "string" ? settingsText : "",
  );
  return {
    managedMcp: exists(managedMcp) ? managedMcp : undefined,
    managedSettings: settingsText === undefined ? undefined : managedSettings,
    mcpPolicyKeys: isPlainObject(document)
      ? CLAUDE_MCP_POLICY_KEYS.filter((key) => Object.hasOwn(document, key))
      : [],
  };
}

/** True when `path` is `folder` or inside it. */
function within(path: string, folder: string): boolean {
  const base = folder.endsWith("/") && folder !== "/"
    ? folder.slice(0, -1)
    : folder;
  return path === base || path.startsWith(base === "/" ? "/" : `${base}/`);
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1).replace(/\.toml$/, "");
}

/** At most this much of an agent's settings file is read. */
const MAX_AGENT_FILE_BYTES = 4 * 1024 * 1024;

/**
 * An agent's file, read as sherlock reads the operator's (a regular file,
 * bounded: a FIFO must not hang the doctor); undefined when absent, and
 * `unreadable` when something is there that cannot be read.
 */
function readText(path: string): string | undefined | typeof UNREADABLE {
  try {
    return readOperatorFile(path, "an agent's file", MAX_AGENT_FILE_BYTES);
  } catch (error) {
    if (error instanceof InvalidFileError) return UNREADABLE;
    throw error;
  }
}

/** What {@linkcode readText} returns for a file it cannot read. */
const UNREADABLE: unique symbol = Symbol("unreadable");

/** The text of a file, or "" when it is absent or unreadable. */
function textOrEmpty(path: string): string {
  const text = readText(path);
  return typeof text === "string" ? text : "";
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

function parseJson(text: string): unknown {
  try {
    return text.trim() === "" ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

function property(value: unknown, key: string): unknown {
  return isPlainObject(value) ? value[key] : undefined;
}
