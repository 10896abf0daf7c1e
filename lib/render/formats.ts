/**
 * The MCP config documents agents read, rendered from server entries. Pure.
 *
 * @module
 */

import type { McpFormat } from "./format_names.ts";
import type { ServerEntry } from "./servers.ts";

export { MCP_FORMATS } from "./format_names.ts";
export type { McpFormat } from "./format_names.ts";

/** A rendered document and the file name extension it wants. */
export interface RenderedDocument {
  /** The document's text. */
  text: string;
  /** `json` or `toml`. */
  extension: string;
}

/** Renders the servers as the document `format` names. */
export function renderDocument(
  format: McpFormat,
  servers: Readonly<Record<string, ServerEntry>>,
): RenderedDocument {
  switch (format) {
    case "mcp-json":
      return {
        text: json({ mcpServers: mcpServers(servers) }),
        extension: "json",
      };
  }
}

/**
 * The `mcpServers` map shared by Claude Code, Copilot CLI and most others:
 * stdio entries with `type: "stdio"`, remote ones with `type: "http"|"sse"`.
 */
function mcpServers(
  servers: Readonly<Record<string, ServerEntry>>,
): Record<string, unknown> {
  const map: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(servers)) {
    map[name] = entry.kind === "stdio"
      ? {
        type: "stdio",
        command: entry.command,
        args: entry.args,
        env: entry.env,
      }
      : { type: entry.transport, url: entry.url, headers: entry.headers };
  }
  return map;
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2) + "\n";
}
