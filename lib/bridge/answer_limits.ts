/**
 * How much and how long the bridge reads of what the remote server
 * answers: a server that streams without end, or trickles a byte a
 * minute, must cost the bridge neither unbounded memory nor a request
 * that never ends. One answer (a JSON body) and one event of an event
 * stream are bounded in size and in time; the wait between events is not
 * (a stream for server messages idles for hours).
 *
 * @module
 */

/** The bounds on what the bridge reads from the remote server. */
export interface AnswerLimits {
  /** The most one JSON answer, or one event of a stream, may hold. */
  maxBytes: number;
  /**
   * How long one JSON answer may take from its headers to its end, and one
   * event from its first byte to its end.
   */
  bodyMs: number;
  /** How long the server may take to send an answer's headers. */
  headersMs: number;
}

/**
 * The bridge's bounds: 16 MiB (a large tool result, an image in base64,
 * fits), 2 minutes for a body or an event once it has started, and 10
 * minutes for the headers (a slow tool call answered as JSON).
 */
export const ANSWER_LIMITS: AnswerLimits = {
  maxBytes: 16 * 1024 * 1024,
  bodyMs: 120_000,
  headersMs: 600_000,
};

/** An answer beyond a bound; its message says which ("sent …", "took …"). */
export class AnswerLimitError extends Error {
  /** Creates the error; `message` continues "the remote server …". */
  constructor(message: string) {
    super(message);
    this.name = "AnswerLimitError";
  }
}

/** `bytes` for a message: "16 MiB", "300 KiB", "12 bytes". */
export function byteSize(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) {
    return `${bytes / (1024 * 1024)} MiB`;
  }
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/** `ms` for a message: "120 s", "0.2 s". */
export function seconds(ms: number): string {
  return `${ms / 1000} s`;
}

/**
 * The next chunk of `reader`, or a rejection with `onLate()`'s error when
 * `deadline` (a `Date.now()` time) passes first; none: no bound.
 */
export async function readBefore<T>(
  reader: ReadableStreamDefaultReader<T>,
  options: { deadline?: number; onLate: () => Error },
): Promise<ReadableStreamReadResult<T>> {
  if (options.deadline === undefined) return await reader.read();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(options.onLate()),
      Math.max(options.deadline! - Date.now(), 0),
    );
  });
  try {
    return await Promise.race([reader.read(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The whole of `body` as text, within `limits.maxBytes` and
 * `limits.bodyMs`; throws {@linkcode AnswerLimitError} (and stops reading)
 * past either.
 */
export async function readAnswerText(
  body: ReadableStream<Uint8Array>,
  limits: Pick<AnswerLimits, "maxBytes" | "bodyMs">,
): Promise<string> {
  const reader = body.getReader();
  const deadline = Date.now() + limits.bodyMs;
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { value, done } = await readBefore(reader, {
        deadline,
        onLate: () =>
          new AnswerLimitError(
            `took more than ${seconds(limits.bodyMs)} to send its answer`,
          ),
      });
      if (done) break;
      size += value.length;
      if (size > limits.maxBytes) {
        throw new AnswerLimitError(
          `sent an answer larger than ${byteSize(limits.maxBytes)}`,
        );
      }
      chunks.push(value);
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return new TextDecoder().decode(bytes);
}
