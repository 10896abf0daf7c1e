/**
 * The legacy HTTP+SSE transport (protocol 2024-11-05, deprecated since
 * 2025-03-26): a GET stream whose first event names where to POST.
 *
 * @module
 */

import {
  DeliveryError,
  type JsonRpcId,
  type Message,
  RelayBase,
  type RelayOptions,
  requestIds,
  responseIds,
  UPSTREAM_ERROR_CODE,
} from "./relay_core.ts";

/**
 * The legacy HTTP+SSE transport (protocol 2024-11-05): a GET stream whose
 * first event, `endpoint`, names where to POST messages; every answer
 * arrives on the stream. The stream is opened at the start, and reopened
 * (once per message) when it has ended.
 */
export class LegacySseRelay extends RelayBase {
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
