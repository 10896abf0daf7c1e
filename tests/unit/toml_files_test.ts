/**
 * Reading operator TOML files (lib/config/toml_files.ts): the one-line problem
 * format, syntax errors with line and column, the validation cache.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  formatProblem,
  InvalidFileError,
  keyHoldingNul,
  keyNestedTooDeep,
  listTomlFiles,
  MAX_NESTING_DEPTH,
  MAX_OPERATOR_FILE_BYTES,
  parseTomlText,
  readNamedTomlFile,
  readOperatorFile,
  readTomlFile,
  type Validator,
} from "../../lib/config/toml_files.ts";
import { ValidationCache } from "../../lib/config/validation_cache.ts";

Deno.test("formatProblem: path:line:column: key: reason", () => {
  assert.equal(
    formatProblem({
      path: "/c/agents.d/a.toml",
      line: 3,
      column: 14,
      reason: "TOML syntax error: invalid value",
    }),
    "/c/agents.d/a.toml:3:14: TOML syntax error: invalid value",
  );
  assert.equal(
    formatProblem({
      path: "/c/a.toml",
      line: 4,
      key: "agent.colour",
      reason: "unknown key",
    }),
    "/c/a.toml:4: agent.colour: unknown key",
  );
});

Deno.test("formatProblem: without a line or key", () => {
  assert.equal(
    formatProblem({ path: "/c/a.toml", key: "mcp", reason: "missing" }),
    "/c/a.toml: mcp: missing",
  );
  assert.equal(
    formatProblem({ path: "/c/a.toml", reason: "r" }),
    "/c/a.toml: r",
  );
});

Deno.test("formatProblem: every further problem on a line of its own, with the path", () => {
  const base = { path: "/a.toml", line: 1, key: "k", reason: "r" };
  assert.equal(formatProblem(base), "/a.toml:1: k: r");
  assert.equal(
    formatProblem({
      ...base,
      further: [{ line: 4, key: "x.y", reason: "s" }, { reason: "t" }],
    }),
    "/a.toml:1: k: r\n/a.toml:4: x.y: s\n/a.toml: t",
  );
});

Deno.test("parseTomlText: a syntax error names the line and the column", async () => {
  await assert.rejects(
    () => parseTomlText("/p.toml", `[agent]\nname = "x"\nexecutable = \n`),
    (error: unknown) => {
      assert.ok(error instanceof InvalidFileError);
      assert.equal(error.exitCode, 78);
      assert.equal(error.problem.line, 3);
      assert.equal(error.problem.column, 14);
      assert.equal(
        error.message,
        "/p.toml:3:14: TOML syntax error: invalid value",
      );
      return true;
    },
  );
});

Deno.test("parseTomlText: syntax errors are one line each", async () => {
  for (
    const text of [
      `[agent\nname = "x"\n`,
      `name = "unterminated\n`,
      `a = 1\na = 2\n`,
      `[a]\n[a]\n`,
      `= 1\n`,
      `a = [1,\n`,
    ]
  ) {
    await assert.rejects(
      () => parseTomlText("/p.toml", text),
      (error: unknown) =>
        error instanceof InvalidFileError &&
        /^\/p\.toml:\d+:\d+: TOML syntax error: \S/.test(error.message) &&
        !error.message.includes("\n"),
      text,
    );
  }
});

const accept: Validator<{ n: number }> = (raw) => ({
  ok: true,
  value: { n: Object.keys(raw as object).length },
});

Deno.test("readTomlFile: validates once per bytes, and reports failures every time", async () => {
  const cache = new ValidationCache();
  let loads = 0;
  const options = {
    kind: "profile",
    path: "/a.toml",
    text: "a = 1\n",
    loadValidator: () => {
      loads++;
      return Promise.resolve(accept);
    },
    cache,
  };
  assert.deepEqual(await readTomlFile(options), { n: 1 });
  assert.deepEqual(await readTomlFile(options), { n: 1 });
  assert.equal(loads, 1);
  assert.deepEqual(await readTomlFile({ ...options, text: "a = 1\nb = 2\n" }), {
    n: 2,
  });
  assert.equal(loads, 2);

  const reject: Validator<unknown> = () => ({
    ok: false,
    problem: { line: 1, key: "a", reason: "no" },
  });
  for (let i = 0; i < 2; i++) {
    await assert.rejects(
      readTomlFile({
        ...options,
        text: "a = 3\n",
        loadValidator: () => Promise.resolve(reject),
      }),
      (error: unknown) =>
        error instanceof InvalidFileError &&
        error.message === "/a.toml:1: a: no",
    );
  }
});

Deno.test("readNamedTomlFile: the declared name must equal the basename, checked only when the bytes changed", async () => {
  const cache = new ValidationCache();
  let loads = 0;
  const kind = {
    kind: "service",
    nameKey: ["service", "name"] as const,
    nameOf: (value: { service: { name: string } }) => value.service.name,
    loadValidator: () => {
      loads++;
      const validate: Validator<{ service: { name: string } }> = (raw) => ({
        ok: true,
        value: raw as { service: { name: string } },
      });
      return Promise.resolve(validate);
    },
  };
  const file = {
    path: "/services.d/a.toml",
    basename: "a",
    text: '[service]\nname = "a"\n',
    cache,
  };
  assert.equal((await readNamedTomlFile(kind, file)).service.name, "a");
  assert.equal((await readNamedTomlFile(kind, file)).service.name, "a");
  assert.equal(loads, 1);
  await assert.rejects(
    readNamedTomlFile(kind, {
      ...file,
      path: "/services.d/b.toml",
      basename: "b",
    }),
    (error: unknown) =>
      error instanceof InvalidFileError &&
      error.message ===
        '/services.d/b.toml:2: service.name: is "a" but the file is b.toml; ' +
          "the name must equal the file's basename",
  );
});

Deno.test("ValidationCache: survives a process through its file, private", async () => {
  const folder = await Deno.makeTempDir();
  try {
    const cacheDir = join(folder, "cache", "sherlock");
    const first = new ValidationCache(cacheDir);
    const key = ValidationCache.key("profile", "/a.toml");
    first.set(key, "x", { ok: 1 });
    first.save();
    assert.equal(
      (Deno.statSync(join(cacheDir, "validated.json")).mode ?? 0) & 0o777,
      0o600,
    );
    assert.equal((Deno.statSync(cacheDir).mode ?? 0) & 0o777, 0o700);
    assert.deepEqual(new ValidationCache(cacheDir).get(key, "x"), { ok: 1 });
    // Other text is a miss; a different kind or path is a different key.
    assert.equal(new ValidationCache(cacheDir).get(key, "x "), undefined);
    assert.notEqual(ValidationCache.key("service", "/a.toml"), key);
    assert.notEqual(ValidationCache.key("profile", "/b.toml"), key);
    // A cache written by another version is dropped.
    const written = JSON.parse(
      Deno.readTextFileSync(join(cacheDir, "validated.json")),
    );
    Deno.writeTextFileSync(
      join(cacheDir, "validated.json"),
      JSON.stringify({ ...written, version: "0.0.0-other" }),
    );
    assert.equal(new ValidationCache(cacheDir).get(key, "x"), undefined);
    // A corrupt cache is an empty cache.
    Deno.writeTextFileSync(join(cacheDir, "validated.json"), "{not json");
    assert.equal(new ValidationCache(cacheDir).get(key, "x"), undefined);
  } finally {
    await Deno.remove(folder, { recursive: true });
  }
});

Deno.test("listTomlFiles: *.toml files only, sorted, none for a missing folder", async () => {
  const folder = await Deno.makeTempDir();
  try {
    for (
      const name of [
        "b.toml",
        "a.toml",
        ".hidden.toml",
        "notes.txt",
        "c.toml.bak",
      ]
    ) {
      Deno.writeTextFileSync(join(folder, name), "");
    }
    Deno.mkdirSync(join(folder, "dir.toml"));
    assert.deepEqual(listTomlFiles(folder), [
      { name: "a", path: join(folder, "a.toml") },
      { name: "b", path: join(folder, "b.toml") },
    ]);
    assert.deepEqual(listTomlFiles(join(folder, "missing")), []);
  } finally {
    await Deno.remove(folder, { recursive: true });
  }
});

Deno.test("readOperatorFile: up to 1 MiB is read, one byte more is refused without reading", async () => {
  const folder = await Deno.makeTempDir();
  try {
    const path = join(folder, "a.toml");
    Deno.writeTextFileSync(path, "\ufeffa = 1\n\xff");
    assert.equal(
      readOperatorFile(path, "a profile"),
      "\ufeffa = 1\n\xff",
      "decoded as Deno.readTextFileSync does: the BOM is kept",
    );
    Deno.writeFileSync(path, new Uint8Array(MAX_OPERATOR_FILE_BYTES).fill(35));
    assert.equal(
      readOperatorFile(path, "a profile")?.length,
      MAX_OPERATOR_FILE_BYTES,
    );
    Deno.truncateSync(path, MAX_OPERATOR_FILE_BYTES + 1);
    assert.throws(
      () => readOperatorFile(path, "a service"),
      (error: unknown) =>
        error instanceof InvalidFileError &&
        error.message === `${path}: larger than 1 MiB; a service is a few KiB`,
    );
    assert.equal(readOperatorFile(join(folder, "none.toml"), "x"), undefined);
  } finally {
    await Deno.remove(folder, { recursive: true });
  }
});

Deno.test("readOperatorFile: a file whose size says 0 (procfs) is read to its end", () => {
  // The size is only a hint: the bounded loop reads until the end.
  const text = readOperatorFile("/proc/self/status", "a profile");
  assert.match(text ?? "", /^Name:/);
  assert.match(text ?? "", /\nPid:\s+\d+\n/);
});

/** `[a.a.a…]`: a table header `levels` tables deep (2 bytes a level). */
function nestedHeader(levels: number): string {
  return `[${Array(levels).fill("a").join(".")}]\n`;
}

Deno.test("readTomlFile: a header nested 20 000 levels deep (40 KB) is refused with its line, not a stack overflow (issue 17, item 12)", async () => {
  const text = `# a service\n[service]\nname = "deep"\n\n${
    nestedHeader(20_000)
  }`;
  assert.ok(text.length > 40_000);
  await assert.rejects(
    readTomlFile({
      kind: "service",
      path: "/s/deep.toml",
      text,
      loadValidator: () => Promise.resolve(accept),
      cache: new ValidationCache(),
    }),
    (error: unknown) => {
      assert.ok(error instanceof InvalidFileError, String(error));
      assert.equal(error.exitCode, 78);
      assert.equal(error.problem.line, 5);
      assert.equal(error.message.split("\n").length, 1);
      assert.match(
        error.message,
        /^\/s\/deep\.toml:5: a\.a\.a[a.]*…?: tables or arrays nested more than 32 levels deep; sherlock's files nest a few at most: remove the nesting$/,
      );
      assert.ok(error.message.length < 300, error.message);
      return true;
    },
  );
});

Deno.test("readTomlFile: nesting up to the bound is read; one level more is refused, arrays count too", async () => {
  const read = (text: string) =>
    readTomlFile({
      kind: "config",
      path: "/c.toml",
      text,
      loadValidator: () => Promise.resolve(accept),
      cache: new ValidationCache(),
    });
  assert.deepEqual(await read(nestedHeader(MAX_NESTING_DEPTH)), { n: 1 });
  await assert.rejects(read(nestedHeader(MAX_NESTING_DEPTH + 1)), /:1: a\.a/);
  const arrays = `x = ${"[".repeat(40)}${"]".repeat(40)}\n`;
  await assert.rejects(
    read(`y = 1\n${arrays}`),
    /\/c\.toml:2: x: tables or arrays nested/,
  );
});

Deno.test("keyHoldingNul and keyNestedTooDeep walk any depth without recursion", () => {
  // Built by hand: deeper than any stack a recursive walk would have.
  const deep: Record<string, unknown> = {};
  let table = deep;
  for (let level = 0; level < 200_000; level++) {
    const inner: Record<string, unknown> = {};
    table.a = inner;
    table = inner;
  }
  table.b = "x\0y";
  const nul = keyHoldingNul(deep);
  assert.equal(nul?.length, 200_001);
  assert.equal(nul?.at(-1), "b");
  assert.deepEqual(
    keyNestedTooDeep(deep),
    Array(MAX_NESTING_DEPTH + 1).fill("a"),
  );
  assert.equal(keyNestedTooDeep({ a: { b: [{ c: "d" }] } }), undefined);
  assert.deepEqual(keyHoldingNul({ a: "ok", "b\0": 1 }), ["b\\0"]);
  assert.deepEqual(keyHoldingNul({ a: ["ok", { c: "\0" }] }), ["a", "c"]);
  assert.deepEqual(
    keyHoldingNul({ a: { x: "\0" }, b: "\0" }),
    ["a", "x"],
    "document order",
  );
});

Deno.test("formatProblem: a 900 K-character key is quoted by a short start and an ellipsis (issue 17, item 13)", () => {
  const line = formatProblem({
    path: "/s/long.toml",
    line: 5,
    key: `server.${"k".repeat(900_000)}`,
    reason: "unknown key",
  });
  assert.equal(
    line,
    `/s/long.toml:5: server.${"k".repeat(57)}…: unknown key`,
  );
});
