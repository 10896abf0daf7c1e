/**
 * The loopback redirect listener of a browser flow (RFC 8252 §7.3), shared
 * by `sherlock auth` and `sherlock login` with an OpenID provider: one
 * listener per flow on 127.0.0.1 and a random port. Any local user can
 * connect to it, so it takes as the answer only a GET of its callback path
 * that carries the flow's `state` (which no other user can read: it is in
 * no argv, only in the daemon and the operator's 0600 launch page); every
 * other request is ignored, counted and answered with a fixed line, and the
 * flow goes on until the real answer or its time limit.
 *
 * @module
 */

import { failed } from "./http.ts";

/** The redirect path on the loopback listener. */
export const CALLBACK_PATH = "/callback";

/** The count of ignored requests stops here (it is only reported). */
export const MAX_IGNORED_COUNT = 1_000_000;

/** A URL longer than this is no answer of an authorization server's. */
const MAX_URL_LENGTH = 16_384;

/** A listener waiting for one redirect. */
export interface LoopbackListener {
  /** `http://127.0.0.1:PORT/callback`. */
  redirectUri: string;
  /**
   * The answer's query (it carries the flow's `state`); rejects with
   * `unfinished` when closed first.
   */
  result: Promise<URLSearchParams>;
  /**
   * How many requests to the callback path were not the answer (another
   * method, no or a wrong `state`, too long), ignored; at most
   * {@linkcode MAX_IGNORED_COUNT}.
   */
  readonly ignored: number;
  /**
   * Stops listening; a waiting `result` rejects with `why` (default: the
   * `unfinished` message).
   */
  close(why?: string): void;
}

/**
 * Listens for the redirect that carries `state`. `unfinished` is the
 * message `result` rejects with when the listener closes before the answer
 * came (the operator's next step: the command to run again); `received` is
 * the line the browser shows for the answer.
 */
export function listenForRedirect(
  options: { state: string; unfinished: string; received: string },
): LoopbackListener {
  let deliver!: (query: URLSearchParams) => void;
  let cancel!: (why: string) => void;
  let answered = false;
  let ignored = 0;
  const result = new Promise<URLSearchParams>((resolve, reject) => {
    deliver = resolve;
    cancel = (why) => reject(failed(why));
  });
  result.catch(() => {});
  // Nothing of the request is ever echoed: the answers are fixed lines.
  const text = (body: string, status: number) =>
    new Response(`${body}\n`, {
      status,
      headers: {
        "Content-Type": "text/plain; charset=utf-8",
        "Cache-Control": "no-store",
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
      },
    });
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
  }, (request) => {
    const url = request.url.length <= MAX_URL_LENGTH
      ? new URL(request.url)
      : undefined;
    if (url && url.pathname !== CALLBACK_PATH) {
      return text("not found", 404);
    }
    if (answered) {
      return text("sherlock has its answer already; close this window.", 410);
    }
    if (
      !url || request.method !== "GET" ||
      !sameSecret(url.searchParams.get("state"), options.state)
    ) {
      ignored = Math.min(ignored + 1, MAX_IGNORED_COUNT);
      return text("this is not the answer sherlock waits for.", 400);
    }
    answered = true;
    deliver(url.searchParams);
    return text(options.received, 200);
  });
  return {
    redirectUri: `http://127.0.0.1:${server.addr.port}${CALLBACK_PATH}`,
    result,
    get ignored() {
      return ignored;
    },
    close(why = options.unfinished) {
      cancel(why);
      server.shutdown().catch(() => {});
    },
  };
}

/**
 * Whether `given` is `expected`, in time that does not depend on where they
 * differ (a local user may time many guesses).
 */
function sameSecret(given: string | null, expected: string): boolean {
  if (given === null || given.length !== expected.length) return false;
  let difference = 0;
  for (let i = 0; i < expected.length; i++) {
    difference |= given.charCodeAt(i) ^ expected.charCodeAt(i);
  }
  return difference === 0;
}

/**
 * What an error adds when the listener ignored requests: "" for none, else
 * a clause saying how many (a sign that another local program tried to
 * forge the answer).
 */
export function ignoredNote(ignored: number): string {
  if (ignored === 0) return "";
  return ` (the redirect listener ignored ${ignored} request${
    ignored === 1 ? "" : "s"
  } that did not carry this flow's state: another local program may have tried to forge the answer)`;
}
