/**
 * The MCP servers of one session, with their tokens in place (inline) or
 * behind the token shim as the delivery plan says, in a form that every
 * document format renders from. Pure.
 *
 * @module
 */

import type { RemoteServer, Service, StdioServer } from "../services/loader.ts";
import {
  applyTokenFormat,
  BRIDGE_TOKEN_FORMAT,
  BRIDGE_TOKEN_HEADER,
} from "../services/token_format.ts";
import type { DeliveryPlan } from "./delivery.ts";

/** A server the agent starts and talks to over stdin/stdout. */
export interface StdioEntry {
  /** Discriminates the two kinds of entry. */
  kind: "stdio";
  /** The program to start. */
  command: string;
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
 * The variable of a shim entry's `env` that holds the session's broker
 * capability: the shim reads it, removes it from its own environment (so
 * the server never inherits it) and presents it to the broker. An entry's
 * env rather than its argv, because any local user can read a process's
 * argv in /proc, and only the same user its environment.
 */
export const CAPABILITY_ENV = "SHERLOCK_SESSION_CAPABILITY";

/** What a shim entry needs to know about the session. */
export interface ShimContext {
  /** How to start sherlock itself (see `self_command.ts`). */
  command: string[];
  /** The broker's socket. */
  socket: string;
  /** Bridges say which revision their server speaks (`run -v`). */
  verbose?: boolean;
  /** The session id. */
  session: string;
  /** The agent's profile name. */
  agent: string;
  /**
   * The session's broker capability, once the session has registered;
   * the plan (what `--dry-run` prints) gives {@linkcode REDACTED}, so that
   * its entries show the variable where the real run puts it.
   */
  capability?: string;
}

/** What to render the services with. */
export interface ServerEntriesOptions {
  /** Each service's delivery (see `delivery.ts`). */
  delivery: DeliveryPlan;
  /**
   * The tokens of the services with inline delivery, by name; a missing one
   * is rendered as {@linkcode REDACTED} (that is how `--dry-run` renders).
   */
  tokens: ReadonlyMap<string, string>;
  /** Needed when any service goes through the shim or the bridge. */
  shim?: ShimContext;
}

/**
 * The entries for `services`, by service name, each rendered as the plan
 * says. A service the plan refuses, or does not name, is a bug: the
 * session refuses before it renders.
 */
export function serverEntries(
  services: readonly Service[],
  options: ServerEntriesOptions,
): Record<string, ServerEntry> {
  const entries: Record<string, ServerEntry> = {};
  for (const service of services) {
    const name = service.service.name;
    const { server, token } = service;
    const delivery = options.delivery.get(name);
    if (delivery === undefined || delivery.kind === "refused") {
      throw new Error(`service ${name} has no delivery to render`);
    }
    if (delivery.kind === "shim") {
      if (!("command" in server) || token.env === undefined) {
        throw new Error(`service ${name} cannot go through the shim`);
      }
      entries[name] = shimEntry(service, token.env, options.shim);
      continue;
    }
    if (delivery.kind === "bridge") {
      if ("command" in server) {
        throw new Error(`service ${name} cannot go through the bridge`);
      }
      entries[name] = bridgeEntry(service, server, options.shim);
      continue;
    }
    const value = delivery.kind === "inline"
      ? applyTokenFormat(token.format, options.tokens.get(name) ?? REDACTED)
      : undefined;
    if ("command" in server) {
      const env = { ...server.env };
      if (value !== undefined && token.env) env[token.env] = value;
      entries[name] = {
        kind: "stdio",
        command: server.command,
        args: [...server.args],
        env,
      };
    } else {
      const headers = { ...server.headers };
      if (value !== undefined && token.header) headers[token.header] = value;
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

function shimEntry(
  service: Service,
  tokenEnv: string,
  shim: ShimContext | undefined,
): StdioEntry {
  const server = service.server as StdioServer;
  const format = service.token.format === "{token}"
    ? []
    : ["--token-format", service.token.format];
  return sherlockEntry({
    shim,
    command: "shim",
    args: [
      "--token-env",
      tokenEnv,
      ...format,
      service.service.name,
      "--",
      server.command,
      ...server.args,
    ],
    env: server.env,
  });
}

/**
 * A stdio entry that runs sherlock's `command` (shim or bridge) for the
 * session: the session's socket, id and agent in its argv, the session's
 * capability in its env (any local user can read argv).
 */
function sherlockEntry(
  options: {
    shim: ShimContext | undefined;
    command: "shim" | "bridge";
    args: string[];
    env: Readonly<Record<string, string>>;
  },
): StdioEntry {
  const { shim } = options;
  if (shim === undefined) {
    throw new Error(
      `a ${options.command} entry needs the session's shim context`,
    );
  }
  const [command, ...selfArgs] = shim.command;
  return {
    kind: "stdio",
    command,
    args: [
      ...selfArgs,
      options.command,
      "--socket",
      shim.socket,
      "--session",
      shim.session,
      "--agent",
      shim.agent,
      ...options.args,
    ],
    env: shim.capability === undefined
      ? { ...options.env }
      : { ...options.env, [CAPABILITY_ENV]: shim.capability },
  };
}

/**
 * `sherlock bridge` as a stdio entry: everything but the token in its argv,
 * the capability in its env (as a shim entry). The server's own headers go
 * as `--header` (they are no secret: the token's header is never among them).
 */
function bridgeEntry(
  service: Service,
  server: RemoteServer,
  shim: ShimContext | undefined,
): StdioEntry {
  const { header, format } = service.token;
  const tokenHeader = header ?? BRIDGE_TOKEN_HEADER;
  const headers = Object.entries(server.headers)
    .filter(([name]) => name.toLowerCase() !== tokenHeader.toLowerCase())
    .flatMap(([name, value]) => ["--header", `${name}=${value}`]);
  return sherlockEntry({
    shim,
    command: "bridge",
    args: [
      "--url",
      server.url,
      ...(server.transport === "sse" ? ["--transport", "sse"] : []),
      ...(tokenHeader.toLowerCase() === BRIDGE_TOKEN_HEADER.toLowerCase()
        ? []
        : ["--token-header", tokenHeader]),
      ...(format === BRIDGE_TOKEN_FORMAT ? [] : ["--token-format", format]),
      ...(shim?.verbose ? ["--verbose"] : []),
      ...headers,
      service.service.name,
    ],
    env: {},
  });
}
