/**
 * What sherlock prints, seen from the other end of a pipe: a reader that
 * stops early (`sherlock broker log | head -1`) ends sherlock quietly with
 * exit 0, not with "internal error" and exit 70.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { createTestHome } from "../helpers/home.ts";
import { runInProcess } from "../helpers/in_process.ts";
import { sh } from "../helpers/shell.ts";
import {
  assertNoStackTrace,
  lines,
  sherlockCommand,
} from "../helpers/sherlock.ts";

Deno.test("broker log | head -1: a closed stdout ends sherlock quietly, exit 0", async () => {
  await using home = await createTestHome();
  // Far more than a pipe holds (64 KiB), so sherlock is still writing when
  // head exits.
  const entry = (index: number) =>
    JSON.stringify({
      time: "2025-01-01T00:00:00.000Z",
      event: "token",
      agent: "fake",
      session: `session${index}`,
      service: "api",
      source: "command",
      expiresAt: null,
    });
  const stateDir = join(home.stateHome, "sherlock");
  Deno.mkdirSync(stateDir, { recursive: true });
  Deno.writeTextFileSync(
    join(stateDir, "audit.log"),
    Array.from({ length: 5000 }, (_, index) => entry(index)).join("\n") + "\n",
  );
  const stderrFile = join(home.scratch, "stderr");
  const codeFile = join(home.scratch, "code");
  const command = sherlockCommand(["broker", "log", "-n", "5000"]).map(sh)
    .join(" ");
  const output = await new Deno.Command("/bin/sh", {
    args: [
      "-c",
      `{ ${command} 2>${sh(stderrFile)}; echo $? >${sh(codeFile)}; } | head -1`,
    ],
    env: home.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0);
  assert.match(new TextDecoder().decode(output.stdout), /^TIME\s+EVENT/);
  const stderr = Deno.readTextFileSync(stderrFile);
  assertNoStackTrace(stderr);
  assert.equal(stderr, "");
  assert.equal(Deno.readTextFileSync(codeFile).trim(), "0");
});

Deno.test("broker log: control characters in an entry are printed escaped, never sent to the terminal; a literal backslash is doubled", async () => {
  await using home = await createTestHome();
  const stateDir = join(home.stateHome, "sherlock");
  Deno.mkdirSync(stateDir, { recursive: true });
  const forged = [
    {
      time: "2025-01-01T00:00:00.000Z",
      event: "token",
      agent: "fake\x1b]0;owned\x07",
      session: "s1\n2025-01-01T00:00:01.000Z  login  forged",
      service: "api\x1b[2J\x1b[H",
      source: "command\r",
      expiresAt: null,
      reason: "\x9b31mred\x7f\x00",
    },
    {
      time: "2025-01-01T00:00:02.000Z",
      event: "token",
      // Typed out, not an ESC: it must not print like the escaped one.
      agent: "fake\\x1b]0;owned\\x07",
    },
    { time: 42, event: ["token"], agent: { a: 1 } },
  ];
  Deno.writeTextFileSync(
    join(stateDir, "audit.log"),
    ["null", "7", ...forged.map((entry) => JSON.stringify(entry))].join("\n") +
      "\n",
  );
  // Only what it prints: in-process, its stdout a buffer.
  const result = await runInProcess(["broker", "log"], { env: home.env });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  // No control character but the line ends; a header and three entries.
  // deno-lint-ignore no-control-regex -- finding them is the point
  assert.doesNotMatch(result.stdout, /[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
  const printed = lines(result.stdout);
  assert.equal(printed.length, 4, result.stdout);
  assert.match(printed[1], /fake\\x1b\]0;owned\\x07/);
  assert.match(printed[2], /fake\\\\x1b\]0;owned\\\\x07/);
  assert.match(printed[1], /s1\\x0a2025-01-01T00:00:01\.000Z/);
  assert.match(printed[1], /api\\x1b\[2J\\x1b\[H/);
  assert.match(printed[1], /\\x9b31mred\\x7f\\x00$/);
});
