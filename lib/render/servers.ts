/**
 * The MCP servers of one session, with their tokens in place (inline) or
 * behind the token shim, in a form that every document format renders
 * from. Pure.
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

/** How a token reaches its server. */
export type TokenDelivery = "inline" | "shim";

/** What `--dry-run` and redacted output show instead of a token. */
export const REDACTED = "<redacted>";

/** What a shim entry needs to know about the session. */
export interface ShimContext {
  /** How to start sherlock itself (see `self_command.ts`). */
  command: string[];
  /** The broker's socket. */
  socket: string;
  /** The session id. */
  session: string;
  /** The agent's profile name. */
  agent: string;
}

/** What to render the services with. */
export interface ServerEntriesOptions {
  /**
   * The tokens of the services with inline delivery, by name; a missing one
   * is rendered as {@linkcode REDACTED} (that is how `--dry-run` renders).
   */
  tokens: ReadonlyMap<string, string>;
  /** The delivery of each service that needs a token. */
  delivery: (service: Service) => TokenDelivery;
  /** Needed when any stdio service uses the shim. */
  shim?: ShimContext;
}

/** The entries for `services`, by service name. */
export function serverEntries(
  services: readonly Service[],
  options: ServerEntriesOptions,
): Record<string, ServerEntry> {
  const entries: Record<string, ServerEntry> = {};
  for (const service of services) {
    const name = service.service.name;
    const { server, token } = service;
    const needsToken = token.source !== "none";
    const secret = options.tokens.get(name) ?? REDACTED;
    // A function, so that `$&` or `$1` in a token is not a pattern.
    const inlineValue = token.format.replaceAll("{token}", () => secret);
    if ("command" in server) {
      // Claude Code, Copilot and Gemini expand "$…" in a server's env
      // values, which would change such a value (the token, or the
      // service's format around it): the shim passes it as is. A redacted
      // token (dry run) is not known to have one.
      const dollar = options.tokens.has(name) && inlineValue.includes("$");
      if (
        needsToken && token.env &&
        (options.delivery(service) === "shim" || dollar)
      ) {
        entries[name] = shimEntry(service, token.env, options.shim);
        continue;
      }
      const env = { ...server.env };
      if (needsToken && token.env) env[token.env] = inlineValue;
      entries[name] = {
        kind: "stdio",
        command: server.command,
        args: [...server.args],
        env,
      };
    } else {
      const headers = { ...server.headers };
      if (needsToken && token.header) headers[token.header] = inlineValue;
      entries[name] = {
        kind: "remote",
        url: server.url,
        transport: server.transport,
        headers,
      };
    }
  }
  return entries;
}

/**
 * A service's token delivery: the service's own `[token] delivery`, else
 * config.toml's `[render] tokens` — unless the format forces the shim
 * (the config would end up in argv or in a file the operator owns). A
 * remote server is always `inline` otherwise: the agent connects to it
 * itself, so there is no process to put a shim in front of (and a forced
 * shim refuses it, see `planTokens`).
 */
export function tokenDelivery(
  options: { service: Service; configured: TokenDelivery; forceShim: boolean },
): TokenDelivery {
  if (options.forceShim) return "shim";
  if (!("command" in options.service.server)) return "inline";
  return options.service.token.delivery ?? options.configured;
}

function shimEntry(
  service: Service,
  tokenEnv: string,
  shim: ShimContext | undefined,
): StdioEntry {
  if (shim === undefined) {
    throw new Error("a shim entry needs the session's shim context");
  }
  const server = service.server as {
    command: string;
    args: string[];
    env: Record<string, string>;
  };
  const [command, ...selfArgs] = shim.command;
  const format = service.token.format === "{token}"
    ? []
    : ["--token-format", service.token.format];
  return {
    kind: "stdio",
    command,
    args: [
      ...selfArgs,
      "shim",
      "--socket",
      shim.socket,
      "--session",
      shim.session,
      "--agent",
      shim.agent,
      "--token-env",
      tokenEnv,
      ...format,
      service.service.name,
      "--",
      server.command,
      ...server.args,
    ],
    env: { ...server.env },
  };
}
