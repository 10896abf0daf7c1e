/**
 * The MCP server definitions an operator already has, read from each
 * agent's own config: Claude Code (`~/.claude.json`, its user scope and
 * every project's scope; a project's `.mcp.json` when asked), Copilot CLI
 * (`~/.copilot/mcp-config.json`), Codex (`~/.codex/config.toml`
 * `[mcp_servers]`), Gemini (`~/.gemini/settings.json`, JSON with comments)
 * and any file in one of the formats sherlock renders. Pure: text in,
 * server definitions out; `agentConfigFiles` and `projectConfigFiles` only
 * compute paths.
 *
 * @module
 */

import { parse as parseToml } from "smol-toml";
import type { Env } from "../config/sherlock_paths.ts";
import { join } from "../runtime/path.ts";

/** Which parser reads a file. */
export type AgentConfigFormat =
  | "claude-user"
  | "mcp-json"
  | "codex"
  | "gemini"
  | "any";

/** One file that may hold MCP servers. */
export interface AgentConfigFile {
  /** Whose file it is: `claude`, `copilot`, `codex`, `gemini`, or `file`. */
  agent: string;
  /** Its absolute path. */
  path: string;
  /** How to read it. */
  format: AgentConfigFormat;
}

/** A stdio server as an agent's file defines it. */
export interface ImportedStdio {
  /** Discriminates the two kinds. */
  kind: "stdio";
  /** The program. */
  command: string;
  /** Its arguments. */
  args: string[];
  /** Variables set for it. */
  env: Record<string, string>;
}

/** A remote server as an agent's file defines it. */
export interface ImportedRemote {
  /** Discriminates the two kinds. */
  kind: "remote";
  /** The server's URL. */
  url: string;
  /** Streamable HTTP or legacy SSE. */
  transport: "http" | "sse";
  /** Headers sent with every request. */
  headers: Record<string, string>;
}

/** One server found in an agent's file. */
export interface ImportedServer {
  /** Its name in that file. */
  name: string;
  /** Whose file. */
  agent: string;
  /** The file. */
  path: string;
  /** Where in the file, e.g. `projects["/src/app"].mcpServers.github`. */
  keyPath: string;
  /** The definition. */
  server: ImportedStdio | ImportedRemote;
}

/** An entry of a file that is not a server sherlock imports. */
export interface SkippedEntry {
  /** The file. */
  path: string;
  /** Where in the file. */
  keyPath: string;
  /** Why, in a few words (never a value). */
  reason: string;
}

/** What one file holds: its servers, and the entries skipped. */
export interface ParsedAgentConfig {
  /** The servers, in the file's order. */
  servers: ImportedServer[];
  /** Entries that are not servers sherlock imports (disabled, malformed). */
  skipped: SkippedEntry[];
}

/**
 * The agents' own files in the operator's home, where each agent keeps
 * them: what the operator set up, read by default.
 */
export function agentConfigFiles(env: Env): AgentConfigFile[] {
  const home = env.HOME ?? "";
  const codexHome = env.CODEX_HOME || join(home, ".codex");
  return [
    {
      agent: "claude",
      path: join(home, ".claude.json"),
      format: "claude-user",
    },
    {
      agent: "copilot",
      path: join(home, ".copilot", "mcp-config.json"),
      format: "mcp-json",
    },
    { agent: "codex", path: join(codexHome, "config.toml"), format: "codex" },
    {
      agent: "gemini",
      path: join(home, ".gemini", "settings.json"),
      format: "gemini",
    },
  ];
}

/**
 * A folder's project files (`.mcp.json`, `.gemini/settings.json`): they come
 * with the repository, from whoever wrote it, and the agents ask before they
 * start such a server. An import would make them services of every agent in
 * every folder, so they are read only when the operator asks
 * (`sherlock import --project`).
 */
export function projectConfigFiles(folder: string): AgentConfigFile[] {
  return [
    { agent: "claude", path: join(folder, ".mcp.json"), format: "mcp-json" },
    {
      agent: "gemini",
      path: join(folder, ".gemini", "settings.json"),
      format: "gemini",
    },
  ];
}

/**
 * The servers of one file. Throws {@linkcode SyntaxError} (with a short
 * message) when the file is not JSON, JSONC or TOML as its format needs.
 */
export function parseAgentConfig(
  file: AgentConfigFile,
  text: string,
): ParsedAgentConfig {
  const parsed: ParsedAgentConfig = { servers: [], skipped: [] };
  const from = (map: unknown, prefix: string, shape: EntryShape) =>
    readServerMap({ file, map, prefix, shape, into: parsed });
  switch (file.format) {
    case "claude-user": {
      const document = parseJson(text);
      from(document.mcpServers, "mcpServers", "mcp-json");
      if (isObject(document.projects)) {
        for (const [project, scope] of Object.entries(document.projects)) {
          if (!isObject(scope)) continue;
          from(
            scope.mcpServers,
            `projects[${JSON.stringify(project)}].mcpServers`,
            "mcp-json",
          );
        }
      }
      break;
    }
    case "mcp-json":
      from(parseJson(text).mcpServers, "mcpServers", "mcp-json");
      break;
    case "gemini":
      from(
        parseJson(stripJsonComments(text)).mcpServers,
        "mcpServers",
        "gemini",
      );
      break;
    case "codex":
      from(parseTomlText(text).mcp_servers, "mcp_servers", "codex");
      break;
    case "any":
      readAnyFormat(file, text, parsed);
      break;
  }
  return parsed;
}

/**
 * A file in one of the formats sherlock renders: `mcpServers` (mcp-json,
 * Gemini), opencode's `mcp`, TOML `[mcp_servers]` (Codex), or a bare map
 * of servers (Amp's `servers-map`).
 */
function readAnyFormat(
  file: AgentConfigFile,
  text: string,
  into: ParsedAgentConfig,
) {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith("{")) {
    const document = parseTomlText(text);
    readServerMap({
      file,
      map: document.mcp_servers,
      prefix: "mcp_servers",
      shape: "codex",
      into,
    });
    return;
  }
  const document = parseJson(stripJsonComments(text));
  if (document.mcpServers !== undefined) {
    readServerMap({
      file,
      map: document.mcpServers,
      prefix: "mcpServers",
      shape: "gemini",
      into,
    });
  } else if (document.mcp !== undefined) {
    readServerMap({
      file,
      map: document.mcp,
      prefix: "mcp",
      shape: "opencode",
      into,
    });
  } else {
    readServerMap({ file, map: document, prefix: "", shape: "gemini", into });
  }
}

/** How a file's entries name their fields. */
type EntryShape = "mcp-json" | "gemini" | "codex" | "opencode";

function readServerMap(
  options: {
    file: AgentConfigFile;
    map: unknown;
    prefix: string;
    shape: EntryShape;
    into: ParsedAgentConfig;
  },
) {
  const { file, map, prefix, into } = options;
  if (map === undefined) return;
  if (!isObject(map)) {
    into.skipped.push({
      path: file.path,
      keyPath: prefix,
      reason: "is not a table of servers",
    });
    return;
  }
  for (const [name, entry] of Object.entries(map)) {
    const keyPath = prefix === ""
      ? keyPart(name)
      : `${prefix}.${keyPart(name)}`;
    if (!isObject(entry)) {
      into.skipped.push({
        path: file.path,
        keyPath,
        reason: "is not a server",
      });
      continue;
    }
    const server = readEntry(entry, options.shape);
    if (typeof server === "string") {
      into.skipped.push({ path: file.path, keyPath, reason: server });
      continue;
    }
    into.servers.push({
      name,
      agent: file.agent,
      path: file.path,
      keyPath,
      server,
    });
  }
}

/** A key as it appears in a key path: bare when it can be, else quoted. */
export function keyPart(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

/** One entry as a server, or why it is not one sherlock imports. */
function readEntry(
  entry: Record<string, unknown>,
  shape: EntryShape,
): ImportedStdio | ImportedRemote | string {
  if (shape === "opencode") {
    if (entry.enabled === false) return "is disabled";
    if (entry.type === "remote" || typeof entry.url === "string") {
      return remote(entry.url, "http", entry.headers);
    }
    if (!Array.isArray(entry.command) || entry.command.length === 0) {
      return "has no command";
    }
    const [command, ...args] = entry.command;
    return stdio(command, args, entry.environment);
  }
  if (entry.disabled === true || entry.enabled === false) return "is disabled";
  if (shape === "codex") {
    if (typeof entry.url === "string") {
      return remote(entry.url, "http", entry.http_headers);
    }
    return stdio(entry.command, entry.args, entry.env);
  }
  if (shape === "gemini" && typeof entry.httpUrl === "string") {
    return remote(entry.httpUrl, "http", entry.headers);
  }
  if (typeof entry.url === "string") {
    const transport = entry.type === "sse" ||
        (shape === "gemini" && entry.type !== "http")
      ? "sse"
      : "http";
    return remote(entry.url, transport, entry.headers);
  }
  return stdio(entry.command, entry.args, entry.env);
}

function stdio(
  command: unknown,
  args: unknown,
  env: unknown,
): ImportedStdio | string {
  if (typeof command !== "string" || command === "") {
    return "has neither a command nor a url";
  }
  if (args !== undefined && !isStringArray(args)) {
    return "has args that are not a list of strings";
  }
  if (env !== undefined && !isStringMap(env)) {
    return "has env values that are not strings";
  }
  return {
    kind: "stdio",
    command,
    args: [...(args ?? [])],
    env: { ...(env ?? {}) },
  };
}

function remote(
  url: unknown,
  transport: "http" | "sse",
  headers: unknown,
): ImportedRemote | string {
  if (typeof url !== "string" || !/^https?:\/\//i.test(url)) {
    return "has a url that is not http:// or https://";
  }
  if (headers !== undefined && !isStringMap(headers)) {
    return "has headers that are not strings";
  }
  return { kind: "remote", url, transport, headers: { ...(headers ?? {}) } };
}

function parseJson(text: string): Record<string, unknown> {
  let document: unknown;
  try {
    document = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (error) {
    throw new SyntaxError(
      `not valid JSON (${error instanceof Error ? error.message : error})`,
    );
  }
  if (!isObject(document)) throw new SyntaxError("not a JSON object");
  return document;
}

function parseTomlText(text: string): Record<string, unknown> {
  try {
    return parseToml(text) as Record<string, unknown>;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new SyntaxError(`not valid TOML (${message.split("\n")[0]})`);
  }
}

/**
 * JSON with comments (`//`, `/* *\/`) and trailing commas, as Gemini
 * reads its settings, made JSON. Strings are left as they are.
 */
export function stripJsonComments(text: string): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const char = text[i];
    if (char === '"') {
      const end = stringEnd(text, i);
      out += text.slice(i, end);
      i = end;
    } else if (char === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (char === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 2;
    } else {
      out += char;
      i++;
    }
  }
  return dropTrailingCommas(out);
}

/** The index after the JSON string that starts at `start` (a `"`). */
function stringEnd(text: string, start: number): number {
  let end = start + 1;
  while (end < text.length && text[end] !== '"') {
    end += text[end] === "\\" ? 2 : 1;
  }
  return Math.min(end + 1, text.length);
}

/** `[1, 2,]` and `{"a": 1,}` as JSON: a comma before a closing bracket goes. */
function dropTrailingCommas(text: string): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const char = text[i];
    if (char === '"') {
      const end = stringEnd(text, i);
      out += text.slice(i, end);
      i = end;
      continue;
    }
    if (char === ",") {
      let next = i + 1;
      while (next < text.length && /\s/.test(text[next])) next++;
      if (text[next] === "}" || text[next] === "]") {
        i++;
        continue;
      }
    }
    out += char;
    i++;
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) &&
    value.every((item) => typeof item === "string");
}

function isStringMap(value: unknown): value is Record<string, string> {
  return isObject(value) &&
    Object.values(value).every((item) => typeof item === "string");
}
