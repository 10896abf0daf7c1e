/**
 * The launch benchmark's options and its regression gate (the release
 * workflow fails on what `regressions` returns). Fixed samples, no timing.
 */

import assert from "node:assert/strict";
import {
  type Measurements,
  parseBenchArgs,
  regressions,
} from "../../scripts/bench_launch.ts";

function samples(...cpu: number[]): { wall: number; cpu: number }[] {
  return cpu.map((value) => ({ wall: value, cpu: value }));
}

Deno.test("bench: --services and --max-ratio are parsed, with one line on a mistake", () => {
  const options = parseBenchArgs([
    "--services",
    "5,0,5",
    "--baseline",
    "/tmp/x",
    "--max-ratio",
    "1.05",
  ]);
  assert.deepEqual(options.services, [5, 0]);
  assert.equal(options.maxRatio, 1.05);
  assert.deepEqual(parseBenchArgs([]).services, [0, 1, 5, 10]);
  assert.throws(() => parseBenchArgs(["--max-ratio", "1.05"]), /--baseline/);
  assert.throws(
    () => parseBenchArgs(["--baseline", "x", "--max-ratio", "0.9"]),
    /--max-ratio needs a number ≥ 1/,
  );
  assert.throws(() => parseBenchArgs(["--services", "a"]), /whole numbers/);
});

Deno.test("bench: a CPU ratio beyond --max-ratio against the baseline is a regression, per service count", () => {
  const times: Measurements = new Map([
    ["sherlock 0 warm", samples(110, 110, 110, 110, 100, 120, 110, 110, 110)],
    ["baseline 0 warm", samples(100, 100, 100, 100, 100, 100, 100, 100, 100)],
    ["sherlock 5 warm", samples(104, 106)],
    ["baseline 5 warm", samples(100, 100)],
  ]);
  const found = regressions(times, { services: [0, 5], maxRatio: 1.05 });
  assert.equal(found.length, 1);
  assert.match(
    found[0],
    /^0 services: CPU 110\.0 ms .* ratio 1\.100 > 1\.05 \(per round \+10\.0 ± 3\.3 ms, allowed \+5\.0\)$/,
  );
  // +5 ± 2 per round against +5 allowed passes; against +1, it does not.
  assert.deepEqual(
    regressions(times, { services: [5], maxRatio: 1.05 }),
    [],
  );
  assert.deepEqual(
    regressions(times, { services: [5], maxRatio: 1.01 }).length,
    1,
  );
});

Deno.test("bench: a ratio beyond --max-ratio that the rounds' spread explains is not a regression", () => {
  const times: Measurements = new Map([
    ["sherlock 5 warm", samples(100, 120, 90, 130)],
    ["baseline 5 warm", samples(100, 100, 100, 100)],
  ]);
  // Mean 110 (ratio 1.10), but the differences 0, 20, -10, 30 spread wide.
  assert.deepEqual(regressions(times, { services: [5], maxRatio: 1.05 }), []);
});

Deno.test("bench: without CPU times the gate does not pass blind", () => {
  const times: Measurements = new Map([
    ["sherlock 5 warm", [{ wall: 100 }]],
    ["baseline 5 warm", [{ wall: 100 }]],
  ]);
  assert.match(
    regressions(times, { services: [5], maxRatio: 1.05 })[0],
    /no CPU time measured/,
  );
});
