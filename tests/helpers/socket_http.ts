/**
 * Talking to the broker's socket without sherlock's client: its health, and
 * raw bytes for the tests of what the daemon's HTTP server refuses.
 *
 * @module
 */

import type { Health } from "../../lib/broker/protocol.ts";
import { unixHttpRequest } from "../../lib/runtime/unix_http.ts";

/** The daemon's health over its socket, or undefined. */
export async function brokerHealth(
  socket: string,
): Promise<Health | undefined> {
  try {
    const response = await unixHttpRequest({
      socket,
      method: "GET",
      path: "/v1/health",
      timeoutMs: 30_000,
    });
    return response.status === 200 ? response.body as Health : undefined;
  } catch {
    return undefined;
  }
}

/** What a raw exchange on the socket got back. */
export interface RawAnswer {
  /** The HTTP status, or undefined when the answer was not HTTP. */
  status?: number;
  /** The body parsed as JSON, if it was JSON. */
  json?: unknown;
  /** Everything the daemon sent. */
  text: string;
}

/**
 * Sends `request` as it is on a new connection (a write the daemon refuses
 * is not an error), with `closeWrite` shuts the sending side (the daemon
 * sees the end of the request), and reads until the daemon closes (hang
 * guard: 60 s).
 */
export async function rawExchange(
  socket: string,
  request: string | Uint8Array,
  options: { closeWrite?: boolean } = {},
): Promise<RawAnswer> {
  const connection = await Deno.connect({ transport: "unix", path: socket });
  const guard = setTimeout(() => connection.close(), 60_000);
  const chunks: Uint8Array[] = [];
  try {
    const bytes = typeof request === "string"
      ? new TextEncoder().encode(request)
      : request;
    try {
      let written = 0;
      while (written < bytes.length) {
        written += await connection.write(bytes.subarray(written));
      }
      if (options.closeWrite) await connection.closeWrite();
    } catch {
      // The daemon answered early and closed; read what it said.
    }
    const buffer = new Uint8Array(16 * 1024);
    while (true) {
      let count: number | null;
      try {
        count = await connection.read(buffer);
      } catch {
        break; // Reset after the answer: the daemon closed with unread data.
      }
      if (count === null) break;
      chunks.push(buffer.slice(0, count));
    }
  } finally {
    clearTimeout(guard);
    try {
      connection.close();
    } catch {
      // Closed by the guard.
    }
  }
  const text = new TextDecoder().decode(
    new Uint8Array(chunks.flatMap((chunk) => [...chunk])),
  );
  const status = /^HTTP\/1\.[01] (\d{3}) /.exec(text)?.[1];
  const body = text.slice(text.indexOf("\r\n\r\n") + 4);
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status: status ? Number(status) : undefined, json, text };
}
