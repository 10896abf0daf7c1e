/**
 * The MCP servers of one session, with their tokens in place, in a form
 * that every document format renders from. Pure.
 *
 * @module
 */

import type { Service } from "../services/loader.ts";

/** A server the agent starts and talks to over stdin/stdout. */
export interface StdioEntry {
  /** Discriminates the two kinds of entry. */
  kind: "stdio";
  /** The program to start. */
  command: string;
  /** Its arguments. */
  args: string[];
  /** Variables added to the server's environment (may hold a token). */
  env: Record<string, string>;
}

/** A server the agent connects to over HTTP. */
export interface RemoteEntry {
  /** Discriminates the two kinds of entry. */
  kind: "remote";
  /** The server's URL. */
  url: string;
  /** Streamable HTTP or the older SSE transport. */
  transport: "http" | "sse";
  /** Headers sent with every request (may hold a token). */
  headers: Record<string, string>;
}

/** One rendered server. */
export type ServerEntry = StdioEntry | RemoteEntry;

/** What `--dry-run` and redacted output show instead of a token. */
export const REDACTED = "<redacted>";

/**
 * The entries for `services`, by service name. `tokens` maps a service name
 * to its token; a service that needs a token and has none in the map gets
 * {@linkcode REDACTED} (that is how `--dry-run` renders without fetching).
 */
export function serverEntries(
  services: readonly Service[],
  tokens: ReadonlyMap<string, string>,
): Record<string, ServerEntry> {
  const entries: Record<string, ServerEntry> = {};
  for (const service of services) {
    const { server, token } = service;
    const value = token.source === "none" ? undefined : token.format.replaceAll(
      "{token}",
      tokens.get(service.service.name) ?? REDACTED,
    );
    if ("command" in server) {
      const env = { ...server.env };
      if (value !== undefined && token.env) env[token.env] = value;
      entries[service.service.name] = {
        kind: "stdio",
        command: server.command,
        args: [...server.args],
        env,
      };
    } else {
      const headers = { ...server.headers };
      if (value !== undefined && token.header) headers[token.header] = value;
      entries[service.service.name] = {
        kind: "remote",
        url: server.url,
        transport: server.transport,
        headers,
      };
    }
  }
  return entries;
}
