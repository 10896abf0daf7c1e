/**
 * README.md is the front door: under 15 KB, the manual beside it
 * (docs/manual/, whose README.md is the table of contents and links every
 * topic). Every link in README.md, docs/*.md and docs/manual/*.md resolves
 * inside a clone: a relative
 * target is a file or folder of the repository, an `#anchor` is a heading of
 * the target (GitHub's slugs), and a file the prose names in backticks
 * (`docs/x.md`) exists too. Links to the web are not followed (no network).
 */

import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { REPO_ROOT } from "../helpers/sherlock.ts";

/** The Markdown files of a folder, from the repository's root. */
function markdownIn(folder: string): string[] {
  return [...Deno.readDirSync(join(REPO_ROOT, folder))]
    .filter((entry) => entry.isFile && entry.name.endsWith(".md"))
    .map((entry) => `${folder}/${entry.name}`)
    .sort();
}

/** The documents checked, from the repository's root. */
function documents(): string[] {
  return ["README.md", ...markdownIn("docs"), ...markdownIn("docs/manual")];
}

/** The text outside fenced code blocks (whose brackets are not links). */
function prose(text: string): string[] {
  let fenced = false;
  return text.split("\n").map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return "";
    }
    return fenced ? "" : line;
  });
}

/**
 * GitHub's anchor for a heading: its text (inline code and link targets
 * reduced to their text), lowercase, every character but letters, digits,
 * spaces, `-` and `_` dropped, each space a `-`; a repeated anchor gets
 * `-1`, `-2`, … in order (see anchors()).
 */
function slug(heading: string): string {
  return heading.trim()
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "")
    .replaceAll(" ", "-");
}

function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const line of prose(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

interface Link {
  document: string;
  line: number;
  target: string;
}

function linksOf(document: string, text: string): Link[] {
  const links: Link[] = [];
  prose(text).forEach((line, index) => {
    // Inline code is not a link: `[x](y)` in backticks stays text.
    const withoutCode = line.replace(/`[^`]*`/g, "");
    for (
      const match of withoutCode.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)
    ) {
      links.push({ document, line: index + 1, target: match[1] });
    }
    for (const match of withoutCode.matchAll(/^\s*\[[^\]]+\]:\s+(\S+)/g)) {
      links.push({ document, line: index + 1, target: match[1] });
    }
  });
  return links;
}

function problemOf(link: Link): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link.target)) return undefined; // https:, mailto:
  const [path, anchor] = link.target.split("#", 2);
  const from = join(REPO_ROOT, dirname(link.document));
  const file = path === ""
    ? join(REPO_ROOT, link.document)
    : resolve(from, path);
  if (relative(REPO_ROOT, file).startsWith("..")) {
    return "leaves the repository";
  }
  let isFile: boolean;
  try {
    isFile = Deno.statSync(file).isFile;
  } catch {
    return "no such file in the repository";
  }
  if (anchor === undefined || !isFile || !file.endsWith(".md")) {
    return undefined;
  }
  return anchors(Deno.readTextFileSync(file)).has(anchor)
    ? undefined
    : `no heading #${anchor} in ${relative(REPO_ROOT, file)}`;
}

Deno.test("every link in README.md, docs/*.md and docs/manual/*.md resolves inside the repository", () => {
  const problems: string[] = [];
  let checked = 0;
  for (const document of documents()) {
    const text = Deno.readTextFileSync(join(REPO_ROOT, document));
    for (const link of linksOf(document, text)) {
      checked++;
      const problem = problemOf(link);
      if (problem) {
        problems.push(
          `${link.document}:${link.line}: ${link.target}: ${problem}`,
        );
      }
    }
  }
  assert.deepEqual(problems, []);
  assert.ok(
    checked >= 10,
    `only ${checked} links found: is the parser broken?`,
  );
});

Deno.test("every Markdown file the docs name in backticks is in the repository", () => {
  const problems: string[] = [];
  for (const document of documents()) {
    const text = Deno.readTextFileSync(join(REPO_ROOT, document));
    prose(text).forEach((line, index) => {
      for (const match of line.matchAll(/`([^`\s]+\.md)`/g)) {
        const named = match[1];
        const candidates = [
          resolve(REPO_ROOT, named.replace(/^\//, "")),
          resolve(join(REPO_ROOT, dirname(document)), named),
        ];
        const inRepo = !named.startsWith("/") &&
          candidates.some((path) => {
            try {
              return Deno.statSync(path).isFile;
            } catch {
              return false;
            }
          });
        if (!inRepo) problems.push(`${document}:${index + 1}: ${named}`);
      }
    });
  }
  assert.deepEqual(problems, []);
});

Deno.test("the anchor and link checks catch a broken link", () => {
  assert.equal(slug("`sherlock` on your `PATH`"), "sherlock-on-your-path");
  assert.equal(
    slug("Through sherlock: the e2e tests"),
    "through-sherlock-the-e2e-tests",
  );
  const broken = linksOf(
    "README.md",
    "see [x](docs/nowhere.md) and [y](#nowhere)\n```\n[z](no.md)\n```\n",
  );
  assert.deepEqual(broken.map((link) => problemOf(link)), [
    "no such file in the repository",
    "no heading #nowhere in README.md",
  ]);
});

/** README.md's bound: a front door, not the manual. */
const README_MAX_BYTES = 15 * 1024;

Deno.test("README.md is the front door: under 15 KB, the demo and the tests its two commands, the manual one link away", () => {
  const readme = Deno.readTextFileSync(join(REPO_ROOT, "README.md"));
  const size = new TextEncoder().encode(readme).length;
  assert.ok(
    size < README_MAX_BYTES,
    `README.md is ${size} bytes; move reference text into docs/manual/`,
  );
  assert.match(readme, /`\.\/scripts\/sherlock\.sh demo`/);
  assert.match(readme, /`\.\/scripts\/test\.sh`/);
  assert.ok(
    linksOf("README.md", readme).some((link) =>
      link.target === "docs/manual/README.md"
    ),
    "README.md links the manual's table of contents",
  );
});

Deno.test("the manual's table of contents links every topic of docs/manual/ and the other docs", () => {
  const toc = "docs/manual/README.md";
  const text = Deno.readTextFileSync(join(REPO_ROOT, toc));
  const targets = new Set(
    linksOf(toc, text).map((link) => link.target.split("#")[0]),
  );
  const wanted = [
    ...markdownIn("docs/manual").filter((path) => path !== toc)
      .map((path) => path.slice("docs/manual/".length)),
    ...markdownIn("docs").map((path) => `../${path.slice("docs/".length)}`),
  ];
  assert.deepEqual(wanted.filter((path) => !targets.has(path)), []);
});
