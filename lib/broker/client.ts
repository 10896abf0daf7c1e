/**
 * The broker client, on the launch path: make sure the daemon is up (start
 * it in the background when the socket does not answer), ask who is logged
 * in, and fetch every service's token in parallel. It never imports daemon
 * code: the daemon is another process of the same binary.
 *
 * @module
 */

import {
  ConfigError,
  NoPermissionError,
  SherlockError,
  UnavailableError,
  UsageError,
} from "../errors.ts";
import { selfCommand } from "../self_command.ts";
import type {
  ErrorBody,
  Health,
  TokenRequest,
  TokenResponse,
  Whoami,
} from "./protocol.ts";
import { SocketError, unixHttpRequest } from "./unix_http.ts";

/** How long a start of the daemon may take before sherlock gives up. */
export const START_TIMEOUT_MS = 10_000;

/** How long a quick request (health, whoami, login…) may take. */
const QUICK_TIMEOUT_MS = 5_000;

/**
 * How long a token request may take: the daemon bounds each helper by its
 * own `[token] timeout`, so this is only a guard against a wedged daemon.
 */
const TOKEN_TIMEOUT_MS = 600_000;

/** Sends one request to the daemon and returns the parsed answer. */
export async function callBroker<T>(
  options: {
    socket: string;
    method: string;
    path: string;
    body?: unknown;
    timeoutMs?: number;
  },
): Promise<T> {
  let response;
  try {
    response = await unixHttpRequest({
      socket: options.socket,
      method: options.method,
      path: options.path,
      body: options.body,
      timeoutMs: options.timeoutMs ?? QUICK_TIMEOUT_MS,
    });
  } catch (error) {
    if (error instanceof SocketError) {
      throw new UnavailableError(
        `the broker does not answer on ${options.socket}; run "sherlock broker start" or "sherlock broker serve" to see why`,
      );
    }
    throw error;
  }
  if (response.status >= 200 && response.status < 300) {
    return response.body as T;
  }
  throw brokerError(response.status, response.body);
}

/** The daemon's health, or undefined when nothing answers on the socket. */
export async function brokerHealth(
  socket: string,
): Promise<Health | undefined> {
  try {
    const response = await unixHttpRequest({
      socket,
      method: "GET",
      path: "/v1/health",
      timeoutMs: QUICK_TIMEOUT_MS,
    });
    const body = response.body as Health | undefined;
    return response.status === 200 && body?.ok === true ? body : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Returns the daemon's health, starting the daemon first when the socket does
 * not answer: `sherlock broker serve --background`, detached, with no
 * terminal. Many clients may do this at once; the daemons agree among
 * themselves which one serves, and every client waits for the socket to
 * answer. Throws {@linkcode UnavailableError} after the timeout.
 */
export async function ensureBroker(
  options: { socket: string; timeoutMs?: number },
): Promise<Health> {
  const running = await brokerHealth(options.socket);
  if (running) return running;
  const [command, ...args] = selfCommand();
  const child = new Deno.Command(command, {
    args: [...args, "broker", "serve", "--background"],
    stdin: "null",
    stdout: "null",
    stderr: "null",
    detached: true,
  }).spawn();
  child.unref();
  const deadline = Date.now() + (options.timeoutMs ?? START_TIMEOUT_MS);
  let delay = 10;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 100);
    const health = await brokerHealth(options.socket);
    if (health) return health;
  }
  throw new UnavailableError(
    `the broker did not start within ${
      Math.round((options.timeoutMs ?? START_TIMEOUT_MS) / 1000)
    } s; run "sherlock broker serve" to see why`,
  );
}

/** Who is logged in. */
export function whoami(socket: string): Promise<Whoami> {
  return callBroker<Whoami>({ socket, method: "GET", path: "/v1/whoami" });
}

/**
 * The token of each named service, fetched in parallel (one request each;
 * the daemon runs their helpers concurrently). Rejects with the first
 * failure, which names the service.
 */
export async function fetchTokens(
  options: {
    socket: string;
    services: readonly string[];
    session: string;
    agent: string;
  },
): Promise<Map<string, string>> {
  const answers = await Promise.all(
    options.services.map((service) =>
      callBroker<TokenResponse>({
        socket: options.socket,
        method: "POST",
        path: "/v1/token",
        body: {
          service,
          session: options.session,
          agent: options.agent,
        } satisfies TokenRequest,
        timeoutMs: TOKEN_TIMEOUT_MS,
      }).then((answer) => [service, answer.token] as const)
    ),
  );
  return new Map(answers);
}

/** Maps a daemon's error answer to the sherlock error with the right exit code. */
export function brokerError(status: number, body: unknown): SherlockError {
  const error = (body as ErrorBody | undefined)?.error;
  const message = error?.message ?? `the broker answered HTTP ${status}`;
  switch (error?.code) {
    case "not_logged_in":
      return new NoPermissionError(`${message}; run "sherlock login"`);
    case "wrong_passphrase":
    case "no_secret":
      return new NoPermissionError(message);
    case "helper_failed":
      return new UnavailableError(message);
    case "unknown_service":
    case "invalid_service":
    case "store_unusable":
      return new ConfigError(message);
    case "store_exists":
    case "bad_request":
      return new UsageError(message);
    default:
      return new SherlockError(`broker: ${message}`, 70);
  }
}
