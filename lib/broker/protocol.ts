/**
 * The broker's API: HTTP/1.1 + JSON over a Unix socket, paths under `/v1/`.
 * Request and response shapes shared by the client (on the launch path) and
 * the daemon. Types and constants only, so importing this costs nothing.
 *
 * | method and path          | body                         | answer            |
 * |--------------------------|------------------------------|-------------------|
 * | GET  /v1/health          |                              | {@linkcode Health}  |
 * | GET  /v1/whoami          |                              | {@linkcode Whoami}  |
 * | POST /v1/login           | {@linkcode LoginRequest}     | {@linkcode LoginAnswer} |
 * | POST /v1/logout          |                              | {@linkcode LogoutAnswer} |
 * | POST /v1/remember        |                              | {@linkcode RememberAnswer} |
 * | DELETE /v1/remember      |                              | {@linkcode RememberAnswer} |
 * | POST /v1/passphrase      | {@linkcode PassphraseChange} | {}                |
 * | POST /v1/sessions        | {@linkcode SessionRequest}   | {@linkcode SessionGrant} |
 * | DELETE /v1/sessions/<id> | {@linkcode SessionEnd}       | {@linkcode SessionEnded} |
 * | POST /v1/token           | {@linkcode TokenRequest}     | {@linkcode TokenResponse} |
 * | POST /v1/tokens          | {@linkcode TokensRequest}    | {@linkcode TokensResponse} |
 * | GET  /v1/secrets         |                              | {@linkcode SecretList} |
 * | PUT  /v1/secrets/<name>  | {@linkcode SecretValue}      | {}                |
 * | DELETE /v1/secrets/<name>|                              | {@linkcode SecretRemoved} |
 * | POST /v1/shutdown        |                              | {}                |
 * | POST /v1/oauth/start     | {@linkcode OAuthStartRequest} | {@linkcode OAuthStarted} |
 * | POST /v1/oauth/finish    | {@linkcode OAuthFinishRequest} | {@linkcode OAuthFinished} |
 * | GET  /v1/oauth/status    |                              | {@linkcode OAuthStatusList} |
 * | POST /v1/oauth/revoke    | {@linkcode OAuthRevokeRequest} | {@linkcode OAuthRevoked} |
 * | POST /v1/oauth/scope     | {@linkcode OAuthScopeChallenge} | {@linkcode OAuthScopeRecorded} |
 * | POST /v1/oidc/start      | {@linkcode OidcStartRequest} | {@linkcode OAuthStarted} |
 * | POST /v1/oidc/finish     | {@linkcode OAuthFinishRequest} | {@linkcode OidcFinished} |
 * | POST /v1/oidc/workload   | {@linkcode OidcWorkloadRequest} | {@linkcode OidcLoginStatus} |
 *
 * Every failure is a 4xx/5xx with an {@linkcode ErrorBody}. Tokens are
 * served only to a registered session (`POST /v1/sessions`), which presents
 * the capability it received, and only for the services it registered; a
 * caller's own claims about its session or agent are never believed.
 *
 * @module
 */

import type { ErrorCode } from "../errors.ts";

/**
 * The largest request body the daemon reads, in bytes: room for the
 * largest secret the store takes (64 Ki characters) even when JSON escapes
 * every one of them.
 */
export const MAX_BODY_BYTES = 512 * 1024;

/**
 * A new store's passphrase must be at least this long. `sherlock login`
 * checks it before asking the daemon; the daemon checks it again for any
 * client.
 */
export const MIN_PASSPHRASE_LENGTH = 8;

/** `GET /v1/health`. */
export interface Health {
  /** Always true. */
  ok: true;
  /** The daemon's sherlock version. */
  version: string;
  /** The daemon's pid. */
  pid: number;
  /** When the daemon started (RFC 3339). */
  started: string;
}

/** `GET /v1/whoami`, and the answer to login and logout. */
export interface Whoami {
  /** True while the store is unlocked or an OIDC login is held. */
  loggedIn: boolean;
  /** The login provider: `oidc` while an OIDC login is held, else `local`. */
  provider: string;
  /** True while the local store is unlocked (`secret` and `oauth` services). */
  storeUnlocked?: boolean;
  /** The OIDC login, while one is held. */
  oidc?: OidcLoginStatus;
  /** Who is logged in (the operator's user name), when logged in. */
  user?: string;
  /** When the login happened (RFC 3339), when logged in. */
  since?: string;
  /** When the idle timeout will lock the store again, if one is set. */
  locksAt?: string;
  /** Whether the local store exists yet (the first login creates it). */
  storeExists: boolean;
  /**
   * The remembered key (`sherlock login --remember`): absent when the
   * store has none and the keyring was not asked.
   */
  remembered?: RememberedKeyStatus;
}

/**
 * The remembered key of the local store, as the daemon last saw it. Never
 * the key.
 */
export interface RememberedKeyStatus {
  /** The OS keyring: "Secret Service", "Keychain", "Credential Manager". */
  keyring: string;
  /**
   * `unlocked`: the keyring's key unlocked the store; `kept`: the store
   * has a remembered slot and was unlocked by the passphrase; `absent`:
   * no item (or a locked keyring); `unavailable`: the keyring could not be
   * asked; `wrong`: the item does not open the store (stale or wrong).
   */
  state: "unlocked" | "kept" | "absent" | "unavailable" | "wrong";
  /** Why it did not unlock the store, one line, when it did not. */
  reason?: string;
}

/** The answer to `POST /v1/remember` and `DELETE /v1/remember`. */
export interface RememberAnswer {
  /** The OS keyring used. */
  keyring: string;
  /** DELETE: whether a keyring item was removed. */
  removedItem: boolean;
  /** DELETE: the store was locked, so its (now useless) slot stays. */
  slotKept?: boolean;
}

/** `POST /v1/passphrase`: a new passphrase for the unlocked store. */
export interface PassphraseChange {
  /** The new passphrase (at least {@linkcode MIN_PASSPHRASE_LENGTH}). */
  passphrase: string;
}

/** Who is signed in at the OpenID provider: never a token. */
export interface OidcLoginStatus {
  /** The provider's issuer. */
  issuer: string;
  /** The ID token's `sub`. */
  subject: string;
  /** The ID token's `email`, when it has one. */
  email?: string;
  /** When the login happened (RFC 3339). */
  since: string;
  /** When the access token held expires (RFC 3339). */
  accessTokenExpiresAt: string;
  /**
   * Whether a refresh token is held: the login then lasts until the
   * provider ends it, a logout, the idle lock or the broker stopping.
   */
  refreshToken: boolean;
  /** Whether the provider's discovery lists token exchange (RFC 8693). */
  tokenExchange: boolean;
  /**
   * Set when the login came from a workload token (`sherlock login
   * --subject-token-file`): whose claims `subject` and `issuer`… are —
   * the ID token the provider issued (verified), else its access token or
   * the workload token itself when a JWT (decoded, not verified) — and the
   * `iss` of those claims.
   */
  workload?: {
    claimsFrom: "id_token" | "access_token" | "subject_token" | "none";
    claimsIssuer?: string;
    /**
     * `sherlock login --id-token-file`: the token handed in is an ID token,
     * held as the login (no exchange, no access token, no refresh).
     */
    held?: boolean;
  };
}

/**
 * The workload token types `sherlock login --subject-token-type` takes, by
 * their short names (RFC 8693 §3 URNs).
 */
export const SUBJECT_TOKEN_TYPES = {
  id_token: "urn:ietf:params:oauth:token-type:id_token",
  jwt: "urn:ietf:params:oauth:token-type:jwt",
  access_token: "urn:ietf:params:oauth:token-type:access_token",
} as const;

/** A CI platform's token is an ID token (GitHub Actions, GitLab CI…). */
export const DEFAULT_SUBJECT_TOKEN_TYPE = SUBJECT_TOKEN_TYPES.id_token;

/**
 * `POST /v1/oidc/workload`: log in at the OpenID provider with a workload
 * identity token (a CI job's), exchanged there (RFC 8693). The token is
 * sent to the provider once and not kept.
 */
export interface OidcWorkloadRequest {
  /** The workload token. */
  subjectToken: string;
  /** Its RFC 8693 token type URN. */
  subjectTokenType: string;
  /**
   * `sherlock login --id-token-file`: the token is an ID token the
   * provider issued to the `[login] client_id` (got by another SSO
   * client), held as the login itself, not exchanged: the identity
   * assertion of Enterprise-Managed Authorization.
   */
  hold?: boolean;
}

/** `POST /v1/oidc/start`: begin `sherlock login` at the OpenID provider. */
export interface OidcStartRequest {
  /** The device authorization grant (RFC 8628) instead of a browser. */
  device?: boolean;
}

/** The answer to `POST /v1/logout`. */
export interface LogoutAnswer extends Whoami {
  /** True when the OpenID provider accepted the refresh token's revocation. */
  revokedAtProvider?: boolean;
}

/** `POST /v1/login`. */
export interface LoginRequest {
  /** The passphrase of the local store. */
  passphrase: string;
  /** Create the store (first login); refused when it exists. */
  create?: boolean;
}

/** The answer to `POST /v1/login`. */
export interface LoginAnswer extends Whoami {
  /**
   * True when this login created the store; false when it unlocked one
   * (also when `create` was asked but another login created it first).
   */
  created: boolean;
}

/**
 * `POST /v1/sessions`: `sherlock run` registers its session before it asks
 * for a token. The daemon answers with a random capability that the
 * session's token requests (its own and its shims') present; it forgets
 * the session on `DELETE /v1/sessions/<id>` or once `pid` is gone.
 */
export interface SessionRequest {
  /** The session's id (`lib/session/records.ts`). */
  session: string;
  /** The agent's profile name. */
  agent: string;
  /** The services the session may get tokens for, each at most once. */
  services: string[];
  /**
   * The agent's own credentials (a profile's `[credentials]`): service or
   * secret names, each at most once, served only to requests that say
   * `credential: true`.
   */
  credentials?: string[];
  /** The pid of the sherlock that runs the session (alive, this user's). */
  pid: number;
}

/** The answer to `POST /v1/sessions`. */
export interface SessionGrant {
  /** The session's capability: 256 random bits, hex. Never logged. */
  capability: string;
}

/** `DELETE /v1/sessions/<id>`: only the session's own capability ends it. */
export interface SessionEnd {
  /** The capability {@linkcode SessionGrant} gave. */
  capability: string;
}

/** The answer to `DELETE /v1/sessions/<id>`. */
export interface SessionEnded {
  /** False when the daemon did not know the session (any more). */
  ended: boolean;
}

/** `POST /v1/token`. */
export interface TokenRequest {
  /** The service's name (its file in services.d). */
  service: string;
  /** The capability of the session that asks ({@linkcode SessionGrant}). */
  capability: string;
  /**
   * The hex SHA-256 of a token the server refused (a bridge's 401): the
   * broker serves a newer one — one refresh for everyone who refused the
   * same token — rather than that one again.
   */
  refused?: string;
  /**
   * True: `service` names one of the session's credentials (a service of
   * that name, else a stored secret of that name), not one of its services.
   */
  credential?: boolean;
}

/** The answer to `POST /v1/token`. */
export interface TokenResponse {
  /** The token. Never logged, never printed. */
  token: string;
  /** When it expires (RFC 3339), if known. */
  expiresAt: string | null;
}

/** The most services one `POST /v1/tokens` may name. */
export const MAX_SERVICES_PER_REQUEST = 256;

/**
 * `POST /v1/tokens`: the tokens of several services in one request (one
 * round trip per session instead of one per service); the daemon fetches
 * them in parallel. Refused as a whole (401 `not_logged_in`) while the
 * store is locked, so an empty list just checks the login.
 */
export interface TokensRequest {
  /** The services' names, each at most once; may be empty. */
  services: string[];
  /** The capability of the session that asks ({@linkcode SessionGrant}). */
  capability: string;
  /**
   * Services (of `services`) whose token the session cannot write into its
   * config when it contains any of `ifContains` (agents expand `$` in a
   * server's env): such a token is not answered but kept, briefly and once,
   * for this session's shim's `POST /v1/token`, and audited only then.
   */
  defer?: TokensDefer;
  /** True: `services` are the session's credentials (see {@linkcode TokenRequest}). */
  credentials?: boolean;
}

/** Which tokens of a {@linkcode TokensRequest} the daemon keeps for the shim. */
export interface TokensDefer {
  /** The services that may be deferred. */
  services: string[];
  /** The strings that make a token deferred (e.g. `["$"]`). */
  ifContains: string[];
}

/** One service's outcome in a {@linkcode TokensResponse}. */
export type TokenResult =
  | ({ service: string } & TokenResponse)
  | {
    service: string;
    /** The token is kept for the session's shim (see {@linkcode TokensDefer}). */
    deferred: true;
  }
  | {
    service: string;
    /** What a `POST /v1/token` for this service would have answered. */
    error: ErrorBody["error"] & { status: number };
  };

/** The answer to `POST /v1/tokens` (200 even when some services failed). */
export interface TokensResponse {
  /** One result per requested service, in the request's order. */
  results: TokenResult[];
}

/** `GET /v1/secrets`: names and dates, never values. */
export interface SecretList {
  /** One entry per stored secret. */
  secrets: { name: string; created: string; updated: string }[];
}

/** `PUT /v1/secrets/<name>`. */
export interface SecretValue {
  /** The secret. */
  value: string;
}

/** `DELETE /v1/secrets/<name>`. */
export interface SecretRemoved {
  /** False when there was no such secret. */
  removed: boolean;
}

/**
 * Why a request failed, as a machine-readable code. Owned by lib/errors.ts,
 * beside `ERROR_CODES` (each one's HTTP status and exit code), which every
 * part may import; re-exported here as part of the protocol.
 */
export type { ErrorCode };

/** The body of every failed request. */
export interface ErrorBody {
  /** What went wrong. */
  error: {
    /** For programs. */
    code: ErrorCode;
    /** For the operator: one line, never a secret. */
    message: string;
  };
}

/** `POST /v1/oauth/start`: begin `sherlock auth <service>`. */
export interface OAuthStartRequest {
  /** The service (`[token] source = "oauth"`). */
  service: string;
  /** Use the device authorization grant (RFC 8628) instead of a browser. */
  device?: boolean;
}

/** The answer to `POST /v1/oauth/start`. */
export interface OAuthStarted {
  /** The flow's id, for `POST /v1/oauth/finish`. */
  flow: string;
  /**
   * The authorization URL the operator's browser opens. It carries the
   * flow's `state` (and PKCE challenge, nonce): the CLI puts it in no argv,
   * only in a 0600 launch page and, as a fallback, on its own stderr.
   */
  url: string;
  /** Device grant only: the user code the operator enters at `url`. */
  userCode?: string;
  /**
   * Set when the server publishes no protected-resource metadata (RFC
   * 9728) and discovery fell back to the 2025-03-26 authorization.
   */
  legacyDiscovery?: LegacyDiscovery;
}

/**
 * What discovery used for a server of the 2025-03-26 authorization (no
 * protected-resource metadata): the authorization server metadata at the
 * server's origin (`server_metadata`), or, when there is none, the default
 * `/authorize`, `/token`, `/register` at the origin (`default_endpoints`).
 * `issuer` is the metadata's issuer, or the origin.
 */
export interface LegacyDiscovery {
  via: "server_metadata" | "default_endpoints";
  issuer: string;
}

/** `POST /v1/oauth/finish`: wait for the browser's redirect. */
export interface OAuthFinishRequest {
  /** The id from {@linkcode OAuthStarted}. */
  flow: string;
}

/** One OAuth service's grant, as `sherlock auth status` shows it: no value. */
export interface OAuthServiceStatus {
  /** The service. */
  service: string;
  /** True when a grant is held and not known to be dead. */
  authorized: boolean;
  /** The authorization server's issuer, when authorized once. */
  issuer: string | null;
  /** The scopes granted. */
  scopes: string[];
  /**
   * When the access token in the daemon's memory expires (RFC 3339), or
   * `"never"` for one that states no expiry and came without a refresh
   * token (kept in the store; served until a server refuses it).
   */
  accessTokenExpiresAt: string | null;
  /** Whether a refresh token is held. */
  refreshToken: boolean;
  /**
   * Scopes the remote server asked for (a 403 `insufficient_scope`) that
   * the grant lacks: the next `sherlock auth` asks for them too.
   */
  scopesNeeded: string[];
  /**
   * True when the service has no live grant and gets its tokens by
   * Enterprise-Managed Authorization from the SSO login instead (known
   * while an OIDC login is held).
   */
  ema?: boolean;
  /**
   * True for a `grant = "client_credentials"` service: no person, no
   * grant; `authorized` says its client's secret or key is stored.
   */
  clientCredentials?: boolean;
}

/** The answer to `POST /v1/oauth/finish`: the status, and how it went. */
export interface OAuthFinished extends OAuthServiceStatus {
  /**
   * Who signed in at the server, when its token answer had an ID token
   * that names them (issuer, audience and expiry checked).
   */
  signedInAs?: string;
  /**
   * Requests to the redirect listener that did not carry the flow's
   * `state` and were ignored (absent when none came).
   */
  ignoredRequests?: number;
  /**
   * The issuer of the grant's earlier authorization server, when the
   * server's issuer changed and sherlock registered anew at the new one (a
   * registration is never reused with another server).
   */
  reRegisteredFrom?: string;
}

/** The answer to `POST /v1/oidc/finish`: the login, and how it went. */
export interface OidcFinished extends OidcLoginStatus {
  /** As in {@linkcode OAuthFinished}: forged redirects ignored. */
  ignoredRequests?: number;
}

/** `GET /v1/oauth/status`. */
export interface OAuthStatusList {
  /** Every service with `[token] source = "oauth"`, sorted by name. */
  services: OAuthServiceStatus[];
}

/** `POST /v1/oauth/revoke`. */
export interface OAuthRevokeRequest {
  /** The service whose grant is revoked and forgotten. */
  service: string;
}

/** The answer to `POST /v1/oauth/revoke`. */
export interface OAuthRevoked {
  /** True when a grant was held (and is now forgotten). */
  forgotten: boolean;
  /** True when the authorization server accepted the revocation. */
  revokedAtServer: boolean;
}

/**
 * `POST /v1/oauth/scope`: a bridge reports that the remote server refused
 * a request with a 403 `insufficient_scope`. Taken only from a registered
 * session, for one of its services; the scopes are recorded on the grant
 * (never a token) for the next `sherlock auth`.
 */
export interface OAuthScopeChallenge {
  /** The service whose server refused. */
  service: string;
  /** The capability of the session that asks ({@linkcode SessionGrant}). */
  capability: string;
  /** The challenge's `scope`: space-separated RFC 6749 scope tokens. */
  scope: string;
}

/** The answer to `POST /v1/oauth/scope`. */
export interface OAuthScopeRecorded {
  /** True when the grant lacked some of the scopes (now recorded). */
  recorded: boolean;
  /** Every scope the next `sherlock auth` adds to the grant's. */
  scopesNeeded: string[];
}
