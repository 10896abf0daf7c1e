/**
 * The broker's OAuth client (MCP authorization 2025-11-25; for a server
 * without protected-resource metadata, the 2025-03-26 discovery): discovery,
 * client registration, the authorization-code flow with PKCE on a loopback
 * listener (`sherlock auth`) or the device grant (`sherlock auth --device`),
 * both run by authorization_flow.ts, refresh (one at a time per service, the
 * rotated refresh token stored before the access token is handed out),
 * revocation and status. A client secret (`[token] client_secret`, or a
 * registration's) goes with every token-endpoint request, by the method
 * the server's metadata names. Access tokens stay in this object's
 * memory, except one that never expires and came without a refresh token:
 * it is the grant's only credential, so it is stored with the grant.
 *
 * @module
 */

import { dynamicClientRegistrationRequest } from "oauth4webapi";
import type { Service } from "../../../services/loader.ts";
import type {
  LegacyDiscovery,
  OAuthFinished,
  OAuthServiceStatus,
} from "../../protocol.ts";
import { BrokerRequestError } from "../request_error.ts";
import { type SecretStore, StoreLockedError } from "../secret_store.ts";
import { isFresh, type Token } from "../token_cache.ts";
import { type Clock, systemClock } from "../clock.ts";
import {
  readClient,
  readGrant,
  removeGrant,
  type StoredGrant,
  updateGrant,
  whileRefreshing,
  writeClient,
  writeGrant,
} from "./grants.ts";
import { DEVICE_CODE_GRANT } from "./device_grant.ts";
import { failed, type JsonAnswer, origin, readJsonAnswer } from "./http.ts";
import { type GrantStorage, refreshGrant } from "./refresher.ts";
import { BOUNDED_HTTP, revokeToken } from "./token_endpoint.ts";
import {
  AUTHORIZATION_TIMEOUT_MS,
  AuthorizationFlows,
  type FlowMessages,
  type FlowStart,
} from "./authorization_flow.ts";
import { signedInAs } from "./id_token.ts";
import { discover, type Discovered } from "./discovery.ts";
import { requestClientCredentials } from "./client_credentials.ts";
import { CALLBACK_PATH } from "./loopback.ts";
import {
  chooseClientAuthMethod,
  chooseScopes,
  clientAuthentication,
  type ClientAuthMethod,
  JWT_BEARER_GRANT,
  limitScopes,
  MAX_STEP_UPS,
  missingScopes,
  oneLine,
  readGrantedScopes,
  redeemsIdJag,
  requestedResource,
  type ServerMetadata,
  withOfflineAccess,
} from "./rules.ts";

// Discovery moved to discovery.ts; importers of client.ts keep working.
export { discover, type Discovered };

/** The lifetime assumed for an access token that states none. */
const ASSUMED_LIFETIME_S = 300;

/** Who the client is at one server, and how it proves it. */
interface ClientIdentity {
  clientId: string;
  /** How the secret is sent; absent for a public client. */
  clientAuth?: ClientAuthMethod;
  /** The store name of `[token] client_secret`. */
  clientSecretName?: string;
}

/** What every flow asks for, and of whom: what its grant is kept with. */
interface FlowTarget {
  service: string;
  issuer: string;
  client: ClientIdentity;
  metadata: ServerMetadata;
  resource: string | null;
  scopes: string[];
  /** The scopes of a step-up this flow asks for (a 403's). */
  stepUp: string[];
  /** The earlier grant's issuer, when the client was registered anew here. */
  reRegisteredFrom?: string;
}

/** What `start` returns: the flow's id and what the operator opens. */
export interface StartedFlow extends FlowStart {
  /** Set when discovery fell back to the 2025-03-26 authorization. */
  legacyDiscovery?: LegacyDiscovery;
}

interface MemoryToken extends Token {
  fetchedAt: number;
}

/**
 * A refresh the server answered whose grant could not be written: the
 * rotated refresh token is the grant's only live one (the server took the
 * spent one), so it is kept here until a write succeeds.
 */
interface UnstoredRotation {
  /** The refresh token the server took: the one still on disk. */
  spent: string;
  refreshToken: string;
  scopes?: string[];
  /** Handed out only once the grant is written. */
  token: MemoryToken;
}

/** The OAuth state of one daemon: flows under way, access tokens. */
export class OAuthClient {
  /** Every expiry, margin and poll interval (injected by tests). */
  readonly #clock: Clock;
  /** Discovery of a client-credentials service, kept until a fetch fails. */
  #discovered = new Map<string, Discovered>();
  /** `sherlock auth`'s flows under way, one per service. */
  readonly #flows: AuthorizationFlows<FlowTarget>;
  #tokens = new Map<string, MemoryToken>();
  #refreshing = new Map<string, Promise<Token>>();
  #unstored = new Map<string, UnstoredRotation>();
  /** Step-ups recorded per service since its last authorization. */
  #stepUps = new Map<string, number>();
  /** Called when a service's grant changes: the broker drops its cache. */
  onGrantChange: (service: string) => void = () => {};

  /** `clock`: the daemon's (the system clock when unset). */
  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#flows = new AuthorizationFlows({
      clock: this.#clock,
      unknown: "no such authorization under way (it ended or timed out)",
      stopped: "the broker stopped",
    });
  }

  /**
   * A fresh access token for a `grant = "client_credentials"` service: the
   * one in memory until shortly before it expires, else one token request
   * — a single one for all callers at once — authenticated by the client's
   * secret or signed key from the store. No person, no refresh token: an
   * expired token is fetched anew.
   */
  clientCredentialsToken(service: Service, store: SecretStore): Promise<Token> {
    const name = service.service.name;
    const held = this.#tokens.get(name);
    if (held && isFresh(held, this.#clock.now())) {
      return Promise.resolve({ token: held.token, expiresAt: held.expiresAt });
    }
    const running = this.#refreshing.get(name);
    if (running) return running;
    const fetching = this.#fetchClientCredentials(service, store).finally(
      () => {
        if (this.#refreshing.get(name) === fetching) {
          this.#refreshing.delete(name);
        }
      },
    );
    this.#refreshing.set(name, fetching);
    return fetching;
  }

  async #fetchClientCredentials(
    service: Service,
    store: SecretStore,
  ): Promise<Token> {
    const name = service.service.name;
    const server = service.server as { url: string };
    let discovered = this.#discovered.get(name);
    if (discovered === undefined) {
      discovered = await discover(server.url);
      this.#discovered.set(name, discovered);
    }
    try {
      const { metadata } = discovered;
      const fetchedAt = this.#clock.now();
      const answer = await requestClientCredentials({
        service,
        store,
        metadata,
        scopes: chooseScopes({
          challenge: discovered.challengeScope,
          supported: discovered.scopesSupported,
          configured: service.token.scopes,
          serverSupported: metadata.scopesSupported,
        }),
        resource: requestedResource({
          sendResource: service.token.send_resource,
          serverUrl: server.url,
          published: discovered.resource,
        }),
        now: fetchedAt,
      });
      const tokens = tokenAnswer(answer, metadata.tokenEndpoint);
      const held: MemoryToken = {
        token: tokens.accessToken,
        fetchedAt,
        expiresAt: fetchedAt + (tokens.expiresIn ?? ASSUMED_LIFETIME_S) * 1000,
      };
      this.#tokens.set(name, held);
      return { token: held.token, expiresAt: held.expiresAt };
    } catch (error) {
      // The server may have moved: discover anew next time.
      this.#discovered.delete(name);
      throw error;
    }
  }

  /**
   * The status of a client-credentials service: "authorized" when its
   * client's secret or key is stored (no grant is kept). Never a value.
   */
  clientCredentialsStatus(
    service: Service,
    store: SecretStore | undefined,
  ): OAuthServiceStatus {
    const name = service.service.name;
    const credential = service.token.client_key ?? service.token.client_secret;
    const held = this.#tokens.get(name);
    const now = this.#clock.now();
    return {
      service: name,
      authorized: store !== undefined && credential !== undefined &&
        store.get(credential) !== undefined,
      issuer: this.#discovered.get(name)?.metadata.issuer ?? null,
      scopes: [],
      accessTokenExpiresAt:
        held?.expiresAt !== undefined && held.expiresAt > now
          ? new Date(held.expiresAt).toISOString()
          : null,
      refreshToken: false,
      scopesNeeded: [],
      clientCredentials: true,
    };
  }

  /**
   * Forgets every access token (logout, idle lock), and a rotated refresh
   * token not yet written: with the store locked, it cannot be.
   */
  clear(): void {
    this.#tokens.clear();
    this.#refreshing.clear();
    this.#unstored.clear();
  }

  /**
   * Forgets `service`'s access token when `refused` says so of it. A
   * refused token that was the grant's only credential (it never expires)
   * marks the grant as needing `sherlock auth`.
   */
  async forgetIf(
    service: string,
    refused: (token: string) => boolean,
    store: SecretStore | undefined,
  ): Promise<void> {
    const held = this.#tokens.get(service);
    if (held && refused(held.token)) this.#tokens.delete(service);
    if (!store || !readGrant(store, service)?.accessToken) return;
    // The grant as it is on disk now: another daemon may have replaced it.
    await updateGrant(
      store,
      service,
      (grant) =>
        grant?.accessToken && refused(grant.accessToken)
          ? { ...grant, accessToken: undefined, needsAuthorization: true }
          : undefined,
    );
  }

  /**
   * A fresh access token for `service`: the one in memory, else one
   * refresh — a single one for all callers at once. Throws
   * `needs_authorization` when there is no live grant.
   */
  token(service: Service, store: SecretStore): Promise<Token> {
    const name = service.service.name;
    const held = this.#tokens.get(name);
    // A token without an expiry is served until a server refuses it.
    if (
      held && (held.expiresAt === undefined || isFresh(held, this.#clock.now()))
    ) {
      return Promise.resolve({ token: held.token, expiresAt: held.expiresAt });
    }
    const running = this.#refreshing.get(name);
    if (running) return running;
    const refreshing = this.#refresh(name, store).finally(() => {
      if (this.#refreshing.get(name) === refreshing) {
        this.#refreshing.delete(name);
      }
    });
    this.#refreshing.set(name, refreshing);
    return refreshing;
  }

  /**
   * One refresh of `name`'s grant. Daemons sharing the store take turns
   * (a per-grant lock beside it), and each reads the grant from disk
   * first: a refresh token another daemon rotated is never presented
   * again, which the server would take for a stolen one and revoke the
   * grant (RFC 9700 §4.14.2).
   */
  #refresh(name: string, store: SecretStore): Promise<Token> {
    return whileRefreshing(store, name, () => this.#refreshAlone(name, store));
  }

  async #refreshAlone(name: string, store: SecretStore): Promise<Token> {
    const unstored = this.#unstored.get(name);
    if (unstored) {
      const kept = await this.#storeRotation(name, store, unstored);
      if (kept) return kept;
    }
    await store.reload();
    const grant = readGrant(store, name);
    if (!grant || grant.needsAuthorization) throw needsAuthorization(name);
    // The daemon restarted or locked: the stored token is still good.
    if (grant.accessToken) {
      return this.#keep(name, { accessToken: grant.accessToken }, true);
    }
    if (!grant.refreshToken) throw needsAuthorization(name);
    let kept: Token | undefined;
    const outcome = await refreshGrant(
      this.#grantStorage(name, store, (token) => kept = token),
    );
    if (outcome.kind === "dead") {
      this.#tokens.delete(name);
      throw needsAuthorization(name);
    }
    // `sherlock auth` or a revoke replaced the grant meanwhile: what it
    // holds now decides.
    if (outcome.kind === "none") return this.#refreshAlone(name, store);
    if (kept) return kept;
    // An error answer: its one line.
    tokenAnswer(outcome.answer, grant.tokenEndpoint);
    throw failed(
      `the token endpoint at ${origin(grant.tokenEndpoint)} answered no token`,
    );
  }

  /**
   * `name`'s grant in the store, for the one refresh (`refresher.ts`):
   * read from disk at each turn, written by compare and swap. `kept`
   * receives the access token of a rotation that was stored.
   */
  #grantStorage(
    name: string,
    store: SecretStore,
    kept: (token: Token) => void,
  ): GrantStorage {
    let endpoint = "";
    return {
      read: async () => {
        await store.reload();
        const grant = readGrant(store, name);
        if (
          !grant?.refreshToken || grant.needsAuthorization || grant.accessToken
        ) {
          return undefined;
        }
        endpoint = grant.tokenEndpoint;
        return {
          refreshToken: grant.refreshToken,
          resource: grant.resource,
          server: {
            issuer: grant.issuer,
            tokenEndpoint: grant.tokenEndpoint,
          },
          client: {
            clientId: grant.clientId,
            clientSecret: clientSecret(grant, store, name),
            method: grant.clientAuth,
          },
        };
      },
      keep: async (spent, answer) => {
        const tokens = tokenAnswer(answer, endpoint);
        const token = await this.#storeRotation(name, store, {
          spent,
          refreshToken: tokens.refreshToken ?? spent,
          scopes: tokens.scopes,
          token: memoryToken(tokens, { now: this.#clock.now() }),
        });
        if (token) kept(token);
        return token !== undefined;
      },
      // Keeps the rest (issuer, client) for `sherlock auth`.
      markDead: (spent) =>
        updateGrant(
          store,
          name,
          (current) =>
            current?.refreshToken === spent
              ? {
                ...current,
                refreshToken: undefined,
                needsAuthorization: true,
              }
              : undefined,
        ),
    };
  }

  /**
   * Writes a refresh's rotated refresh token into the grant — compare and
   * swap: only while the grant on disk still holds the spent one — before
   * its access token is handed out. Returns that token; undefined when the
   * grant changed meanwhile (the rotation is then of no use), or the
   * token expired while the write waited. A failed write keeps the
   * rotation in memory, to be written at the next request, and fails
   * this one: the access token of a grant that cannot be stored is never
   * handed out (a crash would then leave only the spent refresh token).
   */
  async #storeRotation(
    name: string,
    store: SecretStore,
    rotation: UnstoredRotation,
  ): Promise<Token | undefined> {
    let wrote: boolean;
    try {
      // The grant as it is now: a step-up may have been recorded meanwhile.
      wrote = await updateGrant(
        store,
        name,
        (current) =>
          current?.refreshToken === rotation.spent &&
            !current.needsAuthorization
            ? {
              ...current,
              refreshToken: rotation.refreshToken,
              scopes: rotation.scopes ?? current.scopes,
            }
            : undefined,
      );
    } catch (error) {
      // A locked store cannot be written later either: a logout or the idle
      // lock forgets the rotation with everything else (`clear`).
      if (error instanceof StoreLockedError || store.locked) throw error;
      this.#unstored.set(name, rotation);
      throw new BrokerRequestError({
        code: "store_write_failed",
        message: `service ${name}'s rotated refresh token cannot be stored (${
          oneLine(error instanceof Error ? error.message : String(error))
        }); the broker keeps it in memory and writes it at the next request — fix the store, and do not stop the broker until then`,
      });
    }
    this.#unstored.delete(name);
    if (!wrote) return undefined;
    const { token } = rotation;
    if (
      token.expiresAt !== undefined && !isFresh(token, this.#clock.now())
    ) {
      return undefined;
    }
    this.#tokens.set(name, token);
    return { token: token.token, expiresAt: token.expiresAt };
  }

  /**
   * Keeps an access token in memory: until its `expiresIn`, else for the
   * assumed lifetime, or, when `lasting`, until a server refuses it.
   */
  #keep(
    name: string,
    tokens: { accessToken: string; expiresIn?: number },
    lasting = false,
  ): Token {
    const held = memoryToken(tokens, { now: this.#clock.now(), lasting });
    this.#tokens.set(name, held);
    return { token: held.token, expiresAt: held.expiresAt };
  }

  /**
   * Starts `sherlock auth` for `service`: discovery, registration, a
   * loopback listener; returns the flow's id and the authorization URL.
   * With `device`, the device grant instead: the verification URI and the
   * user code, while the daemon polls.
   */
  async start(
    service: Service,
    store: SecretStore,
    options: { device?: boolean } = {},
  ): Promise<StartedFlow> {
    const name = service.service.name;
    const server = service.server;
    if (!("url" in server) || service.token.source !== "oauth") {
      throw new BrokerRequestError({
        code: "bad_request",
        message:
          `service ${name} is not an OAuth service ([token] source = "oauth")`,
      });
    }
    if (service.token.grant === "client_credentials") {
      throw new BrokerRequestError({
        code: "bad_request",
        message:
          `service ${name} needs no authorization: it logs in as its client (grant = "client_credentials"), with the client ${
            service.token.client_key ? "key" : "secret"
          } in the store; the broker fetches its tokens itself`,
      });
    }
    const discovered = await discover(server.url);
    const metadata = discovered.metadata;
    if (options.device && !metadata.deviceAuthorizationEndpoint) {
      throw unsupported(
        `the authorization server ${metadata.issuer} offers no device authorization (RFC 8628: no device_authorization_endpoint); run "sherlock auth ${name}" without --device`,
      );
    }
    if (!options.device && !metadata.codeChallengeMethods.includes("S256")) {
      throw unsupported(
        `the authorization server ${metadata.issuer} does not advertise PKCE S256; sherlock refuses to authorize without it`,
      );
    }
    const { registered, ...client } = await this.#client(
      service,
      metadata,
      store,
      { device: options.device === true },
    );
    const held = readGrant(store, name);
    // A registration is kept per issuer: a grant of another server, and a
    // registration made now, mean the server's issuer changed.
    const reRegisteredFrom =
      registered && held && held.issuer !== metadata.issuer
        ? held.issuer
        : undefined;
    const stepUp = held?.scopesNeeded ?? [];
    const scopes = withOfflineAccess(
      chooseScopes({
        challenge: discovered.challengeScope,
        supported: discovered.scopesSupported,
        configured: service.token.scopes,
        held: held?.scopes,
        stepUp,
        serverSupported: metadata.scopesSupported,
      }),
      metadata.scopesSupported,
    );
    const resource = requestedResource({
      sendResource: service.token.send_resource,
      serverUrl: server.url,
      published: discovered.resource,
    });
    // `sherlock auth` says when it used the 2025-03-26 discovery.
    const note = discovered.legacy
      ? { legacyDiscovery: discovered.legacy }
      : {};
    const target: FlowTarget = {
      service: name,
      issuer: metadata.issuer,
      client,
      metadata,
      resource,
      scopes,
      stepUp,
      reRegisteredFrom,
    };
    const parameters: Record<string, string> = resource !== null
      ? { resource }
      : {};
    const request = {
      // One flow per service: a new `sherlock auth` replaces one under way
      // (a browser tab left open must not hold a listener for 5 minutes).
      key: name,
      server: metadata,
      clientId: client.clientId,
      scopes,
      authorizationParameters: new URLSearchParams(parameters),
      tokenParameters: parameters,
      messages: flowMessages(name, options.device === true),
      context: target,
    };
    if (options.device) {
      // A confidential client authenticates at both endpoints; its secret
      // is read once, for the whole poll.
      const started = await this.#flows.startDevice({
        ...request,
        client: {
          clientId: client.clientId,
          clientSecret: clientSecret(
            { ...client, issuer: metadata.issuer },
            store,
            name,
          ),
          method: client.clientAuth,
        },
      });
      return { ...started, ...note };
    }
    return { ...await this.#flows.startBrowser(request), ...note };
  }

  /**
   * Waits for flow `flowId` to end — the redirect, checked and its code
   * exchanged, or the device grant's approval — and stores the grant.
   * Returns the service's status. When `signal` aborts (the `sherlock
   * auth` that waits is gone), the flow ends and its listener closes at
   * once.
   */
  async finish(
    flowId: string,
    store: () => SecretStore,
    signal?: AbortSignal,
  ): Promise<OAuthFinished> {
    const { answer, ignored, context: flow } = await this.#flows.finish(
      flowId,
      {
        signal,
        // Read once the redirect passed its checks.
        client: (target) => ({
          clientId: target.client.clientId,
          clientSecret: clientSecret(
            { ...target.client, issuer: target.issuer },
            store(),
            target.service,
          ),
          method: target.client.clientAuth,
        }),
      },
    );
    const status = await this.#keepGrant(flow, answer, store);
    const who = signedInAs(
      (answer.json as Record<string, unknown> | null)?.id_token,
      { issuer: flow.issuer, clientId: flow.client.clientId },
    );
    return {
      ...status,
      ...(who !== undefined ? { signedInAs: who } : {}),
      ...(ignored > 0 ? { ignoredRequests: ignored } : {}),
      ...(flow.reRegisteredFrom
        ? { reRegisteredFrom: flow.reRegisteredFrom }
        : {}),
    };
  }

  /** Stores the grant of a token answer that ended a flow. */
  async #keepGrant(
    flow: FlowTarget,
    answer: JsonAnswer,
    store: () => SecretStore,
  ): Promise<OAuthServiceStatus> {
    const tokens = tokenAnswer(answer, flow.metadata.tokenEndpoint);
    // No expiry and no refresh token (GitHub's OAuth Apps): the access
    // token is the grant's only credential, kept in the store with it.
    const lasting = tokens.refreshToken === undefined &&
      tokens.expiresIn === undefined;
    const scopes = tokens.scopes ?? flow.scopes;
    // A step-up the operator did not consent to in full stays pending, and
    // so does one a bridge recorded while the browser ran.
    const recorded = readGrant(store(), flow.service)?.scopesNeeded ?? [];
    // Only what the AS lists, when it lists scopes: it never grants others.
    const listed = flow.metadata.scopesSupported;
    const stillNeeded = missingScopes(
      [...new Set([...flow.stepUp, ...recorded])],
      scopes,
    ).filter((scope) => !listed?.length || listed.includes(scope));
    const grant: StoredGrant = {
      issuer: flow.issuer,
      ...flow.client,
      tokenEndpoint: flow.metadata.tokenEndpoint,
      revocationEndpoint: flow.metadata.revocationEndpoint,
      resource: flow.resource,
      scopes,
      ...(stillNeeded.length > 0 ? { scopesNeeded: stillNeeded } : {}),
      refreshToken: tokens.refreshToken,
      ...(lasting ? { accessToken: tokens.accessToken } : {}),
    };
    // The login may have locked while the browser ran.
    await writeGrant(store(), flow.service, grant);
    this.#stepUps.delete(flow.service);
    this.#tokens.delete(flow.service);
    this.onGrantChange(flow.service);
    this.#keep(flow.service, tokens, lasting);
    return this.status(flow.service, store());
  }

  /** Ends every flow (the daemon stops). */
  close(): void {
    this.#flows.close();
  }

  /**
   * Records that `service`'s remote server refused a request for want of
   * `scopes` (a 403 `insufficient_scope` a bridge saw): the scopes the
   * grant lacks are kept on it, for `sherlock auth status` and the next
   * `sherlock auth`. Nothing is recorded without a grant (there is no
   * token to refuse). Bounded: at most {@linkcode MAX_STEP_UPS} step-ups
   * between two authorizations (counted by this daemon), and the grant's
   * held and needed scopes together within `limitScopes`, the rest
   * dropped. Returns the scopes now needed.
   */
  async recordScopeChallenge(
    service: string,
    scopes: readonly string[],
    store: SecretStore,
  ): Promise<{ recorded: boolean; scopesNeeded: string[] }> {
    let scopesNeeded: string[] = [];
    let recorded = false;
    const stepUps = this.#stepUps.get(service) ?? 0;
    // On the grant as it is on disk now: another daemon may have rotated it.
    await updateGrant(store, service, (grant) => {
      if (!grant) return undefined;
      const before = grant.scopesNeeded ?? [];
      scopesNeeded = before;
      const missing = missingScopes(scopes, [...grant.scopes, ...before]);
      if (missing.length === 0 || stepUps >= MAX_STEP_UPS) return undefined;
      const room = new Set(
        limitScopes([...grant.scopes, ...before, ...missing]),
      );
      const added = missing.filter((scope) => room.has(scope));
      if (added.length === 0) return undefined;
      scopesNeeded = [...before, ...added];
      recorded = true;
      return { ...grant, scopesNeeded };
    });
    if (recorded) this.#stepUps.set(service, stepUps + 1);
    return { recorded, scopesNeeded };
  }

  /**
   * The status of `service`'s grant: never a value. Without `store` (only
   * the OIDC login held), no grant is known.
   */
  status(service: string, store: SecretStore | undefined): OAuthServiceStatus {
    const grant = store && readGrant(store, service);
    const held = this.#tokens.get(service);
    const live = grant !== undefined && !grant.needsAuthorization;
    return {
      service,
      authorized: live,
      issuer: grant?.issuer ?? null,
      scopes: grant?.scopes ?? [],
      accessTokenExpiresAt: live && grant.accessToken !== undefined
        ? "never"
        : live && held?.expiresAt !== undefined &&
            held.expiresAt > this.#clock.now()
        ? new Date(held.expiresAt).toISOString()
        : null,
      refreshToken: live && grant.refreshToken !== undefined,
      scopesNeeded: grant?.scopesNeeded ?? [],
    };
  }

  /**
   * Revokes `service`'s refresh token — or its stored access token, when
   * that is the grant's only credential — at the server (RFC 7009, when it
   * offers revocation), then forgets the grant and the access token.
   */
  async revoke(
    service: string,
    store: SecretStore,
  ): Promise<{ forgotten: boolean; revokedAtServer: boolean }> {
    // Another daemon sharing the store may have rotated the refresh token.
    await store.reload();
    const grant = readGrant(store, service);
    let revokedAtServer = false;
    // A rotated refresh token not yet written is the live one.
    const unstored = this.#unstored.get(service)?.refreshToken;
    this.#unstored.delete(service);
    const credential = unstored ?? grant?.refreshToken ?? grant?.accessToken;
    if (grant?.revocationEndpoint && credential) {
      let secret: string | undefined | null;
      try {
        secret = clientSecret(grant, store, service);
      } catch {
        // Its secret is not stored: not revoked there, forgotten here.
        secret = null;
      }
      if (secret !== null) {
        revokedAtServer = await revokeToken({
          server: {
            issuer: grant.issuer,
            revocationEndpoint: grant.revocationEndpoint,
          },
          client: {
            clientId: grant.clientId,
            clientSecret: secret,
            method: grant.clientAuth,
          },
          token: credential,
          hint: unstored ?? grant.refreshToken
            ? "refresh_token"
            : "access_token",
        });
      }
    }
    const forgotten = await removeGrant(store, service);
    this.#stepUps.delete(service);
    this.#tokens.delete(service);
    this.onGrantChange(service);
    return { forgotten, revokedAtServer };
  }

  /**
   * How `service`'s client authenticates at `metadata`'s token endpoint
   * (an ID-JAG's redemption, `ema.ts`): the form fields and headers. A
   * configured public `client_id` needs no store; a secret or a
   * registration does (`not_logged_in` while it is locked). Registers the
   * client, with the JWT-bearer grant, where it has no client yet.
   */
  async authenticationAt(
    service: Service,
    metadata: ServerMetadata,
    store: SecretStore | undefined,
  ): Promise<
    { form: Record<string, string>; headers: Record<string, string> }
  > {
    const { token } = service;
    if (token.client_id && !token.client_secret) {
      return clientAuthentication({ clientId: token.client_id });
    }
    const name = service.service.name;
    const unlocked = requireUnlocked(name, store);
    const client = await this.#client(service, metadata, unlocked, {
      device: false,
      jwtBearer: true,
    });
    return clientAuthentication({
      clientId: client.clientId,
      clientSecret: clientSecret(
        { ...client, issuer: metadata.issuer },
        unlocked,
        name,
      ),
      method: client.clientAuth,
    });
  }

  /**
   * The client for `metadata`'s server: the service's `client_id` (with
   * its `client_secret`, checked to be in the store), a CIMD URL when the
   * server takes them, the stored registration at this issuer, or a new
   * dynamic registration (stored, with the secret it may answer).
   */
  async #client(
    service: Service,
    metadata: ServerMetadata,
    store: SecretStore,
    options: { device: boolean; jwtBearer?: boolean },
  ): Promise<ClientIdentity & { registered?: boolean }> {
    const { token } = service;
    const name = service.service.name;
    if (token.client_id && token.client_secret) {
      const clientAuth = chooseClientAuthMethod(
        metadata.tokenEndpointAuthMethods,
      );
      if (clientAuth === undefined) {
        throw unsupported(
          `the authorization server ${metadata.issuer} takes neither client_secret_basic nor client_secret_post at its token endpoint; remove [token] client_secret from services.d/${name}.toml`,
        );
      }
      const identity = {
        clientId: token.client_id,
        clientAuth,
        clientSecretName: token.client_secret,
      };
      // Before the browser opens: a missing secret fails now, not after.
      clientSecret({ ...identity, issuer: metadata.issuer }, store, name);
      return identity;
    }
    if (token.client_id) return { clientId: token.client_id };
    if (
      token.client_metadata_url && metadata.clientIdMetadataDocumentSupported
    ) {
      return { clientId: token.client_metadata_url };
    }
    const stored = readClient(store, metadata.issuer);
    // A registration made without the device grant cannot poll, one
    // without the JWT-bearer grant cannot redeem an ID-JAG: register anew.
    if (
      stored && (!options.device || stored.deviceGrant) &&
      (!options.jwtBearer || stored.jwtBearer)
    ) {
      return {
        clientId: stored.clientId,
        ...(stored.clientSecret && stored.clientAuth
          ? { clientAuth: stored.clientAuth }
          : {}),
      };
    }
    if (!metadata.registrationEndpoint) {
      throw unsupported(
        `the authorization server ${metadata.issuer} offers no dynamic registration${
          token.client_metadata_url
            ? " and takes no client metadata documents"
            : ""
        }; register a client there and set [token] client_id in services.d/${service.service.name}.toml`,
      );
    }
    const jwtBearer = redeemsIdJag(metadata);
    const response = await dynamicClientRegistrationRequest(
      {
        issuer: metadata.issuer,
        registration_endpoint: metadata.registrationEndpoint,
      },
      {
        client_name: "sherlock",
        application_type: "native",
        redirect_uris: [`http://127.0.0.1${CALLBACK_PATH}`],
        grant_types: [
          "authorization_code",
          "refresh_token",
          ...(metadata.deviceAuthorizationEndpoint ? [DEVICE_CODE_GRANT] : []),
          ...(jwtBearer ? [JWT_BEARER_GRANT] : []),
        ],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      },
      BOUNDED_HTTP,
    );
    // Read here, not by oauth4webapi's processDynamicClientRegistrationResponse:
    // it takes only HTTP 201 and wants `client_secret_expires_at` beside any
    // secret, and servers answer 200 (or leave it out) and work.
    const answer = await readJsonAnswer(response);
    const json = answer.json as Record<string, unknown> | undefined;
    if (answer.status !== 201 && answer.status !== 200) {
      throw failed(
        `dynamic registration at ${
          origin(metadata.registrationEndpoint)
        } failed (HTTP ${answer.status}${
          typeof json?.error === "string" ? `, ${oneLine(json.error)}` : ""
        }); set [token] client_id in services.d/${service.service.name}.toml`,
      );
    }
    if (typeof json?.client_id !== "string" || json.client_id === "") {
      throw failed(
        `dynamic registration at ${
          origin(metadata.registrationEndpoint)
        } answered no client_id`,
      );
    }
    // A server may register a confidential client all the same: its
    // secret is kept with the registration and sent as it says.
    const secret = typeof json.client_secret === "string" &&
        json.client_secret !== ""
      ? json.client_secret
      : undefined;
    const registered = json.token_endpoint_auth_method;
    const clientAuth = secret === undefined || registered === "none"
      ? undefined
      : registered === "client_secret_basic" ||
          registered === "client_secret_post"
      ? registered
      : chooseClientAuthMethod(metadata.tokenEndpointAuthMethods);
    await writeClient(store, {
      issuer: metadata.issuer,
      clientId: json.client_id,
      ...(clientAuth ? { clientSecret: secret, clientAuth } : {}),
      deviceGrant: metadata.deviceAuthorizationEndpoint !== undefined,
      jwtBearer,
    });
    return {
      clientId: json.client_id,
      ...(clientAuth ? { clientAuth } : {}),
      registered: true,
    };
  }
}

/** The lines of `sherlock auth <service>`'s flow. */
function flowMessages(service: string, device: boolean): FlowMessages {
  const again = `run "sherlock auth ${service}" again`;
  return {
    unfinished: `the authorization of ${service} ended unfinished; ${again}`,
    received: "sherlock received the authorization; you can close this window.",
    timedOut: `no authorization arrived within ${
      AUTHORIZATION_TIMEOUT_MS / 1000
    } s; ${again}`,
    replaced: `a newer "sherlock auth ${service}" replaced this one`,
    interrupted: `the authorization of ${service} was interrupted; ${again}`,
    retry: device
      ? `sherlock auth --device ${service}`
      : `sherlock auth ${service}`,
  };
}

/**
 * An access token as kept in memory: until its `expiresIn`, else for the
 * assumed lifetime, or, when `lasting`, until a server refuses it.
 */
function memoryToken(
  tokens: { accessToken: string; expiresIn?: number },
  options: { now: number; lasting?: boolean },
): MemoryToken {
  const fetchedAt = options.now;
  const expiresAt = options.lasting
    ? undefined
    : fetchedAt + (tokens.expiresIn ?? ASSUMED_LIFETIME_S) * 1000;
  return { token: tokens.accessToken, expiresAt, fetchedAt };
}

/** The parts of a token endpoint's answer; throws on an error answer. */
export function tokenAnswer(
  answer: JsonAnswer,
  endpoint: string,
): {
  accessToken: string;
  refreshToken?: string;
  expiresIn?: number;
  scopes?: string[];
} {
  const json = answer.json as Record<string, unknown> | undefined;
  // GitHub answers its errors (bad_verification_code…) with HTTP 200.
  if (answer.status !== 200 || typeof json?.error === "string") {
    throw failed(
      `the token endpoint at ${
        origin(endpoint)
      } answered HTTP ${answer.status}${
        typeof json?.error === "string" ? ` (${oneLine(json.error)})` : ""
      }`,
    );
  }
  if (
    answer.notJson || typeof json?.access_token !== "string" ||
    json.access_token === "" ||
    typeof json.token_type !== "string" ||
    json.token_type.toLowerCase() !== "bearer"
  ) {
    throw failed(
      `the token endpoint at ${origin(endpoint)} answered no bearer token`,
    );
  }
  return {
    accessToken: json.access_token,
    refreshToken: typeof json.refresh_token === "string" && json.refresh_token
      ? json.refresh_token
      : undefined,
    expiresIn: typeof json.expires_in === "number" && json.expires_in > 0
      ? json.expires_in
      : undefined,
    scopes: typeof json.scope === "string"
      ? readGrantedScopes(json.scope)
      : undefined,
  };
}

/**
 * The client secret of `client` (a grant or a flow's client): the store's
 * entry `[token] client_secret` names, else the registration's at its
 * issuer; undefined for a public client. Throws `no_secret` when the
 * named secret is not stored.
 */
function clientSecret(
  client: ClientIdentity & { issuer: string },
  store: SecretStore,
  service: string,
): string | undefined {
  if (client.clientAuth === undefined) return undefined;
  if (client.clientSecretName !== undefined) {
    const value = store.get(client.clientSecretName);
    if (value === undefined) {
      throw new BrokerRequestError({
        code: "no_secret",
        message:
          `service ${service}'s client secret is not stored; run "sherlock secret set ${client.clientSecretName}"`,
      });
    }
    return value;
  }
  const registered = readClient(store, client.issuer);
  return registered?.clientId === client.clientId
    ? registered.clientSecret
    : undefined;
}

/** `needs_authorization`: no live grant; the message names the command. */
export function needsAuthorization(service: string): BrokerRequestError {
  return new BrokerRequestError({
    code: "needs_authorization",
    message:
      `service ${service} needs authorization: run "sherlock auth ${service}"`,
  });
}

/** The store, or `not_logged_in` naming `sherlock login --local`. */
function requireUnlocked(
  service: string,
  store: SecretStore | undefined,
): SecretStore {
  if (store) return store;
  throw new BrokerRequestError({
    code: "not_logged_in",
    message:
      `service ${service}'s client at its authorization server is kept in the local store, which is locked: run "sherlock login --local"`,
  });
}

function unsupported(message: string): BrokerRequestError {
  return new BrokerRequestError({ code: "oauth_unsupported", message });
}
