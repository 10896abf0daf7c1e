/**
 * The sentinel signal of lib/os/signal_mask.ts: the mask parsed from
 * Linux's `/proc/<pid>/status`, and a real process whose parent blocked
 * SIGWINCH (as `perf stat` does), where sherlock used to wait 2 s for a
 * signal that never came.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
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

/**
 * Started with SIGWINCH blocked: prints the sentinel sherlock chose, then
 * (a SIGHUP sent to itself just before) the code of a relay's spawn of a
 * child that would create its argument.
 */
const UNDER_BLOCKING_PARENT = `
import { sentinelSignal } from ${
  JSON.stringify(new URL("../../lib/os/signal_mask.ts", import.meta.url).href)
};
import { SignalRelay } from ${
  JSON.stringify(new URL("../../lib/launch/spawn.ts", import.meta.url).href)
};
console.log(sentinelSignal());
const relay = new SignalRelay();
Deno.kill(Deno.pid, "SIGHUP");
const code = await relay.spawn({
  path: "/bin/sh",
  args: ["-c", 'touch "$1"', "sh", Deno.args[0]],
  env: {},
});
relay.close();
console.log(code);
Deno.exit(0);
`;

/**
 * Perl (perl-base, which every Debian system has) is the one tool here that
 * starts a program with a signal blocked; 28 is SIGWINCH on Linux.
 */
const BLOCK_SIGWINCH =
  'sigprocmask(SIG_BLOCK, POSIX::SigSet->new(28)) or die "sigprocmask: $!"; exec @ARGV or die "exec: $!"';

Deno.test({
  name:
    "SignalRelay under a parent that blocks SIGWINCH: SIGURG is the sentinel, and an early signal still means no child",
  ignore: !onLinux,
  async fn() {
    const folder = await Deno.makeTempDir();
    try {
      const script = join(folder, "under_blocking_parent.ts");
      Deno.writeTextFileSync(script, UNDER_BLOCKING_PARENT);
      const marker = join(folder, "started");
      const output = await new Deno.Command("perl", {
        args: [
          "-MPOSIX",
          "-e",
          BLOCK_SIGWINCH,
          Deno.execPath(),
          "run",
          "--allow-all",
          "--quiet",
          script,
          marker,
        ],
      }).output();
      const printed = new TextDecoder().decode(output.stdout).trim();
      assert.deepEqual(printed.split("\n"), ["SIGURG", "129"]);
      assert.throws(() => Deno.statSync(marker), Deno.errors.NotFound);
    } finally {
      await Deno.remove(folder, { recursive: true });
    }
  },
});
