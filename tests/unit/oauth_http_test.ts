/**
 * The bounds of every OAuth request (`lib/broker/daemon/oauth/http.ts`),
 * against real HTTP servers on 127.0.0.1 that misbehave: a URL that is not
 * https (nor loopback http) is never asked, a redirect to another origin is
 * not followed (a token request's verifier and secret never reach it), an
 * answer too large or too slow is refused in one line.
 */

import assert from "node:assert/strict";
import {
  MAX_ANSWER_BYTES,
  requestJson,
} from "../../lib/broker/daemon/oauth/http.ts";

interface Seen {
  method: string;
  path: string;
  body: string;
  authorization: string | null;
}

/** A server on 127.0.0.1 that records requests and answers `answer`. */
function server(answer: (request: Request, url: URL) => Response) {
  const seen: Seen[] = [];
  const http = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const url = new URL(request.url);
      seen.push({
        method: request.method,
        path: url.pathname,
        body: await request.text(),
        authorization: request.headers.get("authorization"),
      });
      return answer(request, url);
    },
  );
  return {
    seen,
    url: `http://127.0.0.1:${http.addr.port}`,
    [Symbol.asyncDispose]: () => http.shutdown(),
  };
}

const TOKEN_FORM = {
  grant_type: "authorization_code",
  code: "the-code",
  code_verifier: "the-verifier-that-must-not-leave",
  client_secret: "the-client-secret",
};

function refused(pattern: RegExp) {
  return (error: Error & { code?: string }) =>
    error.code === "oauth_failed" && pattern.test(error.message) &&
    !error.message.includes("\n") && !error.message.includes("the-verifier");
}

Deno.test("only https, or http on a loopback host: anything else is not asked", async () => {
  for (
    const url of [
      "http://as.example.com/token",
      "ftp://127.0.0.1/x",
      "file:///etc/passwd",
      "http://10.0.0.1/.well-known/oauth-authorization-server",
      "not a url",
    ]
  ) {
    await assert.rejects(
      requestJson(url, { form: TOKEN_FORM }),
      refused(/only https \(or http on a loopback host\) is allowed/),
      url,
    );
  }
});

Deno.test("a redirect to another origin is refused: the token request's secrets stay", async () => {
  await using elsewhere = server(() =>
    Response.json({ access_token: "stolen", token_type: "Bearer" })
  );
  for (const status of [301, 302, 303, 307, 308]) {
    await using as = server(() =>
      new Response(null, {
        status,
        headers: { location: `${elsewhere.url}/collect` },
      })
    );
    await assert.rejects(
      requestJson(`${as.url}/token`, {
        form: TOKEN_FORM,
        headers: { Authorization: "Basic c2VjcmV0" },
      }),
      refused(
        /redirected to http:\/\/127\.0\.0\.1:\d+; an OAuth request follows a redirect only within its origin, refused/,
      ),
      `HTTP ${status}`,
    );
    assert.equal(as.seen.length, 1);
  }
  // Metadata GETs too: discovery would read another origin's document.
  await using prm = server(() =>
    Response.redirect(`${elsewhere.url}/.well-known/x`, 302)
  );
  await assert.rejects(
    requestJson(`${prm.url}/.well-known/oauth-protected-resource`),
    refused(/redirected to/),
  );
  assert.deepEqual(elsewhere.seen, [], "nothing reached the other origin");
});

Deno.test("a redirect within the origin is followed: a 307 keeps the POST, a 303 becomes a GET; a loop ends", async () => {
  await using as = server((_request, url) => {
    if (url.pathname === "/token") {
      return new Response(null, { status: 307, headers: { location: "/t2" } });
    }
    if (url.pathname === "/see") {
      return new Response(null, { status: 303, headers: { location: "/t2" } });
    }
    if (url.pathname === "/loop") {
      return new Response(null, {
        status: 302,
        headers: { location: "/loop" },
      });
    }
    return Response.json({ ok: true });
  });
  const kept = await requestJson(`${as.url}/token`, { form: TOKEN_FORM });
  assert.deepEqual(kept.json, { ok: true });
  assert.equal(as.seen[1].method, "POST");
  assert.equal(as.seen[1].path, "/t2");
  assert.match(as.seen[1].body, /code_verifier=the-verifier/);

  as.seen.length = 0;
  await requestJson(`${as.url}/see`, { form: TOKEN_FORM });
  assert.equal(as.seen[1].method, "GET");
  assert.equal(as.seen[1].body, "", "a 303 drops the form");

  await assert.rejects(
    requestJson(`${as.url}/loop`),
    refused(/redirected more than 5 times/),
  );
});

Deno.test("an answer larger than the cap is refused, declared or streamed", async () => {
  const big = "x".repeat(MAX_ANSWER_BYTES + 1);
  await using declared = server(() => new Response(`"${big}"`));
  await assert.rejects(
    requestJson(`${declared.url}/meta`),
    refused(/answered more than 256 KiB; refused/),
  );
  await using streamed = server(() =>
    new Response(
      new ReadableStream({
        start(controller) {
          // No Content-Length: chunks until past the cap.
          for (let i = 0; i < 40; i++) {
            controller.enqueue(new TextEncoder().encode("y".repeat(8192)));
          }
          controller.close();
        },
      }),
    )
  );
  await assert.rejects(
    requestJson(`${streamed.url}/meta`),
    refused(/answered more than 256 KiB; refused/),
  );
  await using fits = server(() =>
    Response.json({ a: "x".repeat(MAX_ANSWER_BYTES - 100) })
  );
  assert.equal(
    ((await requestJson(`${fits.url}/meta`)).json as { a: string }).a.length,
    MAX_ANSWER_BYTES - 100,
  );
});

Deno.test("an answer that trickles past the time limit is refused: the body counts, not only the headers", async () => {
  const timers: ReturnType<typeof setInterval>[] = [];
  await using slow = server(() =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"a":'));
          // One byte now and then, never the end.
          timers.push(setInterval(
            () => controller.enqueue(new TextEncoder().encode(" ")),
            20,
          ));
        },
      }),
      { headers: { "content-type": "application/json" } },
    )
  );
  try {
    await assert.rejects(
      requestJson(`${slow.url}/token`, { form: TOKEN_FORM, timeoutMs: 300 }),
      refused(/did not answer within 0\.3 s/),
    );
  } finally {
    timers.forEach(clearInterval);
  }
});
