/**
 * What `sherlock run` loads at start-up. Deno loads a module's static
 * imports, and also every dynamic import whose specifier is a literal, when
 * the program starts; so the launch path must reach no `node:` module (the
 * first one starts Deno's Node compatibility layer, about a third of Deno's
 * own start-up, docs/BENCHMARKS.md), no zod and no daemon code through
 * either. Modules needed only sometimes go through `importLazily`, and a
 * compiled binary includes exactly `LAZY_MODULES`: both lists must agree.
 * The commands' modules are imported by one loader, from the command table.
 * The broker's commands (login, secret, broker, shim) load neither daemon
 * code nor a `node:` module: they talk to the daemon over its socket. The
 * bridge, started once per remote server by every session, loads no daemon
 * code, no `node:` module and no npm package (the SDK, zod) either.
 */

import assert from "node:assert/strict";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import {
  COMMANDS,
  type CommandSpec,
  LAZY_MODULES,
} from "../../lib/cli/commands.ts";

interface Dependency {
  code?: { specifier?: string };
  isDynamic?: boolean;
}

interface Graph {
  modules: { specifier: string; size?: number; dependencies?: Dependency[] }[];
}

const ROOT = new URL("../../", import.meta.url);
const ROOT_PATH = fileURLToPath(ROOT);

/** Every module Deno loads at start-up for `root`, with who imports it. */
async function startupGraph(root: string): Promise<Map<string, string>> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", root],
    cwd: ROOT_PATH,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  const graph = JSON.parse(new TextDecoder().decode(output.stdout)) as Graph;
  const modules = new Map(graph.modules.map((m) => [m.specifier, m]));
  const rootUrl = new URL(root, ROOT).href;
  const importer = new Map<string, string>([[rootUrl, "(root)"]]);
  const pending = [rootUrl];
  while (pending.length > 0) {
    const specifier = pending.pop()!;
    for (const dependency of modules.get(specifier)?.dependencies ?? []) {
      const target = dependency.code?.specifier;
      if (target === undefined || importer.has(target)) continue;
      importer.set(target, specifier.replace(ROOT.href, ""));
      pending.push(target);
    }
  }
  return importer;
}

/** The files of `lib/`, recursively. */
function libFiles(folder = join(ROOT_PATH, "lib")): string[] {
  const files: string[] = [];
  for (const entry of Deno.readDirSync(folder)) {
    const path = join(folder, entry.name);
    if (entry.isDirectory) files.push(...libFiles(path));
    else if (entry.name.endsWith(".ts")) files.push(path);
  }
  return files;
}

Deno.test("the launch path (main.ts, then sherlock run) loads no node:, zod or daemon module at start-up", async () => {
  const loaded = new Map([
    ...await startupGraph("main.ts"),
    ...await startupGraph("lib/cli/run.ts"),
  ]);
  assert.ok(loaded.has(new URL("lib/launch/session.ts", ROOT).href));
  const unwanted = [...loaded.keys()].filter((specifier) =>
    specifier.startsWith("node:") || /\/zod@/.test(specifier) ||
    specifier.includes("/lib/broker/daemon/") ||
    specifier.includes("/lib/profiles/schema.ts") ||
    specifier.includes("/lib/services/schema.ts")
  ).map((specifier) =>
    `${specifier.replace(ROOT.href, "")} (imported by ${loaded.get(specifier)})`
  );
  assert.deepEqual(unwanted, []);
});

/**
 * The launch path's budget: how many of sherlock's modules `sherlock run`
 * loads at start-up, and their source bytes. Each module costs Deno a
 * lookup, a read, a code-cache query and an instantiation on every launch
 * whatever its size; bytes cost little once Deno caches the code (moving
 * 14 KB of help texts out of the path, or every comment, 86 KB, measured
 * no difference beyond the noise), so the count is the tight bound.
 * Measured in docs/BENCHMARKS.md (Launch time: the budget). Issue 21's
 * second round reached 248.8 KB; the declarative command layer then moved
 * the help texts off the path (-14 KB) but brought the grammar and one
 * parser for every command onto it, and the demo and keyring commands
 * added their entries: 250.3 KB, so the budget is 251 KB.
 */
const LAUNCH_MODULE_BUDGET = 41;
const LAUNCH_SOURCE_BYTES_BUDGET = 251_000;

Deno.test("the launch path stays within its budget of modules and source bytes", async () => {
  const sizes = new Map<string, number>();
  for (const root of ["main.ts", "lib/cli/run.ts"]) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", root],
      cwd: ROOT_PATH,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    const graph = JSON.parse(new TextDecoder().decode(output.stdout)) as Graph;
    for (const module of graph.modules) {
      sizes.set(module.specifier, module.size ?? 0);
    }
  }
  const loaded = new Map([
    ...await startupGraph("main.ts"),
    ...await startupGraph("lib/cli/run.ts"),
  ]);
  const modules = [...loaded.keys()].filter((specifier) =>
    specifier.startsWith(ROOT.href) && specifier.endsWith(".ts")
  );
  const bytes = modules.reduce((sum, m) => sum + (sizes.get(m) ?? 0), 0);
  const list = modules.map((m) => m.replace(ROOT.href, "")).sort().join(", ");
  assert.ok(
    modules.length <= LAUNCH_MODULE_BUDGET,
    `sherlock run loads ${modules.length} modules at start-up, more than its budget of ${LAUNCH_MODULE_BUDGET}: ` +
      "import what only some launches need through importLazily (and LAZY_MODULES), " +
      `or merge a small module into its one importer; measure with deno task bench before raising the budget. Loaded: ${list}`,
  );
  assert.ok(
    bytes <= LAUNCH_SOURCE_BYTES_BUDGET,
    `sherlock run's start-up modules hold ${bytes} bytes of source, more than its budget of ${LAUNCH_SOURCE_BYTES_BUDGET}: ` +
      "move text or code that only some launches need (help texts, error paths) into a lazily imported module. " +
      `Loaded: ${list}`,
  );
});

Deno.test("login, logout, whoami, secret, broker and shim load no node: or daemon module at start-up", async () => {
  // `broker serve` imports the daemon through importLazily, which no start-up
  // graph follows; reading the audit log (`broker log`) needs no daemon.
  for (const command of ["login", "secret", "broker", "shim"]) {
    const loaded = await startupGraph(`lib/cli/${command}.ts`);
    const unwanted = [...loaded.keys()].filter((specifier) =>
      specifier.startsWith("node:") ||
      specifier.includes("/lib/broker/daemon/")
    ).map((specifier) =>
      `${specifier.replace(ROOT.href, "")} (imported by ${
        loaded.get(specifier)
      })`
    );
    assert.deepEqual(unwanted, [], `lib/cli/${command}.ts`);
  }
});

Deno.test("the bridge loads no daemon, node: or npm module, and is not on the launch path", async () => {
  const loaded = await startupGraph("lib/cli/bridge.ts");
  const unwanted = [...loaded.keys()].filter((specifier) =>
    specifier.startsWith("node:") || specifier.startsWith("npm:") ||
    specifier.includes("/node_modules/") ||
    specifier.includes("/lib/broker/daemon/")
  ).map((specifier) =>
    `${specifier.replace(ROOT.href, "")} (imported by ${loaded.get(specifier)})`
  );
  assert.deepEqual(unwanted, []);
  const launch = new Map([
    ...await startupGraph("main.ts"),
    ...await startupGraph("lib/cli/run.ts"),
  ]);
  const bridge = [...launch.keys()].filter((specifier) =>
    specifier.includes("/lib/bridge/") || specifier.endsWith("/cli/bridge.ts")
  );
  assert.deepEqual(bridge, []);
});

Deno.test("lib/ has no literal dynamic import: each goes through importLazily", () => {
  const literal = /(?<!typeof\s)\bimport\(\s*["'`]/;
  const offenders = libFiles().flatMap((file) =>
    Deno.readTextFileSync(file).split("\n")
      .filter((line) => !/^\s*(\*|\/\/)/.test(line) && literal.test(line))
      .map((line) => `${relative(ROOT_PATH, file)}: ${line.trim()}`)
  );
  assert.deepEqual(offenders, []);
});

/** The code of a lib/ file without its comment lines. */
function codeOf(file: string): string {
  return Deno.readTextFileSync(file).split("\n")
    .filter((line) => !/^\s*(\*|\/\/)/.test(line)).join("\n");
}

Deno.test("every importLazily module is in LAZY_MODULES (compiled in), and only those", () => {
  const call =
    /importLazily<[^;]*?>\(\s*new URL\("([^"]+)", import\.meta\.url\)/g;
  const used = new Set<string>(
    Object.values(COMMANDS).map((spec: CommandSpec) => spec.module),
  );
  for (const file of libFiles()) {
    for (const match of codeOf(file).matchAll(call)) {
      used.add(relative(ROOT_PATH, join(dirname(file), match[1])));
    }
  }
  assert.deepEqual([...used].sort(), [...LAZY_MODULES].sort());
});

Deno.test("importLazily is called with a literal URL, except by the command table's loader", () => {
  // A module (or a `node:` one, which needs no --include) named in the call.
  const literal =
    /importLazily<[^;]*?>\(\s*new URL\("[^"]+"(, import\.meta\.url)?\)/g;
  const others = libFiles().flatMap((file) => {
    const code = codeOf(file).replaceAll(literal, "");
    const calls = code.match(/(?<!function )\bimportLazily\s*[<(]/g) ?? [];
    return calls.map(() => relative(ROOT_PATH, file));
  });
  assert.deepEqual(others, ["lib/cli/commands.ts"]);
});

Deno.test("the command table is cheap to load: it imports no command", async () => {
  const loaded = await startupGraph("lib/cli/commands.ts");
  assert.deepEqual(
    [...loaded.keys()].map((specifier) => specifier.replace(ROOT.href, ""))
      .sort(),
    [
      "lib/cli/commands.ts",
      "lib/config/suggestion.ts",
      "lib/errors.ts",
      "lib/runtime/lazy_import.ts",
    ],
  );
});

Deno.test("services, import and doctor do not load the MCP SDK at start-up: services test and doctor import it lazily", async () => {
  for (const command of ["services", "import", "doctor"]) {
    const loaded = await startupGraph(`lib/cli/${command}.ts`);
    const sdk = [...loaded.keys()].filter((specifier) =>
      specifier.includes("modelcontextprotocol") ||
      specifier.includes("/lib/broker/daemon/")
    );
    assert.deepEqual(sdk, [], `lib/cli/${command}.ts`);
  }
  const probe = await startupGraph("lib/mcp/probe.ts");
  assert.ok(
    [...probe.keys()].some((specifier) =>
      specifier.includes("modelcontextprotocol")
    ),
    "probe.ts is where the SDK client is",
  );
});
