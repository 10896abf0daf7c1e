/**
 * The OAuth client's HTTP: JSON GETs and form POSTs with a timeout, each
 * failure a {@linkcode BrokerRequestError} of one line that names the URL's
 * origin and never a token.
 *
 * @module
 */

import { BrokerRequestError } from "../request_error.ts";
import { oneLine } from "./rules.ts";

/** How long one request to an authorization or resource server may take. */
export const OAUTH_HTTP_TIMEOUT_MS = 15_000;

/** The largest answer read, in bytes. */
const MAX_ANSWER_BYTES = 256 * 1024;

/** An answer: its status, headers and parsed JSON (undefined if not JSON). */
export interface JsonAnswer {
  status: number;
  headers: Headers;
  json: unknown;
  /** True when the body was not JSON. */
  notJson: boolean;
}

/** Sends one request and reads its JSON answer, whatever the status. */
export async function requestJson(
  url: string,
  init: {
    method?: string;
    /** A form; URLSearchParams when a key repeats (several `resource`). */
    form?: Record<string, string> | URLSearchParams;
    body?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<JsonAnswer> {
  const headers: Record<string, string> = {
    Accept: "application/json",
    ...init.headers,
  };
  let body: string | undefined = init.body;
  if (init.form) {
    headers["Content-Type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(init.form).toString();
  }
  let response: Response;
  try {
    response = await fetch(url, {
      method: init.method ?? (body === undefined ? "GET" : "POST"),
      headers,
      body,
      redirect: "follow",
      signal: AbortSignal.timeout(OAUTH_HTTP_TIMEOUT_MS),
    });
  } catch (error) {
    const timedOut = error instanceof DOMException &&
      (error.name === "TimeoutError" || error.name === "AbortError");
    throw failed(
      timedOut
        ? `${origin(url)} did not answer within ${
          OAUTH_HTTP_TIMEOUT_MS / 1000
        } s`
        : `${origin(url)} cannot be reached (${
          oneLine((error as Error).message ?? String(error))
        })`,
    );
  }
  let text: string;
  try {
    text = await readLimited(response);
  } catch {
    throw failed(`${origin(url)} broke off its answer`);
  }
  let json: unknown;
  let notJson = false;
  try {
    json = JSON.parse(text);
  } catch {
    notJson = true;
  }
  return { status: response.status, headers: response.headers, json, notJson };
}

/** An `oauth_failed` error: the server is down, slow or answers nonsense. */
export function failed(message: string): BrokerRequestError {
  return new BrokerRequestError({ code: "oauth_failed", message });
}

/** The origin of `url`, for messages. */
export function origin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "the server";
  }
}

async function readLimited(response: Response): Promise<string> {
  if (!response.body) return "";
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of response.body) {
    total += chunk.length;
    if (total > MAX_ANSWER_BYTES) {
      await response.body.cancel().catch(() => {});
      throw new Error("too large");
    }
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return new TextDecoder().decode(bytes);
}
