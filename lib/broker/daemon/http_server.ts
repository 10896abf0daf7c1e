/**
 * The daemon's HTTP/1.1 server on a Unix socket: one request per
 * connection, answered and closed.
 *
 * sherlock's own client sends one small JSON request per connection, so a
 * full HTTP stack buys nothing here, and a general one (`Deno.serve`)
 * answers what it cannot parse with an empty body, or with nothing, and
 * keeps a connection open while a client holds back a body it announced.
 * This server reads the head and the body under a size limit and a time
 * limit, and answers every request it cannot use with a 4xx and a JSON
 * {@linkcode ErrorBody} — then closes, whatever the client does next.
 *
 * At most {@linkcode MAX_CONNECTIONS} are open at once, so that idle
 * connections cannot use up the daemon's file descriptors: a new one closes
 * the oldest that has not sent its whole request yet (a real client sends
 * at once, so the oldest idle one is the least likely to be one), and is
 * itself closed at once when every open one is being answered.
 *
 * A request's `signal` aborts when its client closes the connection before
 * the answer: a long wait (`sherlock auth`'s) ends with its client.
 *
 * @module
 */

import { concatBytes } from "../../runtime/bytes.ts";
import type { ErrorBody, ErrorCode } from "../protocol.ts";

/** The most bytes of a request line and headers. */
export const MAX_HEAD_BYTES = 16 * 1024;

/** How long a client may take to send its whole request. */
export const READ_TIMEOUT_MS = 10_000;

/** The most connections open at once. */
export const MAX_CONNECTIONS = 256;

/** How a server runs. */
export interface HttpServerOptions {
  /** The socket's path; it must not exist yet. */
  path: string;
  /** Answers one request; should not throw (a throw answers 500). */
  handler: (request: Request) => Promise<Response>;
  /** The largest request body accepted, in bytes. */
  maxBodyBytes: number;
  /** Overrides {@linkcode READ_TIMEOUT_MS}. */
  readTimeoutMs?: number;
  /** Overrides {@linkcode MAX_CONNECTIONS}. */
  maxConnections?: number;
  /** Writes a line to the daemon's log (never a secret). */
  log: (line: string) => void;
}

/** A running server. */
export interface HttpServer {
  /** Stops accepting connections and waits for the open ones to finish. */
  shutdown(): Promise<void>;
}

/** A request the server refuses before the handler sees it. */
class ProtocolError extends Error {
  readonly status: number;
  readonly code: ErrorCode;

  constructor(status: number, code: ErrorCode, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The client closed its side without sending a byte: nothing to answer. */
class SilentClose extends Error {}

/** Listens on `options.path` (bound at once) and serves until shut down. */
export function serveHttp(options: HttpServerOptions): HttpServer {
  const listener = Deno.listen({ transport: "unix", path: options.path });
  const open = new Set<Promise<void>>();
  // Oldest first (a Map keeps insertion order); gone once closed.
  const connections = new Map<Deno.Conn, ConnectionState>();
  const maxConnections = options.maxConnections ?? MAX_CONNECTIONS;
  let closing = false;
  const accepting = (async () => {
    while (!closing) {
      let connection: Deno.Conn;
      try {
        connection = await listener.accept();
      } catch (error) {
        if (closing || error instanceof Deno.errors.BadResource) return;
        // EMFILE and the like: wait a little rather than spin.
        options.log(`accept failed: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      if (connections.size >= maxConnections && !evictIdle(connections)) {
        closeQuietly(connection);
        continue;
      }
      const state: ConnectionState = { reading: true };
      connections.set(connection, state);
      const done: Promise<void> = serveConnection(connection, {
        ...options,
        state,
      }).finally(() => {
        open.delete(done);
        connections.delete(connection);
      });
      open.add(done);
    }
  })();
  return {
    async shutdown() {
      closing = true;
      try {
        listener.close();
      } catch {
        // Already closed.
      }
      await accepting;
      await Promise.allSettled([...open]);
    },
  };
}

/** Where a connection is. */
interface ConnectionState {
  /** True until its whole request is read. */
  reading: boolean;
}

/**
 * Closes the oldest connection still sending its request (its read fails
 * and its serving ends); false when every one is being answered.
 */
function evictIdle(connections: Map<Deno.Conn, ConnectionState>): boolean {
  for (const [connection, state] of connections) {
    if (!state.reading) continue;
    connections.delete(connection);
    closeQuietly(connection);
    return true;
  }
  return false;
}

function closeQuietly(connection: Deno.Conn): void {
  try {
    connection.close();
  } catch {
    // Already closed.
  }
}

async function serveConnection(
  connection: Deno.Conn,
  options: HttpServerOptions & { state: ConnectionState },
): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new ProtocolError(
              408,
              "timeout",
              "the request was not complete in time",
            ),
          ),
        options.readTimeoutMs ?? READ_TIMEOUT_MS,
      );
    });
    timeout.catch(() => {});
    let request: Request;
    const gone = new AbortController();
    try {
      request = await Promise.race([
        readRequest(connection, options.maxBodyBytes, gone.signal),
        timeout,
      ]);
    } catch (error) {
      if (error instanceof SilentClose) return;
      if (error instanceof ProtocolError) {
        await writeResponse(
          connection,
          errorResponse(error.status, error.code, error.message),
        );
        return;
      }
      // The connection broke while reading: nobody to answer.
      return;
    } finally {
      clearTimeout(timer);
    }
    options.state.reading = false;
    watchForClose(connection, gone);
    let response: Response;
    try {
      response = await options.handler(request);
    } catch (error) {
      options.log(`internal error: ${(error as Error)?.message ?? error}`);
      response = errorResponse(
        500,
        "internal",
        "internal error; see the broker's log",
      );
    }
    await writeResponse(connection, response);
  } catch {
    // The client went away while we answered.
  } finally {
    closeQuietly(connection);
  }
}

/**
 * Aborts `gone` when the client closes its side (or the connection
 * breaks). Its client sends one request and then only reads, so whatever
 * else arrives is dropped.
 */
function watchForClose(connection: Deno.Conn, gone: AbortController): void {
  const scratch = new Uint8Array(1024);
  (async () => {
    try {
      while ((await connection.read(scratch)) !== null) {
        // Bytes after the request: ignored.
      }
    } catch {
      // Broken, or closed by us after the answer: either way, done.
    }
    gone.abort();
  })();
}

/** Reads and parses one request; throws {@linkcode ProtocolError}. */
async function readRequest(
  connection: Deno.Conn,
  maxBodyBytes: number,
  signal: AbortSignal,
): Promise<Request> {
  const reader = new ByteReader(connection);
  const headEnd = await reader.fillUntil((bytes) => {
    // Refuse a first line that cannot be HTTP as soon as that shows: a
    // byte no request line has (binary, a TLS hello), or its end.
    const lineEnd = bytes.indexOf(10);
    const line = bytes.subarray(0, lineEnd === -1 ? bytes.length : lineEnd);
    if (
      line.some((byte) => byte < 32 && byte !== 13 || byte > 126) ||
      (lineEnd !== -1 &&
        !REQUEST_LINE.test(decodeLatin1(bytes.subarray(0, lineEnd + 1))))
    ) {
      throw malformedRequestLine();
    }
    const end = indexOfHeadEnd(bytes);
    if (end === -1 ? bytes.length > MAX_HEAD_BYTES : end > MAX_HEAD_BYTES) {
      throw new ProtocolError(
        431,
        "bad_request",
        `the request head is larger than ${MAX_HEAD_BYTES} bytes`,
      );
    }
    return end === -1 ? undefined : end;
  });
  if (headEnd === undefined) {
    if (reader.length === 0) throw new SilentClose();
    throw new ProtocolError(400, "bad_request", "incomplete HTTP request");
  }
  const head = decodeLatin1(reader.take(headEnd + 4).subarray(0, headEnd));
  const [requestLine, ...headerLines] = head.split("\r\n");
  const match = REQUEST_LINE.exec(`${requestLine}\r\n`);
  if (!match) throw malformedRequestLine();
  const [, method, target] = match;
  const headers = new Headers();
  const lengths: string[] = [];
  for (const line of headerLines) {
    const header = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/.exec(
      line,
    );
    // deno-lint-ignore no-control-regex -- control characters are the point
    if (!header || /[\x00-\x08\x0a-\x1f\x7f]/.test(header[2])) {
      throw new ProtocolError(400, "bad_request", "malformed HTTP header");
    }
    const name = header[1].toLowerCase();
    if (name === "content-length") lengths.push(header[2]);
    headers.append(name, header[2]);
  }
  const transfer = headers.get("transfer-encoding");
  let body: Uint8Array<ArrayBuffer>;
  if (transfer !== null) {
    if (lengths.length > 0) {
      throw new ProtocolError(
        400,
        "bad_request",
        "both Content-Length and Transfer-Encoding",
      );
    }
    if (transfer.toLowerCase() !== "chunked") {
      throw new ProtocolError(
        400,
        "bad_request",
        "unsupported Transfer-Encoding",
      );
    }
    body = await readChunked(reader, maxBodyBytes);
  } else {
    const length = contentLength(lengths);
    if (length > maxBodyBytes) throw tooLarge(maxBodyBytes);
    const filled = await reader.fillUntil((bytes) =>
      bytes.length >= length ? length : undefined
    );
    if (filled === undefined) {
      throw new ProtocolError(400, "bad_request", "the body is truncated");
    }
    body = reader.take(length);
  }
  let url: URL;
  try {
    url = new URL(target, "http://sherlock");
  } catch {
    throw new ProtocolError(400, "bad_request", "malformed request target");
  }
  try {
    return new Request(url, {
      method,
      headers,
      signal,
      body: method === "GET" || method === "HEAD" || body.length === 0
        ? undefined
        : body,
    });
  } catch {
    throw new ProtocolError(
      405,
      "method_not_allowed",
      `${method} is not allowed`,
    );
  }
}

/** `METHOD /target HTTP/1.x`, with its CRLF. */
const REQUEST_LINE = /^([A-Z]+) (\/[^ \r\n]*) HTTP\/1\.[01]\r\n$/;

function malformedRequestLine(): ProtocolError {
  return new ProtocolError(400, "bad_request", "malformed HTTP request line");
}

function contentLength(values: string[]): number {
  if (values.length === 0) return 0;
  if (!values.every((value) => /^\d{1,15}$/.test(value))) {
    throw new ProtocolError(400, "bad_request", "malformed Content-Length");
  }
  if (new Set(values.map(Number)).size !== 1) {
    throw new ProtocolError(400, "bad_request", "conflicting Content-Length");
  }
  return Number(values[0]);
}

async function readChunked(
  reader: ByteReader,
  maxBodyBytes: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const parts: Uint8Array[] = [];
  let total = 0;
  const malformed = () =>
    new ProtocolError(400, "bad_request", "malformed chunked body");
  const readLine = async (): Promise<string> => {
    const end = await reader.fillUntil((bytes) => {
      const index = indexOfCrlf(bytes);
      if (index === -1 && bytes.length > 1024) throw malformed();
      return index === -1 ? undefined : index;
    });
    if (end === undefined) throw malformed();
    return decodeLatin1(reader.take(end + 2).subarray(0, end));
  };
  while (true) {
    const sizeLine = await readLine();
    const size = /^([0-9A-Fa-f]{1,8})(;.*)?$/.exec(sizeLine);
    if (!size) throw malformed();
    const length = parseInt(size[1], 16);
    if (length === 0) break;
    total += length;
    if (total > maxBodyBytes) throw tooLarge(maxBodyBytes);
    const filled = await reader.fillUntil((bytes) =>
      bytes.length >= length + 2 ? length : undefined
    );
    if (filled === undefined) throw malformed();
    const chunk = reader.take(length + 2);
    if (chunk[length] !== 13 || chunk[length + 1] !== 10) throw malformed();
    parts.push(chunk.subarray(0, length));
  }
  // Trailers, up to the empty line.
  for (let count = 0; (await readLine()) !== ""; count++) {
    if (count > 32) throw malformed();
  }
  return concatBytes(parts);
}

function tooLarge(maxBodyBytes: number): ProtocolError {
  return new ProtocolError(
    413,
    "too_large",
    `the body is larger than ${maxBodyBytes} bytes`,
  );
}

/** Buffers what a connection sent so far. */
class ByteReader {
  #connection: Deno.Conn;
  #buffer: Uint8Array<ArrayBuffer> = new Uint8Array(4096);
  #start = 0;
  #end = 0;
  #eof = false;

  constructor(connection: Deno.Conn) {
    this.#connection = connection;
  }

  get length(): number {
    return this.#end - this.#start;
  }

  /**
   * Reads until `probe` (called with the buffered bytes) returns a number,
   * and returns it; undefined when the client closed first.
   */
  async fillUntil(
    probe: (bytes: Uint8Array) => number | undefined,
  ): Promise<number | undefined> {
    while (true) {
      const found = probe(this.#buffer.subarray(this.#start, this.#end));
      if (found !== undefined) return found;
      if (this.#eof) return undefined;
      if (this.#end === this.#buffer.length) this.#grow();
      const count = await this.#connection.read(
        this.#buffer.subarray(this.#end),
      );
      if (count === null) this.#eof = true;
      else this.#end += count;
    }
  }

  /** Removes and returns the first `count` buffered bytes. */
  take(count: number): Uint8Array<ArrayBuffer> {
    const bytes = this.#buffer.slice(this.#start, this.#start + count);
    this.#start += count;
    return bytes;
  }

  #grow(): void {
    const used = this.#end - this.#start;
    const size = used * 2 > this.#buffer.length
      ? this.#buffer.length * 2
      : this.#buffer.length;
    const next = new Uint8Array(size);
    next.set(this.#buffer.subarray(this.#start, this.#end));
    this.#buffer = next;
    this.#start = 0;
    this.#end = used;
  }
}

function indexOfHeadEnd(bytes: Uint8Array): number {
  for (let index = 0; index + 3 < bytes.length; index++) {
    if (
      bytes[index] === 13 && bytes[index + 1] === 10 &&
      bytes[index + 2] === 13 && bytes[index + 3] === 10
    ) return index;
  }
  return -1;
}

function indexOfCrlf(bytes: Uint8Array): number {
  for (let index = 0; index + 1 < bytes.length; index++) {
    if (bytes[index] === 13 && bytes[index + 1] === 10) return index;
  }
  return -1;
}

function decodeLatin1(bytes: Uint8Array): string {
  return new TextDecoder("latin1").decode(bytes);
}

/** A JSON error answer. */
export function errorResponse(
  status: number,
  code: ErrorCode,
  message: string,
): Response {
  return Response.json({ error: { code, message } } satisfies ErrorBody, {
    status,
  });
}

const REASONS: Readonly<Record<number, string>> = {
  200: "OK",
  400: "Bad Request",
  401: "Unauthorized",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  413: "Content Too Large",
  422: "Unprocessable Content",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  502: "Bad Gateway",
};

async function writeResponse(
  connection: Deno.Conn,
  response: Response,
): Promise<void> {
  const body = new Uint8Array(await response.arrayBuffer());
  const type = response.headers.get("content-type") ?? "application/json";
  const head =
    `HTTP/1.1 ${response.status} ${
      REASONS[response.status] ?? "Status"
    }\r\ncontent-type: ${type}\r\ncontent-length: ${body.length}\r\n` +
    "connection: close\r\n\r\n";
  const headBytes = new TextEncoder().encode(head);
  const all = new Uint8Array(headBytes.length + body.length);
  all.set(headBytes);
  all.set(body, headBytes.length);
  let written = 0;
  while (written < all.length) {
    written += await connection.write(all.subarray(written));
  }
}
