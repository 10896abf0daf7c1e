/**
 * Session records and the files they own (lib/session/records.ts,
 * lib/session/rendered_config.ts): written 0600 and exclusively, removed
 * only while unchanged, swept when their process is gone.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { CantCreateError } from "../../lib/errors.ts";
import {
  runtimeConfigPath,
  writeRenderedConfig,
} from "../../lib/session/rendered_config.ts";
import {
  endSession,
  isoTimestamp,
  newSessionId,
  newSessionRecord,
  readSessionRecords,
  type SessionRecord,
  sessionsDir,
  sweepStaleSessions,
} from "../../lib/session/records.ts";
import { listNames } from "../helpers/home.ts";
import { exists } from "../helpers/wait.ts";

async function withFolder(test: (folder: string) => Promise<void> | void) {
  const folder = await Deno.realPath(await Deno.makeTempDir());
  try {
    await test(folder);
  } finally {
    await Deno.remove(folder, { recursive: true });
  }
}

const mode = (path: string) => (Deno.statSync(path).mode ?? 0) & 0o777;

/** The pid of a process that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = new Deno.Command("/bin/true").spawn();
  await child.status;
  return child.pid;
}

function write(
  folder: string,
  record: SessionRecord,
  path: string,
  text: string,
): void {
  writeRenderedConfig({
    stateDir: join(folder, "state"),
    runtimeDir: join(folder, "runtime"),
    record,
    path,
    text,
  });
}

Deno.test("newSessionId: 12 hex digits, different each time", () => {
  const ids = new Set(Array.from({ length: 100 }, newSessionId));
  assert.equal(ids.size, 100);
  for (const id of ids) assert.match(id, /^[0-9a-f]{12}$/);
});

Deno.test("runtimeConfigPath: <agent>.<session>.mcp.<ext> in the runtime folder", () => {
  assert.equal(
    runtimeConfigPath({
      runtimeDir: "/run/user/1/sherlock",
      agent: "claude",
      session: "0123456789ab",
      extension: "json",
    }),
    "/run/user/1/sherlock/claude.0123456789ab.mcp.json",
  );
});

Deno.test("writeRenderedConfig: 0600 in a 0700 runtime folder, recorded first", async () => {
  await withFolder((folder) => {
    const record = newSessionRecord("aaaaaaaaaaaa", "fake");
    const path = join(folder, "runtime", "fake.aaaaaaaaaaaa.mcp.json");
    write(folder, record, path, "{}\n");
    assert.equal(Deno.readTextFileSync(path), "{}\n");
    assert.equal(mode(path), 0o600);
    assert.equal(mode(join(folder, "runtime")), 0o700);
    const [saved] = readSessionRecords(join(folder, "state"));
    assert.equal(saved.session, "aaaaaaaaaaaa");
    assert.equal(saved.pid, Deno.pid);
    assert.deepEqual(saved.files.map((file) => file.path), [path]);
    assert.equal(mode(sessionsDir(join(folder, "state"))), 0o700);
    assert.equal(
      mode(join(sessionsDir(join(folder, "state")), "aaaaaaaaaaaa.json")),
      0o600,
    );
    // Nothing but the file itself is left beside it.
    assert.deepEqual(listNames(join(folder, "runtime")), [
      "fake.aaaaaaaaaaaa.mcp.json",
    ]);
    endSession(join(folder, "state"), record);
    assert.equal(exists(path), false);
    assert.deepEqual(listNames(sessionsDir(join(folder, "state"))), []);
  });
});

Deno.test("writeRenderedConfig: a foreign file is left alone and named as such", async () => {
  await withFolder((folder) => {
    const path = join(folder, "home", ".agent", "mcp.json");
    Deno.mkdirSync(join(folder, "home", ".agent"), { recursive: true });
    Deno.writeTextFileSync(path, "operator's own\n");
    const record = newSessionRecord("bbbbbbbbbbbb", "fake");
    assert.throws(
      () => write(folder, record, path, "{}\n"),
      (error: unknown) =>
        error instanceof CantCreateError &&
        error.exitCode === 73 &&
        error.message ===
          `${path} exists and sherlock did not write it; move it away or change the profile's [mcp] path`,
    );
    assert.equal(Deno.readTextFileSync(path), "operator's own\n");
    assert.deepEqual(record.files, []);
    // The failed session does not claim the file, so ending it leaves it.
    endSession(join(folder, "state"), record);
    assert.equal(Deno.readTextFileSync(path), "operator's own\n");
    assert.deepEqual(listNames(join(folder, "home", ".agent")), ["mcp.json"]);
  });
});

Deno.test("writeRenderedConfig: a file of another live session names that session", async () => {
  await withFolder((folder) => {
    const path = join(folder, "cfg", "mcp.json");
    const first = newSessionRecord("111111111111", "fake");
    write(folder, first, path, "first\n");
    // Whatever order the records are read in, the owner is the first.
    for (const id of ["000000000000", "222222222222", "ffffffffffff"]) {
      const second = newSessionRecord(id, "fake");
      assert.throws(
        () => write(folder, second, path, "second\n"),
        (error: unknown) =>
          error instanceof CantCreateError &&
          error.message ===
            `${path} is in use by sherlock session 111111111111 (fake, pid ${Deno.pid}); wait for it to end`,
      );
      endSession(join(folder, "state"), second);
    }
    assert.equal(Deno.readTextFileSync(path), "first\n");
  });
});

Deno.test("endSession: a config-file the operator changed meanwhile is kept", async () => {
  await withFolder((folder) => {
    const record = newSessionRecord("cccccccccccc", "fake");
    // Outside sherlock's runtime folder, as a config-file profile's path is.
    const path = join(folder, "operator", "mcp.json");
    write(folder, record, path, "{}\n");
    Deno.writeTextFileSync(path, "edited\n");
    endSession(join(folder, "state"), record);
    assert.equal(Deno.readTextFileSync(path), "edited\n");
    assert.deepEqual(readSessionRecords(join(folder, "state")), []);
  });
});

Deno.test("endSession: a session's own file in the runtime folder always goes", async () => {
  await withFolder((folder) => {
    const record = newSessionRecord("dddddddddddd", "fake");
    const path = join(folder, "runtime", "fake.dddddddddddd.mcp.json");
    write(folder, record, path, "{}\n");
    assert.equal(record.files[0].sha256, null, "not hashed");
    Deno.writeTextFileSync(path, "changed by the agent\n");
    endSession(join(folder, "state"), record);
    assert.deepEqual([...Deno.readDirSync(join(folder, "runtime"))], []);
  });
});

Deno.test("sweepStaleSessions: ends sessions whose process is gone, only those", async () => {
  await withFolder(async (folder) => {
    const state = join(folder, "state");
    const live = newSessionRecord("dddddddddddd", "fake");
    const livePath = join(folder, "runtime", "fake.dddddddddddd.mcp.json");
    write(folder, live, livePath, "live\n");

    const dead = {
      ...newSessionRecord("eeeeeeeeeeee", "fake"),
      pid: await deadPid(),
    };
    const deadPath = join(folder, "runtime", "fake.eeeeeeeeeeee.mcp.json");
    write(folder, dead, deadPath, "dead\n");
    // A pid that was reused by another process (another start time).
    const reused = {
      ...newSessionRecord("999999999999", "fake"),
      processStart: "1",
    };
    const reusedPath = join(folder, "runtime", "fake.999999999999.mcp.json");
    write(folder, reused, reusedPath, "reused\n");

    const swept = sweepStaleSessions(state).map((r) => r.session).sort();
    assert.deepEqual(swept, ["999999999999", "eeeeeeeeeeee"]);
    assert.equal(exists(deadPath), false);
    assert.equal(exists(reusedPath), false);
    assert.equal(Deno.readTextFileSync(livePath), "live\n");
    assert.deepEqual(
      readSessionRecords(state).map((r) => r.session),
      ["dddddddddddd"],
    );
  });
});

Deno.test("sweepStaleSessions: an unreadable record is left for the operator", async () => {
  await withFolder((folder) => {
    const state = join(folder, "state");
    Deno.mkdirSync(sessionsDir(state), { recursive: true });
    Deno.writeTextFileSync(join(sessionsDir(state), "junk.json"), "{nope");
    assert.deepEqual(sweepStaleSessions(state), []);
    assert.deepEqual(listNames(sessionsDir(state)), ["junk.json"]);
  });
});

Deno.test("a record's start time is written as Date#toISOString writes it, leap days and years 0 to 9999 included", () => {
  const samples = [
    0,
    -1,
    951_782_400_000, // 2000-02-29, a leap day of a year divisible by 400
    951_868_800_000, // 2000-03-01
    4_107_542_399_999, // 2100-02-28T23:59:59.999Z: 2100 has no 29 February
    -62_167_219_200_000, // 0000-01-01
    253_402_300_799_999, // 9999-12-31T23:59:59.999Z
    1_700_000_000_123,
  ];
  // And a spread over the whole range, with milliseconds in every field.
  for (
    let ms = -62_167_219_200_000;
    ms < 253_402_300_799_999;
    ms += 7_777_777_777_777
  ) {
    samples.push(ms);
  }
  for (const ms of samples) {
    assert.equal(isoTimestamp(ms), new Date(ms).toISOString(), `${ms}`);
  }
  const before = Date.now();
  const { created } = newSessionRecord("0123456789ab", "claude");
  assert.ok(Date.parse(created) >= before && Date.parse(created) <= Date.now());
});
