/**
 * The validation cache (lib/config/validation_cache.ts) on real files: the
 * entry of a file that is gone is dropped at the next save, the whole stays
 * below its size cap, and an oversized cache file is not read but replaced.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { ValidationCache } from "../../lib/config/validation_cache.ts";

async function withFolder(test: (folder: string) => void): Promise<void> {
  const folder = await Deno.makeTempDir();
  try {
    test(folder);
  } finally {
    await Deno.remove(folder, { recursive: true });
  }
}

Deno.test("ValidationCache: a file that is gone leaves the cache at the next save, though nothing was added", () =>
  withFolder((folder) => {
    const cacheDir = join(folder, "cache");
    const kept = join(folder, "kept.toml");
    const gone = join(folder, "gone.toml");
    for (const path of [kept, gone]) Deno.writeTextFileSync(path, "a = 1");
    const first = new ValidationCache(cacheDir);
    first.set(ValidationCache.key("service", kept), "a = 1", { a: 1 });
    first.set(ValidationCache.key("service", gone), "a = 1", { a: 1 });
    first.set(
      ValidationCache.key("built-in profile", "built-in:x.toml"),
      "",
      1,
    );
    first.save();
    Deno.removeSync(gone);

    // A run that reads neither file: the one still there is kept.
    new ValidationCache(cacheDir).save();
    const document = JSON.parse(
      Deno.readTextFileSync(join(cacheDir, "validated.json")),
    );
    assert.deepEqual(Object.keys(document.entries).sort(), [
      ValidationCache.key("built-in profile", "built-in:x.toml"),
      ValidationCache.key("service", kept),
    ]);
  }));

Deno.test("ValidationCache: a note (no file's) stays though a run does not read it: runs that need other notes do not rewrite the cache in turn", () =>
  withFolder((folder) => {
    const cacheDir = join(folder, "cache");
    const file = join(cacheDir, "validated.json");
    const first = new ValidationCache(cacheDir);
    const note = ValidationCache.noteKey("command on PATH", "srv");
    first.set(note, "", "/bin/srv");
    first.save();
    const written = Deno.statSync(file).mtime;
    const before = Deno.readTextFileSync(file);

    // A run that needs no note (another agent, other services): no write.
    new ValidationCache(cacheDir).save();
    assert.equal(Deno.readTextFileSync(file), before);
    assert.deepEqual(Deno.statSync(file).mtime, written);
    assert.equal(new ValidationCache(cacheDir).get(note, ""), "/bin/srv");
  }));

Deno.test("ValidationCache: the newest entries are kept within the size cap", () =>
  withFolder((folder) => {
    const cacheDir = join(folder, "cache");
    const cache = new ValidationCache(cacheDir);
    const text = "#".repeat(1024 * 1024);
    const keys = [...Array(10).keys()].map((index) =>
      ValidationCache.key("service", join(folder, `${index}.toml`))
    );
    for (const key of keys) {
      Deno.writeTextFileSync(key.split("\0")[1], text);
      cache.set(key, text, { text });
    }
    cache.save();
    const file = join(cacheDir, "validated.json");
    assert.ok(Deno.statSync(file).size <= 4 * 1024 * 1024 + 1024);
    const reopened = new ValidationCache(cacheDir);
    assert.deepEqual(reopened.get(keys[9], text), { text }, "the newest");
  }));

Deno.test("ValidationCache: an oversized cache file is not read, and replaced at the next save", () =>
  withFolder((folder) => {
    const cacheDir = join(folder, "cache");
    Deno.mkdirSync(cacheDir);
    const file = join(cacheDir, "validated.json");
    Deno.writeTextFileSync(file, "{");
    Deno.truncateSync(file, 100 * 1024 * 1024);
    const cache = new ValidationCache(cacheDir);
    assert.equal(cache.get("k", "t"), undefined);
    cache.save();
    assert.ok(Deno.statSync(file).size < 1024, "rewritten small");
  }));
