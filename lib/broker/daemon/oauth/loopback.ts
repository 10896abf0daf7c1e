/**
 * The loopback redirect listener of a browser flow (RFC 8252 §7.3), shared
 * by `sherlock auth` and `sherlock login` with an OpenID provider: one
 * listener per flow on 127.0.0.1 and a random port, which takes the first
 * request to its callback path and answers the browser with a line of text.
 *
 * @module
 */

import { failed } from "./http.ts";

/** The redirect path on the loopback listener. */
export const CALLBACK_PATH = "/callback";

/** A listener waiting for one redirect. */
export interface LoopbackListener {
  /** `http://127.0.0.1:PORT/callback`. */
  redirectUri: string;
  /** The redirect's query; rejects with `unfinished` when closed first. */
  result: Promise<URLSearchParams>;
  /**
   * Stops listening; a waiting `result` rejects with `why` (default: the
   * `unfinished` message).
   */
  close(why?: string): void;
}

/**
 * Listens for the redirect. `unfinished` is the message `result` rejects
 * with when the listener closes before a redirect came (the operator's next
 * step: the command to run again).
 */
export function listenForRedirect(
  options: { unfinished: string; received: string },
): LoopbackListener {
  let deliver!: (query: URLSearchParams) => void;
  let cancel!: (why: string) => void;
  const result = new Promise<URLSearchParams>((resolve, reject) => {
    deliver = resolve;
    cancel = (why) => reject(failed(why));
  });
  result.catch(() => {});
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
  }, (request) => {
    const url = new URL(request.url);
    if (url.pathname !== CALLBACK_PATH) {
      return new Response("not found", { status: 404 });
    }
    deliver(url.searchParams);
    return new Response(`${options.received}\n`, {
      headers: { "Content-Type": "text/plain; charset=utf-8" },
    });
  });
  return {
    redirectUri: `http://127.0.0.1:${server.addr.port}${CALLBACK_PATH}`,
    result,
    close(why = options.unfinished) {
      cancel(why);
      server.shutdown().catch(() => {});
    },
  };
}
