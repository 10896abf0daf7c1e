/**
 * The daemon reads a service's file on every token request: a FIFO in
 * services.d must be refused at once, not block the daemon (and so every
 * client) until someone writes to it (issue 9, item 5).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { fetchTokens, registerSession } from "../../lib/broker/client.ts";
import { AGENT, createBrokerHome } from "../helpers/broker_home.ts";

/** Longer than an answer takes; a daemon blocked on a FIFO never answers. */
const HANG_GUARD_MS = 10_000;

const TIMED_OUT = Symbol("timed out");

async function within<T>(
  promise: Promise<T>,
): Promise<T | typeof TIMED_OUT> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), HANG_GUARD_MS);
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("a FIFO in services.d: the broker refuses it at once and answers the other services", async () => {
  await using home = await createBrokerHome();
  const helper = home.addHelperService("api");
  const fifo = join(home.servicesDir, "stuck.toml");
  const made = new Deno.Command("mkfifo", { args: [fifo] }).outputSync();
  assert.equal(made.code, 0);
  await home.login();
  const { capability } = await registerSession({
    socket: home.socket,
    session: "s1",
    agent: AGENT,
    services: ["api", "stuck"],
    pid: Deno.pid,
  });
  const ask = (service: string) =>
    fetchTokens({ socket: home.socket, services: [service], capability });

  // The client returns a service's failure with the others' answers.
  const stuck = ask("stuck").then(
    (answer) => answer.failed.get("stuck")?.message ?? "answered with a token",
    (error: Error) => `the whole request failed: ${error.message}`,
  );
  try {
    const api = await within(ask("api"));
    assert.notEqual(api, TIMED_OUT, "the daemon answered no other request");
    if (api !== TIMED_OUT) {
      assert.deepEqual([...api.tokens], [["api", helper.token]]);
    }
    const refused = await within(stuck);
    assert.equal(
      refused,
      `${fifo}: cannot read it: it is a FIFO, not a regular file`,
    );
  } finally {
    // A daemon blocked on the FIFO is released by a writer, so that the
    // home's disposal can stop it.
    if (await within(stuck) === TIMED_OUT) {
      (await Deno.open(fifo, { write: true })).close();
      await stuck;
    }
  }
});
