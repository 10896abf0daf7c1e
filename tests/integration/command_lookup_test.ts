/**
 * The launch's check that each stdio server's command is on PATH remembers,
 * in the validation cache, where it found each one: the next launch with
 * the same PATH stats that one place instead of every folder before it
 * (docs/BENCHMARKS.md). A remembered place is checked, never trusted: a
 * command removed since is reported as before. Real sherlock, real files.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { addFakeAgent } from "../helpers/agent.ts";
import { createTestHome } from "../helpers/home.ts";
import { stdioServiceToml } from "../helpers/profiles.ts";
import { lines, runSherlock } from "../helpers/sherlock.ts";

interface CacheFile {
  entries: Record<string, { text: string; value: unknown }>;
}

Deno.test("a server's command found late on PATH is remembered where it was; once gone, it is reported again", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  // Written by hand: writeService would install the command first on PATH.
  Deno.mkdirSync(home.servicesDir, { recursive: true });
  Deno.writeTextFileSync(
    join(home.servicesDir, "files.toml"),
    stdioServiceToml("files", { command: "files-mcp-server" }),
  );
  const late = join(home.scratch, "late-bin");
  Deno.mkdirSync(late);
  const command = join(late, "files-mcp-server");
  Deno.writeTextFileSync(command, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  Deno.chmodSync(command, 0o755);
  const env = { ...home.env, PATH: `${home.env.PATH}:${late}` };

  const first = await runSherlock(["--dry-run", "fake"], { env });
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(lines(first.stderr), []);
  const cache = JSON.parse(
    Deno.readTextFileSync(
      join(home.cacheHome, "sherlock", "validated.json"),
    ),
  ) as CacheFile;
  const entry =
    cache.entries[`note:command on PATH\0files-mcp-server\0${env.PATH}`];
  assert.ok(entry, Object.keys(cache.entries).join(", "));
  assert.equal(entry.value, command);

  Deno.removeSync(command);
  const second = await runSherlock(["--dry-run", "fake"], { env });
  assert.equal(second.code, 0, second.stderr);
  assert.deepEqual(lines(second.stderr), [
    "sherlock: service files: its command files-mcp-server is not on PATH; install the server or give its full path in services.d/files.toml",
  ]);
});
