/**
 * Reading operator TOML files (lib/config/toml_files.ts): the one-line problem
 * format, syntax errors with line and column, the validation cache.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  formatProblem,
  InvalidFileError,
  listTomlFiles,
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
