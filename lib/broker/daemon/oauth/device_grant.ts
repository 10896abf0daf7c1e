/**
 * The device authorization grant (RFC 8628), for `sherlock auth --device`
 * and `sherlock login --device`: ask the server for a device code, hand the
 * verification URI and user code to the CLI, and poll the token endpoint at
 * the server's interval until the operator approved on another device.
 * The device code never leaves the daemon. Both requests are oauth4webapi's
 * (`deviceAuthorizationRequest`, `deviceCodeGrantRequest`) over the
 * daemon's bounded fetch; the poll's timing and the answers' reading are
 * sherlock's (see {@linkcode readDeviceAuthorization}, {@linkcode pollStep}).
 *
 * @module
 */

import {
  type AuthorizationServer,
  deviceAuthorizationRequest,
  deviceCodeGrantRequest,
} from "oauth4webapi";
import { BrokerRequestError } from "../request_error.ts";
import { failed, type JsonAnswer, origin, readJsonAnswer } from "./http.ts";
import { oneLine } from "./rules.ts";
import {
  BOUNDED_HTTP,
  type ClientCredentials,
  formClient,
} from "./token_endpoint.ts";
import { sleep } from "../../../runtime/sleep.ts";

/** The grant type of the token request (RFC 8628 §3.4). */
export const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

/** What the device authorization endpoint answered (RFC 8628 §3.2). */
export interface DeviceAuthorization {
  /** Secret to the daemon: it is what the poll presents. */
  deviceCode: string;
  /** What the operator types at the verification URI. */
  userCode: string;
  /** Where the operator goes. */
  verificationUri: string;
  /** The URI with the user code in it, when the server offers one. */
  verificationUriComplete?: string;
  /** Seconds until the device code expires. */
  expiresIn: number;
  /** Seconds between polls (5 when the server names none). */
  interval: number;
}

/**
 * The bounds of the poll interval, in seconds. A server's `interval` (or
 * its `slow_down`s) beyond them is clamped: a huge one would overflow the
 * timer (which then fires at once, a tight loop), a tiny one is one.
 */
export const MIN_POLL_INTERVAL_S = 1;
/** See {@linkcode MIN_POLL_INTERVAL_S}. */
export const MAX_POLL_INTERVAL_S = 60;

/** `seconds` within the poll interval's bounds. */
export function clampInterval(seconds: number): number {
  if (!Number.isFinite(seconds)) return MAX_POLL_INTERVAL_S;
  return Math.min(Math.max(seconds, MIN_POLL_INTERVAL_S), MAX_POLL_INTERVAL_S);
}

/** What one poll's answer means (RFC 8628 §3.5). */
export type PollStep =
  | { kind: "token" }
  | { kind: "wait"; slowDown: boolean }
  | { kind: "stop"; error: string; description?: string };

/**
 * Checks a device authorization answer; returns the parts or a problem
 * (one line, no code in it). Read here rather than by oauth4webapi's
 * `processDeviceAuthorizationResponse`, which refuses an answer without
 * `expires_in` (the daemon assumes 600 s, as it always has) and leaves
 * the interval unbounded; and the CLI shows these strings, so they go
 * through `oneLine`.
 */
export function readDeviceAuthorization(
  answer: JsonAnswer,
): DeviceAuthorization | string {
  const json = answer.json as Record<string, unknown> | undefined;
  if (answer.status !== 200 || answer.notJson || typeof json !== "object") {
    return `answered HTTP ${answer.status}${
      typeof json?.error === "string" ? ` (${oneLine(json.error)})` : ""
    }`;
  }
  const text = (key: string) =>
    typeof json[key] === "string" && json[key] !== ""
      ? json[key] as string
      : undefined;
  const deviceCode = text("device_code");
  const userCode = text("user_code");
  const verificationUri = text("verification_uri");
  if (!deviceCode || !userCode || !verificationUri) {
    return "answered no device_code, user_code or verification_uri";
  }
  const seconds = (key: string, fallback: number) =>
    typeof json[key] === "number" && (json[key] as number) > 0
      ? json[key] as number
      : fallback;
  return {
    deviceCode,
    userCode: oneLine(userCode),
    verificationUri: oneLine(verificationUri),
    verificationUriComplete: text("verification_uri_complete") &&
      oneLine(text("verification_uri_complete")!),
    expiresIn: seconds("expires_in", 600),
    interval: clampInterval(seconds("interval", 5)),
  };
}

/**
 * What one token-endpoint answer to a poll means. Read here, not by
 * oauth4webapi's `processDeviceCodeResponse`: a granted answer goes to the
 * caller's lenient token reader (`tokenAnswer`), like every grant's.
 */
export function pollStep(answer: JsonAnswer): PollStep {
  if (answer.status === 200) return { kind: "token" };
  const json = answer.json as Record<string, unknown> | undefined;
  const error = typeof json?.error === "string" ? json.error : "";
  if (error === "authorization_pending") {
    return { kind: "wait", slowDown: false };
  }
  if (error === "slow_down") return { kind: "wait", slowDown: true };
  return {
    kind: "stop",
    error: error || `HTTP ${answer.status}`,
    description: typeof json?.error_description === "string"
      ? json.error_description
      : undefined,
  };
}

/**
 * A client's part of a request: `client_id` (and a secret) in the form, or
 * an `Authorization: Basic` header — rules.ts `clientAuthentication`.
 */
export type { ClientCredentials };

/** Asks `endpoint` for a device code (RFC 8628 §3.1). */
export async function requestDeviceAuthorization(options: {
  endpoint: string;
  /** How the client identifies (and, if confidential, authenticates). */
  client: ClientCredentials;
  scopes: string[];
  /** More form fields: `resource` (perhaps several), `audience`. */
  form?: Record<string, string> | URLSearchParams;
}): Promise<DeviceAuthorization> {
  const parameters = new URLSearchParams(options.form);
  if (options.scopes.length > 0) {
    parameters.set("scope", options.scopes.join(" "));
  }
  const { client, auth } = formClient(options.client);
  const response = await deviceAuthorizationRequest(
    server({ device_authorization_endpoint: options.endpoint }),
    client,
    auth,
    parameters,
    BOUNDED_HTTP,
  );
  const answer = await readJsonAnswer(response);
  const read = readDeviceAuthorization(answer);
  if (typeof read === "string") {
    throw failed(
      `the device authorization endpoint at ${
        origin(options.endpoint)
      } ${read}`,
    );
  }
  return read;
}

/**
 * Polls `tokenEndpoint` until the operator approved (the token answer is
 * returned, for the caller to read), refused, or the code expired.
 * `retry` is the command that starts over, for the messages.
 */
export async function pollDeviceToken(options: {
  tokenEndpoint: string;
  /** How the client identifies (and, if confidential, authenticates). */
  client: ClientCredentials;
  authorization: DeviceAuthorization;
  /** More form fields: `resource`. */
  form?: Record<string, string>;
  /** Aborted when the flow is given up (the daemon stops). */
  signal: AbortSignal;
  /** The latest time to poll, in ms since the epoch. */
  deadline: number;
  /** "sherlock auth remote", named by the messages. */
  retry: string;
  /** Waits between polls (tests: records the waits instead). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** The clock, in ms since the epoch (tests: a fake one). */
  now?: () => number;
}): Promise<JsonAnswer> {
  const { authorization } = options;
  const wait = options.sleep ?? sleep;
  const now = options.now ?? Date.now;
  let interval = clampInterval(authorization.interval);
  const { client, auth } = formClient(options.client);
  const expiresAt = Math.min(
    now() + authorization.expiresIn * 1000,
    options.deadline,
  );
  for (;;) {
    await wait(interval * 1000, options.signal);
    if (options.signal.aborted) {
      throw failed(
        `the authorization ended unfinished; run "${options.retry}" again`,
      );
    }
    if (now() >= expiresAt) {
      throw new BrokerRequestError({
        code: "needs_authorization",
        message:
          `the device code expired before it was approved; run "${options.retry}" again`,
      });
    }
    const response = await deviceCodeGrantRequest(
      server({ token_endpoint: options.tokenEndpoint }),
      client,
      auth,
      authorization.deviceCode,
      { additionalParameters: options.form, ...BOUNDED_HTTP },
    );
    const answer = await readJsonAnswer(response);
    const step = pollStep(answer);
    if (step.kind === "token") return answer;
    if (step.kind === "wait") {
      // RFC 8628 §3.5: slow_down adds 5 seconds to every later poll.
      if (step.slowDown) interval = clampInterval(interval + 5);
      continue;
    }
    throw stopped(step, options.retry);
  }
}

/**
 * The server as oauth4webapi takes it. Its `issuer` is only a placeholder:
 * these callers name endpoints, not the issuer, and the client's
 * authentication here (`formClient`) does not read it.
 */
function server(
  endpoints: { token_endpoint: string } | {
    device_authorization_endpoint: string;
  },
): AuthorizationServer {
  return { issuer: origin(Object.values(endpoints)[0]), ...endpoints };
}

function stopped(
  step: { error: string; description?: string },
  retry: string,
): BrokerRequestError {
  if (step.error === "access_denied") {
    return new BrokerRequestError({
      code: "needs_authorization",
      message:
        `the authorization was refused at the server; run "${retry}" to try again`,
    });
  }
  if (step.error === "expired_token") {
    return new BrokerRequestError({
      code: "needs_authorization",
      message:
        `the device code expired before it was approved; run "${retry}" again`,
    });
  }
  return failed(
    `the authorization server refused the device code: ${oneLine(step.error)}${
      step.description ? ` (${oneLine(step.description)})` : ""
    }`,
  );
}
