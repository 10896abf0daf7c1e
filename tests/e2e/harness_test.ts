/**
 * The e2e harness itself, without any real agent CLI: snapshots see every
 * kind of change, stopping reports and kills what a CLI leaves behind, and
 * waiting fails fast when the CLI exits or the hang guard fires.
 *
 * @module
 */

import assert from "node:assert/strict";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  compareSnapshots,
  isAlive,
  makeSandbox,
  processTree,
  snapshotFiles,
  startCli,
  stopCli,
  waitForRecords,
} from "./harness.ts";

Deno.test("harness: snapshots see changed bytes, modes, added and removed files", async () => {
  const sandbox = await makeSandbox("harness");
  try {
    const dir = join(sandbox.home, ".agent");
    await mkdir(dir);
    await writeFile(join(dir, "config.json"), "{}\n");
    await writeFile(join(dir, "keep"), "same\n");
    const paths = [dir, join(sandbox.home, ".missing.json")];
    const before = await snapshotFiles(paths);
    assert.deepEqual(compareSnapshots(before, await snapshotFiles(paths)), []);

    await writeFile(join(dir, "config.json"), "{ }\n"); // same size
    await chmod(join(dir, "keep"), 0o600);
    await writeFile(join(dir, "new"), "");
    await writeFile(join(sandbox.home, ".missing.json"), "{}");
    const differences = compareSnapshots(before, await snapshotFiles(paths));
    assert.equal(differences.length, 4, differences.join("\n"));
    assert.ok(differences.some((d) => d.includes("config.json")));
    assert.ok(differences.some((d) => d.startsWith("added:")));
    assert.ok(differences.some((d) => d.includes(".missing.json")));
  } finally {
    await sandbox.cleanup();
  }
});

Deno.test("harness: a stat-only snapshot sees a rewrite without reading", async () => {
  const sandbox = await makeSandbox("harness");
  try {
    const file = join(sandbox.home, "secret");
    await writeFile(file, "aaaa");
    await chmod(file, 0o000); // unreadable (unless root): a read would throw
    const before = await snapshotFiles([file], { contents: false });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await chmod(file, 0o600);
    await writeFile(file, "bbbb");
    await chmod(file, 0o000);
    const after = await snapshotFiles([file], { contents: false });
    assert.equal(compareSnapshots(before, after).length, 1);
  } finally {
    await sandbox.cleanup();
  }
});

Deno.test("harness: stopping reports and kills the processes a CLI leaves behind", async () => {
  const sandbox = await makeSandbox("harness");
  try {
    // sh dies on SIGTERM without passing it on: its sleep is orphaned.
    const cli = startCli("/bin/sh", {
      args: ["-c", "sleep 61 & wait"],
      env: { PATH: "/usr/bin:/bin" },
      cwd: sandbox.work,
    });
    await waitForRecords(
      sandbox.record,
      () => processTree(cli.pid).length > 1,
      { cli, timeoutMs: 10_000 },
    );
    const sleeper = processTree(cli.pid)[1];
    const stop = await stopCli(cli, { settleMs: 200 });
    assert.ok(stop.signalled && stop.exitedInGrace);
    assert.equal(stop.leftovers.length, 1);
    assert.equal(stop.leftovers[0].pid, sleeper);
    assert.match(stop.leftovers[0].cmdline, /sleep 61/);
    await waitForRecords(sandbox.record, () => !isAlive(sleeper), {
      timeoutMs: 5_000,
    });
  } finally {
    await sandbox.cleanup();
  }
});

Deno.test("harness: waiting fails at once when the CLI exits, with its output", async () => {
  const sandbox = await makeSandbox("harness");
  try {
    const cli = startCli("/bin/sh", {
      args: ["-c", "echo no servers here >&2; exit 3"],
      env: { PATH: "/usr/bin:/bin" },
      cwd: sandbox.work,
    });
    await assert.rejects(
      waitForRecords(sandbox.record, () => false, { cli, timeoutMs: 30_000 }),
      /exited \(3\)[\s\S]*no servers here/,
    );
    await stopCli(cli);
  } finally {
    await sandbox.cleanup();
  }
});

Deno.test("harness: the hang guard fires", async () => {
  const sandbox = await makeSandbox("harness");
  try {
    await assert.rejects(
      waitForRecords(sandbox.record, () => false, { timeoutMs: 100 }),
      /timed out/,
    );
  } finally {
    await sandbox.cleanup();
  }
});
