/**
 * The import rules of docs/architecture.md ("Import rules"), checked on
 * every import of `main.ts` and `lib/`. The rules are the table in that
 * section, read from the page itself, so the page and this test cannot say
 * two things: a part may import its own modules, the shared files, what
 * its row names, and what those may import in turn (the arrows are
 * transitive); a `.ts` name on the right is that file only; `(lazily)` is
 * an arrow only `importLazily` or a type may take. The drawing above the
 * table must draw the same arrows, so neither goes stale alone.
 *
 * An import is any static `import`/`export … from`, `import type`, a
 * `typeof import("…")` type and an `importLazily(new URL("…",
 * import.meta.url))` target: a type couples the parts as much as a value,
 * and a lazy import is an import that happens later.
 */

import assert from "node:assert/strict";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT_PATH = fileURLToPath(new URL("../../", import.meta.url));
const ARCHITECTURE = join(ROOT_PATH, "docs/architecture.md");
const TABLE_MARKER = "<!-- import rules: the test reads this table -->";
const SHARED_ROW = "every part above";

/** One arrow of the table: to a part, or to one file of another part. */
interface Arrow {
  /** A part's name, or a file (`services/schema.ts`) under `lib/`. */
  target: string;
  /** Only through `importLazily` or as a type. */
  lazily: boolean;
}

/** The table of docs/architecture.md: each part's arrows, and the shared files. */
interface Rules {
  /** Each part's own row, in the page's order. */
  arrows: Map<string, Arrow[]>;
  /** The names on the "every part above" row. */
  shared: string[];
}

/** Reads the import rules' table from docs/architecture.md. */
function readRules(text = Deno.readTextFileSync(ARCHITECTURE)): Rules {
  const start = text.indexOf(TABLE_MARKER);
  assert.notEqual(start, -1, `docs/architecture.md has no "${TABLE_MARKER}"`);
  const rows = text.slice(start + TABLE_MARKER.length).trimStart()
    .split("\n");
  const arrows = new Map<string, Arrow[]>();
  let shared: string[] | undefined;
  for (const row of rows.slice(2)) {
    if (!row.startsWith("|")) break;
    const [left, right] = row.split("|").slice(1, 3).map((cell) => cell.trim());
    const targets = [...right.matchAll(/`([^`]+)`( \(lazily\))?/g)].map((
      match,
    ) => ({ target: match[1], lazily: match[2] !== undefined }));
    if (left === SHARED_ROW) {
      shared = targets.map((arrow) => arrow.target);
      continue;
    }
    const part = /^`([^`]+)`$/.exec(left)?.[1];
    assert.ok(
      part,
      `docs/architecture.md, import rules: a row names no part: ${row}`,
    );
    assert.ok(!arrows.has(part), `docs/architecture.md: two rows for ${part}`);
    arrows.set(part, targets);
  }
  assert.ok(
    shared,
    `docs/architecture.md: the table has no "${SHARED_ROW}" row`,
  );
  return { arrows, shared };
}

/**
 * The part a file (relative to the repository) belongs to: the longest of
 * the table's names that is the file, or its folder under `lib/`.
 */
function partOf(file: string, parts: Iterable<string>): string | undefined {
  let found: string | undefined;
  for (const part of parts) {
    const path = part === "main.ts" ? "main.ts" : `lib/${part}`;
    const matches = file === path || file === `${path}.ts` ||
      file.startsWith(`${path}/`);
    if (matches && (found === undefined || part.length > found.length)) {
      found = part;
    }
  }
  return found;
}

/** What `part` may import, through the arrows: parts and single files. */
function allowedTargets(rules: Rules, part: string): Map<string, boolean> {
  // target → true when only lazily
  const allowed = new Map<string, boolean>();
  if (!rules.shared.includes(part)) {
    for (const name of rules.shared) allowed.set(name, false);
  }
  const pending = [...rules.arrows.get(part) ?? []];
  while (pending.length > 0) {
    const arrow = pending.pop()!;
    const known = allowed.get(arrow.target);
    if (known === false || (known === true && arrow.lazily)) continue;
    allowed.set(arrow.target, arrow.lazily);
    // A lazy arrow is one import, not a way on to what its target imports.
    if (!arrow.lazily) pending.push(...rules.arrows.get(arrow.target) ?? []);
  }
  return allowed;
}

/** One import in the source, and how it is taken. */
interface Import {
  /** As written. */
  specifier: string;
  /** The file it names, relative to the repository. */
  file: string;
  /** "static" loads the module; "lazy" and "type" do not at start-up. */
  kind: "static" | "lazy" | "type";
}

/** The code of a file without its comment lines. */
function codeOf(text: string): string {
  return text.split("\n").filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line))
    .join("\n");
}

/** Every import of `file` (relative to the repository) of a module. */
function importsOf(file: string, text: string): Import[] {
  const code = codeOf(text);
  const found: { specifier: string; kind: Import["kind"] }[] = [];
  const statement =
    /(?:^|[;\n])\s*(import|export)\s+(type\s+)?(?:[\w$]+\s*,?\s*)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?)?\s*(?:from\s*)?["']([^"']+)["']/g;
  for (const match of code.matchAll(statement)) {
    found.push({ specifier: match[3], kind: match[2] ? "type" : "static" });
  }
  for (const match of code.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)) {
    // Literal dynamic imports are refused by launch_imports_test.ts; what
    // is left are `typeof import("…")` types.
    found.push({ specifier: match[1], kind: "type" });
  }
  for (
    const match of code.matchAll(
      /\bnew URL\(\s*["']([^"']+\.ts)["']\s*,\s*import\.meta\.url\s*\)/g,
    )
  ) {
    found.push({ specifier: match[1], kind: "lazy" });
  }
  return found.filter(({ specifier }) => specifier.startsWith("."))
    .map(({ specifier, kind }) => ({
      specifier,
      kind,
      file: relative(ROOT_PATH, join(ROOT_PATH, dirname(file), specifier)),
    }));
}

/** `main.ts` and the modules of `lib/`, relative to the repository. */
function sourceFiles(folder = join(ROOT_PATH, "lib")): string[] {
  const files: string[] = folder.endsWith("lib") ? ["main.ts"] : [];
  for (const entry of Deno.readDirSync(folder)) {
    const path = join(folder, entry.name);
    if (entry.isDirectory) files.push(...sourceFiles(path));
    else if (entry.name.endsWith(".ts")) files.push(relative(ROOT_PATH, path));
  }
  return files.sort();
}

/**
 * The imports of `sources` (file → text) that break `rules`, one line
 * each: the file, the import, and the rule it breaks.
 */
function violations(rules: Rules, sources: Map<string, string>): string[] {
  const parts = [...rules.arrows.keys()];
  const order = (name: string) =>
    parts.includes(name) ? parts.indexOf(name) : parts.length;
  const problems: string[] = [];
  for (const [file, text] of sources) {
    const from = partOf(file, parts);
    if (from === undefined) {
      problems.push(
        `${file} is in no part: add its folder to the table in docs/architecture.md, "Import rules"`,
      );
      continue;
    }
    const allowed = allowedTargets(rules, from);
    for (const imported of importsOf(file, text)) {
      if (!imported.file.startsWith("lib/")) continue;
      const to = partOf(imported.file, parts);
      if (to === from) continue;
      const lazily = allowed.get(imported.file.replace(/^lib\//, "")) ??
        (to === undefined ? undefined : allowed.get(to));
      if (lazily === false || (lazily === true && imported.kind !== "static")) {
        continue;
      }
      // In the table's order, so that the line reads like the page.
      const isShared = rules.shared.includes(from);
      const may = [...allowed.keys()]
        .filter((name) => isShared || !rules.shared.includes(name))
        .sort((a, b) => order(a) - order(b));
      const rule = isShared
        ? (may.length === 0 ? "nothing" : may.join(", "))
        : `${
          may.length === 0 ? "only" : `${may.join(", ")} and`
        } the shared files`;
      problems.push(
        `${file} imports "${imported.specifier}" (${imported.file}): ${from} may not import ${
          to ?? imported.file
        }${
          lazily ? " except lazily (importLazily or a type)" : ""
        } (docs/architecture.md, "Import rules": ${from} may import ${rule})`,
      );
    }
  }
  return problems;
}

/**
 * The arrows of the drawing in "Import rules" (the code block before the
 * table): each line is a chain `a ──► b, c ──► d` (every name of a link to
 * every name of the next); a line that starts with `├` or `└` branches
 * from the name drawn above that column; a `(…)` at a line's end is a
 * comment. "every part" is the shared files' row.
 */
function drawnArrows(text = Deno.readTextFileSync(ARCHITECTURE)): Set<string> {
  const section = text.slice(text.indexOf("## Import rules"));
  const block = /```\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, "docs/architecture.md, Import rules: no drawing");
  const drawn: { line: number; start: number; end: number; name: string }[] =
    [];
  const arrows = new Set<string>();
  block.trimEnd().split("\n").forEach((text, line) => {
    const code = text.replace(/\s+\([^)]*\)\s*$/, "");
    const branch = /^\s*[│ ]*([├└])/.exec(code);
    let previous: string[] = [];
    if (branch) {
      const column = branch[0].length - 1;
      const above = drawn.filter((name) =>
        name.start <= column && column < name.end
      ).at(-1);
      assert.ok(above, `the drawing's line ${line + 1} branches from nothing`);
      previous = [above.name];
    }
    const pattern = /(──►|┄┄►)|([\w./]+(?: part)?)/g;
    let lazily = false;
    let link: string[] = [];
    const close = () => {
      if (link.length === 0) return;
      for (const from of previous) {
        for (const to of link) {
          arrows.add(`${from} -> ${to}${lazily ? " (lazily)" : ""}`);
        }
      }
      previous = link;
      link = [];
    };
    for (const match of code.slice(branch?.[0].length ?? 0).matchAll(pattern)) {
      if (match[1]) {
        close();
        lazily = match[1] === "┄┄►";
        continue;
      }
      const start = (branch?.[0].length ?? 0) + match.index!;
      drawn.push({ line, start, end: start + match[2].length, name: match[2] });
      link.push(match[2]);
    }
    close();
  });
  return arrows;
}

/** The table's arrows, written as {@linkcode drawnArrows} writes them. */
function tableArrows(rules: Rules): Set<string> {
  const arrows = new Set<string>();
  for (const [part, targets] of rules.arrows) {
    for (const { target, lazily } of targets) {
      arrows.add(`${part} -> ${target}${lazily ? " (lazily)" : ""}`);
    }
  }
  for (const name of rules.shared) arrows.add(`every part -> ${name}`);
  return arrows;
}

/** The files of the repository's `main.ts` and `lib/`, with their text. */
function repositorySources(): Map<string, string> {
  return new Map(
    sourceFiles().map((file) => [
      file,
      Deno.readTextFileSync(join(ROOT_PATH, file)),
    ]),
  );
}

Deno.test("every import of main.ts and lib/ follows the import rules of docs/architecture.md", () => {
  assert.deepEqual(violations(readRules(), repositorySources()), []);
});

Deno.test("the import rules' table names real parts and files, and has no cycle", () => {
  const rules = readRules();
  const files = sourceFiles();
  const parts = [...rules.arrows.keys()];
  for (const name of [...parts, ...rules.shared]) {
    assert.ok(
      files.some((file) => partOf(file, [name]) === name),
      `docs/architecture.md names part ${name}, which has no module`,
    );
  }
  for (const [part, arrows] of rules.arrows) {
    for (const { target } of arrows) {
      assert.ok(
        rules.arrows.has(target) || files.includes(`lib/${target}`),
        `docs/architecture.md: ${part} may import ${target}, which is neither a part nor a file`,
      );
    }
    assert.ok(
      !allowedTargets(rules, part).has(part),
      `docs/architecture.md: ${part} may import itself through its arrows`,
    );
  }
  for (const name of rules.shared) {
    assert.ok(rules.arrows.has(name), `the shared ${name} needs a row`);
  }
});

Deno.test("the drawing of the import rules and their table say the same, arrow for arrow", () => {
  const drawn = drawnArrows();
  const table = tableArrows(readRules());
  assert.deepEqual(
    {
      "drawn, not in the table": [...drawn].filter((a) => !table.has(a)),
      "in the table, not drawn": [...table].filter((a) => !drawn.has(a)),
    },
    { "drawn, not in the table": [], "in the table, not drawn": [] },
  );
});

Deno.test("the rules refuse a wrong-way import, naming the file, the import and the rule", () => {
  const rules = readRules();
  const problems = violations(
    rules,
    new Map([
      ["lib/launch/x.ts", 'import { shellQuote } from "../cli/output.ts";\n'],
      ["lib/bridge/x.ts", 'import type { A } from "../render/servers.ts";\n'],
      ["lib/errors.ts", 'import type { A } from "./broker/protocol.ts";\n'],
      ["lib/doctor/x.ts", 'export { a } from "../broker/daemon/serve.ts";\n'],
      ["lib/cli/x.ts", 'import { serve } from "../broker/daemon/serve.ts";\n'],
      ["lib/newpart/x.ts", 'import "../errors.ts";\n'],
      ["lib/render/x.ts", 'import { d } from "../os/processes.ts";\n'],
      ["lib/config/x.ts", 'import { e } from "../os/exec.ts";\n'],
    ]),
  );
  assert.equal(problems.length, 8, problems.join("\n"));
  assert.match(
    problems[0],
    /^lib\/launch\/x\.ts imports "\.\.\/cli\/output\.ts" \(lib\/cli\/output\.ts\): launch may not import cli \(docs\/architecture\.md, "Import rules": launch may import session, render, profiles, services, config, broker\/client, broker\/protocol, broker\/socket_path, os and the shared files\)$/,
  );
  assert.match(problems[1], /bridge may not import render/);
  assert.match(
    problems[2],
    /errors\.ts may not import broker\/protocol \(docs\/architecture\.md, "Import rules": errors\.ts may import nothing\)$/,
  );
  assert.match(problems[3], /doctor may not import broker\/daemon/);
  assert.match(
    problems[4],
    /cli may not import broker\/daemon except lazily/,
  );
  assert.match(problems[5], /lib\/newpart\/x\.ts is in no part/);
  // OS code is not shared: only the parts that run processes reach it.
  assert.match(problems[6], /render may not import os/);
  assert.match(problems[7], /config may not import os/);
});

Deno.test("the rules take what they allow: lazily, a type, one file, a part's own modules", () => {
  const rules = readRules();
  const problems = violations(
    rules,
    new Map([
      [
        "lib/cli/x.ts",
        [
          'import type { Serve } from "../broker/daemon/serve.ts";',
          'const m = importLazily<typeof import("../broker/daemon/serve.ts")>(',
          '  new URL("../broker/daemon/serve.ts", import.meta.url),',
          ");",
          'import { render } from "../render/formats.ts";',
        ].join("\n"),
      ],
      ["lib/import/x.ts", 'import { s } from "../services/schema.ts";\n'],
      ["lib/render/x.ts", 'import { f } from "./formats.ts";\n'],
      ["lib/render/y.ts", '// import { s } from "../cli/output.ts";\n'],
    ]),
  );
  assert.deepEqual(problems, []);
  const other = violations(
    rules,
    new Map([[
      "lib/import/x.ts",
      'import { l } from "../services/loader.ts";\n',
    ]]),
  );
  assert.match(other[0] ?? "", /import may not import services/);
});
