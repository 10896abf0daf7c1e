/**
 * A minimal HTTP/1.1 client over a Unix socket: one request per connection
 * (`Connection: close`), JSON in and out, for the launch path and the token
 * shim, where start-up time counts. Not `fetch` through
 * `Deno.createHttpClient` (its first request is dearer at start-up:
 * docs/BENCHMARKS.md) nor `node:http` (it starts Node compatibility).
 *
 * @module
 */

import { concatBytes } from "./bytes.ts";

/** A parsed response. */
export interface UnixHttpResponse {
  status: number;
  /** The JSON body, or undefined when there was none or it was not JSON. */
  body: unknown;
}

/** One request. */
export interface UnixHttpRequest {
  socket: string;
  /** `GET`, `POST`, `PUT` or `DELETE`. */
  method: string;
  /** The request path, e.g. `/v1/health`. */
  path: string;
  /** Sent as JSON when present. */
  body?: unknown;
  /** Give up after this many ms (the connection is closed). */
  timeoutMs: number;
}

/** The socket could not be reached, or the answer was not HTTP. */
export class SocketError extends Error {
  /**
   * True when nothing accepted the connection (no socket, or a stale one):
   * the request never reached a daemon.
   */
  readonly connectFailed: boolean;

  /** Creates the error. */
  constructor(message: string, options: { connectFailed?: boolean } = {}) {
    super(message);
    this.name = "SocketError";
    this.connectFailed = options.connectFailed ?? false;
  }
}

/**
 * Sends one request and reads the whole answer. Throws
 * {@linkcode SocketError} when the socket does not answer in time or at all.
 */
export async function unixHttpRequest(
  request: UnixHttpRequest,
): Promise<UnixHttpResponse> {
  let connection: Deno.UnixConn;
  try {
    connection = await Deno.connect({
      transport: "unix",
      path: request.socket,
    });
  } catch (error) {
    throw new SocketError(
      `cannot connect to ${request.socket}: ${(error as Error).message}`,
      { connectFailed: true },
    );
  }
  // AbortSignal.timeout rather than setTimeout: a process's first
  // setTimeout is dear, and every `sherlock run` with a token to fetch
  // would pay for it (docs/BENCHMARKS.md).
  const deadline = AbortSignal.timeout(request.timeoutMs);
  const onTimeout = () => {
    try {
      connection.close();
    } catch {
      // Already closed.
    }
  };
  deadline.addEventListener("abort", onTimeout, { once: true });
  try {
    const payload = request.body === undefined
      ? new Uint8Array()
      : new TextEncoder().encode(JSON.stringify(request.body));
    const head = `${request.method} ${request.path} HTTP/1.1\r\n` +
      "Host: sherlock\r\nConnection: close\r\n" +
      (request.body === undefined ? "" : "Content-Type: application/json\r\n") +
      `Content-Length: ${payload.length}\r\n\r\n`;
    try {
      await writeAll(
        connection,
        concatBytes([new TextEncoder().encode(head), payload]),
      );
    } catch (error) {
      // The daemon may have refused the request early (e.g. 413) and
      // closed: its answer says more than the broken pipe.
      const raw = await readAll(connection).catch(() => new Uint8Array());
      if (raw.length === 0) throw error;
      return parseResponse(raw);
    }
    const raw = await readAll(connection);
    return parseResponse(raw);
  } catch (error) {
    if (error instanceof SocketError) throw error;
    throw new SocketError(
      `no answer from ${request.socket}: ${(error as Error).message}`,
    );
  } finally {
    deadline.removeEventListener("abort", onTimeout);
    try {
      connection.close();
    } catch {
      // Closed by the timer or the peer.
    }
  }
}

/** Parses a complete HTTP/1.1 response (headers and body). */
export function parseResponse(raw: Uint8Array): UnixHttpResponse {
  const separator = indexOfHeaderEnd(raw);
  if (separator === -1) throw new SocketError("incomplete HTTP response");
  const head = new TextDecoder().decode(raw.subarray(0, separator));
  let body = raw.subarray(separator + 4);
  const [statusLine, ...headerLines] = head.split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  if (!Number.isInteger(status)) throw new SocketError("not an HTTP response");
  const headers = new Map(
    headerLines.map((line) => {
      const colon = line.indexOf(":");
      return [
        line.slice(0, colon).trim().toLowerCase(),
        line.slice(colon + 1).trim(),
      ] as const;
    }),
  );
  if (headers.get("transfer-encoding")?.toLowerCase() === "chunked") {
    body = dechunk(body);
  } else if (headers.has("content-length")) {
    body = body.subarray(0, Number(headers.get("content-length")));
  }
  const text = new TextDecoder().decode(body);
  let parsed: unknown;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status, body: parsed };
}

function indexOfHeaderEnd(raw: Uint8Array): number {
  for (let index = 0; index + 3 < raw.length; index++) {
    if (
      raw[index] === 13 && raw[index + 1] === 10 && raw[index + 2] === 13 &&
      raw[index + 3] === 10
    ) return index;
  }
  return -1;
}

function dechunk(body: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  let offset = 0;
  const decoder = new TextDecoder();
  while (offset < body.length) {
    let lineEnd = offset;
    while (
      lineEnd + 1 < body.length &&
      !(body[lineEnd] === 13 && body[lineEnd + 1] === 10)
    ) lineEnd++;
    const size = parseInt(decoder.decode(body.subarray(offset, lineEnd)), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
  return concatBytes(parts);
}

async function writeAll(
  connection: Deno.Conn,
  data: Uint8Array,
): Promise<void> {
  let written = 0;
  while (written < data.length) {
    written += await connection.write(data.subarray(written));
  }
}

async function readAll(connection: Deno.Conn): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  const buffer = new Uint8Array(16 * 1024);
  while (true) {
    const count = await connection.read(buffer);
    if (count === null) break;
    chunks.push(buffer.slice(0, count));
  }
  return concatBytes(chunks);
}
