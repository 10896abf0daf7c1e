/**
 * A reader of `text/event-stream` bodies (the HTML standard's event stream
 * format), as MCP's HTTP transports send them. Replaces the SDK's
 * `eventsource-parser`: forty lines, and no npm package on the bridge's
 * start-up path.
 *
 * @module
 */

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

/** The longest event sherlock buffers; a longer one ends the stream. */
export const MAX_EVENT_BYTES = 64 * 1024 * 1024;

/**
 * The events of an event stream, in order, as they arrive. Throws a
 * `RangeError` when one event grows beyond {@linkcode MAX_EVENT_BYTES}.
 */
export async function* readEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<ServerSentEvent> {
  let pending = "";
  let event = "";
  let data: string[] = [];
  let size = 0;
  let id: string | undefined;
  let retry: number | undefined;
  for await (const chunk of body.pipeThrough(new TextDecoderStream())) {
    pending += chunk;
    // A line ends at CRLF, LF or CR; a CR at the very end may be half of a
    // CRLF, so it waits for the next chunk.
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
        if (data.length > 0) {
          yield { event: event || "message", data: data.join("\n"), id, retry };
        }
        event = "";
        data = [];
        size = 0;
        retry = undefined;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") {
        size += value.length;
        if (size > MAX_EVENT_BYTES) {
          throw new RangeError("an event of the stream is too large");
        }
        data.push(value);
      } else if (field === "event") event = value;
      else if (field === "id" && !value.includes("\0")) id = value;
      else if (field === "retry" && /^\d+$/.test(value)) retry = Number(value);
    }
    pending = pending.slice(start);
    if (pending.length > MAX_EVENT_BYTES) {
      throw new RangeError("a line of the stream is too long");
    }
  }
}
