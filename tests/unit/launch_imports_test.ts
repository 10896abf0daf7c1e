/**
 * `sherlock run` imports no `node:` module: the first one starts Deno's Node
 * compatibility layer, which costs about a third of Deno's own start-up
 * (docs/BENCHMARKS.md). Only the modules that `run` loads statically are
 * checked; dynamic imports (commands, schemas, the daemon) load on demand.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

interface Dependency {
  code?: { specifier?: string };
  isDynamic?: boolean;
}

interface Graph {
  modules: { specifier: string; dependencies?: Dependency[] }[];
}

const ROOT = new URL("../../", import.meta.url);

Deno.test("the launch path (main.ts → sherlock run) imports no node: module", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "main.ts"],
    cwd: fileURLToPath(ROOT),
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  const graph = JSON.parse(new TextDecoder().decode(output.stdout)) as Graph;
  const modules = new Map(graph.modules.map((m) => [m.specifier, m]));
  const importer = new Map<string, string>();
  const roots = ["main.ts", "lib/cli/main.ts", "lib/cli/run.ts"].map((path) =>
    new URL(path, ROOT).href
  );
  const pending = [...roots];
  const seen = new Set<string>(roots);
  while (pending.length > 0) {
    const specifier = pending.pop()!;
    for (const dependency of modules.get(specifier)?.dependencies ?? []) {
      const target = dependency.code?.specifier;
      if (dependency.isDynamic || target === undefined || seen.has(target)) {
        continue;
      }
      seen.add(target);
      importer.set(target, specifier);
      pending.push(target);
    }
  }
  assert.ok(seen.has(new URL("lib/launch/session.ts", ROOT).href));
  const nodeImports = [...seen].filter((s) => s.startsWith("node:")).map(
    (s) => `${s} (imported by ${importer.get(s)?.replace(ROOT.href, "")})`,
  );
  assert.deepEqual(nodeImports, []);
});
