/**
 * What sherlock prints, seen from the other end of a pipe: a reader that
 * stops early (`sherlock broker log | head -1`) ends sherlock quietly with
 * exit 0, not with "internal error" and exit 70.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { createTestHome } from "../helpers/home.ts";
import { sh } from "../helpers/shell.ts";
import { assertNoStackTrace, sherlockCommand } from "../helpers/sherlock.ts";

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
