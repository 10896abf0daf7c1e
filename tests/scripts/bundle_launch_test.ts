/**
 * `deno task bundle`'s rewrite of the bundle: every top-level function
 * becomes an eager (parenthesized) function expression at the top, and the
 * module still behaves as before, hoisting included.
 */

import assert from "node:assert/strict";
import { eagerFunctions } from "../../scripts/bundle_launch.ts";

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
