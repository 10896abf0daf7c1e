/**
 * Streamable HTTP as the 2025 revisions (2025-03-26, 2025-06-18,
 * 2025-11-25) define it: a POST per message, the answer as JSON or as an
 * event stream (resumed after an early end with `Last-Event-ID`, SEP-1699),
 * the session id and protocol version on every request after `initialize`,
 * the GET stream for the server's own messages, a DELETE at the end.
 *
 * @module
 */

import { AnswerLimitError, readAnswerText } from "./answer_limits.ts";
import type { EventStreamState } from "./sse.ts";
import {
  DEFAULT_RETRY_MS,
  DeliveryError,
  isObject,
  type JsonRpcId,
  MAX_RETRY_MS,
  mediaType,
  type Message,
  messageOf,
  parseJson,
  RelayBase,
  type RelayOptions,
  requestIds,
  UPSTREAM_ERROR_CODE,
} from "./relay_core.ts";
import type { TokenKeeper } from "./tokens.ts";

/** How long the closing DELETE may take. */
const DELETE_TIMEOUT_MS = 5_000;

/** How many times in a row the GET stream is reopened after it ends. */
const MAX_STREAM_RECONNECTS = 5;

/**
 * How many times in a row the answer's stream is resumed without a message
 * arriving on it; past that the request is answered with an error.
 */
export const MAX_RESUMES = 5;

/**
 * Streamable HTTP: a POST per message, the answer as JSON or as an event
 * stream, the session id and protocol version on every request after the
 * first, the GET stream for the server's own messages, a DELETE at the end.
 */
export class StreamableHttpRelay extends RelayBase {
  #url: URL;
  #sessionId?: string;
  #protocolVersion?: string;
  /** The ids of `initialize` requests on their way. */
  #initializeIds = new Set<JsonRpcId>();
  /** Whether a message has taken its turn yet (the first is waited for). */
  #first = true;
  #stream?: Promise<void>;

  /** See {@linkcode RelayBase}'s constructor for `shared`. */
  constructor(
    options: RelayOptions,
    shared?: { tokens: TokenKeeper; stop: AbortController },
  ) {
    super(options, shared);
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
        if (this.#protocolVersion === undefined) {
          this.options.info?.(
            `the server speaks MCP ${version} (Streamable HTTP of 2025; no server/discover)`,
          );
        }
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
