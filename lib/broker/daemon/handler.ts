/**
 * The daemon's HTTP routes. Every request gets a JSON answer; a malformed,
 * oversized or unknown request gets a 4xx with an {@linkcode ErrorBody}, and
 * nothing a request does can stop the daemon.
 *
 * @module
 */

import { concatBytes } from "../../runtime/bytes.ts";
import { ERROR_CODES } from "../../errors.ts";
import { hasControlCharacters, NAME_PATTERN } from "../../config/names.ts";
import { VERSION } from "../../version.ts";
import {
  type ErrorBody,
  type ErrorCode,
  type Health,
  type LoginRequest,
  type LogoutAnswer,
  MAX_BODY_BYTES,
  MAX_SERVICES_PER_REQUEST,
  MIN_PASSPHRASE_LENGTH,
  type OAuthFinishRequest,
  type OAuthRevoked,
  type OAuthRevokeRequest,
  type OAuthScopeChallenge,
  type OAuthScopeRecorded,
  type OAuthServiceStatus,
  type OAuthStarted,
  type OAuthStartRequest,
  type OAuthStatusList,
  type OidcLoginStatus,
  type OidcStartRequest,
  type OidcWorkloadRequest,
  type PassphraseChange,
  type RememberAnswer,
  type SecretList,
  type SecretValue,
  type SessionEnd,
  type SessionEnded,
  type SessionGrant,
  type SessionRequest,
  type TokenRequest,
  type TokenResult,
  type TokensDefer,
  type TokensRequest,
  type TokensResponse,
} from "../protocol.ts";
import type { Settings } from "../../config/settings.ts";
import { DEFAULT_OIDC_SCOPES } from "../../config/settings_schema.ts";
import { appendAudit } from "./audit_log.ts";
import { readChallengedScopes } from "./oauth/rules.ts";
import type { OidcConfig } from "./oauth/oidc_login.ts";
import type { LoginState } from "./login_state.ts";
import { isInternalSecretName, SecretStoreError } from "./secret_store.ts";
import { BrokerRequestError } from "./request_error.ts";
import { KeyringUnavailableError } from "./keyring/keyring.ts";
import type { RegisteredSession } from "./sessions.ts";
import type { TokenBroker } from "./token_broker.ts";

/** What the routes work with. */
export interface HandlerContext {
  /** The daemon's login. */
  login: LoginState;
  /** The daemon's token broker. */
  tokens: TokenBroker;
  /** sherlock's state folder (audit log). */
  stateDir: string;
  /** When the daemon started. */
  started: Date;
  /** Asks the daemon to stop after answering. */
  shutdown: () => void;
  /** Writes a line to the daemon's own log (never a secret). */
  log: (line: string) => void;
  /** Reads config.toml afresh (`[login]` for an OIDC login). */
  settings: () => Promise<Settings>;
}

/** Answers one request. Never throws. */
export async function handleRequest(
  request: Request,
  context: HandlerContext,
): Promise<Response> {
  try {
    return await route(request, context);
  } catch (error) {
    const { code, message } = describeError(error, context);
    return failure(code, message);
  }
}

/** The answer for a failure; an unexpected one is logged, not shown. */
function describeError(
  error: unknown,
  context: HandlerContext,
): { status: number; code: ErrorCode; message: string } {
  if (error instanceof BrokerRequestError) {
    return { status: error.status, code: error.code, message: error.message };
  }
  const code = storeErrorCode(error);
  if (code) {
    return {
      status: ERROR_CODES[code].status,
      code,
      message: (error as Error).message,
    };
  }
  if (error instanceof KeyringUnavailableError) {
    return {
      status: ERROR_CODES.keyring_unavailable.status,
      code: "keyring_unavailable",
      message: error.message,
    };
  }
  context.log(`internal error: ${(error as Error)?.message ?? String(error)}`);
  return {
    status: ERROR_CODES.internal.status,
    code: "internal",
    message: "internal error; see the broker's log",
  };
}

/**
 * The routes that never ask the keyring: a login, a logout or a shutdown
 * must not first unlock the store with it, health is for liveness, and a
 * new passphrase follows a login with the old one. (`/v1/remember` does:
 * a forget then removes the store's slot as well as the item.)
 */
const NO_KEYRING_PATHS = new Set([
  "/v1/health",
  "/v1/login",
  "/v1/logout",
  "/v1/shutdown",
  "/v1/passphrase",
]);

async function route(
  request: Request,
  context: HandlerContext,
): Promise<Response> {
  const url = new URL(request.url, "http://sherlock");
  const { pathname } = url;
  const method = request.method;
  const allow = (...methods: string[]) => {
    if (!methods.includes(method)) {
      throw new BrokerRequestError({
        code: "method_not_allowed",
        message: `${method} is not allowed on ${pathname}`,
      });
    }
  };

  if (pathname === "/v1/health") {
    allow("GET");
    return ok<Health>({
      ok: true,
      version: VERSION,
      pid: Deno.pid,
      started: context.started.toISOString(),
    });
  }
  // A store whose key the OS keyring remembers is unlocked with it before
  // anything that needs the login (bounded; no-op when logged in).
  if (!NO_KEYRING_PATHS.has(pathname)) await context.login.unlockRemembered();
  if (pathname === "/v1/whoami") {
    allow("GET");
    return ok(context.login.whoami());
  }
  if (pathname === "/v1/remember") {
    allow("POST", "DELETE");
    await discardBody(request);
    const keyring = context.login.keyringName;
    if (method === "POST") {
      const answer = await context.login.remember();
      appendAudit(context.stateDir, { event: "remember", keyring });
      return ok<RememberAnswer>(answer);
    }
    const answer = await context.login.forget();
    appendAudit(context.stateDir, { event: "forget", keyring });
    return ok<RememberAnswer>(answer);
  }
  if (pathname === "/v1/passphrase") {
    allow("POST");
    const body = await readJson<PassphraseChange>(request);
    const passphrase = requireString(body, "passphrase");
    if (passphrase.length < MIN_PASSPHRASE_LENGTH) {
      throw badRequest(
        `the passphrase is too short: at least ${MIN_PASSPHRASE_LENGTH} characters`,
      );
    }
    await unlockedStore(context).changePassphrase(passphrase);
    appendAudit(context.stateDir, { event: "passphrase_change" });
    return ok({});
  }
  if (pathname === "/v1/login") {
    allow("POST");
    const body = await readJson<LoginRequest>(request);
    const passphrase = requireString(body, "passphrase");
    if (body.create !== undefined && typeof body.create !== "boolean") {
      throw badRequest(`"create" must be a boolean`);
    }
    // sherlock login checks this first; any other client meets it here.
    if (body.create === true && passphrase.length < MIN_PASSPHRASE_LENGTH) {
      throw badRequest(
        `the passphrase is too short: a new store needs at least ${MIN_PASSPHRASE_LENGTH} characters`,
      );
    }
    try {
      const whoami = await context.login.login(
        passphrase,
        body.create === true,
      );
      context.tokens.clear();
      appendAudit(context.stateDir, { event: "login", provider: "local" });
      return ok(whoami);
    } catch (error) {
      appendAudit(context.stateDir, {
        event: "login_failed",
        provider: "local",
        reason: storeErrorCode(error) ?? "internal",
      });
      throw error;
    }
  }
  if (pathname === "/v1/logout") {
    allow("POST");
    await discardBody(request);
    const oidc = await context.login.oidc.logout();
    context.tokens.clear();
    const whoami = context.login.logout();
    appendAudit(context.stateDir, {
      event: "logout",
      provider: oidc.wasLoggedIn ? "oidc" : "local",
    });
    return ok<LogoutAnswer>(
      oidc.wasLoggedIn
        ? { ...whoami, revokedAtProvider: oidc.revokedAtServer }
        : whoami,
    );
  }
  if (pathname === "/v1/sessions") {
    allow("POST");
    const body = await readJson<SessionRequest>(request);
    // Both go into the audit log: bounded, no control characters.
    const session = requireCaller(body, "session");
    const agent = requireCaller(body, "agent");
    const services = requireNames(body, "services");
    const credentials = body.credentials === undefined
      ? []
      : requireNames(body, "credentials");
    const pid = body.pid;
    if (typeof pid !== "number" || !Number.isSafeInteger(pid)) {
      throw badRequest(`"pid" must be an integer`);
    }
    const capability = context.tokens.sessions.register({
      session,
      agent,
      services,
      credentials,
      pid,
    });
    appendAudit(context.stateDir, {
      event: "session_start",
      agent,
      session,
      services,
      ...(credentials.length > 0 ? { credentials } : {}),
      pid,
      ...processExecutable(pid),
    });
    return ok<SessionGrant>({ capability });
  }
  if (pathname.startsWith("/v1/sessions/")) {
    allow("DELETE");
    const session = pathname.slice("/v1/sessions/".length);
    const body = await readJson<SessionEnd>(request);
    const capability = requireString(body, "capability");
    const ended = context.tokens.sessions.end(session, capability);
    return ok<SessionEnded>({ ended: ended !== undefined });
  }
  if (pathname === "/v1/token") {
    allow("POST");
    const body = await readJson<TokenRequest>(request);
    const service = requireName(body, "service");
    const capability = requireString(body, "capability");
    const refused = body.refused;
    if (
      refused !== undefined &&
      (typeof refused !== "string" || !/^[0-9a-f]{64}$/.test(refused))
    ) {
      throw badRequest(`"refused" must be a token's hex SHA-256`);
    }
    const session = registeredSession(context, capability, [service]);
    const credential = body.credential === true;
    return ok(
      await context.tokens.token({ service, session, refused, credential }),
    );
  }
  if (pathname === "/v1/tokens") {
    allow("POST");
    const body = await readJson<TokensRequest>(request);
    const services = requireNames(body, "services");
    const capability = requireString(body, "capability");
    const defer = optionalDefer(body, services);
    const credential = body.credentials === true;
    const session = registeredSession(context, capability, services);
    // The local store or the OIDC login; each source checks what it needs.
    if (!context.login.loggedIn) unlockedStore(context);
    const results = await Promise.all(
      services.map(async (service): Promise<TokenResult> => {
        try {
          const deferIfContains = defer?.services.includes(service)
            ? defer.ifContains
            : undefined;
          return {
            service,
            ...await context.tokens.token({
              service,
              session,
              deferIfContains,
              credential,
            }),
          };
        } catch (error) {
          return { service, error: describeError(error, context) };
        }
      }),
    );
    return ok<TokensResponse>({ results });
  }
  if (pathname === "/v1/secrets") {
    allow("GET");
    // The broker's own entries (OAuth grants) are not the operator's secrets.
    const secrets = unlockedStore(context).list().filter((secret) =>
      !isInternalSecretName(secret.name)
    );
    return ok<SecretList>({ secrets });
  }
  if (pathname.startsWith("/v1/secrets/")) {
    let name: string;
    try {
      name = decodeURIComponent(pathname.slice("/v1/secrets/".length));
    } catch {
      throw badRequest("the secret's name is not valid percent-encoding");
    }
    if (!NAME_PATTERN.test(name)) {
      throw badRequest("the secret's name is not a valid service name");
    }
    allow("PUT", "DELETE");
    if (method === "PUT") {
      const body = await readJson<SecretValue>(request);
      const value = requireString(body, "value");
      if (hasControlCharacters(value)) {
        throw badRequest(
          "the secret has control characters (a newline?); it would break the header or variable it goes into",
        );
      }
      await unlockedStore(context).set(name, value);
      // The name only: the value never goes into the log.
      appendAudit(context.stateDir, { event: "secret_set", service: name });
      return ok({});
    }
    await discardBody(request);
    const removed = await unlockedStore(context).remove(name);
    appendAudit(context.stateDir, {
      event: "secret_rm",
      service: name,
      ...(removed ? {} : { reason: "no_secret" }),
    });
    return ok({ removed });
  }
  if (pathname.startsWith("/v1/oauth/")) {
    return await oauthRoute(request, pathname, context);
  }
  if (pathname === "/v1/oidc/start") {
    allow("POST");
    const body = await readJson<OidcStartRequest>(request);
    if (body.device !== undefined && typeof body.device !== "boolean") {
      throw badRequest(`"device" must be a boolean`);
    }
    const config = oidcConfig(await context.settings());
    const started = await context.login.oidc.start(config, {
      device: body.device === true,
      exchanges: (await context.tokens.servicesWithSource("exchange")).map(
        (service) => service.token,
      ),
    });
    appendAudit(context.stateDir, { event: "login_start", provider: "oidc" });
    return ok<OAuthStarted>(started);
  }
  if (pathname === "/v1/oidc/finish") {
    allow("POST");
    const body = await readJson<OAuthFinishRequest>(request);
    const flow = requireString(body, "flow");
    // The signal aborts when `sherlock login` disconnects (Ctrl-C): the
    // flow ends and its loopback listener closes at once.
    const status = await context.login.oidc.finish(flow, request.signal);
    // A new login: no token got with the old one is served again.
    context.tokens.clear();
    context.login.touch();
    appendAudit(context.stateDir, { event: "login", provider: "oidc" });
    return ok<OidcLoginStatus>(status);
  }
  if (pathname === "/v1/oidc/workload") {
    allow("POST");
    const body = await readJson<OidcWorkloadRequest>(request);
    const subjectToken = requireString(body, "subjectToken");
    const subjectTokenType = requireString(body, "subjectTokenType");
    if (!subjectTokenType.startsWith("urn:")) {
      throw badRequest(`"subjectTokenType" must be a token type URN`);
    }
    const config = oidcConfig(await context.settings());
    const status = body.hold === true
      ? await context.login.oidc.loginWithIdToken(config, subjectToken)
      : await context.login.oidc.loginWithWorkloadToken(config, {
        token: subjectToken,
        type: subjectTokenType,
      });
    // A new login: no token got with the old one is served again.
    context.tokens.clear();
    context.login.touch();
    appendAudit(context.stateDir, { event: "login", provider: "oidc" });
    return ok<OidcLoginStatus>(status);
  }
  if (pathname === "/v1/shutdown") {
    allow("POST");
    await discardBody(request);
    appendAudit(context.stateDir, { event: "shutdown" });
    context.shutdown();
    return ok({});
  }
  await discardBody(request);
  return failure("not_found", `no such endpoint: ${pathname}`);
}

/** `sherlock auth`'s routes: start, finish, status, revoke. */
async function oauthRoute(
  request: Request,
  pathname: string,
  context: HandlerContext,
): Promise<Response> {
  const oauth = context.tokens.oauth;
  if (pathname === "/v1/oauth/status") {
    if (request.method !== "GET") throw notAllowed(request.method, pathname);
    // The OIDC login alone (the store locked) still shows EMA services.
    const store = context.login.oidc.loggedIn
      ? context.login.store
      : unlockedStore(context);
    // What another daemon sharing the store did since (`sherlock auth`, a
    // revoke); what this one loaded when that cannot be read now.
    if (store && !store.locked) await store.reload().catch(() => {});
    const { services } = await context.tokens.oauthServices();
    return ok<OAuthStatusList>({
      services: await Promise.all(
        services.map(async (name) => {
          const service = await context.tokens.service(name).catch(() =>
            undefined
          );
          return service?.token.grant === "client_credentials"
            ? oauth.clientCredentialsStatus(service, store)
            : withEma(oauth.status(name, store), context);
        }),
      ),
    });
  }
  if (request.method !== "POST") throw notAllowed(request.method, pathname);
  if (pathname === "/v1/oauth/start") {
    const body = await readJson<OAuthStartRequest>(request);
    const name = requireName(body, "service");
    if (body.device !== undefined && typeof body.device !== "boolean") {
      throw badRequest(`"device" must be a boolean`);
    }
    const store = unlockedStore(context);
    const service = await context.tokens.service(name);
    const started = await oauth.start(service, store, {
      device: body.device === true,
    });
    appendAudit(context.stateDir, { event: "oauth_start", service: name });
    return ok<OAuthStarted>(started);
  }
  if (pathname === "/v1/oauth/finish") {
    const body = await readJson<OAuthFinishRequest>(request);
    const flow = requireString(body, "flow");
    unlockedStore(context);
    // The signal aborts when `sherlock auth` disconnects (Ctrl-C): the
    // flow ends and its loopback listener closes at once.
    const status = await oauth.finish(
      flow,
      () => unlockedStore(context),
      request.signal,
    );
    appendAudit(context.stateDir, {
      event: "oauth_authorized",
      service: status.service,
    });
    return ok<OAuthServiceStatus>(status);
  }
  if (pathname === "/v1/oauth/revoke") {
    const body = await readJson<OAuthRevokeRequest>(request);
    const name = requireName(body, "service");
    const revoked = await oauth.revoke(name, unlockedStore(context));
    appendAudit(context.stateDir, { event: "oauth_revoked", service: name });
    return ok<OAuthRevoked>(revoked);
  }
  if (pathname === "/v1/oauth/scope") {
    const body = await readJson<OAuthScopeChallenge>(request);
    const service = requireName(body, "service");
    const capability = requireString(body, "capability");
    const scopes = readChallengedScopes(requireString(body, "scope"));
    if (typeof scopes === "string") throw badRequest(scopes);
    const session = registeredSession(
      context,
      capability,
      [service],
      "oauth_scope_failed",
    );
    return ok<OAuthScopeRecorded>(
      await context.tokens.recordScopeChallenge({ service, session, scopes }),
    );
  }
  await discardBody(request);
  return failure("not_found", `no such endpoint: ${pathname}`);
}

/** `[login]` of config.toml as the OIDC login takes it. */
function oidcConfig(settings: Settings): OidcConfig {
  const login = settings.login;
  if (login.provider !== "oidc" || !login.issuer || !login.client_id) {
    throw new BrokerRequestError({
      code: "invalid_config",
      message:
        `config.toml has no [login] provider = "oidc" (with issuer and client_id); see docs/manual/login_sso.md`,
    });
  }
  return {
    issuer: login.issuer,
    clientId: login.client_id,
    scopes: login.scopes ?? DEFAULT_OIDC_SCOPES,
    audience: login.audience,
  };
}

/**
 * `status` with `ema: true` when the service has no live grant, an OIDC
 * login is held and its server offers Enterprise-Managed Authorization.
 * A discovery that fails says nothing: status never fails for it.
 */
async function withEma(
  status: OAuthServiceStatus,
  context: HandlerContext,
): Promise<OAuthServiceStatus> {
  if (status.authorized || !context.login.oidc.loggedIn) return status;
  try {
    const service = await context.tokens.service(status.service);
    const offered = await context.tokens.ema.offered(service);
    return offered ? { ...status, ema: true } : status;
  } catch {
    return status;
  }
}

function notAllowed(method: string, pathname: string): BrokerRequestError {
  return new BrokerRequestError({
    code: "method_not_allowed",
    message: `${method} is not allowed on ${pathname}`,
  });
}

/**
 * The live session of `capability`; a refusal is audited (as `event`, a
 * token request's by default) for each of `services` with no agent or
 * session, since a caller's claim is no fact.
 */
function registeredSession(
  context: HandlerContext,
  capability: string,
  services: readonly string[],
  event: "token_failed" | "oauth_scope_failed" = "token_failed",
): RegisteredSession {
  try {
    return context.tokens.sessions.resolve(capability);
  } catch (error) {
    for (const service of services) {
      appendAudit(context.stateDir, {
        event,
        service,
        reason: "unknown_session",
      });
    }
    throw error;
  }
}

/**
 * The executable of `pid` as this daemon reads it (Linux), for the audit
 * log: what registered a session, whatever it says it is.
 */
function processExecutable(pid: number): { exe?: string } {
  if (Deno.build.os !== "linux") return {};
  try {
    return { exe: Deno.readLinkSync(`/proc/${pid}/exe`) };
  } catch {
    return {};
  }
}

function unlockedStore(context: HandlerContext) {
  const store = context.login.store;
  if (store === undefined) {
    throw new BrokerRequestError({
      code: "not_logged_in",
      message: "not logged in: the broker's store is locked",
    });
  }
  return store;
}

/** Reads a JSON object body of at most {@linkcode MAX_BODY_BYTES}. */
async function readJson<T>(request: Request): Promise<Partial<T>> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (request.body) {
    for await (const chunk of request.body) {
      total += chunk.length;
      if (total > MAX_BODY_BYTES) throw tooLarge();
      chunks.push(chunk);
    }
  }
  const bytes = concatBytes(chunks);
  let parsed: unknown;
  try {
    parsed = JSON.parse(
      new TextDecoder("utf-8", { fatal: true }).decode(bytes),
    );
  } catch {
    throw badRequest("the body is not valid JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw badRequest("the body must be a JSON object");
  }
  return parsed as Partial<T>;
}

async function discardBody(request: Request): Promise<void> {
  if (!request.body) return;
  let total = 0;
  for await (const chunk of request.body) {
    total += chunk.length;
    if (total > MAX_BODY_BYTES) throw tooLarge();
  }
}

function requireString(body: Record<string, unknown>, key: string): string {
  const value = body[key];
  if (typeof value !== "string" || value === "") {
    throw badRequest(`"${key}" must be a non-empty string`);
  }
  return value;
}

/**
 * A session id or an agent's name, which the audit log records and
 * `sherlock broker log` prints: sherlock's session ids are 12 hex digits
 * and agent names are lowercase names, so anything beyond a short plain
 * word is refused (no control character, no line break, no 400 KB).
 */
const CALLER_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

function requireCaller(body: Record<string, unknown>, key: string): string {
  const value = requireString(body, key);
  if (!CALLER_PATTERN.test(value)) {
    throw badRequest(
      `"${key}" must be 1 to 64 letters, digits, '.', '_' or '-'`,
    );
  }
  return value;
}

function requireName(body: Record<string, unknown>, key: string): string {
  const value = requireString(body, key);
  if (!NAME_PATTERN.test(value)) {
    throw badRequest(`"${key}" is not a valid service name`);
  }
  return value;
}

function requireNames(body: Record<string, unknown>, key: string): string[] {
  const value = body[key];
  if (!Array.isArray(value) || value.length > MAX_SERVICES_PER_REQUEST) {
    throw badRequest(
      `"${key}" must be a list of at most ${MAX_SERVICES_PER_REQUEST} service names`,
    );
  }
  for (const name of value) {
    if (typeof name !== "string" || !NAME_PATTERN.test(name)) {
      throw badRequest(`"${key}" must hold valid service names only`);
    }
  }
  if (new Set(value).size !== value.length) {
    throw badRequest(`"${key}" names a service twice`);
  }
  return value;
}

/** The `defer` of a tokens request: services among `services`, and 1–16 short strings. */
function optionalDefer(
  body: Partial<TokensRequest>,
  services: readonly string[],
): TokensDefer | undefined {
  const defer = body.defer as unknown;
  if (defer === undefined) return undefined;
  const { services: deferred, ifContains } = (defer ?? {}) as Partial<
    TokensDefer
  >;
  if (
    typeof defer !== "object" || defer === null || !Array.isArray(deferred) ||
    !deferred.every((name) => services.includes(name)) ||
    !Array.isArray(ifContains) || ifContains.length === 0 ||
    ifContains.length > 16 ||
    !ifContains.every((part) =>
      typeof part === "string" && part !== "" && part.length <= 16
    )
  ) {
    throw badRequest(
      `"defer" must be {"services": [some of "services"], "ifContains": [1 to 16 short strings]}`,
    );
  }
  return { services: deferred, ifContains };
}

function badRequest(message: string): BrokerRequestError {
  return new BrokerRequestError({ code: "bad_request", message });
}

function tooLarge(): BrokerRequestError {
  return new BrokerRequestError({
    code: "too_large",
    message: `the body is larger than ${MAX_BODY_BYTES} bytes`,
  });
}

function ok<T>(body: T): Response {
  return Response.json(body);
}

/** An error answer, with the code's status. */
function failure(code: ErrorCode, message: string): Response {
  return Response.json({ error: { code, message } } satisfies ErrorBody, {
    status: ERROR_CODES[code].status,
  });
}

/**
 * The protocol's code for an error of the secret store, if it is one (its
 * messages name files and reasons, never a secret or the passphrase). The
 * status and the client's exit code follow from the code (`ERROR_CODES`).
 */
function storeErrorCode(error: unknown): ErrorCode | undefined {
  if (!(error instanceof SecretStoreError)) return undefined;
  switch (error.code) {
    case "wrong-passphrase":
      return "wrong_passphrase";
    case "not-found":
      return "no_store";
    case "locked":
      return "not_logged_in";
    case "corrupt":
    case "newer-version":
      return "store_unusable";
    case "exists":
      return "store_exists";
    case "invalid-name":
    case "invalid-value":
    case "invalid-passphrase":
      return "bad_request";
    case "write-failed":
      return "store_write_failed";
  }
}
