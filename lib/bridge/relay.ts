/**
 * The bridge's relay: JSON-RPC messages between an agent on stdio
 * (newline-delimited JSON, as MCP's stdio transport frames them) and a
 * remote MCP server over Streamable HTTP, or over the legacy HTTP+SSE
 * transport. It does not interpret MCP methods, so it serves every
 * protocol revision; the one message it looks into is the answer to
 * `initialize`, for the `MCP-Protocol-Version` header of the requests
 * after it.
 *
 * Each request carries the token of a {@linkcode TokenKeeper}; a 401 gets
 * one forced refresh and one retry. A 403 `insufficient_scope` (the MCP
 * spec's scope challenge) is reported through `onScopeChallenge`, so that
 * the next `sherlock auth` steps the grant up, and its token is no longer
 * used: the request after that authorization goes through. A request that cannot be delivered is
 * answered with a JSON-RPC error (naming `sherlock auth <service>` when it
 * is the token), a notification is dropped with a line for `warn`, and the
 * relay keeps running until its input ends: an agent whose server fails
 * must not see it crash, restart it, and see it crash again.
 *
 * A request that carries the token follows a redirect only within the
 * origin of the service's url ({@linkcode redirectAllowed}), and every
 * answer is read within the bounds of `answer_limits.ts`.
 *
 * The agent's messages are sent in the order it wrote them: each POST
 * waits until the one before it was sent (its answer's headers arrived, or
 * it failed, or {@linkcode SEND_ORDER_MS} passed), while the answers
 * stream concurrently. A Streamable HTTP event stream that ends before the
 * answer is resumed (MCP's resumability, SEP-1699): after the stream's
 * `retry` (at most {@linkcode MAX_RETRY_MS}), a GET with `Last-Event-ID`,
 * at most {@linkcode MAX_RESUMES} times in a row without a message.
 *
 * Written on `fetch` rather than the SDK's client transports, which load
 * zod, their OAuth client and an npm event-stream parser on every start,
 * and validate each message against one protocol revision's schema
 * (docs/BENCHMARKS.md, "The bridge").
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
  readAnswerText,
  seconds,
} from "./answer_limits.ts";
import { type EventStreamState, readEvents } from "./sse.ts";
import { type GetToken, TokenKeeper } from "./tokens.ts";

export type { BridgeToken, GetToken } from "./tokens.ts";

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

/** The longest line read from the agent. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/** How long, after the input ended, answers still in flight may take. */
const DRAIN_MS = 3_000;

/** How long the closing DELETE may take. */
const DELETE_TIMEOUT_MS = 5_000;

/** How many redirects within the origin one request follows. */
const MAX_REDIRECTS = 5;

/** How many times in a row the GET stream is reopened after it ends. */
const MAX_STREAM_RECONNECTS = 5;

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
const DEFAULT_RETRY_MS = 1_000;

/**
 * How many times in a row the answer's stream is resumed without a message
 * arriving on it; past that the request is answered with an error.
 */
export const MAX_RESUMES = 5;

/**
 * How long a message waits for the one written before it to be sent (its
 * answer's headers): past that it goes anyway, so that a server that holds
 * a request's headers until its answer (a slow tool answered as JSON) does
 * not hold back the messages after it (a `notifications/cancelled`).
 */
export const SEND_ORDER_MS = 2_000;

type JsonRpcId = string | number | null;
type Message = Record<string, unknown>;

/** A request that could not be delivered, and what the agent is told. */
class DeliveryError extends Error {
  code: number;
  constructor(code: number, message: string) {
    super(message);
    this.name = "DeliveryError";
    this.code = code;
  }
}

/**
 * Relays until the input ends (or `signal` aborts), then ends the remote
 * session (a DELETE, on Streamable HTTP). Never throws for a failure of
 * the server or of the token; it returns when the agent is gone.
 */
export async function runRelay(options: RelayOptions): Promise<void> {
  const relay = options.transport === "sse"
    ? new LegacySseRelay(options)
    : new StreamableHttpRelay(options);
  const inFlight = new Set<Promise<void>>();
  try {
    for await (const line of readLines(options.input, options.signal)) {
      if (relay.closed) break;
      const message = parseLine(line, options);
      if (message === undefined) continue;
      const delivery = relay.deliver(message).finally(() =>
        inFlight.delete(delivery)
      );
      inFlight.add(delivery);
    }
  } catch (error) {
    options.warn(`reading stdin failed: ${messageOf(error)}`);
  }
  await withTimeout(Promise.all(inFlight), DRAIN_MS);
  await relay.close();
}

/** One remote transport: what the relay loop drives. */
interface Relay {
  /** True once the agent's side is gone (stdout closed). */
  readonly closed: boolean;
  /** Delivers one message (an object, or a batch) and relays its answers. */
  deliver(message: Message | Message[]): Promise<void>;
  /** Ends the remote side. */
  close(): Promise<void>;
}

/** What both transports share: the token, the agent's side, the errors. */
abstract class RelayBase implements Relay {
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

  constructor(options: RelayOptions) {
    this.options = options;
    this.tokens = new TokenKeeper(options.getToken);
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

/**
 * Streamable HTTP: a POST per message, the answer as JSON or as an event
 * stream, the session id and protocol version on every request after the
 * first, the GET stream for the server's own messages, a DELETE at the end.
 */
class StreamableHttpRelay extends RelayBase {
  #url: URL;
  #sessionId?: string;
  #protocolVersion?: string;
  /** The ids of `initialize` requests on their way. */
  #initializeIds = new Set<JsonRpcId>();
  /** Whether a message has taken its turn yet (the first is waited for). */
  #first = true;
  #stream?: Promise<void>;

  constructor(options: RelayOptions) {
    super(options);
    this.#url = new URL(options.url);
  }

  async deliver(message: Message | Message[]): Promise<void> {
    for (const one of Array.isArray(message) ? message : [message]) {
      if (one.method === "initialize" && "id" in one) {
        this.#initializeIds.add(one.id as JsonRpcId);
      }
    }
    // Until the first POST has its answer's headers (and so the session
    // id), the next one waits: a server must see `initialize` first.
    const turn = this.takeTurn(this.#first);
    this.#first = false;
    await turn.ready;
    turn.started();
    let response: Response;
    try {
      response = await this.authorizedFetch(this.#url, {
        method: "POST",
        headers: {
          ...this.#sessionHeaders(),
          "Content-Type": "application/json",
          Accept: "application/json, text/event-stream",
        },
        body: JSON.stringify(message),
        signal: this.stop.signal,
      });
    } catch (error) {
      turn.sent();
      if (!this.stop.signal.aborted) {
        await this.answerWithError(message, error);
      }
      return;
    }
    const sessionId = response.headers.get("mcp-session-id");
    if (sessionId) this.#sessionId = sessionId;
    turn.sent();
    try {
      await this.#relayAnswer(message, response);
    } catch (error) {
      if (!this.stop.signal.aborted) {
        await this.answerWithError(message, error);
      }
    }
  }

  async #relayAnswer(
    message: Message | Message[],
    response: Response,
  ): Promise<void> {
    if (!response.ok) throw await this.statusFailure(response);
    const type = mediaType(response.headers.get("content-type"));
    if (response.status === 202 || response.body === null) {
      await response.body?.cancel();
      return;
    }
    if (type === "application/json") {
      const text = await readAnswerText(response.body, this.limits);
      if (text.trim() === "") return;
      const answer = parseJson(text);
      if (answer === undefined) {
        throw new DeliveryError(
          UPSTREAM_ERROR_CODE,
          `the remote server of service ${this.options.service} answered with JSON it cannot parse`,
        );
      }
      this.onAnswer(answer);
      await this.toAgent(answer);
      return;
    }
    if (type === "text/event-stream") {
      await this.#relayStream(message, response.body);
      return;
    }
    await response.body.cancel();
    throw new DeliveryError(
      UPSTREAM_ERROR_CODE,
      `the remote server of service ${this.options.service} answered with ${
        type || "no content type"
      }`,
    );
  }

  /**
   * Relays the event stream that answers a POST. When it ends before every
   * request of `message` is answered, and it gave an event ID, it is
   * resumed as MCP's Streamable HTTP transport says: after the stream's
   * `retry` (clamped to {@linkcode MAX_RETRY_MS}), a GET with
   * `Last-Event-ID`, on which the server goes on with that stream. At most
   * {@linkcode MAX_RESUMES} resumes in a row that bring no message; then,
   * or when it cannot be resumed, the requests still unanswered get an
   * error: the agent must not wait forever.
   */
  async #relayStream(
    message: Message | Message[],
    body: ReadableStream<Uint8Array>,
  ): Promise<void> {
    const ids = requestIds(message);
    const answered = new Set<JsonRpcId>();
    const stream: EventStreamState = {};
    const server = `the remote server of service ${this.options.service}`;
    let failure: unknown;
    let resumes = 0;
    /** Why the last resume could not connect, if it could not. */
    let unreachable: unknown;
    let current: ReadableStream<Uint8Array> | undefined = body;
    for (;;) {
      let broke: unknown;
      if (current !== undefined) {
        try {
          const relayed = await this.relayEvents(current, {
            answered,
            stream,
            // The POST's stream is read to its end; a resumed one, once
            // it answered (a server may keep it open for more).
            until: current === body ? undefined : ids,
          });
          if (relayed > 0) resumes = 0;
        } catch (error) {
          broke = error;
        }
      }
      const missing = ids.filter((id) => !answered.has(id));
      if (missing.length === 0 || this.stop.signal.aborted) return;
      failure = broke ?? new DeliveryError(
        UPSTREAM_ERROR_CODE,
        `${server} closed the stream before answering`,
      );
      // Only a stream the server ended (or a connection that broke) is
      // resumed: not one sherlock stopped reading (a bound), and not one
      // without an event ID to resume from.
      if (
        broke instanceof AnswerLimitError || broke instanceof DeliveryError ||
        !stream.lastEventId
      ) break;
      if (resumes === MAX_RESUMES) {
        failure = unreachable !== undefined
          ? this.deliveryError(unreachable)
          : new DeliveryError(
            UPSTREAM_ERROR_CODE,
            `${server} closed the stream before answering, also the ${MAX_RESUMES} times sherlock resumed it`,
          );
        break;
      }
      resumes++;
      const token = this.tokenAhead();
      await this.sleep(
        Math.min(stream.retry ?? DEFAULT_RETRY_MS, MAX_RETRY_MS),
        this.stop.signal,
      );
      if (this.stop.signal.aborted) return;
      try {
        current = await this.#resume(stream.lastEventId, token);
        unreachable = undefined;
      } catch (error) {
        // A connection that failed is tried again (within MAX_RESUMES); a
        // server that refused to resume is not.
        if (error instanceof DeliveryError) {
          failure = error;
          break;
        }
        current = undefined;
        unreachable = error;
      }
    }
    if (this.stop.signal.aborted) return;
    await this.answerWithError(
      ids.filter((id) => !answered.has(id)).map((id) => ({ id })),
      failure,
    );
  }

  /**
   * The GET that resumes a stream after `lastEventId`; its body, an event
   * stream. Throws a {@linkcode DeliveryError} when the server will not
   * resume it, what `fetch` throws when it cannot be reached.
   */
  async #resume(
    lastEventId: string,
    token: Promise<string>,
  ): Promise<ReadableStream<Uint8Array>> {
    const response = await this.authorizedFetch(this.#url, {
      method: "GET",
      headers: {
        ...this.#sessionHeaders(),
        Accept: "text/event-stream",
        "Last-Event-ID": lastEventId,
      },
      signal: this.stop.signal,
    }, token);
    const type = mediaType(response.headers.get("content-type"));
    if (response.ok && response.body !== null && type === "text/event-stream") {
      return response.body;
    }
    const failure = response.ok
      ? (await response.body?.cancel(),
        new DeliveryError(
          UPSTREAM_ERROR_CODE,
          `the remote server of service ${this.options.service} answered the GET that resumes its stream with ${
            type || "no content type"
          }`,
        ))
      : await this.statusFailure(response);
    throw new DeliveryError(
      failure.code,
      `${failure.message} (after it closed the stream before answering, sherlock asked to resume it)`,
    );
  }

  protected override onAnswer(message: unknown): void {
    for (const one of Array.isArray(message) ? message : [message]) {
      if (!isObject(one) || !this.#initializeIds.has(one.id as JsonRpcId)) {
        continue;
      }
      this.#initializeIds.delete(one.id as JsonRpcId);
      const version = isObject(one.result)
        ? one.result.protocolVersion
        : undefined;
      if (typeof version === "string" && /^[\x21-\x7e]+$/.test(version)) {
        this.#protocolVersion = version;
        this.#stream ??= this.#listen();
      }
    }
  }

  #sessionHeaders(): Record<string, string> {
    return {
      ...(this.#sessionId ? { "Mcp-Session-Id": this.#sessionId } : {}),
      ...(this.#protocolVersion
        ? { "MCP-Protocol-Version": this.#protocolVersion }
        : {}),
    };
  }

  /**
   * The GET stream: the server's own messages (notifications, requests),
   * opened after `initialize` when the server offers it (405: it does
   * not), reopened a bounded number of times when it ends.
   */
  async #listen(): Promise<void> {
    let reconnects = 0;
    const stream: EventStreamState = {};
    while (!this.stop.signal.aborted) {
      let response: Response;
      try {
        response = await this.authorizedFetch(this.#url, {
          method: "GET",
          headers: {
            ...this.#sessionHeaders(),
            Accept: "text/event-stream",
            // Reopened: the server may replay what was missed since.
            ...(stream.lastEventId
              ? { "Last-Event-ID": stream.lastEventId }
              : {}),
          },
          signal: this.stop.signal,
        });
      } catch (error) {
        if (!this.stop.signal.aborted) {
          this.options.warn(
            `the stream for server messages did not open: ${messageOf(error)}`,
          );
        }
        return;
      }
      if (response.status === 405) {
        await response.body?.cancel();
        return;
      }
      if (
        !response.ok || response.body === null ||
        mediaType(response.headers.get("content-type")) !== "text/event-stream"
      ) {
        const failure = await this.statusFailure(response);
        this.options.warn(
          `the stream for server messages did not open: ${failure.message}`,
        );
        return;
      }
      let relayed = false;
      try {
        await this.relayEvents(response.body, {
          onEvent: () => {
            relayed = true;
            return false;
          },
          stream,
        });
      } catch (error) {
        if (this.stop.signal.aborted) return;
        this.options.warn(
          `the stream for server messages broke: ${
            this.deliveryError(error).message
          }`,
        );
      }
      if (this.stop.signal.aborted) return;
      reconnects = relayed ? 0 : reconnects + 1;
      if (reconnects > MAX_STREAM_RECONNECTS) {
        this.options.warn(
          "the stream for server messages keeps ending; no longer reopened",
        );
        return;
      }
      await this.sleep(
        Math.min(stream.retry ?? DEFAULT_RETRY_MS, MAX_RETRY_MS),
        this.stop.signal,
      );
    }
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.#stream?.catch(() => {});
    if (this.#sessionId === undefined) return;
    try {
      const response = await this.authorizedFetch(this.#url, {
        method: "DELETE",
        headers: this.#sessionHeaders(),
        signal: AbortSignal.timeout(DELETE_TIMEOUT_MS),
      });
      await response.body?.cancel();
      if (!response.ok && response.status !== 405) {
        this.options.warn(
          `ending the remote session: the server answered HTTP ${response.status}`,
        );
      }
    } catch (error) {
      this.options.warn(`ending the remote session: ${messageOf(error)}`);
    }
  }
}

/**
 * The legacy HTTP+SSE transport (protocol 2024-11-05): a GET stream whose
 * first event, `endpoint`, names where to POST messages; every answer
 * arrives on the stream. The stream is opened at the start, and reopened
 * (once per message) when it has ended.
 */
class LegacySseRelay extends RelayBase {
  #url: URL;
  #endpoint?: Promise<URL>;
  /**
   * The requests whose answers are due on the stream: when it breaks or
   * ends, each gets an error rather than an agent waiting forever.
   */
  #due = new Set<JsonRpcId>();

  constructor(options: RelayOptions) {
    super(options);
    this.#url = new URL(options.url);
    this.#endpoint = this.#connect();
    this.#endpoint.catch((error) => {
      if (!this.stop.signal.aborted) {
        this.options.warn(
          `the SSE stream did not open: ${this.deliveryError(error).message}`,
        );
      }
    });
  }

  async deliver(message: Message | Message[]): Promise<void> {
    // Due before the POST: the answer may come on the stream before the
    // POST's own answer does.
    const ids = requestIds(message);
    for (const id of ids) this.#due.add(id);
    const turn = this.takeTurn();
    await turn.ready;
    try {
      let endpoint: URL;
      try {
        endpoint = await this.#endpoint!;
      } catch {
        this.#endpoint = this.#connect();
        endpoint = await this.#endpoint;
      }
      turn.started();
      const response = await this.authorizedFetch(endpoint, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(message),
        signal: this.stop.signal,
      });
      turn.sent();
      if (!response.ok) throw await this.statusFailure(response);
      await response.body?.cancel();
    } catch (error) {
      turn.sent();
      for (const id of ids) this.#due.delete(id);
      if (!this.stop.signal.aborted) {
        await this.answerWithError(message, error);
      }
    }
  }

  protected override onAnswer(message: unknown): void {
    for (const id of responseIds(message)) this.#due.delete(id);
  }

  /** Answers every request still due with the error the stream ended on. */
  async #answerDue(error: unknown): Promise<void> {
    if (this.stop.signal.aborted || this.#due.size === 0) return;
    const ids = [...this.#due];
    this.#due.clear();
    await this.answerWithError(ids.map((id) => ({ id })), error);
  }

  /** Opens the stream; resolves with the endpoint, relays the rest. */
  async #connect(): Promise<URL> {
    const response = await this.authorizedFetch(this.#url, {
      method: "GET",
      headers: { Accept: "text/event-stream" },
      signal: this.stop.signal,
    });
    if (!response.ok || response.body === null) {
      throw await this.statusFailure(response);
    }
    let found!: (url: URL) => void;
    let failed!: (error: Error) => void;
    const endpoint = new Promise<URL>((resolve, reject) => {
      found = resolve;
      failed = reject;
    });
    const pumping = this.relayEvents(response.body, {
      onEvent: ({ event, data }) => {
        if (event !== "endpoint") return false;
        const url = new URL(data.trim(), this.#url);
        // The token goes only where the stream came from.
        if (url.origin !== this.#url.origin) {
          failed(
            new DeliveryError(
              UPSTREAM_ERROR_CODE,
              `the remote server of service ${this.options.service} named an endpoint on another origin`,
            ),
          );
        } else found(url);
        return true;
      },
    });
    pumping.then(
      () => {
        const ended = new DeliveryError(
          UPSTREAM_ERROR_CODE,
          `the remote server of service ${this.options.service} closed the stream before answering`,
        );
        failed(new Error("the SSE stream ended"));
        return this.#answerDue(ended);
      },
      (error) => {
        failed(error);
        return this.#answerDue(error);
      },
    ).finally(() => {
      // A stream that ended is reopened by the next message.
      if (!this.stop.signal.aborted) {
        this.#endpoint = Promise.reject(new Error("the SSE stream ended"));
        this.#endpoint.catch(() => {});
      }
    });
    return await endpoint;
  }

  close(): Promise<void> {
    this.stop.abort();
    return Promise.resolve();
  }
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
function withToken(
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

/**
 * The lines of the input, without their line ends; empty lines skipped.
 * Ends with the input, or when `signal` aborts.
 */
async function* readLines(
  input: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
): AsyncGenerator<string> {
  const reader = input.pipeThrough(new TextDecoderStream()).getReader();
  const aborted = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", aborted, { once: true });
  let pending = "";
  try {
    while (!signal?.aborted) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += value;
      let newline = pending.indexOf("\n");
      while (newline !== -1) {
        const line = pending.slice(0, newline).replace(/\r$/, "");
        pending = pending.slice(newline + 1);
        if (line.trim() !== "") yield line;
        newline = pending.indexOf("\n");
      }
      if (pending.length > MAX_LINE_BYTES) {
        throw new RangeError("a message from the agent is too long");
      }
    }
    if (pending.trim() !== "" && !signal?.aborted) yield pending;
  } finally {
    signal?.removeEventListener("abort", aborted);
    reader.releaseLock();
  }
}

/**
 * One line from the agent as a message, or undefined (after a warning)
 * when it is not a JSON object or array.
 */
function parseLine(
  line: string,
  options: RelayOptions,
): Message | Message[] | undefined {
  const message = parseJson(line);
  if (
    isObject(message) ||
    (Array.isArray(message) && message.length > 0 &&
      message.every(isObject))
  ) {
    return message as Message | Message[];
  }
  options.warn("ignored a line from the agent that is not a JSON-RPC message");
  return undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Message {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The ids of the requests in a message (responses and notifications have none). */
function requestIds(message: Message | Message[]): JsonRpcId[] {
  return (Array.isArray(message) ? message : [message])
    .filter((one) => "id" in one && !("result" in one || "error" in one))
    .map((one) => one.id as JsonRpcId);
}

/** The ids of the responses in a message from the server. */
function responseIds(message: unknown): JsonRpcId[] {
  return (Array.isArray(message) ? message : [message])
    .filter((one) => isObject(one) && ("result" in one || "error" in one))
    .map((one) => (one as Message).id as JsonRpcId);
}

function mediaType(contentType: string | null): string {
  return (contentType ?? "").split(";")[0].trim().toLowerCase();
}

/** A server's words for a message: printable ASCII, at most 200 characters. */
function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]+/g, " ").slice(0, 200);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function withTimeout(promise: Promise<unknown>, ms: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    promise.catch(() => {}),
    new Promise((resolve) => timer = setTimeout(resolve, ms)),
  ]);
  clearTimeout(timer);
}
