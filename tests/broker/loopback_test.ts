/**
 * The loopback redirect listener (lib/broker/daemon/oauth/loopback.ts) on a
 * real 127.0.0.1 port, as another local user reaches it: only a GET of the
 * callback with the flow's state is the answer; everything else is
 * ignored, counted, answered with a fixed line, and the flow goes on.
 */

import assert from "node:assert/strict";
import {
  ignoredNote,
  listenForRedirect,
} from "../../lib/broker/daemon/oauth/loopback.ts";

const STATE = "s".repeat(43);

function listen() {
  return listenForRedirect({
    state: STATE,
    unfinished: "ended unfinished",
    received: "received",
  });
}

async function status(url: string, init: RequestInit = {}) {
  const response = await fetch(url, init);
  const text = await response.text();
  return { status: response.status, text };
}

Deno.test("the listener ignores and counts what is not the answer; the answer ends the wait; later requests get a fixed line", async () => {
  const listener = listen();
  try {
    const callback = listener.redirectUri;
    const ignored = [
      await status(`${callback}?code=c`),
      await status(`${callback}?code=c&state=${STATE}x`),
      await status(`${callback}?code=c&state=${STATE.slice(1)}`),
      await status(`${callback}?code=c&state=${STATE}`, { method: "POST" }),
      await status(`${callback}?code=c&state=${STATE}`, { method: "HEAD" }),
      await status(`${callback}?code=c&state=${STATE}&x=${"a".repeat(17000)}`),
    ];
    for (const answer of ignored) {
      assert.equal(answer.status, 400);
      assert.ok(!answer.text.includes("code"), "nothing is echoed");
    }
    // Another path is not counted (a browser asks for /favicon.ico).
    assert.equal((await status(`${new URL(callback).origin}/x`)).status, 404);
    assert.equal(listener.ignored, 6);
    const real = await status(`${callback}?code=c&state=${STATE}&iss=i`);
    assert.deepEqual(real, { status: 200, text: "received\n" });
    const query = await listener.result;
    assert.equal(query.get("code"), "c");
    assert.equal(query.get("iss"), "i");
    const late = await status(`${callback}?code=d&state=${STATE}`);
    assert.equal(late.status, 410);
    assert.equal(listener.ignored, 6);
  } finally {
    listener.close();
  }
});

Deno.test("closing the listener before the answer rejects the wait with the message given", async () => {
  const listener = listen();
  listener.close("replaced by a newer one");
  await assert.rejects(listener.result, /replaced by a newer one/);
});

Deno.test("ignoredNote: nothing for none; says how many otherwise", () => {
  assert.equal(ignoredNote(0), "");
  assert.match(ignoredNote(1), /ignored 1 request that/);
  assert.match(ignoredNote(3), /ignored 3 requests that/);
});
