/**
 * Profiles and services for tests: files written as TOML text the way an
 * operator would write them, the built-in names, and a loaded profile.
 *
 * @module
 */

import type { LoadedProfile } from "../../lib/profiles/loader.ts";
import type { Profile } from "../../lib/profiles/schema.ts";

/** The built-in profiles' names, sorted as `sherlock agents` lists them. */
export const BUILTIN_PROFILE_NAMES: readonly string[] = [
  "aider",
  "amp",
  "auggie",
  "claude",
  "codex",
  "continue",
  "copilot",
  "gemini",
  "kilo",
  "opencode",
  "qwen",
];

/**
 * The override `fake` as the loader returns it, every default filled in as
 * the schema leaves it: a cli-flag delivery of an mcp-json file, changed by
 * `mcp` and `more`.
 */
export function loadedProfile(
  mcp: Partial<Profile["mcp"]>,
  more: Partial<Omit<Profile, "mcp">> = {},
): LoadedProfile {
  return {
    profile: {
      agent: { name: "fake", executable: "fake", description: "" },
      mcp: {
        mode: "cli-flag",
        value: "{path}",
        joined: false,
        format: "mcp-json",
        ...mcp,
      },
      env: {},
      argv: { prefix: [], suffix: [], no_session: [] },
      forbid: { env: [] },
      ...more,
    },
    source: "override",
    path: "/cfg/sherlock/agents.d/fake.toml",
    shadowsBuiltin: false,
  };
}

/** The parts of a profile a test cares about; the rest is left out. */
export interface ProfileSpec {
  /** `[agent] name`. */
  name: string;
  /** `[agent] executable`. */
  executable: string;
  /** `[agent] description`. */
  description?: string;
  /** `[mcp]`; default: `mode = "env-var"`, `var = "SHERLOCK_MCP_CONFIG"`. */
  mcp?: Record<string, string | boolean>;
  /** `[env]`. */
  env?: Record<string, string>;
  /** `[argv] prefix`. */
  prefix?: string[];
  /** `[argv] suffix`. */
  suffix?: string[];
  /** `[argv] no_session`. */
  noSession?: string[];
  /** `[forbid] env`. */
  forbid?: string[];
}

/** A TOML value: strings and arrays as JSON spells them, which TOML reads. */
function value(item: unknown): string {
  return JSON.stringify(item);
}

/** A TOML key, quoted when it is not bare. */
function key(name: string): string {
  return /^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name);
}

function table(name: string, entries: Record<string, unknown>): string[] {
  return [
    `[${name}]`,
    ...Object.entries(entries).map(([k, v]) => `${key(k)} = ${value(v)}`),
  ];
}

/** The text of a profile file. */
export function profileToml(spec: ProfileSpec): string {
  const agent: Record<string, unknown> = {
    name: spec.name,
    executable: spec.executable,
  };
  if (spec.description !== undefined) agent.description = spec.description;
  const parts = [
    ...table("agent", agent),
    "",
    ...table(
      "mcp",
      spec.mcp ?? { mode: "env-var", var: "SHERLOCK_MCP_CONFIG" },
    ),
  ];
  if (spec.env) parts.push("", ...table("env", spec.env));
  if (spec.prefix || spec.suffix || spec.noSession) {
    const argv: Record<string, unknown> = {};
    if (spec.prefix) argv.prefix = spec.prefix;
    if (spec.suffix) argv.suffix = spec.suffix;
    if (spec.noSession) argv.no_session = spec.noSession;
    parts.push("", ...table("argv", argv));
  }
  if (spec.forbid) parts.push("", ...table("forbid", { env: spec.forbid }));
  return parts.join("\n") + "\n";
}

/** A stdio service without a token (the broker is not needed). */
export function stdioServiceToml(
  name: string,
  server: { command: string; args?: string[]; env?: Record<string, string> },
): string {
  const entries: Record<string, unknown> = { command: server.command };
  if (server.args) entries.args = server.args;
  const lines = [
    ...table("service", { name }),
    "",
    ...table("server", entries),
  ];
  if (server.env) {
    lines.push(
      `env = { ${
        Object.entries(server.env).map(([k, v]) => `${key(k)} = ${value(v)}`)
          .join(", ")
      } }`,
    );
  }
  return lines.join("\n") + "\n";
}

/** A remote service without a token. */
export function remoteServiceToml(
  name: string,
  server: { url: string; transport?: string; headers?: Record<string, string> },
): string {
  const entries: Record<string, unknown> = { url: server.url };
  if (server.transport) entries.transport = server.transport;
  const lines = [
    ...table("service", { name }),
    "",
    ...table("server", entries),
  ];
  if (server.headers) {
    lines.push(
      `headers = { ${
        Object.entries(server.headers).map(([k, v]) =>
          `${key(k)} = ${value(v)}`
        ).join(", ")
      } }`,
    );
  }
  return lines.join("\n") + "\n";
}

/** A service whose token the broker gets. */
export interface TokenServiceSpec {
  /** The service's name (and file name). */
  name: string;
  /**
   * Default `command` when `command` is given, else `secret`; `oauth`
   * needs `url`.
   */
  source?: "command" | "secret" | "oauth";
  /** The helper's argv. */
  command?: string[];
  /** A remote server's URL; otherwise a stdio server (never started). */
  url?: string;
  /** The remote server's header (default `Authorization`). */
  header?: string;
  /** The stdio server's variable (default `<NAME>_TOKEN`). */
  env?: string;
  /** `[token] ttl`. */
  ttl?: number;
  /** `[token] timeout`. */
  timeout?: number;
  /** `[token] delivery` (a remote server's default is the bridge). */
  delivery?: "inline" | "shim" | "bridge";
}

/** The TOML of a service with a token. */
export function tokenServiceToml(spec: TokenServiceSpec): string {
  const lines = ["[service]", `name = ${JSON.stringify(spec.name)}`, ""];
  lines.push("[server]");
  if (spec.url) lines.push(`url = ${JSON.stringify(spec.url)}`);
  else lines.push(`command = ${JSON.stringify(`mcp-server-${spec.name}`)}`);
  lines.push("", "[token]");
  const source = spec.source ?? (spec.command ? "command" : "secret");
  lines.push(`source = ${JSON.stringify(source)}`);
  if (spec.command) lines.push(`command = ${JSON.stringify(spec.command)}`);
  if (spec.url) {
    lines.push(`header = ${JSON.stringify(spec.header ?? "Authorization")}`);
  } else {
    const variable = spec.env ??
      `${spec.name.toUpperCase().replaceAll("-", "_")}_TOKEN`;
    lines.push(`env = ${JSON.stringify(variable)}`);
  }
  if (spec.ttl !== undefined) lines.push(`ttl = ${spec.ttl}`);
  if (spec.timeout !== undefined) lines.push(`timeout = ${spec.timeout}`);
  if (spec.delivery !== undefined) {
    lines.push(`delivery = ${JSON.stringify(spec.delivery)}`);
  }
  return lines.join("\n") + "\n";
}
