/**
 * The sentinel signal of lib/os/signal_mask.ts: the mask parsed from
 * Linux's `/proc/<pid>/status`. A real process whose parent blocked
 * SIGWINCH (as `perf stat` does, where sherlock used to wait 2 s for a
 * signal that never came) is in signal_relay_test.ts.
 */

import assert from "node:assert/strict";
import { unblockedHarmlessSignal } from "../../lib/os/signal_mask.ts";

/** This process's own status text, with its SigBlk mask replaced by `mask`. */
function statusBlocking(mask: string): string {
  const status = Deno.readTextFileSync("/proc/self/status");
  assert.match(status, /^SigBlk:/m, "Linux's status names the mask");
  return status.replace(/^SigBlk:.*$/m, `SigBlk:\t${mask}`);
}

const onLinux = Deno.build.os === "linux";

Deno.test({
  name:
    "unblockedHarmlessSignal: SIGWINCH unless blocked, then SIGURG, then none",
  ignore: !onLinux,
  fn() {
    assert.equal(
      unblockedHarmlessSignal(statusBlocking("0000000000000000")),
      "SIGWINCH",
    );
    // Bit 27 is signal 28, SIGWINCH: what perf stat blocks.
    assert.equal(
      unblockedHarmlessSignal(statusBlocking("0000000008000000")),
      "SIGURG",
    );
    // SIGWINCH and SIGURG (bit 22) both blocked: no sentinel at all.
    assert.equal(
      unblockedHarmlessSignal(statusBlocking("0000000008400000")),
      undefined,
    );
    // Everything blocked that can be.
    assert.equal(
      unblockedHarmlessSignal(statusBlocking("fffffffe7ffbfeff")),
      undefined,
    );
  },
});

Deno.test("unblockedHarmlessSignal: no readable mask (not Linux) gives SIGWINCH", () => {
  assert.equal(unblockedHarmlessSignal(undefined), "SIGWINCH");
  assert.equal(unblockedHarmlessSignal("Name:\tdeno\n"), "SIGWINCH");
  assert.equal(unblockedHarmlessSignal("SigBlk:\tnot hex\n"), "SIGWINCH");
});
