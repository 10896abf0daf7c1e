/**
 * The MCP config documents agents read, rendered from server entries. Pure.
 *
 * | format            | agents                     | shape |
 * |-------------------|----------------------------|-------|
 * | `mcp-json`        | Claude Code, Copilot, Qwen | `{"mcpServers": {n: {type, command, args, env} \| {type, url, headers}}}` |
 * | `servers-map`     | Amp                        | `{n: {command, args, env} \| {url, headers}}` |
 * | `opencode`        | opencode                   | `{"$schema", "mcp": {n: {type: "local", command: [..], environment} \| {type: "remote", url, headers}}}` |
 * | `gemini`          | Gemini CLI                 | `{"mcpServers": {n: {command, args, env} \| {httpUrl \| url, headers}}}` |
 * | `codex-overrides` | Codex                      | argv values `mcp_servers.<n>={command="…",args=[…],env={…}}` (TOML) |
 * | `continue`        | Continue CLI               | a block `{"name", "version", "schema": "v1", "mcpServers": [{name, command, args, env} \| {name, type, url, requestOptions: {headers}}]}` |
 *
 * @module
 */

import { isArgvFormat, type McpFormat } from "../profiles/mcp_formats.ts";
import type { RemoteServer, StdioServer } from "../services/loader.ts";
import type { ServerEntry } from "./servers.ts";

export { isArgvFormat, MCP_FORMATS } from "../profiles/mcp_formats.ts";
export type { McpFormat } from "../profiles/mcp_formats.ts";

/** A rendered config: a JSON document for a file, or values for argv. */
export type RenderedDocument =
  | {
    /** A document written to a file. */
    kind: "json";
    /** The document: sherlock's servers under their key (what a merge adds). */
    document: Record<string, unknown>;
    /**
     * The file's text: the document, and for opencode its `$schema` first
     * (see {@linkcode OPENCODE_SCHEMA}).
     */
    text: string;
  }
  | {
    /** Flag values: one `[flag, value]` pair per server in the agent's argv. */
    kind: "argv";
    values: string[];
  };

/**
 * Why `format` cannot carry this server, or undefined when it can: Codex
 * speaks only streamable HTTP to remote servers, not the older SSE.
 */
export function unsupportedServer(
  format: McpFormat,
  server: StdioServer | RemoteServer,
): string | undefined {
  if (
    format === "codex-overrides" && "url" in server &&
    server.transport === "sse"
  ) {
    return 'is an SSE server, and Codex speaks only streamable HTTP (transport = "http")';
  }
  return undefined;
}

/** Renders the servers as the document `format` names. */
export function renderDocument(
  format: McpFormat,
  servers: Readonly<Record<string, ServerEntry>>,
): RenderedDocument {
  if (isArgvFormat(format)) {
    return { kind: "argv", values: codexOverrides(servers) };
  }
  const document = jsonDocument(format, servers);
  // opencode rewrites a config file that has no "$schema" (to add one): a
  // file sherlock did not write is never removed, so it would stay behind,
  // inline tokens and all. A merge adds only the servers' key.
  const file = format === "opencode"
    ? { $schema: OPENCODE_SCHEMA, ...document }
    : document;
  return {
    kind: "json",
    document,
    text: JSON.stringify(file, null, 2) + "\n",
  };
}

/** The `$schema` of an opencode config file; opencode adds it when missing. */
export const OPENCODE_SCHEMA = "https://opencode.ai/config.json";

function jsonDocument(
  format: McpFormat,
  servers: Readonly<Record<string, ServerEntry>>,
): Record<string, unknown> {
  const map = (render: (entry: ServerEntry) => unknown) =>
    Object.fromEntries(
      Object.entries(servers).map(([name, entry]) => [name, render(entry)]),
    );
  switch (format) {
    case "servers-map":
      return map((entry) =>
        entry.kind === "stdio"
          ? { command: entry.command, args: entry.args, env: entry.env }
          : { url: entry.url, headers: entry.headers }
      );
    case "opencode":
      return {
        mcp: map((entry) =>
          entry.kind === "stdio"
            ? {
              type: "local",
              command: [entry.command, ...entry.args],
              environment: entry.env,
              enabled: true,
            }
            : {
              type: "remote",
              url: entry.url,
              headers: entry.headers,
              enabled: true,
            }
        ),
      };
    case "continue":
      return continueBlock(servers);
    case "gemini":
      return {
        mcpServers: map((entry) =>
          entry.kind === "stdio"
            ? { command: entry.command, args: entry.args, env: entry.env }
            : entry.transport === "http"
            ? { httpUrl: entry.url, headers: entry.headers }
            : { url: entry.url, headers: entry.headers }
        ),
      };
    default:
      // mcp-json. Claude Code ignores a url entry without "type".
      return {
        mcpServers: map((entry) =>
          entry.kind === "stdio"
            ? {
              type: "stdio",
              command: entry.command,
              args: entry.args,
              env: entry.env,
            }
            : { type: entry.transport, url: entry.url, headers: entry.headers }
        ),
      };
  }
}

/**
 * Continue CLI's block file (`cn --mcp <file>`): its servers are a list of
 * named entries, and the file is a whole block, which Continue validates
 * (`name`, `version`, `schema`) before adding its servers to the
 * operator's own config. JSON is YAML, so the file stays JSON.
 */
function continueBlock(
  servers: Readonly<Record<string, ServerEntry>>,
): Record<string, unknown> {
  return {
    name: "sherlock",
    version: "1.0.0",
    schema: "v1",
    mcpServers: Object.entries(servers).map(([name, entry]) =>
      entry.kind === "stdio"
        ? { name, command: entry.command, args: entry.args, env: entry.env }
        : {
          name,
          type: entry.transport === "http" ? "streamable-http" : "sse",
          url: entry.url,
          requestOptions: { headers: entry.headers },
        }
    ),
  };
}

/** Codex's `-c` overrides: one TOML inline table per server. */
function codexOverrides(
  servers: Readonly<Record<string, ServerEntry>>,
): string[] {
  return Object.entries(servers).map(([name, entry]) => {
    const table = entry.kind === "stdio"
      ? `{command=${tomlString(entry.command)},args=[${
        entry.args.map(tomlString).join(",")
      }],env=${tomlTable(entry.env)}}`
      : `{url=${tomlString(entry.url)},http_headers=${
        tomlTable(entry.headers)
      }}`;
    return `mcp_servers.${tomlKey(name)}=${table}`;
  });
}

/**
 * A TOML basic string: JSON's escapes are all valid TOML escapes, but TOML
 * also forbids a raw DEL (U+007F), which JSON leaves as it is.
 */
function tomlString(value: string): string {
  return JSON.stringify(value).replaceAll("\x7f", "\\u007f");
}

function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : tomlString(key);
}

function tomlTable(values: Readonly<Record<string, string>>): string {
  return `{${
    Object.entries(values).map(([key, value]) =>
      `${tomlKey(key)}=${tomlString(value)}`
    ).join(",")
  }}`;
}
