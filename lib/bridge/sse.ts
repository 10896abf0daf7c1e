/**
 * A reader of `text/event-stream` bodies (the HTML standard's event stream
 * format), as MCP's HTTP transports send them. Replaces the SDK's
 * `eventsource-parser`: forty lines, and no npm package on the bridge's
 * start-up path.
 *
 * @module
 */

import {
  ANSWER_LIMITS,
  AnswerLimitError,
  type AnswerLimits,
  byteSize,
  readBefore,
  seconds,
} from "./answer_limits.ts";

/** One dispatched event. */
export interface ServerSentEvent {
  /** The `event` field; "message" when there was none. */
  event: string;
  /** The `data` lines, joined with "\n". */
  data: string;
  /** The `id` field, if the event had one. */
  id?: string;
  /** The `retry` field in ms, if the event had a valid one. */
  retry?: number;
}

/**
 * What a stream has said about resuming it, kept up to date as it is read
 * (also by events that carry no data, which are not yielded): what a
 * reader needs to reopen it where it broke off.
 */
export interface EventStreamState {
  /**
   * The stream's last event ID: the `id` of the last event dispatched, as
   * the standard keeps it (an event without `id` keeps the one before; an
   * empty `id` clears it to ""). Undefined until an event had one.
   */
  lastEventId?: string;
  /** The last valid `retry` field, in ms: how long to wait before resuming. */
  retry?: number;
}

/**
 * The events of an event stream, in order, as they arrive. Each event is
 * bounded: at most `limits.maxBytes` (its lines, its data), and at most
 * `limits.bodyMs` from its first byte to the blank line that ends it (the
 * wait between events is not bounded). Past either it throws an
 * {@linkcode AnswerLimitError} and stops reading. `state`, when given, is
 * kept up to date with the stream's last event ID and `retry`.
 */
export async function* readEvents(
  body: ReadableStream<Uint8Array>,
  limits: Pick<AnswerLimits, "maxBytes" | "bodyMs"> = ANSWER_LIMITS,
  state: EventStreamState = {},
): AsyncGenerator<ServerSentEvent> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let pending = "";
  let event = "";
  let data: string[] = [];
  let size = 0;
  let id: string | undefined;
  let retry: number | undefined;
  /** When the event under way must have ended (`Date.now()` time). */
  let deadline: number | undefined;
  const tooLarge = () =>
    new AnswerLimitError(
      `sent an event larger than ${byteSize(limits.maxBytes)}`,
    );
  try {
    for (;;) {
      const { value: chunk, done } = await readBefore(reader, {
        deadline,
        onLate: () =>
          new AnswerLimitError(
            `took more than ${seconds(limits.bodyMs)} to send one event`,
          ),
      });
      if (done) break;
      pending += chunk;
      // A line ends at CRLF, LF or CR; a CR at the very end may be half of
      // a CRLF, so it waits for the next chunk.
      const pattern = /\r\n|\n|\r(?!$)/g;
      let start = 0;
      for (
        let match = pattern.exec(pending);
        match;
        match = pattern.exec(pending)
      ) {
        const line = pending.slice(start, match.index);
        start = match.index + match[0].length;
        if (line === "") {
          // The standard sets the last event ID on every dispatch, even of
          // an event without data (a server's "priming" event may be one).
          if (id !== undefined) state.lastEventId = id;
          if (data.length > 0) {
            yield {
              event: event || "message",
              data: data.join("\n"),
              id,
              retry,
            };
          }
          event = "";
          data = [];
          size = 0;
          retry = undefined;
          deadline = undefined;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        let value = colon === -1 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") {
          size += value.length;
          if (size > limits.maxBytes) throw tooLarge();
          data.push(value);
        } else if (field === "event") event = value;
        else if (field === "id" && !value.includes("\0")) id = value;
        else if (field === "retry" && /^\d+$/.test(value)) {
          retry = Number(value);
          state.retry = retry;
        }
      }
      pending = pending.slice(start);
      if (size + pending.length > limits.maxBytes) throw tooLarge();
      // An event is under way from its first byte (a comment line that has
      // ended is none) until the blank line that dispatches it.
      const underWay = pending !== "" || data.length > 0 || event !== "";
      if (!underWay) deadline = undefined;
      else deadline ??= Date.now() + limits.bodyMs;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}
