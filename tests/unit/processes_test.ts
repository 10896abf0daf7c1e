/**
 * `/proc/<pid>/stat` (lib/os/processes.ts): the fields counted from the
 * command name's last parenthesis, whatever the name holds.
 */

import assert from "node:assert/strict";
import { parseProcStat, readProcStat } from "../../lib/os/processes.ts";

/** A stat line with `name` as the command, parent 41, group 40, start 58572. */
function statLine(name: string): string {
  return `4242 (${name}) S 41 40 8025 0 -1 4194304 98 0 0 0 0 0 0 0 20 0 1 0 58572 3133440 355 18446744073709551615 0\n`;
}

Deno.test("parseProcStat: parent, group and start time", () => {
  assert.deepEqual(parseProcStat(statLine("cat")), {
    ppid: 41,
    pgrp: 40,
    startTime: "58572",
  });
});

Deno.test("parseProcStat: a command name with spaces and parentheses", () => {
  for (const name of ["my agent", "a) S 1 2 (b", ")", "((x))"]) {
    assert.deepEqual(parseProcStat(statLine(name)), {
      ppid: 41,
      pgrp: 40,
      startTime: "58572",
    }, name);
  }
});

Deno.test("parseProcStat: not a stat line", () => {
  assert.equal(parseProcStat(""), undefined);
  assert.equal(parseProcStat("4242 (cat) S 41"), undefined);
});

Deno.test({
  name: "readProcStat: this process, and a pid that does not exist",
  ignore: Deno.build.os !== "linux",
  fn() {
    const stat = readProcStat(Deno.pid);
    assert.ok(stat !== undefined);
    assert.equal(stat.ppid, Deno.ppid);
    assert.match(stat.startTime, /^\d+$/);
    assert.equal(readProcStat(2 ** 22 + 1), undefined);
  },
});
