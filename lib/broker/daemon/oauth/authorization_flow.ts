/**
 * The one authorization flow under way, for `sherlock auth <service>`
 * (`client.ts`) and `sherlock login` at an OpenID provider
 * (`oidc_login.ts`): in a browser, the authorization-code grant with PKCE,
 * `state` (and a nonce when asked) on a loopback listener (`loopback.ts`),
 * the answer checked (`state`, RFC 9207's `iss` against the issuer
 * recorded with the verifier) and its code exchanged (`token_endpoint.ts`);
 * or the device grant (RFC 8628, `device_grant.ts`), polled while the
 * operator approves. A flow ends at its time limit (on the daemon's clock),
 * when the command waiting for it goes away, when a newer flow for the same
 * key starts, or when the daemon stops; its waiter then gets one line.
 * What to ask for, which messages to show and what to do with the tokens
 * stay with the caller.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { BrokerRequestError } from "../request_error.ts";
import { failed, type JsonAnswer } from "./http.ts";
import { pollDeviceToken, requestDeviceAuthorization } from "./device_grant.ts";
import { requestCode, type TokenClient } from "./token_endpoint.ts";
import {
  ignoredNote,
  listenForRedirect,
  type LoopbackListener,
} from "./loopback.ts";
import {
  checkAuthorizationResponse,
  clientAuthentication,
  pkcePair,
  randomString,
} from "./rules.ts";

/** How long a flow waits for the browser's redirect or the approval. */
export const AUTHORIZATION_TIMEOUT_MS = 300_000;

/**
 * How long a device flow whose poll ended is kept for the `finish` that
 * reads its outcome (the CLI may have gone away: then it is forgotten).
 */
export const DEVICE_FLOW_GRACE_MS = 60_000;

/** The lines a flow's waiter (and the browser) may be shown. */
export interface FlowMessages {
  /** The flow ended without an answer (a browser flow's listener closed). */
  unfinished: string;
  /** What the browser shows for the answer. */
  received: string;
  /** No answer within the time limit (the ignored requests' note added). */
  timedOut: string;
  /** A newer flow for the same key replaced this one. */
  replaced: string;
  /** The waiting command went away. */
  interrupted: string;
  /** The command that starts over, for the device grant's messages. */
  retry: string;
}

/** The authorization server of a flow, as its metadata names it. */
export interface FlowServer {
  issuer: string;
  tokenEndpoint: string;
  /** A browser flow's. */
  authorizationEndpoint?: string;
  /** A device flow's. */
  deviceAuthorizationEndpoint?: string;
  /** RFC 9207: the redirect must then carry `iss`. */
  issParameterSupported?: boolean;
}

/** What every flow is started with. */
export interface FlowRequest<T> {
  /** One flow per key: a newer one replaces one under way. */
  key: string;
  server: FlowServer;
  clientId: string;
  scopes: readonly string[];
  /**
   * More parameters of the authorization request (or device authorization
   * request): `resource`, `audience`; a key may repeat.
   */
  authorizationParameters?: URLSearchParams;
  /** More form fields of the code exchange (or device poll): `resource`. */
  tokenParameters?: Record<string, string>;
  messages: FlowMessages;
  /** The caller's own part, handed back by `finish`. */
  context: T;
}

/** A browser flow's request. */
export interface BrowserFlowRequest<T> extends FlowRequest<T> {
  /** Sends a nonce (OpenID Connect); `finish` returns it. */
  nonce?: boolean;
}

/** A device flow's request. */
export interface DeviceFlowRequest<T> extends FlowRequest<T> {
  /**
   * How the client authenticates at both endpoints: read once, for the
   * whole poll (a public client: its `clientId` only).
   */
  client: TokenClient;
}

/** What starting a flow gives the operator. */
export interface FlowStart {
  /** The flow's id, for `finish`. */
  flow: string;
  /** The authorization URL, or the device grant's verification URI. */
  url: string;
  /** Device grant only: the code the operator enters at `url`. */
  userCode?: string;
}

/** How a flow ended: the token endpoint's answer, for the caller to read. */
export interface FlowOutcome<T> {
  answer: JsonAnswer;
  /** The requests the loopback listener ignored (0 for a device flow). */
  ignored: number;
  /** The nonce a browser flow sent, when asked for one. */
  nonce?: string;
  context: T;
}

/** The flows under way of one daemon part (`sherlock auth`'s, or the login's). */
export class AuthorizationFlows<T> {
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  readonly #unknown: string;
  readonly #stopped: string | undefined;
  #flows = new Map<string, Flow<T>>();

  /**
   * `clock`: the daemon's, which times every flow out. `unknown`: the line
   * for a `finish` of no flow under way; `stopped`: the waiter's when the
   * daemon stops (else the flow's `unfinished`).
   */
  constructor(
    options: {
      clock: Clock;
      unknown: string;
      stopped?: string;
      timeoutMs?: number;
    },
  ) {
    this.#clock = options.clock;
    this.#unknown = options.unknown;
    this.#stopped = options.stopped;
    this.#timeoutMs = options.timeoutMs ?? AUTHORIZATION_TIMEOUT_MS;
  }

  /**
   * Starts a browser flow: a PKCE pair, `state` (and a nonce), a loopback
   * listener, and the authorization URL the operator opens. Ends a flow
   * under way for the same key first.
   */
  async startBrowser(request: BrowserFlowRequest<T>): Promise<FlowStart> {
    this.#replace(request);
    const { server, messages } = request;
    const { verifier, challenge } = await pkcePair();
    const state = randomString(32);
    const nonce = request.nonce ? randomString(32) : undefined;
    const listener = listenForRedirect({
      state,
      unfinished: messages.unfinished,
      received: messages.received,
    });
    const url = new URL(server.authorizationEndpoint!);
    const query: Record<string, string> = {
      response_type: "code",
      client_id: request.clientId,
      redirect_uri: listener.redirectUri,
    };
    if (request.scopes.length > 0) query.scope = request.scopes.join(" ");
    query.state = state;
    if (nonce !== undefined) query.nonce = nonce;
    query.code_challenge = challenge;
    query.code_challenge_method = "S256";
    for (const [key, value] of Object.entries(query)) {
      url.searchParams.set(key, value);
    }
    for (const [key, value] of request.authorizationParameters ?? []) {
      url.searchParams.append(key, value);
    }
    const flow = this.#add(request, (why) => listener.close(why));
    flow.browser = { listener, verifier, state, nonce };
    this.#expire(flow, this.#timeoutMs);
    return { flow: flow.id, url: url.href };
  }

  /**
   * Starts a device flow: asks for a device code, then polls the token
   * endpoint in the background until the operator approved, refused, or
   * the code expired. Ends a flow under way for the same key first.
   */
  async startDevice(request: DeviceFlowRequest<T>): Promise<FlowStart> {
    this.#replace(request);
    const { server } = request;
    const client = clientAuthentication(request.client);
    const authorization = await requestDeviceAuthorization({
      endpoint: server.deviceAuthorizationEndpoint!,
      client,
      scopes: [...request.scopes],
      form: request.authorizationParameters,
    });
    let cancel!: (why: string) => void;
    const ended = new Promise<never>((_, reject) => {
      cancel = (why) => reject(failed(why));
    });
    ended.catch(() => {});
    const flow = this.#add(request, cancel);
    const answer = pollDeviceToken({
      tokenEndpoint: server.tokenEndpoint,
      client,
      authorization,
      form: request.tokenParameters,
      signal: flow.life.signal,
      deadline: this.#clock.now() + this.#timeoutMs,
      retry: request.messages.retry,
      now: this.#clock.now,
      sleep: this.#clock.sleep,
    });
    answer.catch(() => {});
    flow.device = { outcome: Promise.race([answer, ended]) };
    flow.device.outcome.catch(() => {});
    // The poll ends by its own deadline, with its own line; the flow is
    // forgotten a while later if no `finish` came for it.
    this.#expire(flow, this.#timeoutMs + DEVICE_FLOW_GRACE_MS);
    return {
      flow: flow.id,
      url: authorization.verificationUriComplete ??
        authorization.verificationUri,
      userCode: authorization.userCode,
    };
  }

  /**
   * Waits for flow `flowId` to end: the redirect, checked and its code
   * exchanged, or the device grant's approval; returns the token
   * endpoint's answer, whatever its status. When `signal` aborts (the
   * command waiting is gone), the flow ends at once. `client`: how a
   * browser flow's client authenticates at the token endpoint (given the
   * flow's context), asked only once the redirect passed its checks (a
   * public client's id by default).
   */
  async finish(
    flowId: string,
    options: {
      signal?: AbortSignal;
      client?: (context: T) => TokenClient;
    } = {},
  ): Promise<FlowOutcome<T>> {
    const flow = this.#flows.get(flowId);
    if (!flow) throw noSuchFlow(this.#unknown);
    const { signal } = options;
    const interrupted = () => this.#end(flow, flow.messages.interrupted);
    if (signal?.aborted) interrupted();
    signal?.addEventListener("abort", interrupted, { once: true });
    let query: URLSearchParams;
    try {
      if (flow.device) {
        return {
          answer: await flow.device.outcome,
          ignored: 0,
          context: flow.context,
        };
      }
      query = await flow.browser!.listener.result;
    } finally {
      signal?.removeEventListener("abort", interrupted);
      this.#end(flow, flow.messages.unfinished);
    }
    const { listener, state, verifier, nonce } = flow.browser!;
    const { server } = flow;
    const checked = checkAuthorizationResponse(query, {
      state,
      issuer: server.issuer,
      issRequired: server.issParameterSupported === true,
    });
    const ignored = listener.ignored;
    if ("problem" in checked) {
      throw failed(`${checked.problem}${ignoredNote(ignored)}`);
    }
    const answer = await requestCode({
      server,
      client: options.client?.(flow.context) ?? { clientId: flow.clientId },
      response: query,
      state,
      redirectUri: listener.redirectUri,
      verifier,
      parameters: flow.tokenParameters ?? {},
    });
    return {
      answer,
      ignored,
      ...(nonce !== undefined ? { nonce } : {}),
      context: flow.context,
    };
  }

  /** Ends every flow under way (the daemon stops). */
  close(): void {
    for (const flow of [...this.#flows.values()]) {
      this.#end(flow, this.#stopped ?? flow.messages.unfinished);
    }
  }

  /** How many flows are under way. */
  get size(): number {
    return this.#flows.size;
  }

  #replace(request: FlowRequest<T>): void {
    for (const flow of [...this.#flows.values()]) {
      if (flow.key === request.key) this.#end(flow, request.messages.replaced);
    }
  }

  #add(request: FlowRequest<T>, cancel: (why: string) => void): Flow<T> {
    const flow: Flow<T> = {
      id: randomString(16),
      key: request.key,
      server: request.server,
      clientId: request.clientId,
      tokenParameters: request.tokenParameters,
      messages: request.messages,
      context: request.context,
      life: new AbortController(),
      cancel,
    };
    this.#flows.set(flow.id, flow);
    return flow;
  }

  /** Ends `flow` after `ms` on the daemon's clock, unless it ended first. */
  #expire(flow: Flow<T>, ms: number): void {
    const { signal } = flow.life;
    this.#clock.sleep(ms, signal).then(() => {
      if (signal.aborted) return;
      const ignored = flow.browser?.listener.ignored ?? 0;
      this.#end(flow, `${flow.messages.timedOut}${ignoredNote(ignored)}`);
    });
  }

  /** Ends a flow: its waiter gets `why`; its listener, poll and timer stop. */
  #end(flow: Flow<T>, why: string): void {
    if (this.#flows.get(flow.id) !== flow) return;
    this.#flows.delete(flow.id);
    flow.cancel(why);
    flow.life.abort();
  }
}

/** A flow under way. */
interface Flow<T> {
  id: string;
  key: string;
  server: FlowServer;
  clientId: string;
  tokenParameters?: Record<string, string>;
  messages: FlowMessages;
  context: T;
  /** Aborted when the flow ends: its timer and its poll stop. */
  life: AbortController;
  /** Makes the waiter's promise reject with `why`. */
  cancel(why: string): void;
  browser?: {
    listener: LoopbackListener;
    verifier: string;
    state: string;
    nonce?: string;
  };
  device?: { outcome: Promise<JsonAnswer> };
}

/** `bad_request`: a `finish` of no flow under way. */
function noSuchFlow(message: string): BrokerRequestError {
  return new BrokerRequestError({ code: "bad_request", message });
}
