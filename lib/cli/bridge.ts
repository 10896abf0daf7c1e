/**
 * `sherlock bridge`: a remote MCP server as a stdio one. A rendered stdio
 * entry runs
 *
 *     sherlock bridge --socket <path> --session <id> --agent <name>
 *                     --url <url> [--transport http|sse] [--header K=V]…
 *                     [--token-header <name>] [--token-format <format>]
 *                     [--verbose] <service>
 *
 * and `lib/bridge/relay.ts` relays the agent's JSON-RPC messages to the
 * server with the service's token from the broker. Everything it needs is
 * in its argv (Codex passes servers only a short list of variables); the
 * token is never in it. stdout carries only JSON-RPC; every diagnostic is a
 * line on stderr.
 *
 * @module
 */

import { NoPermissionError, UsageError } from "../errors.ts";
import {
  parseArguments,
  type ParsedArguments,
  requiredValue,
} from "./commands.ts";
import type { CommandContext } from "./context.ts";
import { HEADER_NAME_PATTERN } from "../config/names.ts";
import { CAPABILITY_ENV } from "../render/servers.ts";
import {
  BRIDGE_TOKEN_FORMAT,
  BRIDGE_TOKEN_HEADER,
} from "../services/token_format.ts";
import { sha256Hex } from "../runtime/sha256.ts";
import { fetchToken, reportScopeChallenge } from "../broker/client.ts";
import {
  type BridgeToken,
  type RemoteTransport,
  runRelay,
} from "../bridge/relay.ts";
import { printWarning } from "./output.ts";

/** What one bridge connects, all of it from its argv. */
export interface BridgeOptions {
  /** The broker's socket. */
  socket: string;
  /** The session that started the agent. */
  session: string;
  /** The agent of that session. */
  agent: string;
  /** The remote server's URL. */
  url: string;
  /** Its transport. */
  transport: RemoteTransport;
  /** Extra headers for the server (never the token). */
  headers: Record<string, string>;
  /** The header that carries the token (`Authorization` by default). */
  tokenHeader: string;
  /** How the token is written into it (`Bearer {token}` by default). */
  tokenFormat: string;
  /** The service's name. */
  service: string;
  /** Say on stderr which MCP revision the server speaks. */
  verbose: boolean;
}

/** Runs the bridge until the agent closes its stdin; returns 0. */
export async function bridgeCommand(
  args: ParsedArguments,
  _context: CommandContext,
): Promise<number> {
  const options = bridgeOptions(args);
  // The session's capability, as the shim gets it: from the entry's env.
  const capability = Deno.env.get(CAPABILITY_ENV) ?? "";
  Deno.env.delete(CAPABILITY_ENV);
  const stop = new AbortController();
  // An agent that stops its servers with SIGTERM gets the same clean end
  // (the remote session deleted) as one that closes their stdin.
  const onSignal = () => stop.abort();
  Deno.addSignalListener("SIGTERM", onSignal);
  const stdout = Deno.stdout.writable.getWriter();
  const encoder = new TextEncoder();
  try {
    await runRelay({
      url: options.url,
      transport: options.transport,
      service: options.service,
      headers: options.headers,
      tokenHeader: options.tokenHeader,
      tokenFormat: options.tokenFormat,
      getToken: ({ refused }) =>
        brokerToken({ ...options, capability, refused }),
      onScopeChallenge: async (scope) => {
        const { recorded, scopesNeeded } = await reportScopeChallenge(
          options.socket,
          { service: options.service, capability, scope },
        );
        if (recorded) {
          printWarning(
            `bridge ${options.service}: the server needs the scope ${
              scopesNeeded.join(" ")
            }; run "sherlock auth ${options.service}"`,
          );
        }
      },
      input: Deno.stdin.readable,
      write: (line) => stdout.write(encoder.encode(line)),
      warn: (line) => printWarning(`bridge ${options.service}: ${line}`),
      info: options.verbose
        ? (line) => printWarning(`bridge ${options.service}: ${line}`)
        : undefined,
      signal: stop.signal,
    });
  } finally {
    Deno.removeSignalListener("SIGTERM", onSignal);
    await stdout.close().catch(() => {});
  }
  return 0;
}

/**
 * The service's token from the broker. With `refused` (the token the
 * server refused) the broker serves a newer one — one refresh for every
 * bridge that refused the same token — and is told only its hash.
 */
export async function brokerToken(
  options: Pick<BridgeOptions, "socket" | "service"> & {
    capability: string;
    refused?: string;
  },
): Promise<BridgeToken> {
  if (options.capability === "") {
    throw new NoPermissionError(
      `no session capability in ${CAPABILITY_ENV}; the bridge runs from a config that "sherlock run" rendered`,
    );
  }
  const { token, expiresAt } = await fetchToken(options.socket, {
    service: options.service,
    capability: options.capability,
    ...(options.refused === undefined
      ? {}
      : { refused: sha256Hex(options.refused) }),
  });
  const expires = expiresAt === null ? NaN : Date.parse(expiresAt);
  return { token, expiresAt: Number.isNaN(expires) ? null : expires };
}

/** Parses the bridge's argv. Throws {@linkcode UsageError}. */
export function parseBridgeArguments(args: readonly string[]): BridgeOptions {
  return bridgeOptions(parseArguments("bridge", args));
}

/** The bridge's options from its parsed argv. Throws {@linkcode UsageError}. */
function bridgeOptions(parsed: ParsedArguments): BridgeOptions {
  const required = (flag: string) =>
    requiredValue(parsed, { command: "bridge", flag });
  const headers: Record<string, string> = {};
  for (const text of parsed.values("--header")) {
    const [name, headerValue] = splitHeader(text);
    headers[name] = headerValue;
  }
  const url = required("--url");
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new UsageError(`bridge: --url is not a URL`);
  }
  if (target.protocol !== "http:" && target.protocol !== "https:") {
    throw new UsageError("bridge: --url must be an http: or https: URL");
  }
  const transport = parsed.value("--transport") ?? "http";
  if (transport !== "http" && transport !== "sse") {
    throw new UsageError('bridge: --transport must be "http" or "sse"');
  }
  const tokenHeader = parsed.value("--token-header") ?? BRIDGE_TOKEN_HEADER;
  if (!HEADER_NAME_PATTERN.test(tokenHeader)) {
    throw new UsageError("bridge: --token-header is not a header name");
  }
  if (
    Object.keys(headers).some((name) =>
      name.toLowerCase() === tokenHeader.toLowerCase()
    )
  ) {
    throw new UsageError(
      `bridge: --header cannot set ${tokenHeader}: the token comes from the broker`,
    );
  }
  const tokenFormat = parsed.value("--token-format") ?? BRIDGE_TOKEN_FORMAT;
  if (!tokenFormat.includes("{token}")) {
    throw new UsageError("bridge: --token-format must contain {token}");
  }
  return {
    socket: required("--socket"),
    session: required("--session"),
    agent: required("--agent"),
    url,
    transport,
    headers,
    tokenHeader,
    tokenFormat,
    service: parsed.positionals[0],
    verbose: parsed.has("--verbose"),
  };
}

/** `K=V` as a header (the token's own is refused by the caller). */
function splitHeader(text: string): [string, string] {
  const at = text.indexOf("=");
  const name = at === -1 ? "" : text.slice(0, at).trim();
  if (!HEADER_NAME_PATTERN.test(name)) {
    throw new UsageError("bridge: --header takes NAME=VALUE");
  }
  const value = text.slice(at + 1);
  // deno-lint-ignore no-control-regex -- a header value must not hold them
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(value)) {
    throw new UsageError(
      `bridge: the value of header ${name} has a control character`,
    );
  }
  return [name, value];
}
