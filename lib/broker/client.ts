/**
 * The broker client: one typed function per route of the daemon's API
 * (`protocol.ts`), each with its own timeout, and the start of the daemon
 * when its socket does not answer. Commands call these, never a raw path.
 * It never imports daemon code: the daemon is another process of the same
 * binary.
 *
 * Before every connection the socket's folder and the socket are checked
 * to be the current user's alone (`socket_path.ts`): another user's socket
 * would get the passphrase and the secrets. And a request goes only to a
 * daemon of this sherlock's version (asked once per process through
 * `/v1/health`): the routes' shapes may differ between versions.
 *
 * @module
 */

import {
  socketLengthProblem,
  socketPathProblem,
  untrustedSocketProblem,
} from "./socket_path.ts";
import { dirname, join } from "../runtime/path.ts";
import {
  BrokerNotRunningError,
  CantCreateError,
  errorCodeMeaning,
  errorWithExitCode,
  ExitCode,
  NotLoggedInError,
  SherlockError,
  UnavailableError,
  WrongPassphraseError,
} from "../errors.ts";
import { ensurePrivateDir } from "../private_files.ts";
import { selfCommand } from "../self_command.ts";
import { VERSION } from "../version.ts";
import type {
  ErrorBody,
  Health,
  LoginAnswer,
  LoginRequest,
  LogoutAnswer,
  OAuthFinished,
  OAuthRevoked,
  OAuthScopeChallenge,
  OAuthScopeRecorded,
  OAuthStarted,
  OAuthStatusList,
  OidcFinished,
  OidcLoginStatus,
  OidcWorkloadRequest,
  PassphraseChange,
  RememberAnswer,
  SecretList,
  SecretRemoved,
  SessionEnded,
  SessionGrant,
  SessionRequest,
  TokenRequest,
  TokenResponse,
  TokensDefer,
  TokensRequest,
  TokensResponse,
  Whoami,
} from "./protocol.ts";
import { SocketError, unixHttpRequest } from "../runtime/unix_http.ts";

// Defined with the others in errors.ts; here too for the callers that load
// the client lazily (the launch path) and catch these.
export { BrokerNotRunningError, NotLoggedInError } from "../errors.ts";

/** How long a start of the daemon may take before sherlock gives up. */
export const START_TIMEOUT_MS = 10_000;

/** How long a quick request (health, whoami, logout…) may take. */
const QUICK_TIMEOUT_MS = 5_000;

/**
 * How long a login may take: the key derivation is slow on purpose (about
 * a second on its own, more on a busy machine or with several at once).
 */
const LOGIN_TIMEOUT_MS = 120_000;

/**
 * How long a token request may take: the daemon bounds each helper by its
 * own `[token] timeout`, so this is only a guard against a wedged daemon.
 */
const TOKEN_TIMEOUT_MS = 600_000;

/**
 * The version that each socket's daemon gave in its last health answer in
 * this process, so that a command asks only once.
 */
const daemonVersions = new Map<string, unknown>();

/**
 * Throws unless `socket` may be connected to: {@linkcode UnavailableError}
 * when its path is too long for a Unix socket, {@linkcode CantCreateError}
 * when its folder or the socket is not the current user's alone. Called
 * before every connection, so that nothing (not even a health check)
 * reaches a socket that another user could have put there.
 */
function checkBrokerSocket(socket: string): void {
  const tooLong = socketLengthProblem(socket);
  if (tooLong !== undefined) throw new UnavailableError(tooLong);
  const untrusted = untrustedSocketProblem(socket);
  if (untrusted !== undefined) throw new CantCreateError(untrusted);
}

/**
 * What to do when the daemon's version (from its health) is not this
 * sherlock's, or undefined when it is.
 */
export function versionProblem(version: unknown): string | undefined {
  if (version === VERSION) return undefined;
  const theirs = typeof version === "string"
    ? `sherlock ${version}`
    : "an unknown sherlock";
  return `the broker runs ${theirs}, this is sherlock ${VERSION}; run "sherlock broker stop" and try again`;
}

/** Returns `health` when its daemon runs this version; throws otherwise. */
function sameVersion(health: Health): Health {
  const problem = versionProblem(health.version);
  if (problem !== undefined) throw new UnavailableError(problem);
  return health;
}

/**
 * Throws when the daemon on `socket` runs another version. Nothing
 * answering is left to the request itself to report.
 */
async function requireSameVersion(socket: string): Promise<void> {
  if (!daemonVersions.has(socket) && !(await brokerHealth(socket))) return;
  const problem = versionProblem(daemonVersions.get(socket));
  if (problem !== undefined) throw new UnavailableError(problem);
}

/**
 * Sends one request to the daemon and returns the parsed answer. Checks
 * the socket first, and the daemon's version unless `anyVersion` (a stop
 * must work whatever runs); the answer is returned only once `isAnswer`
 * says it has the shape of the route's answer: a malformed one (a daemon
 * of another version, or something else on the socket) is never handed
 * on, so that no `undefined` reaches a server's environment.
 */
async function callBroker<T>(
  options: {
    socket: string;
    method: string;
    path: string;
    body?: unknown;
    timeoutMs: number;
    isAnswer: (body: unknown) => boolean;
    anyVersion?: boolean;
  },
): Promise<T> {
  checkBrokerSocket(options.socket);
  if (!options.anyVersion) await requireSameVersion(options.socket);
  let response;
  try {
    response = await unixHttpRequest({
      socket: options.socket,
      method: options.method,
      path: options.path,
      body: options.body,
      timeoutMs: options.timeoutMs,
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
    if (!options.isAnswer(response.body)) {
      throw malformedAnswer(`${options.method} ${options.path}`);
    }
    return response.body as T;
  }
  throw brokerError(response.status, response.body);
}

/**
 * A success answer without the route's shape: exit 70 (`Software`), like
 * the daemon's other failures that are no fault of the operator's (it is
 * a bug, or a daemon of another version), and not 69, which says "try
 * again later" of a broker that waiting will not fix.
 */
function malformedAnswer(route: string): SherlockError {
  return new SherlockError(
    `broker: malformed answer to ${route}; restart the broker ("sherlock broker stop", then try again)`,
    ExitCode.Software,
  );
}

// The shapes of the answers (protocol.ts), checked by hand: no zod here.
type Fields = Record<string, unknown>;
const isObject = (value: unknown): value is Fields =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const isAny = (body: unknown): boolean => isObject(body);
const isToken = (value: Fields): boolean =>
  typeof value.token === "string" && value.token !== "" &&
  (value.expiresAt === null || typeof value.expiresAt === "string");
const isWhoami = (body: unknown): boolean =>
  isObject(body) && typeof body.loggedIn === "boolean" &&
  typeof body.provider === "string" && typeof body.storeExists === "boolean";
const isTokenResult = (value: unknown): boolean =>
  isObject(value) && typeof value.service === "string" &&
  ("error" in value
    ? isObject(value.error) && typeof value.error.status === "number"
    : "deferred" in value
    ? value.deferred === true
    : isToken(value));

/**
 * `GET /v1/health`: the daemon's health (whatever its version; see
 * {@linkcode versionProblem}), or undefined when nothing answers on the
 * socket. Throws, without connecting, when the socket cannot be trusted
 * (see {@linkcode checkBrokerSocket}).
 */
export async function brokerHealth(
  socket: string,
): Promise<Health | undefined> {
  checkBrokerSocket(socket);
  let health: Health | undefined;
  try {
    const response = await unixHttpRequest({
      socket,
      method: "GET",
      path: "/v1/health",
      timeoutMs: QUICK_TIMEOUT_MS,
    });
    const body = response.body as Health | undefined;
    if (response.status === 200 && body?.ok === true) health = body;
  } catch {
    // Nothing answers.
  }
  if (health === undefined) daemonVersions.delete(socket);
  else daemonVersions.set(socket, health.version);
  return health;
}

/**
 * The broker on `socket` for a command that needs a login (`secret`,
 * `auth`): with no daemon running nobody is logged in, so this throws
 * {@linkcode NotLoggedInError} rather than start one that would be locked
 * anyway (and then stay in the background).
 */
export async function loggedInBroker(socket: string): Promise<Health> {
  const running = await brokerHealth(socket);
  if (running === undefined) {
    throw new NotLoggedInError(
      'not logged in (the broker is not running); run "sherlock login"',
    );
  }
  return sameVersion(running);
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
 * path cannot work, when the daemon that answers runs another version,
 * when the daemon exits at start (with the last line of its log,
 * `logFile`), or after the timeout; {@linkcode CantCreateError} when the
 * socket cannot be trusted.
 */
export async function ensureBroker(
  options: { socket: string; timeoutMs?: number; logFile?: string },
): Promise<Health> {
  const running = await brokerHealth(options.socket);
  if (running) return sameVersion(running);
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
    if (started) return sameVersion(started);
    return sameVersion(await startDaemon(options));
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

/** `GET /v1/whoami`: who is logged in. */
export function whoami(socket: string): Promise<Whoami> {
  return callBroker<Whoami>({
    socket,
    method: "GET",
    path: "/v1/whoami",
    timeoutMs: QUICK_TIMEOUT_MS,
    isAnswer: isWhoami,
  });
}

/**
 * `POST /v1/login`: unlocks the store, or creates it with `create`. Slow
 * on purpose (see {@linkcode LOGIN_TIMEOUT_MS}).
 */
export function login(
  socket: string,
  request: LoginRequest,
): Promise<LoginAnswer> {
  return callBroker<LoginAnswer>({
    socket,
    method: "POST",
    path: "/v1/login",
    body: request,
    timeoutMs: LOGIN_TIMEOUT_MS,
    isAnswer: (body) =>
      isWhoami(body) && typeof (body as Fields).created === "boolean",
  });
}

/**
 * `POST /v1/remember`: keeps a key that unlocks the (unlocked) store in
 * the OS keyring; `DELETE /v1/remember` removes it again.
 */
export function remember(
  socket: string,
  keep: boolean,
): Promise<RememberAnswer> {
  return callBroker<RememberAnswer>({
    socket,
    method: keep ? "POST" : "DELETE",
    path: "/v1/remember",
    timeoutMs: QUICK_TIMEOUT_MS,
    isAnswer: (body) =>
      typeof (body as Fields).keyring === "string" &&
      typeof (body as Fields).removedItem === "boolean",
  });
}

/** `POST /v1/passphrase`: a new passphrase for the unlocked store (slow: scrypt). */
export async function changePassphrase(
  socket: string,
  passphrase: string,
): Promise<void> {
  await callBroker<Record<string, never>>({
    socket,
    method: "POST",
    path: "/v1/passphrase",
    body: { passphrase } satisfies PassphraseChange,
    timeoutMs: LOGIN_TIMEOUT_MS,
    isAnswer: (body) => typeof body === "object" && body !== null,
  });
}

/** `POST /v1/logout`: locks the store and drops every cached token. */
export function logout(socket: string): Promise<LogoutAnswer> {
  return callBroker<LogoutAnswer>({
    socket,
    method: "POST",
    path: "/v1/logout",
    timeoutMs: QUICK_TIMEOUT_MS,
    isAnswer: isWhoami,
  });
}

/**
 * `POST /v1/sessions`: registers a session (the daemon serves tokens only
 * to registered sessions, for their own services) and returns its
 * capability, which every token request of the session presents. Starts
 * the daemon first when nothing answers on the socket (see
 * {@linkcode ensureBroker}). Needs no login.
 */
export async function registerSession(
  options: SessionRequest & { socket: string; logFile?: string },
): Promise<SessionGrant> {
  const request = {
    socket: options.socket,
    method: "POST",
    path: "/v1/sessions",
    body: {
      session: options.session,
      agent: options.agent,
      services: [...options.services],
      ...(options.credentials && options.credentials.length > 0
        ? { credentials: [...options.credentials] }
        : {}),
      pid: options.pid,
    } satisfies SessionRequest,
    timeoutMs: QUICK_TIMEOUT_MS,
    isAnswer: (body: unknown) =>
      isObject(body) && typeof body.capability === "string" &&
      body.capability !== "",
  };
  try {
    return await callBroker<SessionGrant>(request);
  } catch (error) {
    if (!(error instanceof BrokerNotRunningError)) throw error;
    await ensureBroker({ socket: options.socket, logFile: options.logFile });
    return await callBroker<SessionGrant>(request);
  }
}

/**
 * `DELETE /v1/sessions/<id>`: ends a session, so that its capability gets
 * nothing more; false when the daemon did not know it (any more).
 */
export async function endBrokerSession(
  options: { socket: string; session: string; capability: string },
): Promise<boolean> {
  const { ended } = await callBroker<SessionEnded>({
    socket: options.socket,
    method: "DELETE",
    path: `/v1/sessions/${encodeURIComponent(options.session)}`,
    body: { capability: options.capability },
    timeoutMs: QUICK_TIMEOUT_MS,
    isAnswer: (body) => isObject(body) && typeof body.ended === "boolean",
  });
  return ended;
}

/** `POST /v1/token`: one service's token (the shim's request). */
export function fetchToken(
  socket: string,
  request: TokenRequest,
): Promise<TokenResponse> {
  return callBroker<TokenResponse>({
    socket,
    method: "POST",
    path: "/v1/token",
    body: request,
    timeoutMs: TOKEN_TIMEOUT_MS,
    isAnswer: (body) => isObject(body) && isToken(body),
  });
}

/** `GET /v1/secrets`: the stored secrets' names and dates, never values. */
export function listSecrets(socket: string): Promise<SecretList> {
  return callBroker<SecretList>({
    socket,
    method: "GET",
    path: "/v1/secrets",
    timeoutMs: QUICK_TIMEOUT_MS,
    isAnswer: (body) =>
      isObject(body) && Array.isArray(body.secrets) &&
      body.secrets.every((secret) =>
        isObject(secret) && typeof secret.name === "string" &&
        typeof secret.created === "string" &&
        typeof secret.updated === "string"
      ),
  });
}

/** `PUT /v1/secrets/<name>`: stores (or replaces) the secret of `name`. */
export async function setSecret(
  options: { socket: string; name: string; value: string },
): Promise<void> {
  await callBroker({
    socket: options.socket,
    method: "PUT",
    path: secretPath(options.name),
    body: { value: options.value },
    timeoutMs: QUICK_TIMEOUT_MS,
    isAnswer: isAny,
  });
}

/**
 * `DELETE /v1/secrets/<name>`: true when the secret of `name` was removed,
 * false when there was none.
 */
export async function removeSecret(
  socket: string,
  name: string,
): Promise<boolean> {
  const { removed } = await callBroker<SecretRemoved>({
    socket,
    method: "DELETE",
    path: secretPath(name),
    timeoutMs: QUICK_TIMEOUT_MS,
    isAnswer: (body) => isObject(body) && typeof body.removed === "boolean",
  });
  return removed;
}

/**
 * `POST /v1/shutdown`: the daemon stops listening at once, and exits when
 * its open requests are done.
 */
export async function shutdownBroker(socket: string): Promise<void> {
  await callBroker({
    socket,
    method: "POST",
    path: "/v1/shutdown",
    timeoutMs: QUICK_TIMEOUT_MS,
    isAnswer: isAny,
    anyVersion: true,
  });
}

function secretPath(name: string): string {
  return `/v1/secrets/${encodeURIComponent(name)}`;
}

/** The answer to {@linkcode fetchTokens}, one outcome per service. */
export interface FetchedTokens {
  /** The tokens, by service. */
  tokens: Map<string, string>;
  /** The services whose token the broker keeps for the session's shim. */
  deferred: string[];
  /** The services whose token the broker could not get, with why. */
  failed: Map<string, SherlockError>;
}

/**
 * The tokens of the named services for a registered session (see
 * {@linkcode registerSession}), in one round trip: `POST /v1/tokens` (the
 * daemon runs their helpers concurrently, and answers "not logged in" for
 * the whole request while the store is locked; with no services, that is
 * all it checks). A service of `defer` whose token the daemon kept for the
 * session's shim is in `deferred` instead of `tokens`; one the daemon
 * could not get is in `failed`, with the error (naming the service) that
 * `POST /v1/token` would have thrown. Throws {@linkcode NotLoggedInError}.
 */
export async function fetchTokens(
  options: {
    socket: string;
    services: readonly string[];
    defer?: TokensDefer;
    capability: string;
    /** True: `services` are the session's credentials (`[credentials]`). */
    credentials?: boolean;
  },
): Promise<FetchedTokens> {
  const answer = await callBroker<TokensResponse>({
    socket: options.socket,
    method: "POST",
    path: "/v1/tokens",
    body: {
      services: [...options.services],
      capability: options.capability,
      ...(options.defer && options.defer.services.length > 0
        ? { defer: options.defer }
        : {}),
      ...(options.credentials ? { credentials: true } : {}),
    } satisfies TokensRequest,
    timeoutMs: TOKEN_TIMEOUT_MS,
    isAnswer: (body: unknown) =>
      isObject(body) && Array.isArray(body.results) &&
      body.results.every(isTokenResult),
  });
  const tokens = new Map<string, string>();
  const deferred: string[] = [];
  const failed = new Map<string, SherlockError>();
  for (const result of answer.results) {
    if ("error" in result) {
      failed.set(
        result.service,
        brokerError(result.error.status, { error: result.error }),
      );
    } else if ("deferred" in result) deferred.push(result.service);
    else tokens.set(result.service, result.token);
  }
  for (const service of options.services) {
    if (
      !tokens.has(service) && !deferred.includes(service) &&
      !failed.has(service)
    ) {
      throw new SherlockError(
        `broker: no answer for service ${service}`,
        ExitCode.Software,
      );
    }
  }
  return { tokens, deferred, failed };
}

/**
 * How long `POST /v1/oauth/finish` may take: the daemon waits up to five
 * minutes for the browser, then exchanges the code.
 */
const AUTHORIZATION_TIMEOUT_MS = 360_000;

const isStringList = (value: unknown): boolean =>
  Array.isArray(value) && value.every((item) => typeof item === "string");
const isOAuthStatus = (value: unknown): boolean =>
  isObject(value) && typeof value.service === "string" &&
  typeof value.authorized === "boolean" &&
  (value.issuer === null || typeof value.issuer === "string") &&
  isStringList(value.scopes) &&
  (value.accessTokenExpiresAt === null ||
    typeof value.accessTokenExpiresAt === "string") &&
  typeof value.refreshToken === "boolean" && isStringList(value.scopesNeeded);

/**
 * `POST /v1/oauth/start`: the daemon discovers `service`'s authorization
 * server, registers if needed, listens on loopback; the authorization URL
 * comes back. With `device`, it asks for a device code (RFC 8628) and polls;
 * the verification URI and user code come back.
 */
export function startAuthorization(
  socket: string,
  service: string,
  options: { device?: boolean } = {},
): Promise<OAuthStarted> {
  return callBroker<OAuthStarted>({
    socket,
    method: "POST",
    path: "/v1/oauth/start",
    body: options.device ? { service, device: true } : { service },
    timeoutMs: TOKEN_TIMEOUT_MS,
    isAnswer: (body) =>
      isObject(body) && typeof body.flow === "string" &&
      typeof body.url === "string" &&
      (body.userCode === undefined || typeof body.userCode === "string") &&
      (body.legacyDiscovery === undefined ||
        isLegacyDiscovery(body.legacyDiscovery)),
  });
}

const isLegacyDiscovery = (value: unknown): boolean =>
  isObject(value) && typeof value.issuer === "string" &&
  (value.via === "server_metadata" || value.via === "default_endpoints");

const isOidcStatus = (value: unknown): boolean =>
  isObject(value) && typeof value.issuer === "string" &&
  typeof value.subject === "string" &&
  (value.email === undefined || typeof value.email === "string") &&
  typeof value.since === "string" &&
  typeof value.accessTokenExpiresAt === "string" &&
  typeof value.refreshToken === "boolean" &&
  typeof value.tokenExchange === "boolean";

/**
 * `POST /v1/oidc/start`: the daemon reads `[login]` of config.toml,
 * discovers the OpenID provider and listens on loopback (or, with `device`,
 * asks for a device code); the URL (and user code) come back.
 */
export function startOidcLogin(
  socket: string,
  options: { device?: boolean } = {},
): Promise<OAuthStarted> {
  return callBroker<OAuthStarted>({
    socket,
    method: "POST",
    path: "/v1/oidc/start",
    body: options.device ? { device: true } : {},
    timeoutMs: TOKEN_TIMEOUT_MS,
    isAnswer: (body) =>
      isObject(body) && typeof body.flow === "string" &&
      typeof body.url === "string" &&
      (body.userCode === undefined || typeof body.userCode === "string"),
  });
}

/** `POST /v1/oidc/finish`: waits for the sign-in; who is logged in. */
export function finishOidcLogin(
  socket: string,
  flow: string,
): Promise<OidcFinished> {
  return callBroker<OidcFinished>({
    socket,
    method: "POST",
    path: "/v1/oidc/finish",
    body: { flow },
    timeoutMs: AUTHORIZATION_TIMEOUT_MS,
    isAnswer: isOidcStatus,
  });
}

/**
 * `POST /v1/oidc/workload`: the daemon exchanges a workload token (a CI
 * job's) at the OpenID provider for the operator's login; who is logged in.
 */
export function workloadLogin(
  socket: string,
  request: OidcWorkloadRequest,
): Promise<OidcLoginStatus> {
  return callBroker<OidcLoginStatus>({
    socket,
    method: "POST",
    path: "/v1/oidc/workload",
    body: request,
    timeoutMs: TOKEN_TIMEOUT_MS,
    isAnswer: isOidcStatus,
  });
}

/** `POST /v1/oauth/finish`: waits for the redirect; the grant's status. */
export function finishAuthorization(
  socket: string,
  flow: string,
): Promise<OAuthFinished> {
  return callBroker<OAuthFinished>({
    socket,
    method: "POST",
    path: "/v1/oauth/finish",
    body: { flow },
    timeoutMs: AUTHORIZATION_TIMEOUT_MS,
    isAnswer: isOAuthStatus,
  });
}

/** `GET /v1/oauth/status`: every OAuth service's grant, never a value. */
export function authorizationStatus(socket: string): Promise<OAuthStatusList> {
  return callBroker<OAuthStatusList>({
    socket,
    method: "GET",
    path: "/v1/oauth/status",
    timeoutMs: QUICK_TIMEOUT_MS,
    isAnswer: (body) =>
      isObject(body) && Array.isArray(body.services) &&
      body.services.every(isOAuthStatus),
  });
}

/** `POST /v1/oauth/revoke`: revokes at the server, forgets the grant. */
export function revokeAuthorization(
  socket: string,
  service: string,
): Promise<OAuthRevoked> {
  return callBroker<OAuthRevoked>({
    socket,
    method: "POST",
    path: "/v1/oauth/revoke",
    body: { service },
    timeoutMs: TOKEN_TIMEOUT_MS,
    isAnswer: (body) =>
      isObject(body) && typeof body.forgotten === "boolean" &&
      typeof body.revokedAtServer === "boolean",
  });
}

/** Maps a daemon's error answer to the sherlock error with the right exit code. */
function brokerError(status: number, body: unknown): SherlockError {
  const error = (body as ErrorBody | undefined)?.error;
  const message = error?.message ?? `the broker answered HTTP ${status}`;
  if (error?.code === "not_logged_in") {
    // A message that names its own login command (a `secret` service while
    // only the OIDC login is held: `--local`) is passed on as it is.
    if (message.includes('"sherlock login')) {
      return errorWithExitCode(message, ExitCode.NoPermission);
    }
    return new NotLoggedInError(`${message}; run "sherlock login"`);
  }
  if (error?.code === "wrong_passphrase") {
    return new WrongPassphraseError(message);
  }
  const exitCode = errorCodeMeaning(error?.code)?.exitCode ??
    ExitCode.Software;
  // Software: the request was wrong or the daemon failed, not the operator.
  return exitCode === ExitCode.Software
    ? new SherlockError(`broker: ${message}`, exitCode)
    : errorWithExitCode(message, exitCode);
}

/**
 * `POST /v1/oauth/scope`: a bridge tells the broker that the remote server
 * refused a request with a 403 `insufficient_scope` naming `scope`.
 */
export function reportScopeChallenge(
  socket: string,
  request: OAuthScopeChallenge,
): Promise<OAuthScopeRecorded> {
  return callBroker<OAuthScopeRecorded>({
    socket,
    method: "POST",
    path: "/v1/oauth/scope",
    body: request,
    timeoutMs: QUICK_TIMEOUT_MS,
    isAnswer: (body) =>
      isObject(body) && typeof body.recorded === "boolean" &&
      isStringList(body.scopesNeeded),
  });
}

/**
 * The broker's login as the advice on what to run next reads it: not
 * running, or running with the local store unlocked, locked or not yet
 * created, and an SSO login (`[login] provider = "oidc"`) held or not.
 */
export type LoginState =
  | { broker: "not-running" }
  | {
    broker: "running";
    store: "unlocked" | "locked" | "absent";
    sso: boolean;
  };

/**
 * What a token needs of the login: the local store (`secret` services and
 * `sherlock auth` grants), the SSO login (`exchange` services), or either
 * (a session at all).
 */
export type LoginNeed = "store" | "sso" | "any";

/** {@linkcode LoginState} from `whoami` (undefined: no broker answered). */
export function loginState(who: Whoami | undefined): LoginState {
  if (who === undefined) return { broker: "not-running" };
  const sso = who.oidc !== undefined;
  // Before the OIDC login, `loggedIn` meant the store; `storeUnlocked` is
  // absent from an older daemon's answer.
  const unlocked = who.storeUnlocked ?? (who.loggedIn && !sso);
  return {
    broker: "running",
    sso,
    store: unlocked ? "unlocked" : who.storeExists ? "locked" : "absent",
  };
}

/**
 * The one advice every command gives for a login that does not meet
 * `need`, e.g. `run "sherlock login --local"`; undefined when it does.
 * Pure: `services`, `doctor`, `services test`, `auth` and a session all
 * say the same for the same state. While an SSO login is held, `sherlock
 * login` would only sign in again: the local store takes `--local`.
 */
export function loginAdvice(
  state: LoginState,
  need: LoginNeed,
): string | undefined {
  if (state.broker === "not-running") return 'run "sherlock login"';
  const { store, sso } = state;
  if (need === "sso") return sso ? undefined : 'run "sherlock login"';
  if (store === "unlocked" || (need === "any" && sso)) return undefined;
  const command = sso ? "sherlock login --local" : "sherlock login";
  return store === "absent"
    ? `run "${command}" (it creates the local store)`
    : `run "${command}"`;
}
