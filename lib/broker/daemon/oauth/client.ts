/**
 * The broker's OAuth client (MCP authorization 2025-11-25): discovery,
 * client registration, the authorization-code flow with PKCE on a loopback
 * listener (`sherlock auth`) or the device grant (`sherlock auth --device`,
 * device_grant.ts), refresh (one at a time per service, the
 * rotated refresh token stored before the access token is handed out),
 * revocation and status. Access tokens stay in this object's memory.
 *
 * @module
 */

import type { Service } from "../../../services/loader.ts";
import type { OAuthServiceStatus } from "../../protocol.ts";
import { BrokerRequestError } from "../request_error.ts";
import type { SecretStore } from "../secret_store.ts";
import { isFresh, type Token } from "../token_cache.ts";
import {
  readClient,
  readGrant,
  removeGrant,
  type StoredGrant,
  writeClient,
  writeGrant,
} from "./grants.ts";
import {
  DEVICE_CODE_GRANT,
  pollDeviceToken,
  requestDeviceAuthorization,
} from "./device_grant.ts";
import { failed, type JsonAnswer, origin, requestJson } from "./http.ts";
import { CALLBACK_PATH, listenForRedirect } from "./loopback.ts";
import {
  authorizationServerMetadataUrls,
  canonicalResource,
  checkAuthorizationResponse,
  chooseScopes,
  oneLine,
  parseBearerChallenge,
  pkcePair,
  protectedResourceMetadataUrls,
  randomString,
  readResourceMetadata,
  readServerMetadata,
  type ServerMetadata,
} from "./rules.ts";

/** How long `sherlock auth` waits for the browser's redirect. */
export const AUTHORIZATION_TIMEOUT_MS = 300_000;

/** The lifetime assumed for an access token that states none. */
const ASSUMED_LIFETIME_S = 300;

interface Flow {
  service: string;
  issuer: string;
  clientId: string;
  metadata: ServerMetadata;
  resource: string | null;
  scopes: string[];
  verifier: string;
  state: string;
  redirectUri: string;
  result: Promise<URLSearchParams>;
  close: () => void;
  timer: ReturnType<typeof setTimeout>;
}

/** A device-grant flow: the daemon polls while the operator approves. */
interface DeviceFlow {
  service: string;
  issuer: string;
  clientId: string;
  metadata: ServerMetadata;
  resource: string | null;
  scopes: string[];
  /** The poll; settles with the token endpoint's answer. */
  answer: Promise<JsonAnswer>;
  abort: AbortController;
}

/** What `start` returns: the flow's id and what the operator opens. */
export interface StartedFlow {
  flow: string;
  url: string;
  /** Device grant only: the code the operator enters at `url`. */
  userCode?: string;
}

interface MemoryToken extends Token {
  fetchedAt: number;
}

/** The OAuth state of one daemon: flows under way, access tokens. */
export class OAuthClient {
  #flows = new Map<string, Flow>();
  #deviceFlows = new Map<string, DeviceFlow>();
  #tokens = new Map<string, MemoryToken>();
  #refreshing = new Map<string, Promise<Token>>();
  /** Called when a service's grant changes: the broker drops its cache. */
  onGrantChange: (service: string) => void = () => {};

  /** Forgets every access token (logout, idle lock). */
  clear(): void {
    this.#tokens.clear();
    this.#refreshing.clear();
  }

  /** Forgets `service`'s access token when `refused` says so of it. */
  forgetIf(service: string, refused: (token: string) => boolean): void {
    const held = this.#tokens.get(service);
    if (held && refused(held.token)) this.#tokens.delete(service);
  }

  /**
   * A fresh access token for `service`: the one in memory, else one
   * refresh — a single one for all callers at once. Throws
   * `needs_authorization` when there is no live grant.
   */
  token(service: Service, store: SecretStore): Promise<Token> {
    const name = service.service.name;
    const held = this.#tokens.get(name);
    if (held && isFresh(held, Date.now())) {
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

  async #refresh(name: string, store: SecretStore): Promise<Token> {
    const grant = readGrant(store, name);
    if (!grant || grant.needsAuthorization || !grant.refreshToken) {
      throw needsAuthorization(name);
    }
    const form: Record<string, string> = {
      grant_type: "refresh_token",
      refresh_token: grant.refreshToken,
      client_id: grant.clientId,
    };
    if (grant.resource !== null) form.resource = grant.resource;
    const answer = await requestJson(grant.tokenEndpoint, { form });
    const json = answer.json as Record<string, unknown> | undefined;
    if (
      answer.status === 400 && json?.error === "invalid_grant" &&
      readGrant(store, name)?.refreshToken === grant.refreshToken
    ) {
      // The grant is dead (revoked, expired, a reused refresh token); keep
      // the rest (issuer, client) for `sherlock auth`.
      await writeGrant(store, name, {
        ...grant,
        refreshToken: undefined,
        needsAuthorization: true,
      });
      this.#tokens.delete(name);
      throw needsAuthorization(name);
    }
    const tokens = tokenAnswer(answer, grant.tokenEndpoint);
    // `sherlock auth` or a revoke replaced the grant meanwhile: keep theirs.
    if (readGrant(store, name)?.refreshToken !== grant.refreshToken) {
      return { token: tokens.accessToken };
    }
    // Rotation: the new refresh token is on disk before the access token
    // is handed out, so a crash cannot leave only the spent one.
    await writeGrant(store, name, {
      ...grant,
      refreshToken: tokens.refreshToken ?? grant.refreshToken,
      scopes: tokens.scopes ?? grant.scopes,
    });
    return this.#keep(name, tokens);
  }

  #keep(
    name: string,
    tokens: { accessToken: string; expiresIn?: number },
  ): Token {
    const fetchedAt = Date.now();
    const expiresAt = fetchedAt +
      (tokens.expiresIn ?? ASSUMED_LIFETIME_S) * 1000;
    this.#tokens.set(name, { token: tokens.accessToken, expiresAt, fetchedAt });
    return { token: tokens.accessToken, expiresAt };
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
    const clientId = await this.#clientId(service, metadata, store, {
      device: options.device === true,
    });
    const scopes = chooseScopes({
      challenge: discovered.challengeScope,
      supported: discovered.scopesSupported,
      configured: service.token.scopes,
    });
    const resource = service.token.send_resource === false
      ? null
      : canonicalResource(server.url);
    if (options.device) {
      return await this.#startDevice({
        service: name,
        issuer: metadata.issuer,
        clientId,
        metadata,
        resource,
        scopes,
      });
    }
    const { verifier, challenge } = await pkcePair();
    const state = randomString(32);
    const flowId = randomString(16);
    const listener = listenForRedirect({
      unfinished:
        `the authorization of ${name} ended unfinished; run "sherlock auth ${name}" again`,
      received:
        "sherlock received the authorization; you can close this window.",
    });
    const { redirectUri } = listener;
    const url = new URL(metadata.authorizationEndpoint);
    const query: Record<string, string> = {
      response_type: "code",
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: "S256",
      state,
    };
    if (scopes.length > 0) query.scope = scopes.join(" ");
    if (resource !== null) query.resource = resource;
    for (const [key, value] of Object.entries(query)) {
      url.searchParams.set(key, value);
    }
    const timer = setTimeout(() => {
      this.#endFlow(flowId);
    }, AUTHORIZATION_TIMEOUT_MS);
    this.#flows.set(flowId, {
      service: name,
      issuer: metadata.issuer,
      clientId,
      metadata,
      resource,
      scopes,
      verifier,
      state,
      redirectUri,
      result: listener.result,
      close: listener.close,
      timer,
    });
    return { flow: flowId, url: url.href };
  }

  /**
   * Waits for the redirect of flow `flowId`, checks it, exchanges the code
   * and stores the grant. Returns the service's status.
   */
  async finish(
    flowId: string,
    store: () => SecretStore,
  ): Promise<OAuthServiceStatus> {
    const device = this.#deviceFlows.get(flowId);
    if (device) return await this.#finishDevice(flowId, device, store);
    const flow = this.#flows.get(flowId);
    if (!flow) {
      throw new BrokerRequestError({
        code: "bad_request",
        message: "no such authorization under way (it ended or timed out)",
      });
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    let query: URLSearchParams;
    try {
      query = await Promise.race([
        flow.result,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                failed(
                  `no authorization arrived within ${
                    AUTHORIZATION_TIMEOUT_MS / 1000
                  } s; run "sherlock auth ${flow.service}" again`,
                ),
              ),
            AUTHORIZATION_TIMEOUT_MS,
          );
        }),
      ]);
    } finally {
      clearTimeout(timer);
      this.#endFlow(flowId);
    }
    const checked = checkAuthorizationResponse(query, {
      state: flow.state,
      issuer: flow.issuer,
      issRequired: flow.metadata.issParameterSupported,
    });
    if ("problem" in checked) throw failed(checked.problem);
    const form: Record<string, string> = {
      grant_type: "authorization_code",
      code: checked.code,
      redirect_uri: flow.redirectUri,
      client_id: flow.clientId,
      code_verifier: flow.verifier,
    };
    if (flow.resource !== null) form.resource = flow.resource;
    const answer = await requestJson(flow.metadata.tokenEndpoint, { form });
    return await this.#keepGrant(flow, answer, store);
  }

  /** Asks for a device code and polls for it in the background. */
  async #startDevice(
    flow: Omit<DeviceFlow, "answer" | "abort">,
  ): Promise<StartedFlow> {
    const form: Record<string, string> = {};
    if (flow.resource !== null) form.resource = flow.resource;
    const authorization = await requestDeviceAuthorization({
      endpoint: flow.metadata.deviceAuthorizationEndpoint!,
      clientId: flow.clientId,
      scopes: flow.scopes,
      form,
    });
    const abort = new AbortController();
    const answer = pollDeviceToken({
      tokenEndpoint: flow.metadata.tokenEndpoint,
      clientId: flow.clientId,
      authorization,
      form,
      signal: abort.signal,
      deadline: Date.now() + AUTHORIZATION_TIMEOUT_MS,
      retry: `sherlock auth --device ${flow.service}`,
    });
    answer.catch(() => {});
    const flowId = randomString(16);
    this.#deviceFlows.set(flowId, { ...flow, answer, abort });
    // A CLI that went away never finishes: forget the flow once the poll
    // ended and a finish had ample time to come.
    answer.catch(() => {}).finally(() => {
      const timer = setTimeout(
        () => this.#deviceFlows.delete(flowId),
        60_000,
      );
      Deno.unrefTimer(timer as unknown as number);
    });
    return {
      flow: flowId,
      url: authorization.verificationUriComplete ??
        authorization.verificationUri,
      userCode: authorization.userCode,
    };
  }

  async #finishDevice(
    flowId: string,
    flow: DeviceFlow,
    store: () => SecretStore,
  ): Promise<OAuthServiceStatus> {
    try {
      return await this.#keepGrant(flow, await flow.answer, store);
    } finally {
      this.#deviceFlows.delete(flowId);
    }
  }

  /** Stores the grant of a token answer that ended a flow. */
  async #keepGrant(
    flow: Omit<DeviceFlow, "answer" | "abort">,
    answer: JsonAnswer,
    store: () => SecretStore,
  ): Promise<OAuthServiceStatus> {
    const tokens = tokenAnswer(answer, flow.metadata.tokenEndpoint);
    const grant: StoredGrant = {
      issuer: flow.issuer,
      clientId: flow.clientId,
      tokenEndpoint: flow.metadata.tokenEndpoint,
      revocationEndpoint: flow.metadata.revocationEndpoint,
      resource: flow.resource,
      scopes: tokens.scopes ?? flow.scopes,
      refreshToken: tokens.refreshToken,
    };
    // The login may have locked while the browser ran.
    await writeGrant(store(), flow.service, grant);
    this.#tokens.delete(flow.service);
    this.onGrantChange(flow.service);
    this.#keep(flow.service, tokens);
    return this.status(flow.service, store());
  }

  #endFlow(flowId: string): void {
    const flow = this.#flows.get(flowId);
    if (!flow) return;
    this.#flows.delete(flowId);
    clearTimeout(flow.timer);
    flow.close();
  }

  /** Ends every flow (the daemon stops). */
  close(): void {
    for (const id of [...this.#flows.keys()]) this.#endFlow(id);
    for (const flow of this.#deviceFlows.values()) flow.abort.abort();
    this.#deviceFlows.clear();
  }

  /** The status of `service`'s grant: never a value. */
  status(service: string, store: SecretStore): OAuthServiceStatus {
    const grant = readGrant(store, service);
    const held = this.#tokens.get(service);
    const live = grant !== undefined && !grant.needsAuthorization;
    return {
      service,
      authorized: live,
      issuer: grant?.issuer ?? null,
      scopes: grant?.scopes ?? [],
      accessTokenExpiresAt: live && held?.expiresAt !== undefined &&
          held.expiresAt > Date.now()
        ? new Date(held.expiresAt).toISOString()
        : null,
      refreshToken: live && grant.refreshToken !== undefined,
    };
  }

  /**
   * Revokes `service`'s refresh token at the server (RFC 7009, when it
   * offers revocation), then forgets the grant and the access token.
   */
  async revoke(
    service: string,
    store: SecretStore,
  ): Promise<{ forgotten: boolean; revokedAtServer: boolean }> {
    const grant = readGrant(store, service);
    let revokedAtServer = false;
    if (grant?.revocationEndpoint && grant.refreshToken) {
      try {
        const answer = await requestJson(grant.revocationEndpoint, {
          form: {
            token: grant.refreshToken,
            token_type_hint: "refresh_token",
            client_id: grant.clientId,
          },
        });
        revokedAtServer = answer.status === 200;
      } catch {
        // Forget it here all the same: the operator asked for that.
      }
    }
    const forgotten = await removeGrant(store, service);
    this.#tokens.delete(service);
    this.onGrantChange(service);
    return { forgotten, revokedAtServer };
  }

  /**
   * The client id for `metadata`'s server: the service's `client_id`, a
   * CIMD URL when the server takes them, the stored registration at this
   * issuer, or a new dynamic registration (stored).
   */
  async #clientId(
    service: Service,
    metadata: ServerMetadata,
    store: SecretStore,
    options: { device: boolean },
  ): Promise<string> {
    const { token } = service;
    if (token.client_id) return token.client_id;
    if (
      token.client_metadata_url && metadata.clientIdMetadataDocumentSupported
    ) {
      return token.client_metadata_url;
    }
    const stored = readClient(store, metadata.issuer);
    // A registration made without the device grant cannot poll: register anew.
    if (stored && (!options.device || stored.deviceGrant)) {
      return stored.clientId;
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
    const answer = await requestJson(metadata.registrationEndpoint, {
      body: JSON.stringify({
        client_name: "sherlock",
        application_type: "native",
        redirect_uris: [`http://127.0.0.1${CALLBACK_PATH}`],
        grant_types: [
          "authorization_code",
          "refresh_token",
          ...(metadata.deviceAuthorizationEndpoint ? [DEVICE_CODE_GRANT] : []),
        ],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      }),
      headers: { "Content-Type": "application/json" },
    });
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
    await writeClient(store, {
      issuer: metadata.issuer,
      clientId: json.client_id,
      deviceGrant: metadata.deviceAuthorizationEndpoint !== undefined,
    });
    return json.client_id;
  }
}

/** What discovery found for a server URL. */
interface Discovered {
  metadata: ServerMetadata;
  challengeScope?: string;
  scopesSupported?: string[];
}

/**
 * Discovery: an unauthenticated request to the server, whose 401 may name
 * the resource metadata; else the well-known URIs; then the authorization
 * server's metadata (RFC 8414, then OpenID discovery).
 */
async function discover(serverUrl: string): Promise<Discovered> {
  const probe = await requestJson(serverUrl, {
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "sherlock", version: "0" },
      },
    }),
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
    },
  });
  const challenge = probe.status === 401
    ? parseBearerChallenge(probe.headers.get("www-authenticate"))
    : undefined;
  const candidates = challenge?.resourceMetadata
    ? [challenge.resourceMetadata]
    : protectedResourceMetadataUrls(serverUrl);
  let resource: ReturnType<typeof readResourceMetadata> | undefined;
  for (const url of candidates) {
    const answer = await requestJson(url);
    if (answer.status !== 200) continue;
    resource = readResourceMetadata(answer.json, serverUrl);
    break;
  }
  if (resource === undefined) {
    throw unsupported(
      `${serverUrl} publishes no protected-resource metadata (RFC 9728); it does not speak MCP authorization`,
    );
  }
  if (typeof resource === "string") throw failed(resource);
  const issuer = resource.authorizationServers[0];
  let problem = `${
    origin(issuer)
  } publishes no authorization server metadata for ${issuer}`;
  for (const url of authorizationServerMetadataUrls(issuer)) {
    const answer = await requestJson(url);
    if (answer.status !== 200) continue;
    if (answer.notJson) {
      problem = `${
        origin(url)
      } answered its metadata with something that is not JSON`;
      continue;
    }
    const metadata = readServerMetadata(answer.json, issuer);
    if (typeof metadata === "string") throw failed(metadata);
    return {
      metadata,
      challengeScope: challenge?.scope,
      scopesSupported: resource.scopesSupported,
    };
  }
  throw failed(problem);
}

/** The parts of a token endpoint's answer; throws on an error answer. */
export function tokenAnswer(
  answer: Awaited<ReturnType<typeof requestJson>>,
  endpoint: string,
): {
  accessToken: string;
  refreshToken?: string;
  expiresIn?: number;
  scopes?: string[];
} {
  const json = answer.json as Record<string, unknown> | undefined;
  if (answer.status !== 200) {
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
      ? json.scope.split(" ").filter((s) => s)
      : undefined,
  };
}

/** `needs_authorization`: no live grant; the message names the command. */
export function needsAuthorization(service: string): BrokerRequestError {
  return new BrokerRequestError({
    code: "needs_authorization",
    message:
      `service ${service} needs authorization: run "sherlock auth ${service}"`,
  });
}

function unsupported(message: string): BrokerRequestError {
  return new BrokerRequestError({ code: "oauth_unsupported", message });
}
