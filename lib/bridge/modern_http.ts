/**
 * Streamable HTTP as the 2026-07-28 revision defines it, for an agent that
 * speaks a 2025 revision on stdio. The bridge translates:
 *
 * - `initialize` is answered from the server's `server/discover` (the
 *   probe `relay.ts` sent), `notifications/initialized` opens a
 *   `subscriptions/listen` stream for the lists the server says can change
 *   (and the resources the agent subscribed to): its notifications reach
 *   the agent as 2025 notifications.
 * - Every request carries the `_meta` envelope (the revision, the agent's
 *   `clientInfo` and capabilities from its `initialize`, its log level) and
 *   the `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`
 *   headers; no session id, no GET stream, no DELETE.
 * - Methods the revision removed are answered here: `ping`,
 *   `logging/setLevel` (the level goes into each request's `_meta`),
 *   `resources/subscribe` and `resources/unsubscribe` (the listen stream is
 *   reopened with the new set). `notifications/cancelled` closes the
 *   request's answer stream, which is the revision's cancellation; other
 *   notifications from the agent have no place on this transport.
 * - An `input_required` result (a server's mid-request question:
 *   elicitation, sampling, roots) becomes a request to the agent; its
 *   answers go back in the retried request's `inputResponses` (with the
 *   server's `requestState`), at most {@linkcode MAX_INPUT_ROUNDS} times.
 *   A question whose capability the agent did not declare is answered with
 *   the revision's `MissingRequiredClientCapability` error.
 *
 * Hand-written rather than on the SDK v2 client: importing
 * `@modelcontextprotocol/client` alone took 300–740 ms here (2 shared
 * cores, Deno 2.9), against a whole `sherlock bridge` start of tens of ms
 * (docs/BENCHMARKS.md, "The bridge"); and the SDK's client answers a
 * server's questions itself, where the bridge must hand them to the agent.
 *
 * @module
 */

import { readAnswerText } from "./answer_limits.ts";
import {
  type AgentHello,
  checkTools,
  classifyDiscover,
  type EraVerdict,
  forAgent,
  initializeAnswer,
  listenFilter,
  MISSING_CAPABILITY_CODE,
  missingCapability,
  type ParamHeader,
  requestHeaders,
  withEnvelope,
} from "./modern_wire.ts";
import {
  DEFAULT_RETRY_MS,
  DeliveryError,
  isObject,
  type JsonRpcId,
  mediaType,
  type Message,
  parseJson,
  printable,
  RelayBase,
  type RelayOptions,
  UPSTREAM_ERROR_CODE,
} from "./relay_core.ts";
import { readEvents } from "./sse.ts";
import type { TokenKeeper } from "./tokens.ts";

/** How many `input_required` rounds one request may take. */
export const MAX_INPUT_ROUNDS = 8;

/** How many times in a row the listen stream is reopened without a message. */
const MAX_LISTEN_RECONNECTS = 5;

/** A request of the bridge to the agent, waiting for its answer. */
interface Pending {
  resolve: (message: Message) => void;
  reject: (error: unknown) => void;
}

/** The 2026-07-28 Streamable HTTP transport (see the module's words). */
export class ModernHttpRelay extends RelayBase {
  #url: URL;
  #hello: AgentHello;
  #discover: Message = {};
  #logLevel?: string;
  /** The resources the agent subscribed to. */
  #resources = new Set<string>();
  /** The `x-mcp-header` annotations of each tool, from `tools/list`. */
  #paramHeaders = new Map<string, ParamHeader[]>();
  /** The agent's requests under way, by id: aborting one cancels it. */
  #running = new Map<JsonRpcId, AbortController>();
  /** The bridge's requests to the agent, by the id the bridge gave them. */
  #pending = new Map<JsonRpcId, Pending>();
  #nextId = 0;
  #listen?: { stop: AbortController; done: Promise<void> };

  /** See {@linkcode RelayBase}'s constructor for `shared`. */
  constructor(
    options: RelayOptions,
    hello: AgentHello,
    shared?: { tokens: TokenKeeper; stop: AbortController },
  ) {
    super(options, shared);
    this.#url = new URL(options.url);
    this.#hello = hello;
  }

  /** Sets what the agent said of itself (before {@linkcode discover}). */
  greet(hello: AgentHello): void {
    this.#hello = hello;
  }

  /** The token keeper and stop, for a relay this one hands over to. */
  shared(): { tokens: TokenKeeper; stop: AbortController } {
    return { tokens: this.tokens, stop: this.stop };
  }

  /**
   * Sends `server/discover` and says which era the server speaks (see
   * {@linkcode classifyDiscover}); a modern server's `DiscoverResult` is
   * kept for the `initialize` answers. Throws a {@linkcode DeliveryError}
   * when the token is refused or the server cannot be reached.
   */
  async discover(): Promise<EraVerdict> {
    const message = {
      jsonrpc: "2.0",
      id: this.#newId("discover"),
      method: "server/discover",
      params: withEnvelope({}, { hello: this.#hello }),
    };
    const response = await this.authorizedFetch(this.#url, {
      method: "POST",
      headers: this.#headers(message),
      body: JSON.stringify(message),
      signal: this.stop.signal,
    });
    if (response.status === 401 || response.status === 403) {
      throw await this.statusFailure(response);
    }
    let answer: unknown;
    for await (const one of this.#messages(response)) {
      if (isObject(one) && one.id === message.id) {
        answer = one;
        break;
      }
    }
    const verdict = classifyDiscover({
      status: response.status,
      message: answer,
    });
    if (verdict.kind === "modern") this.#discover = verdict.discover;
    return verdict;
  }

  /** The revision the server said it speaks (for `-v`). */
  get serverVersions(): string {
    const versions = this.#discover.supportedVersions;
    return Array.isArray(versions) ? versions.join(", ") : "";
  }

  async deliver(message: Message | Message[]): Promise<void> {
    // The revision takes one message per POST: a batch is sent apart.
    if (Array.isArray(message)) {
      await Promise.all(message.map((one) => this.deliver(one)));
      return;
    }
    const isRequest = typeof message.method === "string" && "id" in message;
    if (!isRequest) {
      if ("result" in message || "error" in message) {
        this.#answerFromAgent(message);
      } else this.#notification(message);
      return;
    }
    const id = message.id as JsonRpcId;
    switch (message.method) {
      case "initialize":
        this.#hello = { ...this.#hello, ...helloOf(message) };
        await this.toAgent(initializeAnswer(id, this.#hello, this.#discover));
        return;
      case "ping":
        await this.toAgent({ jsonrpc: "2.0", id, result: {} });
        return;
      case "logging/setLevel": {
        const level = isObject(message.params) ? message.params.level : "";
        if (typeof level === "string" && level !== "") this.#logLevel = level;
        await this.toAgent({ jsonrpc: "2.0", id, result: {} });
        return;
      }
      case "resources/subscribe":
      case "resources/unsubscribe": {
        const uri = isObject(message.params) ? message.params.uri : undefined;
        if (typeof uri === "string") {
          if (message.method === "resources/subscribe") {
            this.#resources.add(uri);
          } else this.#resources.delete(uri);
          this.#reopenListen();
        }
        await this.toAgent({ jsonrpc: "2.0", id, result: {} });
        return;
      }
    }
    await this.#request(message, id);
  }

  /** A notification from the agent. */
  #notification(message: Message): void {
    if (message.method === "notifications/initialized") {
      this.#listen ??= this.#startListen();
      return;
    }
    if (message.method === "notifications/cancelled") {
      const id = isObject(message.params) ? message.params.requestId : null;
      this.#running.get(id as JsonRpcId)?.abort();
    }
    // The revision defines no other client notification over HTTP.
  }

  /** An answer of the agent to one of the bridge's questions. */
  #answerFromAgent(message: Message): void {
    const pending = this.#pending.get(message.id as JsonRpcId);
    if (pending === undefined) {
      this.options.warn("the agent answered a request nobody asked");
      return;
    }
    this.#pending.delete(message.id as JsonRpcId);
    pending.resolve(message);
  }

  /**
   * Sends one request of the agent, rounds of `input_required` included,
   * and relays what comes back under the agent's id.
   */
  async #request(message: Message, id: JsonRpcId): Promise<void> {
    const cancel = new AbortController();
    this.#running.set(id, cancel);
    const signal = AbortSignal.any([this.stop.signal, cancel.signal]);
    const turn = this.takeTurn();
    await turn.ready;
    turn.started();
    let params = withEnvelope(message.params, {
      hello: this.#hello,
      logLevel: this.#logLevel,
    });
    try {
      for (let round = 0;; round++) {
        // The revision wants a new id for each retry.
        const upstreamId = round === 0 ? id : this.#newId("retry");
        const outgoing = { ...message, id: upstreamId, params };
        let response: Response;
        try {
          response = await this.authorizedFetch(this.#url, {
            method: "POST",
            headers: this.#headers(outgoing),
            body: JSON.stringify(outgoing),
            signal,
          });
        } finally {
          if (round === 0) turn.sent();
        }
        const answer = await this.#answer(response, upstreamId, signal);
        if (answer === undefined) {
          if (signal.aborted) return;
          throw new DeliveryError(
            UPSTREAM_ERROR_CODE,
            `the remote server of service ${this.options.service} closed the stream before answering`,
          );
        }
        const result = answer.result;
        if (!isObject(result) || result.resultType !== "input_required") {
          let out = answer;
          if (message.method === "tools/list" && isObject(result)) {
            const checked = checkTools(result);
            for (const [tool, headers] of checked.headers) {
              this.#paramHeaders.set(tool, headers);
            }
            for (const { name, reason } of checked.rejected) {
              this.options.warn(
                `left the tool ${printable(name)} out of tools/list: ${reason}`,
              );
            }
            out = { ...answer, result: checked.result };
          }
          await this.toAgent(forAgent(out, id));
          return;
        }
        if (round + 1 >= MAX_INPUT_ROUNDS) {
          throw new DeliveryError(
            UPSTREAM_ERROR_CODE,
            `the remote server of service ${this.options.service} asked for input ${MAX_INPUT_ROUNDS} times in a row without answering`,
          );
        }
        const responses = await this.#askAgent(result, id, signal);
        if (responses === undefined) return;
        const { inputResponses: _, requestState: __, ...rest } = params;
        params = {
          ...rest,
          ...(Object.keys(responses).length > 0
            ? { inputResponses: responses }
            : {}),
          ...(typeof result.requestState === "string"
            ? { requestState: result.requestState }
            : {}),
        };
      }
    } catch (error) {
      if (!signal.aborted) await this.answerWithError(message, error);
    } finally {
      this.#running.delete(id);
    }
  }

  /**
   * The final JSON-RPC answer to the request `id` from `response`: a JSON
   * body, or the response on its event stream (the notifications before it
   * are relayed to the agent). A modern server's JSON-RPC error comes with
   * a 4xx; other failures throw. Undefined when the stream ended first.
   */
  async #answer(
    response: Response,
    id: JsonRpcId,
    signal: AbortSignal,
  ): Promise<Message | undefined> {
    const type = mediaType(response.headers.get("content-type"));
    // A modern server's JSON-RPC errors come with a 4xx; a refused token's
    // answer is the token's business.
    const rpcError = type === "application/json" && response.status >= 400 &&
      response.status < 500 && response.status !== 401 &&
      response.status !== 403;
    if (!response.ok && !rpcError) throw await this.statusFailure(response);
    for await (const message of this.#messages(response)) {
      if (signal.aborted) return undefined;
      if (!isObject(message)) continue;
      if (message.id === id && ("result" in message || "error" in message)) {
        return message;
      }
      if (typeof message.method === "string" && !("id" in message)) {
        await this.toAgent(forAgent(message));
      } else {
        // The revision sends no requests on a response stream.
        this.options.warn("the remote server sent a message out of place");
      }
    }
    if (!response.ok) {
      throw new DeliveryError(
        UPSTREAM_ERROR_CODE,
        `the remote server of service ${this.options.service} answered HTTP ${response.status}`,
      );
    }
    return undefined;
  }

  /**
   * Asks the agent each question of an `input_required` result and
   * returns its answers by key; undefined when the request was answered
   * here instead (a capability the agent lacks, an error of the agent) or
   * cancelled.
   */
  async #askAgent(
    result: Message,
    id: JsonRpcId,
    signal: AbortSignal,
  ): Promise<Message | undefined> {
    const requests = isObject(result.inputRequests) ? result.inputRequests : {};
    for (const request of Object.values(requests)) {
      const missing = missingCapability(request, this.#hello.capabilities);
      if (missing !== undefined) {
        const method = isObject(request) ? String(request.method) : "?";
        await this.toAgent({
          jsonrpc: "2.0",
          id,
          error: {
            code: MISSING_CAPABILITY_CODE,
            message:
              `the remote server of service ${this.options.service} asked for ${method}, which the agent did not declare`,
            data: { requiredCapabilities: missing },
          },
        });
        return undefined;
      }
    }
    const entries = await Promise.all(
      Object.entries(requests).map(async ([key, request]) => {
        const question = request as Message;
        const answer = await this.#ask(question, signal);
        return [key, answer] as const;
      }),
    ).catch((error) => {
      if (signal.aborted) return undefined;
      throw error;
    });
    if (entries === undefined) return undefined;
    const responses: Message = {};
    for (const [key, answer] of entries) {
      if (isObject(answer.error)) {
        await this.toAgent({ jsonrpc: "2.0", id, error: answer.error });
        return undefined;
      }
      responses[key] = isObject(answer.result) ? answer.result : {};
    }
    return responses;
  }

  /** Sends `question` to the agent as a request; resolves with its answer. */
  #ask(question: Message, signal: AbortSignal): Promise<Message> {
    const id = this.#newId("input");
    const answered = Promise.withResolvers<Message>();
    this.#pending.set(id, answered);
    const abort = () => {
      this.#pending.delete(id);
      answered.reject(signal.reason);
    };
    signal.addEventListener("abort", abort, { once: true });
    this.toAgent({
      jsonrpc: "2.0",
      id,
      method: question.method,
      ...(isObject(question.params) ? { params: question.params } : {}),
    });
    return answered.promise.finally(() =>
      signal.removeEventListener("abort", abort)
    );
  }

  /** The JSON-RPC messages of an answer: its JSON body or its events. */
  async *#messages(response: Response): AsyncGenerator<unknown> {
    const type = mediaType(response.headers.get("content-type"));
    if (response.body === null) return;
    if (type === "text/event-stream") {
      for await (const event of readEvents(response.body, this.limits)) {
        if (event.event !== "message" || event.data.trim() === "") continue;
        const message = parseJson(event.data);
        if (message === undefined) {
          this.options.warn("the remote server sent an event that is not JSON");
          continue;
        }
        yield message;
      }
      return;
    }
    if (type !== "application/json") {
      await response.body.cancel();
      return;
    }
    const text = await readAnswerText(response.body, this.limits);
    if (text.trim() === "") return;
    const message = parseJson(text);
    if (message === undefined) {
      throw new DeliveryError(
        UPSTREAM_ERROR_CODE,
        `the remote server of service ${this.options.service} answered with JSON it cannot parse`,
      );
    }
    yield message;
  }

  /** Closes the listen stream and opens it again with the current filter. */
  #reopenListen(): void {
    const listen = this.#listen;
    if (listen === undefined) return;
    listen.stop.abort();
    this.#listen = this.#startListen();
  }

  #startListen(): { stop: AbortController; done: Promise<void> } {
    const stop = new AbortController();
    return { stop, done: this.#runListen(stop.signal) };
  }

  /**
   * The `subscriptions/listen` stream: the change notifications the agent
   * would have had on the 2025 GET stream, reopened a bounded number of
   * times when it ends.
   */
  async #runListen(ownStop: AbortSignal): Promise<void> {
    const signal = AbortSignal.any([this.stop.signal, ownStop]);
    let reconnects = 0;
    while (!signal.aborted) {
      const filter = listenFilter(
        this.#discover.capabilities,
        this.#resources,
      );
      if (filter === undefined) return;
      const message = {
        jsonrpc: "2.0",
        id: this.#newId("listen"),
        method: "subscriptions/listen",
        params: withEnvelope({ notifications: filter }, {
          hello: this.#hello,
        }),
      };
      let relayed = false;
      try {
        const response = await this.authorizedFetch(this.#url, {
          method: "POST",
          headers: this.#headers(message),
          body: JSON.stringify(message),
          signal,
        });
        if (!response.ok) throw await this.statusFailure(response);
        for await (const one of this.#messages(response)) {
          if (!isObject(one) || typeof one.method !== "string") {
            // The listen request's own answer: the server ended it.
            if (isObject(one) && one.id === message.id) break;
            continue;
          }
          if (one.method === "notifications/subscriptions/acknowledged") {
            continue;
          }
          relayed = true;
          await this.toAgent(forAgent(one));
        }
      } catch (error) {
        if (signal.aborted) return;
        this.options.warn(
          `the stream for server notifications broke: ${
            this.deliveryError(error).message
          }`,
        );
        if (error instanceof DeliveryError) return;
      }
      if (signal.aborted) return;
      reconnects = relayed ? 0 : reconnects + 1;
      if (reconnects > MAX_LISTEN_RECONNECTS) {
        this.options.warn(
          "the stream for server notifications keeps ending; no longer reopened",
        );
        return;
      }
      await this.sleep(DEFAULT_RETRY_MS, signal);
    }
  }

  #headers(message: Message): Record<string, string> {
    const params = isObject(message.params) ? message.params : {};
    const tool = typeof params.name === "string" ? params.name : "";
    return {
      ...requestHeaders(message, this.#paramHeaders.get(tool)),
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
    };
  }

  #newId(kind: string): string {
    return `sherlock-${kind}-${++this.#nextId}`;
  }

  async close(): Promise<void> {
    this.stop.abort();
    for (const pending of this.#pending.values()) {
      pending.reject(new Error("the bridge is closing"));
    }
    this.#pending.clear();
    await this.#listen?.done.catch(() => {});
  }
}

/** The hello of an `initialize` message, minus what it does not say. */
function helloOf(message: Message): Partial<AgentHello> {
  const params = isObject(message.params) ? message.params : {};
  const hello: Partial<AgentHello> = {};
  if (typeof params.protocolVersion === "string") {
    hello.protocolVersion = params.protocolVersion;
  }
  if (isObject(params.clientInfo)) hello.clientInfo = params.clientInfo;
  if (isObject(params.capabilities)) hello.capabilities = params.capabilities;
  return hello;
}
