/**
 * `deno task bench:bridge` (scripts/bench_bridge.ts): its command line, its
 * statistics and table, and the process-tree memory reading on real
 * processes. The benchmark itself (mcp-remote from npm, timings) is run by
 * hand, never here: no timing is asserted, nothing is installed.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  figuresOf,
  formatTable,
  parseBridgeBenchArgs,
  ratios,
  roundOrder,
  type VariantFigures,
  VARIANTS,
} from "../../scripts/bench_bridge.ts";
import {
  highWaterKiB,
  processTree,
  treePeakKiB,
} from "../../scripts/bench_bridge/process_tree.ts";
import { REPO_ROOT } from "../helpers/sherlock.ts";

Deno.test("parseBridgeBenchArgs: defaults, then every option", () => {
  assert.deepEqual(parseBridgeBenchArgs([]), {
    runs: 15,
    warmup: 2,
    requests: 100,
    variants: [...VARIANTS],
  });
  assert.deepEqual(
    parseBridgeBenchArgs([
      "--runs",
      "40",
      "--warmup",
      "0",
      "--requests",
      "300",
      "--variants",
      "mcp-remote, sherlock",
    ]),
    {
      runs: 40,
      warmup: 0,
      requests: 300,
      // Report order, whatever order they were given in.
      variants: ["sherlock", "mcp-remote"],
    },
  );
});

Deno.test("parseBridgeBenchArgs: a mistake is one line naming the argument", () => {
  const cases: [string[], RegExp][] = [
    [["--runs"], /^--runs needs a value$/],
    [["--runs", "0"], /^--runs needs a whole number of at least 1, not 0$/],
    [["--requests", "1.5"], /^--requests needs a whole number/],
    [["--warmup", "-1"], /^--warmup needs a whole number of at least 0/],
    [
      ["--variants", "sherlock,npx"],
      /^--variants: unknown variant npx \(known: floor, sherlock, bridge, sdk, mcp-remote\)$/,
    ],
    [["--fast"], /^unknown argument --fast$/],
  ];
  for (const [args, message] of cases) {
    assert.throws(
      () => parseBridgeBenchArgs(args),
      { message },
      args.join(" "),
    );
  }
});

Deno.test("roundOrder: each variant leads one round in turn", () => {
  const variants = ["a", "b", "c"];
  assert.deepEqual(roundOrder(variants, 0), ["a", "b", "c"]);
  assert.deepEqual(roundOrder(variants, 1), ["b", "c", "a"]);
  assert.deepEqual(roundOrder(variants, 5), ["c", "a", "b"]);
  assert.deepEqual(roundOrder([], 3), []);
});

Deno.test("figuresOf: median start, percentiles over every ping of every run, median peak", () => {
  const pings = Array.from({ length: 100 }, (_, i) => i + 1);
  const figures = figuresOf([
    { firstMs: 30, pingsMs: pings.slice(0, 50), peakKiB: 50 * 1024 },
    { firstMs: 10, pingsMs: pings.slice(50), peakKiB: 40 * 1024 },
    { firstMs: 20, pingsMs: [], peakKiB: 60 * 1024 },
  ]);
  assert.deepEqual(figures, {
    firstMedian: 20,
    firstP90: 30,
    pingP50: 50.5,
    pingP99: 99,
    peakMiB: 50,
  });
  // The floor sends no ping: no ping figures, not zeros.
  const floor = figuresOf([{ firstMs: 5, pingsMs: [], peakKiB: 1024 }]);
  assert.ok(Number.isNaN(floor.pingP50) && Number.isNaN(floor.pingP99));
});

Deno.test("ratios and formatTable: peer / sherlock per column, above 1 where sherlock is ahead", () => {
  const sherlock: VariantFigures = {
    firstMedian: 30,
    firstP90: 40,
    pingP50: 0.9,
    pingP99: 3.5,
    peakMiB: 50,
  };
  const peer: VariantFigures = {
    firstMedian: 410,
    firstP90: 500,
    pingP50: 2.25,
    pingP99: 10.5,
    peakMiB: 130,
  };
  const ratio = ratios(sherlock, peer);
  assert.equal(ratio.firstMedian.toFixed(2), "13.67");
  assert.equal(ratio.pingP50, 2.5);
  assert.equal(ratio.pingP99, 3);
  assert.equal(ratio.peakMiB, 2.6);
  const table = formatTable(
    new Map([["sherlock", sherlock], ["mcp-remote", peer]]),
  ).split("\n");
  assert.equal(table.length, 5);
  assert.equal(table[2], "| sherlock | 30.0 | 40.0 | 0.90 | 3.50 | 50.0 |");
  assert.equal(
    table[3],
    "| mcp-remote | 410.0 | 500.0 | 2.25 | 10.50 | 130.0 |",
  );
  assert.equal(
    table[4],
    "| mcp-remote / sherlock | 13.67 | 12.50 | 2.50 | 3.00 | 2.60 |",
  );
  // The whole command is compared with the peer too, when it ran.
  const withBridge = formatTable(
    new Map([["sherlock", sherlock], ["bridge", sherlock], [
      "mcp-remote",
      peer,
    ]]),
  ).split("\n");
  assert.deepEqual(withBridge.slice(5).map((line) => line.split(" |")[0]), [
    "| bridge / sherlock",
    "| mcp-remote / sherlock",
    "| mcp-remote / bridge",
  ]);
  // A figure that was not measured is an empty cell.
  const floorOnly = formatTable(
    new Map([["floor", { ...sherlock, pingP50: NaN, pingP99: NaN }]]),
  );
  assert.ok(floorOnly.endsWith("| floor | 30.0 | 40.0 |  |  | 50.0 |"));
});

Deno.test("highWaterKiB: the VmHWM line of /proc/<pid>/status", () => {
  assert.equal(
    highWaterKiB("Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    5120 kB\n"),
    5120,
  );
  assert.ok(Number.isNaN(highWaterKiB("Name:\tkthreadd\n")));
  assert.equal(
    highWaterKiB(Deno.readTextFileSync("/proc/self/status")) > 0,
    true,
  );
});

Deno.test("treePeakKiB: a real process and its child both count, summed", async () => {
  // sh starts a background child, prints its pid, then waits: once the
  // line is read the child exists (the fork happened before the echo).
  const parent = new Deno.Command("sh", {
    args: ["-c", "sleep 600 & echo $!; wait"],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = parent.stdout.pipeThrough(new TextDecoderStream())
    .getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  const child = Number(text.trim());
  try {
    const tree = processTree(parent.pid);
    assert.deepEqual(tree, [parent.pid, child]);
    const peak = treePeakKiB(parent.pid);
    assert.equal(peak.processes, 2);
    const each = tree.map((pid) =>
      highWaterKiB(Deno.readTextFileSync(`/proc/${pid}/status`))
    );
    // High-water marks only grow, so the sum read first is at most the one
    // read now.
    assert.ok(peak.peakKiB > 0 && peak.peakKiB <= each[0] + each[1]);
  } finally {
    Deno.kill(child, "SIGKILL");
    await parent.status;
    await reader.cancel();
  }
  // Once reaped, the tree is nothing: memory must be read while it runs.
  assert.deepEqual(treePeakKiB(parent.pid), { peakKiB: 0, processes: 0 });
});

Deno.test("bench:bridge: a bad argument is one line and exit 2, without a stack trace", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--quiet",
      join(REPO_ROOT, "scripts", "bench_bridge.ts"),
      "--variants",
      "npx",
    ],
    cwd: REPO_ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 2);
  assert.equal(
    stderr.split("\n")[0],
    "bench:bridge: --variants: unknown variant npx (known: floor, sherlock, bridge, sdk, mcp-remote)",
  );
  assert.doesNotMatch(stderr, /\s+at /);
});
