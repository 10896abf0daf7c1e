/**
 * What the bridge's transports share (`relay.ts` drives them): the options
 * of a relay, the token on every request (one forced refresh after a 401,
 * the scope of a 403 `insufficient_scope` reported), redirects only within
 * the service's origin, the order of sends, writing to the agent, reading
 * an event stream, and the JSON-RPC error a request that could not be
 * delivered is answered with.
 *
 * @module
 */

import {
  applyTokenFormat,
  BRIDGE_TOKEN_FORMAT,
  BRIDGE_TOKEN_HEADER,
} from "../services/token_format.ts";
import { parseBearerChallenge } from "../runtime/bearer_challenge.ts";
import { sleep } from "../runtime/sleep.ts";
import {
  ANSWER_LIMITS,
  AnswerLimitError,
  type AnswerLimits,
  seconds,
} from "./answer_limits.ts";
import { type EventStreamState, readEvents } from "./sse.ts";
import { type GetToken, TokenKeeper } from "./tokens.ts";

/** The remote transports the bridge speaks. */
export type RemoteTransport = "http" | "sse";

/** What one relay connects. */
export interface RelayOptions {
  /** The remote server's endpoint (Streamable HTTP) or its SSE stream. */
  url: string;
  /** "http" (Streamable HTTP, the default) or "sse" (the legacy one). */
  transport?: RemoteTransport;
  /** The service's name, for messages. */
  service: string;
  /** Extra headers for every request to the server (never the token). */
  headers?: Record<string, string>;
  /** The header that carries the token; `Authorization` unless set. */
  tokenHeader?: string;
  /** How the token is written into it (holds `{token}`); `Bearer {token}`. */
  tokenFormat?: string;
  /** Where the token comes from; called before requests, see TokenKeeper. */
  getToken: GetToken;
  /**
   * Told the `scope` of a 403 `insufficient_scope` (the broker records it
   * for `sherlock auth`); a failure is only a line for `warn`.
   */
  onScopeChallenge?: (scope: string) => Promise<void>;
  /** The agent's messages: newline-delimited JSON (stdin). */
  input: ReadableStream<Uint8Array>;
  /** Writes one line to the agent (stdout); the line ends with "\n". */
  write: (line: string) => Promise<void>;
  /** Reports a diagnostic line (stderr); never given a token. */
  warn: (line: string) => void;
  /**
   * Reports what the bridge found out about the server (which revision it
   * speaks), for `sherlock bridge --verbose`; never given a token.
   */
  info?: (line: string) => void;
  /** Ends the relay as if the input had ended (e.g. on SIGTERM). */
  signal?: AbortSignal;
  /** The bounds on the server's answers; {@linkcode ANSWER_LIMITS} by default. */
  limits?: Partial<AnswerLimits>;
  /**
   * How the relay waits (before resuming or reopening a stream, and for
   * the order of sends); `lib/runtime/sleep.ts` unless set (tests pass one
   * that records the wait and returns at once).
   */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** The JSON-RPC error code of a request the token did not get through. */
export const AUTH_ERROR_CODE = -32001;

/** The JSON-RPC error code of a request the server did not take. */
export const UPSTREAM_ERROR_CODE = -32002;

/** How many redirects within the origin one request follows. */
const MAX_REDIRECTS = 5;

/**
 * The longest wait a server's `retry` field may ask for before a stream is
 * resumed or reopened. The number comes from the server and the agent's
 * request waits on it: a server asking for an hour would leave the agent
 * hanging with no word, and no server needs more than seconds to shed a
 * connection; with {@linkcode MAX_RESUMES} it bounds how long an answer
 * can be waited for across resumes.
 */
export const MAX_RETRY_MS = 30_000;

/** The wait before resuming a stream whose server sent no `retry`. */
export const DEFAULT_RETRY_MS = 1_000;

/**
 * How long a message waits for the one written before it to be sent (its
 * answer's headers): past that it goes anyway, so that a server that holds
 * a request's headers until its answer (a slow tool answered as JSON) does
 * not hold back the messages after it (a `notifications/cancelled`).
 */
export const SEND_ORDER_MS = 2_000;

/** A JSON-RPC id. */
export type JsonRpcId = string | number | null;
/** A JSON-RPC message, as an object. */
export type Message = Record<string, unknown>;

/** A request that could not be delivered, and what the agent is told. */
export class DeliveryError extends Error {
  code: number;
  constructor(code: number, message: string) {
    super(message);
    this.name = "DeliveryError";
    this.code = code;
  }
}

/** One remote transport: what the relay loop drives. */
export interface Relay {
  /** True once the agent's side is gone (stdout closed). */
  readonly closed: boolean;
  /** Delivers one message (an object, or a batch) and relays its answers. */
  deliver(message: Message | Message[]): Promise<void>;
  /** Ends the remote side. */
  close(): Promise<void>;
}

/** What both transports share: the token, the agent's side, the errors. */
export abstract class RelayBase implements Relay {
  protected options: RelayOptions;
  protected tokens: TokenKeeper;
  /** How much and how long the server's answers are read. */
  protected limits: AnswerLimits;
  /** Aborted at the end: every request and stream still running stops. */
  protected stop = new AbortController();
  closed = false;
  /** How the relay waits: `options.sleep`, or the runtime's. */
  protected sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  #writing: Promise<void> = Promise.resolve();
  /** The send of the message written last: the next one waits for it. */
  #lastSend?: { started: Promise<void>; sent: Promise<void>; wait: boolean };

  /**
   * `shared`: the token keeper and the stop of another relay of the same
   * bridge (the one that found out which revision the server speaks and
   * hands over to this one), so that the token is fetched once.
   */
  constructor(
    options: RelayOptions,
    shared?: { tokens: TokenKeeper; stop: AbortController },
  ) {
    this.options = options;
    this.tokens = shared?.tokens ?? new TokenKeeper(options.getToken);
    if (shared) this.stop = shared.stop;
    this.limits = { ...ANSWER_LIMITS, ...options.limits };
    this.sleep = options.sleep ?? sleep;
  }

  /**
   * Takes the message's place in the order of sends; call it before any
   * `await` of `deliver`, so the place is the order the agent wrote in.
   * `ready` resolves when the message before has been sent (or failed),
   * or {@linkcode SEND_ORDER_MS} after it started, unless it asked to be
   * waited for (`waitForAnswer`: the first `initialize`, whose answer's
   * headers carry the session id). Call `started` just before sending,
   * `sent` once the answer's headers arrived or the send failed.
   */
  protected takeTurn(
    waitForAnswer = false,
  ): { ready: Promise<void>; started: () => void; sent: () => void } {
    const before = this.#lastSend;
    let started!: () => void;
    let sent!: () => void;
    const turn = {
      started: new Promise<void>((resolve) => started = resolve),
      sent: new Promise<void>((resolve) => sent = resolve),
      wait: waitForAnswer,
    };
    this.#lastSend = turn;
    const ready = before === undefined
      ? Promise.resolve()
      : before.started.then(() =>
        before.wait ? before.sent : this.#firstOf(before.sent, SEND_ORDER_MS)
      );
    return {
      ready,
      started,
      // A send that failed before it started has started too.
      sent: () => {
        started();
        sent();
      },
    };
  }

  /** Resolves with `promise`, or after `ms`, whichever is first. */
  async #firstOf(promise: Promise<void>, ms: number): Promise<void> {
    const done = new AbortController();
    await Promise.race([
      promise,
      this.sleep(ms, AbortSignal.any([done.signal, this.stop.signal])),
    ]);
    done.abort();
  }

  abstract deliver(message: Message | Message[]): Promise<void>;
  abstract close(): Promise<void>;

  /** Writes one message to the agent, in order with the others. */
  protected toAgent(message: unknown): Promise<void> {
    const line = JSON.stringify(message) + "\n";
    this.#writing = this.#writing.then(async () => {
      if (this.closed) return;
      try {
        await this.options.write(line);
      } catch {
        // The agent is gone: nobody reads the answers any more.
        this.closed = true;
        this.stop.abort();
      }
    });
    return this.#writing;
  }

  /** Answers `message` with what the agent is told of `error`. */
  refuse(message: Message | Message[], error: unknown): Promise<void> {
    return this.answerWithError(message, error);
  }

  /** What the agent is told of `error` (see {@linkcode deliveryError}). */
  failure(error: unknown): DeliveryError {
    return this.deliveryError(error);
  }

  /**
   * Answers every request of `message` with the error (a notification
   * gets none: its failure is a line on stderr).
   */
  protected async answerWithError(
    message: Message | Message[],
    error: unknown,
  ): Promise<void> {
    const failure = this.deliveryError(error);
    const ids = requestIds(message);
    if (ids.length === 0) {
      this.options.warn(
        `dropped a notification or response: ${failure.message}`,
      );
      return;
    }
    for (const id of ids) {
      await this.toAgent({
        jsonrpc: "2.0",
        id,
        error: { code: failure.code, message: `sherlock: ${failure.message}` },
      });
    }
  }

  /** What the agent is told of `error`: a {@linkcode DeliveryError}. */
  protected deliveryError(error: unknown): DeliveryError {
    if (error instanceof DeliveryError) return error;
    const server = `the remote server of service ${this.options.service}`;
    if (error instanceof AnswerLimitError) {
      return new DeliveryError(
        UPSTREAM_ERROR_CODE,
        `${server} ${error.message}; sherlock stopped reading it`,
      );
    }
    return new DeliveryError(
      UPSTREAM_ERROR_CODE,
      `${server} cannot be reached (${messageOf(error)})`,
    );
  }

  /**
   * `fetch` with the token: on a 401, one forced refresh and one retry.
   * Throws a {@linkcode DeliveryError} when no token can be had or the
   * retry is refused too. `ahead`, when given, is the first token to try
   * (one asked for ahead, see {@linkcode RelayBase.tokenAhead}).
   */
  protected async authorizedFetch(
    url: URL,
    init: RequestInit & { headers: Record<string, string> },
    ahead?: Promise<string>,
  ): Promise<Response> {
    let token = await (ahead ?? this.#token());
    let response = await this.#fetchWithinOrigin(
      url,
      withToken(init, token, this.options),
    );
    if (response.status !== 401) {
      return await this.#scopeChallenge(response, token);
    }
    await response.body?.cancel();
    token = await this.#token(token);
    response = await this.#fetchWithinOrigin(
      url,
      withToken(init, token, this.options),
    );
    if (response.status !== 401) {
      return await this.#scopeChallenge(response, token);
    }
    await response.body?.cancel();
    throw this.authFailure(
      "refused its token (HTTP 401, also after a refresh)",
    );
  }

  /**
   * `fetch` that follows a redirect only within the origin of `url` (see
   * {@linkcode redirectAllowed}): the request carries the token, in
   * `Authorization` or in a header of the service's choosing, which
   * `fetch` would send on to any origin (it drops only `Authorization`).
   * Throws a {@linkcode DeliveryError} that says where the server
   * redirected to.
   */
  async #fetchWithinOrigin(url: URL, init: RequestInit): Promise<Response> {
    let target = url;
    let request: RequestInit = { ...init, redirect: "manual" };
    for (let redirects = 0;; redirects++) {
      const response = await this.#fetchHeaders(target, request);
      const location = response.headers.get("location");
      if (!REDIRECTS.has(response.status) || location === null) {
        return response;
      }
      await response.body?.cancel();
      const service = this.options.service;
      let next: URL;
      try {
        next = new URL(location, target);
      } catch {
        throw new DeliveryError(
          UPSTREAM_ERROR_CODE,
          `the remote server of service ${service} answered HTTP ${response.status} with a Location that is not a URL`,
        );
      }
      if (!redirectAllowed(url, next)) {
        throw new DeliveryError(
          UPSTREAM_ERROR_CODE,
          `the remote server of service ${service} redirected the request to ${
            printable(next.origin)
          } (HTTP ${response.status}); sherlock sends the token only to ${url.origin}, the origin of the service's url, so it did not follow (set the url to where the server now is)`,
        );
      }
      if (redirects === MAX_REDIRECTS) {
        throw new DeliveryError(
          UPSTREAM_ERROR_CODE,
          `the remote server of service ${service} redirected the request more than ${MAX_REDIRECTS} times`,
        );
      }
      // As fetch does: a 303, and a 301 or 302 to a POST, become a GET.
      if (
        response.status === 303 ||
        (request.method === "POST" && response.status !== 307 &&
          response.status !== 308)
      ) {
        const headers = { ...request.headers as Record<string, string> };
        delete headers["Content-Type"];
        request = { ...request, method: "GET", body: undefined, headers };
      }
      target = next;
    }
  }

  /**
   * `fetch`, with at most `limits.headersMs` for the answer's headers (the
   * body has its own bounds, where it is read).
   */
  async #fetchHeaders(url: URL, init: RequestInit): Promise<Response> {
    const late = new AbortController();
    const timer = setTimeout(
      () =>
        late.abort(
          new AnswerLimitError(
            `took more than ${
              seconds(this.limits.headersMs)
            } to start its answer`,
          ),
        ),
      this.limits.headersMs,
    );
    const signal = init.signal
      ? AbortSignal.any([init.signal, late.signal])
      : late.signal;
    try {
      return await fetch(url, { ...init, signal });
    } catch (error) {
      throw late.signal.aborted ? late.signal.reason : error;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * On a 403 `insufficient_scope`: `token` is no longer used, and the
   * challenge's scope goes to `onScopeChallenge`. Returns the response.
   */
  async #scopeChallenge(response: Response, token: string): Promise<Response> {
    if (response.status !== 403) return response;
    const challenge = parseBearerChallenge(
      response.headers.get("www-authenticate"),
    );
    if (challenge?.error !== "insufficient_scope") return response;
    this.tokens.forget(token);
    if (challenge.scope && this.options.onScopeChallenge) {
      try {
        await this.options.onScopeChallenge(challenge.scope);
      } catch (error) {
        this.options.warn(
          `could not record the scope the server asked for: ${
            messageOf(error)
          }`,
        );
      }
    }
    return response;
  }

  /**
   * The token, asked for now for a request sent later (after a wait whose
   * length the server chose: the request then goes out on time). Its
   * failure is thrown where it is awaited, by `authorizedFetch`.
   */
  protected tokenAhead(): Promise<string> {
    const token = this.#token();
    token.catch(() => {}); // awaited later; not an unhandled rejection
    return token;
  }

  /** An authorization failure, naming the command that fixes it. */
  protected authFailure(what: string): DeliveryError {
    const service = this.options.service;
    return new DeliveryError(
      AUTH_ERROR_CODE,
      `the remote server of service ${service} ${what}; run "sherlock auth ${service}"`,
    );
  }

  /** Throws the failure that a non-2xx answer means. */
  protected async statusFailure(response: Response): Promise<DeliveryError> {
    await response.body?.cancel();
    if (response.status === 403) {
      const challenge = parseBearerChallenge(
        response.headers.get("www-authenticate"),
      );
      const scope = challenge?.error !== "insufficient_scope"
        ? ""
        : challenge.scope
        ? `, insufficient scope: it needs ${printable(challenge.scope)}`
        : ", insufficient scope";
      return this.authFailure(`refused the request (HTTP 403${scope})`);
    }
    return new DeliveryError(
      UPSTREAM_ERROR_CODE,
      `the remote server of service ${this.options.service} answered HTTP ${response.status}`,
    );
  }

  async #token(refused?: string): Promise<string> {
    try {
      return await this.tokens.get(refused);
    } catch (error) {
      const service = this.options.service;
      throw new DeliveryError(
        AUTH_ERROR_CODE,
        `no token for service ${service} (${
          messageOf(error)
        }); run "sherlock auth ${service}"`,
      );
    }
  }

  /**
   * Relays the messages of an event stream to the agent, adding the ids of
   * the responses among them to `answered`; keeps `stream` (its last event
   * ID, its `retry`) up to date; stops reading once every id of `until`
   * is answered. Returns how many messages it relayed.
   */
  protected async relayEvents(
    body: ReadableStream<Uint8Array>,
    options: {
      onEvent?: (event: { event: string; data: string }) => boolean;
      answered?: Set<JsonRpcId>;
      stream?: EventStreamState;
      until?: JsonRpcId[];
    } = {},
  ): Promise<number> {
    const { onEvent, answered = new Set<JsonRpcId>(), until } = options;
    let relayed = 0;
    for await (
      const event of readEvents(body, this.limits, options.stream)
    ) {
      if (onEvent?.(event)) continue;
      if (event.event !== "message" || event.data.trim() === "") continue;
      const message = parseJson(event.data);
      if (message === undefined) {
        this.options.warn("the remote server sent an event that is not JSON");
        continue;
      }
      for (const id of responseIds(message)) answered.add(id);
      this.onAnswer(message);
      await this.toAgent(message);
      relayed++;
      if (until?.every((id) => answered.has(id))) break;
    }
    return relayed;
  }

  /** Called with each message from the server before it is relayed. */
  protected onAnswer(_message: unknown): void {}
}

/** The statuses that redirect (with a Location). */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Whether a request that carries the token, sent to `from`, may follow a
 * redirect to `to`: only within `from`'s origin (scheme, host and port),
 * so never to another host or port, and never from https to http.
 */
export function redirectAllowed(from: URL, to: URL): boolean {
  return (to.protocol === "http:" || to.protocol === "https:") &&
    to.origin === from.origin;
}

/** The request headers: the extra ones, the given ones, the token. */
export function withToken(
  init: RequestInit & { headers: Record<string, string> },
  token: string,
  options: RelayOptions,
): RequestInit {
  return {
    ...init,
    headers: {
      ...options.headers,
      ...init.headers,
      [options.tokenHeader ?? BRIDGE_TOKEN_HEADER]: applyTokenFormat(
        options.tokenFormat ?? BRIDGE_TOKEN_FORMAT,
        token,
      ),
    },
  };
}

/** `text` as JSON, or undefined when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Whether `value` is a JSON object (not an array, not null). */
export function isObject(value: unknown): value is Message {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The ids of the requests in a message (responses and notifications have none). */
export function requestIds(message: Message | Message[]): JsonRpcId[] {
  return (Array.isArray(message) ? message : [message])
    .filter((one) => "id" in one && !("result" in one || "error" in one))
    .map((one) => one.id as JsonRpcId);
}

/** The ids of the responses in a message from the server. */
export function responseIds(message: unknown): JsonRpcId[] {
  return (Array.isArray(message) ? message : [message])
    .filter((one) => isObject(one) && ("result" in one || "error" in one))
    .map((one) => (one as Message).id as JsonRpcId);
}

/** The media type of a `Content-Type`, lower case, without parameters. */
export function mediaType(contentType: string | null): string {
  return (contentType ?? "").split(";")[0].trim().toLowerCase();
}

/** A server's words for a message: printable ASCII, at most 200 characters. */
export function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]+/g, " ").slice(0, 200);
}

/** The message of an error, or the thing thrown as a string. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
