/**
 * The OAuth client's HTTP: JSON GETs and form POSTs, bounded in scheme,
 * redirects, time and size (see {@linkcode requestJson}), each failure a
 * {@linkcode BrokerRequestError} of one line that names the URL's origin
 * and never a token.
 *
 * @module
 */

import { BrokerRequestError } from "../request_error.ts";
import { isHttpsOrLoopback, oneLine } from "./rules.ts";

/** How long one request to an authorization or resource server may take. */
export const OAUTH_HTTP_TIMEOUT_MS = 15_000;

/** The largest answer read, in bytes. */
export const MAX_ANSWER_BYTES = 256 * 1024;

/** How many same-origin redirects one request follows. */
const MAX_REDIRECTS = 5;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** An answer: its status, headers and parsed JSON (undefined if not JSON). */
export interface JsonAnswer {
  status: number;
  headers: Headers;
  json: unknown;
  /** True when the body was not JSON. */
  notJson: boolean;
}

/**
 * Sends one request and reads its JSON answer, whatever the status, through
 * {@linkcode boundedFetch}: every OAuth request of the daemon goes there.
 */
export async function requestJson(
  url: string,
  init: {
    method?: string;
    /** A form; URLSearchParams when a key repeats (several `resource`). */
    form?: Record<string, string> | URLSearchParams;
    body?: string;
    headers?: Record<string, string>;
    /** Tests only: another time limit than OAUTH_HTTP_TIMEOUT_MS. */
    timeoutMs?: number;
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
  const response = await boundedFetch(url, {
    method: init.method,
    headers,
    body,
    timeoutMs: init.timeoutMs,
  });
  return await readJsonAnswer(response);
}

/** Reads a (bounded, already read) answer as JSON, whatever its status. */
export async function readJsonAnswer(response: Response): Promise<JsonAnswer> {
  const text = await response.text();
  let json: unknown;
  let notJson = false;
  try {
    json = JSON.parse(text);
  } catch {
    notJson = true;
  }
  return { status: response.status, headers: response.headers, json, notJson };
}

/**
 * `fetch` with the daemon's rules for OAuth (its own requests, and
 * oauth4webapi's through its `customFetch`): only https URLs (or http on
 * a loopback host); a redirect is followed only within the same origin (a
 * 307 of a token request would re-send its verifier, refresh token or
 * client secret to wherever it points); the whole answer, redirects and
 * body included, within {@linkcode OAUTH_HTTP_TIMEOUT_MS} and
 * {@linkcode MAX_ANSWER_BYTES}. The answer comes back read: a Response
 * whose body is in memory. Failures are `oauth_failed` errors of one line.
 */
export async function boundedFetch(
  url: string,
  init: {
    method?: string;
    headers?: HeadersInit;
    body?: BodyInit | null;
    /** Tests only: another time limit than OAUTH_HTTP_TIMEOUT_MS. */
    timeoutMs?: number;
  } = {},
): Promise<Response> {
  const headers = new Headers(init.headers);
  // A form body is sent as text: a redirect may send it again.
  let body: string | undefined = init.body === undefined || init.body === null
    ? undefined
    : typeof init.body === "string"
    ? init.body
    : init.body instanceof URLSearchParams
    ? init.body.toString()
    : await new Response(init.body).text();
  const timeoutMs = init.timeoutMs ?? OAUTH_HTTP_TIMEOUT_MS;
  const signal = AbortSignal.timeout(timeoutMs);
  const late = () =>
    failed(`${origin(url)} did not answer within ${timeoutMs / 1000} s`);
  let method = init.method ?? (body === undefined ? "GET" : "POST");
  let target = url;
  let response: Response;
  for (let hops = 0;; hops++) {
    if (!isHttpsOrLoopback(target)) {
      throw failed(
        `refused to send an OAuth request to ${
          origin(target)
        }: only https (or http on a loopback host) is allowed`,
      );
    }
    try {
      response = await fetch(target, {
        method,
        headers,
        body,
        redirect: "manual",
        signal,
      });
    } catch (error) {
      if (signal.aborted) throw late();
      throw failed(
        `${origin(target)} cannot be reached (${
          oneLine((error as Error).message ?? String(error))
        })`,
      );
    }
    if (!REDIRECTS.has(response.status)) break;
    await response.body?.cancel().catch(() => {});
    const next = redirectTarget(response, target);
    if (next === undefined || new URL(next).origin !== new URL(target).origin) {
      throw failed(
        `${origin(target)} redirected ${
          next === undefined ? "nowhere usable" : `to ${origin(next)}`
        }; an OAuth request follows a redirect only within its origin, refused`,
      );
    }
    if (hops >= MAX_REDIRECTS) {
      throw failed(
        `${
          origin(target)
        } redirected more than ${MAX_REDIRECTS} times; refused`,
      );
    }
    // As fetch does: a 303, or a 301/302 of a POST, goes on as a GET.
    if (
      response.status === 303 ||
      (method === "POST" &&
        (response.status === 301 || response.status === 302))
    ) {
      method = "GET";
      body = undefined;
      headers.delete("Content-Type");
    }
    target = next;
  }
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = await readLimited(response);
  } catch (error) {
    if (signal.aborted) throw late();
    if (error instanceof TooLarge) {
      throw failed(
        `${origin(target)} answered more than ${
          MAX_ANSWER_BYTES / 1024
        } KiB; refused`,
      );
    }
    throw failed(`${origin(target)} broke off its answer`);
  }
  return new Response(
    NULL_BODY_STATUSES.has(response.status) ? null : bytes,
    { status: response.status, headers: response.headers },
  );
}

/** Statuses whose Response may carry no body. */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/** The absolute URL a redirect's `Location` names, or undefined. */
function redirectTarget(response: Response, base: string): string | undefined {
  const location = response.headers.get("location");
  if (location === null) return undefined;
  try {
    return new URL(location, base).href;
  } catch {
    return undefined;
  }
}

class TooLarge extends Error {}

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

async function readLimited(
  response: Response,
): Promise<Uint8Array<ArrayBuffer>> {
  if (!response.body) return new Uint8Array();
  const declared = Number(response.headers.get("content-length"));
  if (declared > MAX_ANSWER_BYTES) {
    await response.body.cancel().catch(() => {});
    throw new TooLarge();
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value: chunk } = await reader.read();
    if (done) break;
    total += chunk.length;
    if (total > MAX_ANSWER_BYTES) {
      await reader.cancel().catch(() => {});
      throw new TooLarge();
    }
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}
