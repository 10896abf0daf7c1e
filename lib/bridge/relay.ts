/**
 * The bridge's relay: JSON-RPC messages between an agent on stdio
 * (newline-delimited JSON, as MCP's stdio transport frames them) and a
 * remote MCP server, over one of three transports, a module each:
 *
 * - `modern_http.ts`: Streamable HTTP of the 2026-07-28 revision (no
 *   `initialize`, no session; `server/discover`, the per-request `_meta`
 *   envelope, `subscriptions/listen`, multi-round-trip requests), which the
 *   bridge translates to and from the agent's 2025 revision;
 * - `streamable_http.ts`: Streamable HTTP of the 2025 revisions, relayed
 *   as is (it looks only into the answer to `initialize`, for the
 *   `MCP-Protocol-Version` header of the requests after it);
 * - `legacy_sse.ts`: the HTTP+SSE transport of 2024-11-05 (deprecated;
 *   `transport = "sse"`), with a line on stderr that says so.
 *
 * Which Streamable HTTP a server speaks is found out once per bridge, at
 * the agent's first message (its `initialize`): a `server/discover` probe,
 * classified as the 2026-07-28 revision's Backward Compatibility section
 * says (`modern_wire.ts` `classifyDiscover`); a 2025 server then gets the
 * agent's `initialize` as before. `info` (`sherlock bridge --verbose`)
 * says which.
 *
 * What the transports share is `relay_core.ts`: each request carries the
 * token of a `TokenKeeper` (`tokens.ts`); a 401 gets one forced refresh and
 * one retry. A 403 `insufficient_scope` (the MCP spec's scope challenge)
 * is reported through `onScopeChallenge`, so that the next `sherlock auth`
 * steps the grant up, and its token is no longer used. A request that
 * cannot be delivered is answered with a JSON-RPC error (naming `sherlock
 * auth <service>` when it is the token), a notification is dropped with a
 * line for `warn`, and the relay keeps running until its input ends: an
 * agent whose server fails must not see it crash, restart it, and see it
 * crash again. A request that carries the token follows a redirect only
 * within the origin of the service's url ({@linkcode redirectAllowed}),
 * and every answer is read within the bounds of `answer_limits.ts`. The
 * agent's messages are sent in the order it wrote them (see
 * {@linkcode SEND_ORDER_MS}), while the answers stream concurrently.
 *
 * Written on `fetch` rather than the SDK's client transports, which load
 * zod, their OAuth client and an npm event-stream parser on every start,
 * and validate each message against one protocol revision's schema
 * (docs/BENCHMARKS.md, "The bridge").
 *
 * @module
 */

import { LegacySseRelay } from "./legacy_sse.ts";
import { ModernHttpRelay } from "./modern_http.ts";
import { agentHello, MODERN_REVISION } from "./modern_wire.ts";
import {
  DeliveryError,
  isObject,
  type Message,
  messageOf,
  parseJson,
  type Relay,
  type RelayOptions,
  requestIds,
  UPSTREAM_ERROR_CODE,
} from "./relay_core.ts";
import { StreamableHttpRelay } from "./streamable_http.ts";

export type { BridgeToken, GetToken } from "./tokens.ts";
export {
  AUTH_ERROR_CODE,
  MAX_RETRY_MS,
  redirectAllowed,
  type RelayOptions,
  type RemoteTransport,
  SEND_ORDER_MS,
  UPSTREAM_ERROR_CODE,
} from "./relay_core.ts";
export { MAX_RESUMES } from "./streamable_http.ts";
export { MISSING_CAPABILITY_CODE, MODERN_REVISION } from "./modern_wire.ts";

/** The longest line read from the agent. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/** How long, after the input ended, answers still in flight may take. */
const DRAIN_MS = 3_000;

/**
 * The line `warn` gets once when a service uses the HTTP+SSE transport.
 */
export const SSE_DEPRECATION =
  'the service uses the HTTP+SSE transport of MCP 2024-11-05, deprecated since 2025-03-26; when its server offers Streamable HTTP, drop `transport = "sse"` and point url at that endpoint';

/**
 * Relays until the input ends (or `signal` aborts), then ends the remote
 * session (a DELETE, on 2025 Streamable HTTP). Never throws for a failure
 * of the server or of the token; it returns when the agent is gone.
 */
export async function runRelay(options: RelayOptions): Promise<void> {
  let relay: Relay;
  if (options.transport === "sse") {
    options.warn(SSE_DEPRECATION);
    relay = new LegacySseRelay(options);
  } else relay = new HttpRelay(options);
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

/**
 * Streamable HTTP of either era: the first message waits for the
 * `server/discover` probe, and every message goes to the transport of the
 * era it found (in the order they came: each waits on the same verdict).
 * A probe that failed (no token, no server) answers its message with the
 * error, and the next request probes again (a notification before then is
 * dropped with a line on stderr: there is nowhere to send it).
 */
class HttpRelay implements Relay {
  #options: RelayOptions;
  #modern: ModernHttpRelay;
  #legacy?: StreamableHttpRelay;
  #verdict?: Promise<Relay | DeliveryError>;

  constructor(options: RelayOptions) {
    this.#options = options;
    this.#modern = new ModernHttpRelay(options, agentHello({}));
  }

  get closed(): boolean {
    return (this.#legacy ?? this.#modern).closed;
  }

  async deliver(message: Message | Message[]): Promise<void> {
    if (this.#verdict === undefined && requestIds(message).length === 0) {
      // Only a request can carry a probe's failure back to the agent.
      this.#options.warn(
        "dropped a notification or response: the server has not been reached yet",
      );
      return;
    }
    const verdict = this.#verdict ??= this.#decide(message);
    const relay = await verdict;
    if (relay instanceof DeliveryError) {
      if (this.#verdict === verdict) this.#verdict = undefined;
      await this.#modern.refuse(message, relay);
      return;
    }
    await relay.deliver(message);
  }

  async #decide(first: Message | Message[]): Promise<Relay | DeliveryError> {
    const initialize = (Array.isArray(first) ? first : [first]).find((one) =>
      one.method === "initialize"
    );
    this.#modern.greet(agentHello(initialize ?? {}));
    let verdict;
    try {
      verdict = await this.#modern.discover();
    } catch (error) {
      return this.#modern.failure(error);
    }
    if (verdict.kind === "error") {
      return new DeliveryError(
        UPSTREAM_ERROR_CODE,
        `the remote server of service ${this.#options.service} ${verdict.message}`,
      );
    }
    if (verdict.kind === "modern") {
      this.#options.info?.(
        `the server speaks MCP ${MODERN_REVISION} (server/discover: ${this.#modern.serverVersions}); the bridge translates for the agent`,
      );
      return this.#modern;
    }
    this.#legacy = new StreamableHttpRelay(
      this.#options,
      this.#modern.shared(),
    );
    return this.#legacy;
  }

  async close(): Promise<void> {
    await this.#modern.close();
    await this.#legacy?.close();
  }
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

async function withTimeout(promise: Promise<unknown>, ms: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    promise.catch(() => {}),
    new Promise((resolve) => timer = setTimeout(resolve, ms)),
  ]);
  clearTimeout(timer);
}
