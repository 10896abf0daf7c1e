/**
 * `deno task bundle`'s rewrite of the bundle: every top-level function
 * becomes an eager (parenthesized) function expression at the top, and the
 * module still behaves as before, hoisting included. And the staleness
 * check that `./scripts/test.sh` and `deno task build` run, on a copy of
 * the sources.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  BUNDLE_PATH,
  eagerFunctions,
  packagePathsFromRoot,
  staleBundleProblem,
} from "../../scripts/bundle_launch.ts";
import { REPO_ROOT } from "../helpers/sherlock.ts";

const MODULE = `// a header
var table = build();
async function later(x) {
  return await Promise.resolve(x + 1);
}
function build() {
  return { twice: twice(2) };
}
function* numbers() {
  yield 1;
}
function twice(n) {
  return n * 2;
}
export { later, numbers, table };
`;

Deno.test("top-level functions become parenthesized expressions before any statement", () => {
  const eager = eagerFunctions(MODULE);
  const lines = eager.split("\n");
  assert.equal(lines[0], "// a header");
  assert.equal(lines[1], "var later = (async function later(x) {");
  assert.ok(eager.includes("var build = (function build() {"));
  assert.ok(eager.includes("var numbers = (function* numbers() {"));
  assert.ok(
    eager.indexOf("var twice = (") < eager.indexOf("var table = build();"),
  );
  assert.doesNotMatch(eager, /^(async )?function/m);
});

Deno.test("the rewritten module behaves as the original, calls before the declaration included", async () => {
  const url = (code: string) => `data:text/javascript;base64,${btoa(code)}`;
  const before = await import(url(MODULE));
  const after = await import(url(eagerFunctions(MODULE)));
  assert.deepEqual(after.table, before.table);
  assert.equal(await after.later(1), 2);
  assert.deepEqual([...after.numbers()], [1]);
});

Deno.test("a function whose end is not a lone } at column 0 fails the rewrite, naming it", () => {
  const broken =
    "function odd() {\n  const text = `\n}\n`;\n  return text;\n}\n";
  assert.throws(
    () => eagerFunctions(broken),
    /function odd is not one whole function/,
  );
});

Deno.test("packagePathsFromRoot: an npm module's path comment is the same wherever node_modules really is", () => {
  const linked =
    "var a = 1;\n// ../../work/main/node_modules/.deno/x@1/node_modules/x/dist/a.js\nvar b = 2;\n";
  assert.equal(
    packagePathsFromRoot(linked),
    "var a = 1;\n// node_modules/.deno/x@1/node_modules/x/dist/a.js\nvar b = 2;\n",
  );
  const local =
    "// node_modules/.deno/x@1/node_modules/x/dist/a.js\n// lib/cli/run.ts\n";
  assert.equal(packagePathsFromRoot(local), local);
});

Deno.test("staleBundleProblem: fresh as committed; edited, or missing, it names the file and what to run", async () => {
  // A copy of what `deno bundle` reads: the sources, the profiles, the
  // config and lock, and (linked) the npm packages.
  const root = await Deno.makeTempDir({ prefix: "sherlock-bundle-test-" });
  try {
    for (const folder of ["lib", "profiles"]) {
      await new Deno.Command("cp", {
        args: ["-R", join(REPO_ROOT, folder), join(root, folder)],
      }).output();
    }
    for (const file of ["deno.json", "deno.lock"]) {
      Deno.copyFileSync(join(REPO_ROOT, file), join(root, file));
    }
    Deno.symlinkSync(
      join(REPO_ROOT, "node_modules"),
      join(root, "node_modules"),
    );
    assert.equal(await staleBundleProblem(root), undefined);

    const bundle = join(root, BUNDLE_PATH);
    Deno.writeTextFileSync(bundle, "// edited by hand\n", { append: true });
    assert.equal(
      await staleBundleProblem(root),
      "lib/cli/launch_bundle.js is stale: run `deno task bundle` and commit it",
    );
    Deno.removeSync(bundle);
    assert.equal(
      await staleBundleProblem(root),
      "lib/cli/launch_bundle.js is missing: run `deno task bundle` and commit it",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
