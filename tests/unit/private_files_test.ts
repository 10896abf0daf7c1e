/** Private folders and files (lib/private_files.ts). */

import assert from "node:assert/strict";
import { join } from "node:path";
import { CantCreateError } from "../../lib/errors.ts";
import {
  ensurePrivateDir,
  removeDeadTemporaries,
  removeIfPresent,
  temporaryPath,
  writeFileExclusively,
  writePrivateFile,
} from "../../lib/private_files.ts";
import { listNames } from "../helpers/home.ts";

async function withFolder(test: (folder: string) => void): Promise<void> {
  const folder = await Deno.makeTempDir();
  try {
    test(folder);
  } finally {
    await Deno.remove(folder, { recursive: true });
  }
}

const mode = (path: string) => (Deno.lstatSync(path).mode ?? 0) & 0o777;

Deno.test("ensurePrivateDir: creates the folder and its parents 0700", async () => {
  await withFolder((folder) => {
    const path = join(folder, "a", "b");
    ensurePrivateDir(path);
    assert.equal(mode(path), 0o700);
    ensurePrivateDir(path); // and again: nothing changes
    assert.equal(mode(path), 0o700);
  });
});

Deno.test("ensurePrivateDir: tightens a wider folder of ours", async () => {
  await withFolder((folder) => {
    const path = join(folder, "wide");
    Deno.mkdirSync(path);
    Deno.chmodSync(path, 0o755);
    ensurePrivateDir(path);
    assert.equal(mode(path), 0o700);
  });
});

Deno.test("ensurePrivateDir: refuses a symlink and a file, leaving them alone", async () => {
  await withFolder((folder) => {
    const target = join(folder, "target");
    Deno.mkdirSync(target);
    Deno.chmodSync(target, 0o777);
    const link = join(folder, "link");
    Deno.symlinkSync(target, link);
    const file = join(folder, "file");
    Deno.writeTextFileSync(file, "x");
    for (const path of [link, file]) {
      assert.throws(
        () => ensurePrivateDir(path),
        (error: unknown) =>
          error instanceof CantCreateError &&
          error.message ===
            `${path} is not a plain folder (a symlink or a file); remove it and try again`,
      );
    }
    assert.equal(mode(target), 0o777);
    assert.equal(Deno.readTextFileSync(file), "x");
  });
});

Deno.test("writePrivateFile: 0600 whatever the umask, replaced whole, nothing beside it", async () => {
  await withFolder((folder) => {
    const path = join(folder, "f.json");
    const old = Deno.umask(0);
    try {
      writePrivateFile(path, "one");
      assert.equal(mode(path), 0o600);
      Deno.chmodSync(path, 0o644);
      writePrivateFile(path, "two");
      assert.equal(Deno.readTextFileSync(path), "two");
      assert.equal(mode(path), 0o600);
    } finally {
      Deno.umask(old);
    }
    assert.deepEqual(listNames(folder), ["f.json"]);
    removeIfPresent(path);
    removeIfPresent(path);
    assert.deepEqual(listNames(folder), []);
  });
});

Deno.test("writePrivateFile: never writes through a symlink planted at the path", async () => {
  await withFolder((folder) => {
    const victim = join(folder, "victim");
    Deno.writeTextFileSync(victim, "precious");
    const path = join(folder, "config.json");
    Deno.symlinkSync(victim, path);
    writePrivateFile(path, "rendered");
    assert.equal(Deno.readTextFileSync(victim), "precious");
    assert.equal(Deno.lstatSync(path).isSymlink, false);
    assert.equal(Deno.readTextFileSync(path), "rendered");
  });
});

Deno.test("removeDeadTemporaries: removes a dead writer's temporaries only, for the name asked", async () => {
  // A real process that has ended (and was reaped): its pid is free.
  const child = new Deno.Command("true").spawn();
  await child.status;
  await withFolder((folder) => {
    const config = join(folder, "fake.0123456789ab.mcp.json");
    const mine = temporaryPath(config);
    const dead = `${config}.0badcafe.sherlock-${child.pid}-1.tmp`;
    const otherFile = `${
      join(folder, "other.json")
    }.0badcafe.sherlock-${child.pid}-1.tmp`;
    // Names sherlock never writes: an operator's, another tool's.
    const foreign = [`${config}.tmp`, `${config}.0badcafe.tmp`];
    for (const path of [mine, dead, otherFile, ...foreign]) {
      Deno.writeTextFileSync(path, "tok_secret");
    }
    assert.match(mine, new RegExp(`\\.sherlock-${Deno.pid}-\\d+\\.tmp$`));
    assert.deepEqual(
      removeDeadTemporaries(folder, "fake.0123456789ab.mcp.json"),
      [
        dead,
      ],
    );
    assert.deepEqual(removeDeadTemporaries(folder), [otherFile]);
    assert.deepEqual(
      listNames(folder).sort(),
      [mine, ...foreign].map((path) => path.slice(folder.length + 1)).sort(),
    );
  });
});

Deno.test("writeFileExclusively: never replaces what is there; leaves no temporary file", async () => {
  await withFolder((folder) => {
    const path = join(folder, "mcp.json");
    const bytes = new TextEncoder().encode("{}");
    assert.equal(writeFileExclusively({ path, bytes, mode: 0o600 }), true);
    assert.equal(mode(path), 0o600);
    const again = new TextEncoder().encode('{"x": 1}');
    assert.equal(
      writeFileExclusively({ path, bytes: again, mode: 0o600 }),
      false,
    );
    assert.equal(Deno.readTextFileSync(path), "{}");
    assert.deepEqual(listNames(folder), ["mcp.json"]);
  });
});
