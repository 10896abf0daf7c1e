/**
 * The bounded run of a keyring's tool (lib/broker/daemon/keyring/
 * bounded_command.ts): the secret goes on stdin, output is kept, and a
 * tool that never ends, or leaves a child holding its pipes, is killed at
 * the bound with its process group. Real /bin/sh processes; the bound is
 * short so the test does not wait, and no time is asserted.
 *
 * @module
 */

import assert from "node:assert/strict";
import { runBounded } from "../../lib/broker/daemon/keyring/bounded_command.ts";

function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

Deno.test("stdin reaches the tool, stdout and the exit code come back", async () => {
  const result = await runBounded({
    program: "/bin/sh",
    args: ["-c", "cat; echo oops >&2; exit 3"],
    stdin: new TextEncoder().encode("the-secret"),
    timeoutMs: 30_000,
  });
  assert.equal(result.failure, undefined);
  assert.equal(result.code, 3);
  assert.equal(new TextDecoder().decode(result.stdout), "the-secret");
  assert.equal(result.stderr, "oops");
});

Deno.test("a tool that never answers is killed at the bound, with what it started", async () => {
  const pidFile = await Deno.makeTempFile();
  try {
    const result = await runBounded({
      program: "/bin/sh",
      // A grandchild that keeps the pipes open, and the tool waiting on it.
      args: ["-c", `sleep 300 & echo $! > '${pidFile}'; wait`],
      timeoutMs: 300,
    });
    assert.equal(result.code, undefined);
    assert.match(result.failure ?? "", /did not answer within 0\.3 s/);
    const grandchild = Number(Deno.readTextFileSync(pidFile).trim());
    assert.ok(grandchild > 0);
    // SIGKILL to the group: the grandchild is gone (or a zombie of init).
    let gone = false;
    for (let i = 0; i < 50 && !gone; i++) {
      const state = (() => {
        try {
          return Deno.readTextFileSync(`/proc/${grandchild}/stat`)
            .split(") ")[1]?.[0];
        } catch {
          return undefined;
        }
      })();
      gone = state === undefined || state === "Z" || !alive(grandchild);
      if (!gone) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(gone, "the tool's child was killed with it");
  } finally {
    Deno.removeSync(pidFile);
  }
});

Deno.test("a tool that is not installed is a failure, not an exception", async () => {
  const result = await runBounded({
    program: "sherlock-no-such-keyring-tool",
    args: [],
  });
  assert.equal(result.code, undefined);
  assert.match(result.failure ?? "", /is not installed/);
});
