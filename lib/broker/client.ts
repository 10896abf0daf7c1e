/**
 * The broker client, on the launch path: make sure the daemon is up (start
 * it in the background when the socket does not answer), ask who is logged
 * in, and fetch every service's token in parallel. It never imports daemon
 * code: the daemon is another process of the same binary.
 *
 * @module
 */

import { socketPathProblem } from "./socket_path.ts";
import { dirname, join } from "../runtime/path.ts";
import {
  CantCreateError,
  ConfigError,
  NoPermissionError,
  SherlockError,
  UnavailableError,
  UsageError,
} from "../errors.ts";
import { ensurePrivateDir } from "../private_files.ts";
import { selfCommand } from "../self_command.ts";
import type {
  ErrorBody,
  Health,
  TokensDefer,
  TokensRequest,
  TokensResponse,
  Whoami,
} from "./protocol.ts";
import { SocketError, unixHttpRequest } from "../runtime/unix_http.ts";

/** How long a start of the daemon may take before sherlock gives up. */
export const START_TIMEOUT_MS = 10_000;

/** How long a quick request (health, whoami, logout…) may take. */
const QUICK_TIMEOUT_MS = 5_000;

/**
 * How long a login may take: the key derivation is slow on purpose (about
 * a second on its own, more on a busy machine or with several at once).
 */
export const LOGIN_TIMEOUT_MS = 120_000;

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
      const message =
        `the broker does not answer on ${options.socket}; run "sherlock broker start" or "sherlock broker serve" to see why`;
      throw error.connectFailed
        ? new BrokerNotRunningError(message)
        : new UnavailableError(message);
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

/** The lock that lets one client at a time start a daemon. */
const START_LOCK_NAME = "broker.start.lock";

/**
 * Returns the daemon's health, starting the daemon first when the socket does
 * not answer: `sherlock broker serve --background`, detached, with no
 * terminal. Many clients may do this at once: they take turns under a lock
 * beside the socket, so that one of them starts a daemon and the others find
 * it answering (and the daemons still agree among themselves, should one be
 * started by hand). Throws {@linkcode UnavailableError} when the socket's
 * path cannot work, when the daemon exits at start (with the last line of
 * its log, `logFile`), or after the timeout.
 */
export async function ensureBroker(
  options: { socket: string; timeoutMs?: number; logFile?: string },
): Promise<Health> {
  const running = await brokerHealth(options.socket);
  if (running) return running;
  const problem = socketPathProblem(options.socket);
  if (problem !== undefined) throw new UnavailableError(problem);
  const runtimeDir = dirname(options.socket);
  ensurePrivateDir(runtimeDir);
  const lock = await Deno.open(join(runtimeDir, START_LOCK_NAME), {
    create: true,
    write: true,
    mode: 0o600,
  });
  try {
    await lock.lock(true);
    // Whoever held the lock before may have started it.
    const started = await brokerHealth(options.socket);
    if (started) return started;
    return await startDaemon(options);
  } finally {
    await lock.unlock().catch(() => {});
    lock.close();
  }
}

async function startDaemon(
  options: { socket: string; timeoutMs?: number; logFile?: string },
): Promise<Health> {
  const timeoutMs = options.timeoutMs ?? START_TIMEOUT_MS;
  const [command, ...args] = selfCommand();
  const child = new Deno.Command(command, {
    args: [...args, "broker", "serve", "--background"],
    stdin: "null",
    stdout: "null",
    stderr: "null",
    detached: true,
  }).spawn();
  child.unref();
  let exitCode: number | undefined;
  const exited = child.status.then((status) => {
    exitCode = status.code;
  });
  const deadline = Date.now() + timeoutMs;
  let delay = 10;
  while (Date.now() < deadline) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      exited,
      new Promise((resolve) => timer = setTimeout(resolve, delay)),
    ]);
    clearTimeout(timer);
    delay = Math.min(delay * 2, 100);
    const health = await brokerHealth(options.socket);
    if (health) return health;
    // Exit 0 means another daemon serves (it will answer); anything else is
    // a failure that waiting will not fix.
    if (exitCode !== undefined && exitCode !== 0) {
      const reason = options.logFile ? lastLine(options.logFile) : undefined;
      throw new UnavailableError(
        `the broker could not start${
          reason ? `: ${reason}` : ""
        }; run "sherlock broker serve" to see why`,
      );
    }
  }
  throw new UnavailableError(
    `the broker did not start within ${
      Math.round(timeoutMs / 1000)
    } s; run "sherlock broker serve" to see why`,
  );
}

/** The last line of a log file without its time stamp, if there is one. */
function lastLine(path: string): string | undefined {
  try {
    const lines = Deno.readTextFileSync(path).trimEnd().split("\n");
    return lines.at(-1)?.replace(/^\S+Z /, "") || undefined;
  } catch {
    return undefined;
  }
}

/** Who is logged in. */
export function whoami(socket: string): Promise<Whoami> {
  return callBroker<Whoami>({ socket, method: "GET", path: "/v1/whoami" });
}

/**
 * Nothing accepted a connection on the socket (no daemon, or a stale
 * socket): unlike a daemon that accepted and then failed, starting one may
 * help. Exit 69.
 */
export class BrokerNotRunningError extends UnavailableError {
  /** Creates the error. */
  constructor(message: string) {
    super(message);
    this.name = "BrokerNotRunningError";
  }
}

/** The operator is not logged in to the broker (exit 77). */
export class NotLoggedInError extends NoPermissionError {
  /** Creates the error. */
  constructor(message: string) {
    super(message);
    this.name = "NotLoggedInError";
  }
}

/**
 * The tokens of the named services for a session, in one round trip when
 * the daemon is up: `POST /v1/tokens` (the daemon runs their helpers
 * concurrently, and answers "not logged in" for the whole request while
 * the store is locked; with no services, that is all it checks). Only when
 * nothing answers on the socket is the daemon started first (see
 * {@linkcode ensureBroker}). A service of `defer` whose token the daemon
 * kept for the session's shim is in `deferred` instead of `tokens`. Throws
 * {@linkcode NotLoggedInError}, or the first failure in the order of
 * `services`, which names the service.
 */
export async function fetchTokens(
  options: {
    socket: string;
    services: readonly string[];
    defer?: TokensDefer;
    session: string;
    agent: string;
    logFile?: string;
  },
): Promise<{ tokens: Map<string, string>; deferred: string[] }> {
  const request = {
    socket: options.socket,
    method: "POST",
    path: "/v1/tokens",
    body: {
      services: [...options.services],
      session: options.session,
      agent: options.agent,
      ...(options.defer && options.defer.services.length > 0
        ? { defer: options.defer }
        : {}),
    } satisfies TokensRequest,
    timeoutMs: TOKEN_TIMEOUT_MS,
  };
  let answer: TokensResponse;
  try {
    answer = await callBroker<TokensResponse>(request);
  } catch (error) {
    if (!(error instanceof BrokerNotRunningError)) throw error;
    await ensureBroker({ socket: options.socket, logFile: options.logFile });
    answer = await callBroker<TokensResponse>(request);
  }
  const tokens = new Map<string, string>();
  const deferred: string[] = [];
  for (const result of answer.results) {
    if ("error" in result) {
      throw brokerError(result.error.status, { error: result.error });
    }
    if ("deferred" in result) deferred.push(result.service);
    else tokens.set(result.service, result.token);
  }
  for (const service of options.services) {
    if (!tokens.has(service) && !deferred.includes(service)) {
      throw new SherlockError(`broker: no answer for service ${service}`, 70);
    }
  }
  return { tokens, deferred };
}

/** Maps a daemon's error answer to the sherlock error with the right exit code. */
export function brokerError(status: number, body: unknown): SherlockError {
  const error = (body as ErrorBody | undefined)?.error;
  const message = error?.message ?? `the broker answered HTTP ${status}`;
  switch (error?.code) {
    case "not_logged_in":
      return new NotLoggedInError(`${message}; run "sherlock login"`);
    case "wrong_passphrase":
    case "no_secret":
    case "no_store":
      return new NoPermissionError(message);
    case "store_write_failed":
      return new CantCreateError(message);
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
