/**
 * The `merge = true` delivery (the merge itself in lib/render/merge.ts,
 * writeMergedConfig in lib/session/rendered_config.ts, restores in
 * lib/session/merged_config.ts and lib/session/records.ts):
 * merging sherlock's servers into the operator's file, and taking them out
 * again, byte for byte when nothing else changed.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { CantCreateError } from "../../lib/errors.ts";
import { mergeServers, unmergeServers } from "../../lib/render/merge.ts";
import { restoreMergedConfig } from "../../lib/session/merged_config.ts";
import { writeMergedConfig } from "../../lib/session/rendered_config.ts";
import {
  endSession,
  newSessionRecord,
  saveSessionRecord,
  type SessionRecord,
  sweepStaleSessions,
} from "../../lib/session/records.ts";
import { listNames } from "../helpers/home.ts";
import { exists } from "../helpers/wait.ts";

const OURS = {
  mcpServers: {
    github: { command: "sherlock", args: ["shim", "github"], env: {} },
    docs: { httpUrl: "https://docs.example.com/mcp", headers: {} },
  },
};

Deno.test("mergeServers: into an empty document, every key and entry is new", () => {
  const result = mergeServers({}, OURS);
  assert.deepEqual(result.merged, OURS);
  assert.deepEqual(result.addedKeys, ["mcpServers"]);
  assert.deepEqual(result.replaced, {
    mcpServers: { github: null, docs: null },
  });
});

Deno.test("mergeServers: the operator's other keys and entries stay; same-named entries are recorded", () => {
  const existing = {
    theme: "dark",
    security: { auth: { selectedType: "gemini-api-key" } },
    mcpServers: {
      mine: { command: "my-server" },
      github: { command: "my-own-github", args: ["--old"] },
    },
  };
  const before = structuredClone(existing);
  const result = mergeServers(existing, OURS);
  assert.deepEqual(result.merged, {
    theme: "dark",
    security: { auth: { selectedType: "gemini-api-key" } },
    mcpServers: {
      mine: { command: "my-server" },
      github: OURS.mcpServers.github,
      docs: OURS.mcpServers.docs,
    },
  });
  assert.deepEqual(result.addedKeys, []);
  assert.deepEqual(result.replaced, {
    mcpServers: {
      github: { command: "my-own-github", args: ["--old"] },
      docs: null,
    },
  });
  // The operator's document itself is not changed.
  assert.deepEqual(existing, before);
});

Deno.test("mergeServers: several keys at once (e.g. opencode's mcp)", () => {
  const result = mergeServers({ mcp: { a: 1 } }, {
    mcp: { b: 2 },
    extra: { c: 3 },
  });
  assert.deepEqual(result.merged, { mcp: { a: 1, b: 2 }, extra: { c: 3 } });
  assert.deepEqual(result.addedKeys, ["extra"]);
  assert.deepEqual(result.replaced, { mcp: { b: null }, extra: { c: null } });
});

Deno.test("mergeServers: a key that is not an object is refused, naming it", () => {
  for (const value of [[], "servers", 1, true, null]) {
    assert.throws(
      () => mergeServers({ mcpServers: value }, OURS),
      /"mcpServers" is not an object/,
      JSON.stringify(value),
    );
  }
});

Deno.test("unmergeServers: a merged document comes back exactly", () => {
  const documents: Record<string, unknown>[] = [
    {},
    { theme: "dark" },
    { mcpServers: {} },
    { mcpServers: { mine: { command: "x" } }, theme: "dark" },
    { mcpServers: { github: { command: "mine" }, docs: { url: "u" } } },
  ];
  for (const document of documents) {
    const result = mergeServers(document, OURS);
    assert.deepEqual(
      unmergeServers(result.merged, result),
      document,
      JSON.stringify(document),
    );
  }
});

Deno.test("unmergeServers: the operator's changes during the session stay", () => {
  const original = {
    theme: "dark",
    mcpServers: { github: { command: "mine" }, kept: { command: "k" } },
  };
  const result = mergeServers(original, OURS);
  // During the session the operator changes a setting, adds a server and
  // removes one of theirs.
  const changed = structuredClone(result.merged) as {
    theme: string;
    mcpServers: Record<string, unknown>;
    newKey?: boolean;
  };
  changed.theme = "light";
  changed.newKey = true;
  changed.mcpServers.added = { command: "new" };
  delete changed.mcpServers.kept;
  assert.deepEqual(unmergeServers(changed, result), {
    theme: "light",
    newKey: true,
    mcpServers: { github: { command: "mine" }, added: { command: "new" } },
  });
});

Deno.test("unmergeServers: a key sherlock added goes when empty, stays when the operator put something in it", () => {
  const result = mergeServers({ theme: "dark" }, OURS);
  assert.deepEqual(unmergeServers(result.merged, result), { theme: "dark" });
  const changed = structuredClone(result.merged) as {
    mcpServers: Record<string, unknown>;
  };
  changed.mcpServers.theirs = { command: "t" };
  assert.deepEqual(unmergeServers(changed, result), {
    theme: "dark",
    mcpServers: { theirs: { command: "t" } },
  });
});

Deno.test("unmergeServers: a key the operator had stays even when empty", () => {
  const result = mergeServers({ mcpServers: {} }, OURS);
  assert.deepEqual(unmergeServers(result.merged, result), { mcpServers: {} });
});

Deno.test("unmergeServers: a key that is no longer an object is left alone", () => {
  const result = mergeServers({ theme: "dark" }, OURS);
  assert.deepEqual(
    unmergeServers({ theme: "dark", mcpServers: "gone" }, result),
    { theme: "dark", mcpServers: "gone" },
  );
  assert.deepEqual(unmergeServers({ theme: "dark" }, result), {
    theme: "dark",
  });
});

/** A temp folder with a state folder and a home, removed afterwards. */
async function withFolder(
  test: (folder: { state: string; home: string }) => Promise<void> | void,
): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    const home = join(root, "home");
    Deno.mkdirSync(home);
    await test({ state: join(root, "state"), home });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

const modeOf = (path: string) => (Deno.statSync(path).mode ?? 0) & 0o777;

/** Writes bytes with a mode (chmod, whatever the umask). */
function writeFile(path: string, text: string, mode = 0o644): Uint8Array {
  const bytes = new TextEncoder().encode(text);
  Deno.writeFileSync(path, bytes);
  Deno.chmodSync(path, mode);
  return bytes;
}

/** Merges OURS into `path` for a new session of this process. */
async function merge(
  state: string,
  path: string,
  session = "aaaaaaaaaaaa",
): Promise<SessionRecord> {
  const record = newSessionRecord(session, "gemini");
  await writeMergedConfig({ stateDir: state, record, path, document: OURS });
  return record;
}

/** The session records in the state folder. */
function records(state: string): string[] {
  return listNames(join(state, "sessions")).filter((name) =>
    name.endsWith(".json")
  );
}

/** An operator's file in the style people write by hand (not sherlock's). */
const OPERATOR_TEXT =
  `{"theme":"dark",  "mcpServers": {"mine": {"command": "m"}},
  "security": {"auth": {"selectedType": "gemini-api-key"}}}`;

Deno.test("writeMergedConfig + endSession: merged during the session, bytes and mode back after", async () => {
  await withFolder(async ({ state, home }) => {
    const path = join(home, "settings.json");
    const bytes = writeFile(path, OPERATOR_TEXT, 0o640);
    const record = await merge(state, path);
    // The record holds the restore before the file changes.
    assert.deepEqual(records(state), ["aaaaaaaaaaaa.json"]);
    const merged = JSON.parse(Deno.readTextFileSync(path));
    assert.deepEqual(merged.mcpServers, {
      mine: { command: "m" },
      ...OURS.mcpServers,
    });
    assert.equal(merged.theme, "dark");
    assert.equal(modeOf(path), 0o640);
    assert.deepEqual(endSession(state, record), []);
    assert.deepEqual(Deno.readFileSync(path), bytes);
    assert.equal(modeOf(path), 0o640);
    assert.deepEqual(records(state), []);
    assert.deepEqual(listNames(home), ["settings.json"]);
  });
});

Deno.test("writeMergedConfig: no file before, none after; the merged one is 0600", async () => {
  await withFolder(async ({ state, home }) => {
    const path = join(home, ".gemini", "settings.json");
    const record = await merge(state, path);
    assert.deepEqual(JSON.parse(Deno.readTextFileSync(path)), OURS);
    assert.equal(modeOf(path), 0o600);
    assert.equal(modeOf(join(home, ".gemini")), 0o700);
    assert.deepEqual(endSession(state, record), []);
    assert.equal(exists(path), false);
  });
});

Deno.test("writeMergedConfig: an empty file counts as {} and comes back empty", async () => {
  await withFolder(async ({ state, home }) => {
    const path = join(home, "settings.json");
    const bytes = writeFile(path, " \n");
    const record = await merge(state, path);
    assert.deepEqual(JSON.parse(Deno.readTextFileSync(path)), OURS);
    assert.deepEqual(endSession(state, record), []);
    assert.deepEqual(Deno.readFileSync(path), bytes);
  });
});

Deno.test("writeMergedConfig: not plain JSON is refused; the file is untouched and nothing recorded", async () => {
  await withFolder(async ({ state, home }) => {
    const path = join(home, "settings.json");
    const cases: [string, RegExp][] = [
      [
        '{\n  // comment\n  "theme": "dark"\n}\n',
        /is not plain JSON \(comments\?\); sherlock merges its servers only into a JSON file and left it untouched$/,
      ],
      ['{"theme": "dark",}', /is not plain JSON/],
      ["[1, 2]", /does not hold a JSON object; sherlock left it untouched$/],
      ['"text"', /does not hold a JSON object/],
      [
        '{"mcpServers": []}',
        /: "mcpServers" is not an object; sherlock left it untouched$/,
      ],
    ];
    for (const [text, message] of cases) {
      const bytes = writeFile(path, text, 0o644);
      const record = newSessionRecord("bbbbbbbbbbbb", "gemini");
      await assert.rejects(
        writeMergedConfig({ stateDir: state, record, path, document: OURS }),
        (error) => {
          assert.ok(error instanceof CantCreateError, String(error));
          assert.match(error.message, message);
          assert.ok(error.message.startsWith(path), error.message);
          return true;
        },
      );
      assert.deepEqual(Deno.readFileSync(path), bytes, text);
      assert.equal(modeOf(path), 0o644);
      assert.deepEqual(record.restores ?? [], []);
      assert.deepEqual(records(state), []);
    }
  });
});

Deno.test("writeMergedConfig: invalid UTF-8 is not JSON either", async () => {
  await withFolder(async ({ state, home }) => {
    const path = join(home, "settings.json");
    const bytes = new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]);
    Deno.writeFileSync(path, bytes);
    await assert.rejects(merge(state, path), /is not plain JSON/);
    assert.deepEqual(Deno.readFileSync(path), bytes);
  });
});

Deno.test("writeMergedConfig: a second live session on the same file is refused, naming the first", async () => {
  await withFolder(async ({ state, home }) => {
    const path = join(home, "settings.json");
    writeFile(path, OPERATOR_TEXT);
    const first = await merge(state, path, "aaaaaaaaaaaa");
    const during = Deno.readFileSync(path);
    await assert.rejects(
      merge(state, path, "bbbbbbbbbbbb"),
      (error) => {
        assert.ok(error instanceof CantCreateError);
        assert.equal(
          error.message,
          `${path} is in use by sherlock session aaaaaaaaaaaa (gemini, pid ${Deno.pid}); wait for it to end`,
        );
        return true;
      },
    );
    assert.deepEqual(Deno.readFileSync(path), during);
    assert.deepEqual(records(state), ["aaaaaaaaaaaa.json"]);
    endSession(state, first);
    assert.equal(Deno.readTextFileSync(path), OPERATOR_TEXT);
  });
});

Deno.test("writeMergedConfig: a symlinked file stays a symlink; its target is merged and restored", async () => {
  await withFolder(async ({ state, home }) => {
    const dotfiles = join(home, "dotfiles");
    Deno.mkdirSync(dotfiles);
    const target = join(dotfiles, "settings.json");
    const bytes = writeFile(target, OPERATOR_TEXT, 0o600);
    const link = join(home, "settings.json");
    Deno.symlinkSync("dotfiles/settings.json", link);
    const record = await merge(state, link);
    assert.ok(Deno.lstatSync(link).isSymlink);
    assert.equal(Deno.readLinkSync(link), "dotfiles/settings.json");
    assert.ok(JSON.parse(Deno.readTextFileSync(target)).mcpServers.github);
    assert.deepEqual(endSession(state, record), []);
    assert.ok(Deno.lstatSync(link).isSymlink);
    assert.equal(Deno.readLinkSync(link), "dotfiles/settings.json");
    assert.deepEqual(Deno.readFileSync(target), bytes);
    assert.deepEqual(listNames(dotfiles), ["settings.json"]);
  });
});

Deno.test("writeMergedConfig: a dangling symlink stays a symlink; the file it names comes and goes", async () => {
  await withFolder(async ({ state, home }) => {
    const link = join(home, "settings.json");
    const target = join(home, "dotfiles", "settings.json");
    Deno.symlinkSync(target, link);
    const record = await merge(state, link);
    assert.ok(Deno.lstatSync(link).isSymlink);
    assert.deepEqual(JSON.parse(Deno.readTextFileSync(target)), OURS);
    assert.deepEqual(endSession(state, record), []);
    assert.ok(Deno.lstatSync(link).isSymlink);
    assert.equal(Deno.readLinkSync(link), target);
    assert.equal(exists(target), false);
  });
});

Deno.test("endSession: a file the operator changed keeps the change and loses only sherlock's servers", async () => {
  await withFolder(async ({ state, home }) => {
    const path = join(home, "settings.json");
    writeFile(
      path,
      '{"theme": "dark", "mcpServers": {"github": {"command": "mine"}}}',
      0o640,
    );
    const record = await merge(state, path);
    const during = JSON.parse(Deno.readTextFileSync(path));
    during.theme = "light";
    during.mcpServers.theirs = { command: "t" };
    Deno.writeTextFileSync(path, JSON.stringify(during));
    const warnings = endSession(state, record);
    assert.deepEqual(warnings, [
      `${path} changed during the session; sherlock removed its servers and kept the other changes`,
    ]);
    assert.deepEqual(JSON.parse(Deno.readTextFileSync(path)), {
      theme: "light",
      mcpServers: { github: { command: "mine" }, theirs: { command: "t" } },
    });
    assert.equal(modeOf(path), 0o640);
  });
});

Deno.test("endSession: a file the operator rewrote without sherlock's servers is left exactly as it is", async () => {
  await withFolder(async ({ state, home }) => {
    const path = join(home, "settings.json");
    writeFile(path, OPERATOR_TEXT);
    const record = await merge(state, path);
    const theirs =
      '{"theme":"light",  "mcpServers": {"mine": {"command": "m"}}}';
    Deno.writeTextFileSync(path, theirs);
    assert.deepEqual(endSession(state, record), []);
    assert.equal(Deno.readTextFileSync(path), theirs);
  });
});

Deno.test("endSession: a file that is no longer JSON, or was removed, is left as it is with a warning", async () => {
  await withFolder(async ({ state, home }) => {
    const path = join(home, "settings.json");
    writeFile(path, OPERATOR_TEXT);
    const record = await merge(state, path);
    Deno.writeTextFileSync(path, "{ // now with a comment\n}");
    assert.deepEqual(endSession(state, record), [
      `${path} changed during the session and is no longer JSON; sherlock left it as it is (its servers may still be in it)`,
    ]);
    assert.equal(
      Deno.readTextFileSync(path),
      "{ // now with a comment\n}",
    );

    const again = await merge(state, join(home, "other.json"));
    Deno.removeSync(join(home, "other.json"));
    assert.deepEqual(endSession(state, again), []);
    assert.equal(exists(join(home, "other.json")), false);

    writeFile(path, OPERATOR_TEXT);
    const third = await merge(state, path);
    Deno.removeSync(path);
    assert.deepEqual(endSession(state, third), [
      `${path} was removed during the session; sherlock did not recreate it`,
    ]);
    assert.equal(exists(path), false);
  });
});

Deno.test("restoreMergedConfig: a file that already holds the original is left alone, without a warning", async () => {
  await withFolder(async ({ state, home }) => {
    const path = join(home, "settings.json");
    const bytes = writeFile(path, OPERATOR_TEXT, 0o644);
    const record = await merge(state, path);
    const [restore] = record.restores!;
    // Restored once (say, by another sherlock sweeping the same record).
    assert.equal(restoreMergedConfig(restore), undefined);
    const inode = Deno.statSync(path).ino;
    assert.equal(restoreMergedConfig(restore), undefined);
    assert.deepEqual(Deno.readFileSync(path), bytes);
    assert.equal(Deno.statSync(path).ino, inode, "not rewritten");
    endSession(state, record);
  });
});

/** The pid of a process that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = new Deno.Command("/bin/true").spawn();
  await child.status;
  return child.pid;
}

/** Makes a session's record look like its sherlock died. */
async function kill(state: string, record: SessionRecord): Promise<void> {
  record.pid = await deadPid();
  record.processStart = null;
  saveSessionRecord(state, record);
}

Deno.test("sweepStaleSessions: a dead session's merge is put back, silently", async () => {
  await withFolder(async ({ state, home }) => {
    const path = join(home, "settings.json");
    const bytes = writeFile(path, OPERATOR_TEXT, 0o604);
    const record = await merge(state, path);
    await kill(state, record);
    const warnings: string[] = [];
    const swept = sweepStaleSessions(state, (line) => warnings.push(line));
    assert.deepEqual(swept.map((entry) => entry.session), ["aaaaaaaaaaaa"]);
    assert.deepEqual(warnings, []);
    assert.deepEqual(Deno.readFileSync(path), bytes);
    assert.equal(modeOf(path), 0o604);
    assert.deepEqual(records(state), []);
    // A second sweep finds nothing to do.
    assert.deepEqual(sweepStaleSessions(state), []);
    assert.deepEqual(Deno.readFileSync(path), bytes);
  });
});

Deno.test("writeMergedConfig: a dead session's merge into the same file is put back first", async () => {
  await withFolder(async ({ state, home }) => {
    const path = join(home, "settings.json");
    const bytes = writeFile(path, OPERATOR_TEXT);
    const dead = await merge(state, path, "aaaaaaaaaaaa");
    await kill(state, dead);
    // Not swept before: the next session's merge must not take the dead
    // session's servers for the operator's.
    const next = await merge(state, path, "bbbbbbbbbbbb");
    assert.deepEqual(records(state), ["bbbbbbbbbbbb.json"]);
    assert.deepEqual(endSession(state, next), []);
    assert.deepEqual(Deno.readFileSync(path), bytes);
  });
});
