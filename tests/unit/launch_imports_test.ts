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
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import {
  COMMANDS,
  type CommandSpec,
  LAZY_MODULES,
} from "../../lib/cli/commands.ts";
import { BUNDLED_LAZY_MODULES } from "../../lib/cli/launch_entry.ts";
import {
  launchesSession,
  SOURCE_COMMANDS,
} from "../../lib/cli/launch_route.ts";
import {
  BUNDLE_PATH,
  staleBundleProblem,
} from "../../scripts/bundle_launch.ts";

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

/**
 * What a launch loads: main.ts, then the launch bundle, which holds the
 * graph of its entry (lib/cli/launch_entry.ts).
 */
async function launchGraph(): Promise<Map<string, string>> {
  return new Map([
    ...await startupGraph("main.ts"),
    ...await startupGraph("lib/cli/launch_entry.ts"),
  ]);
}

Deno.test("main.ts loads only the launch route at start-up; the entries are imported by URL", async () => {
  const loaded = [...(await startupGraph("main.ts")).keys()]
    .map((specifier) => specifier.replace(ROOT.href, "")).sort();
  assert.deepEqual(loaded, ["lib/cli/launch_route.ts", "main.ts"]);
});

Deno.test("the launch path (main.ts, then sherlock run) loads no node:, zod or daemon module at start-up", async () => {
  const loaded = await launchGraph();
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
 * The launch path's budget. A launch loads main.ts, the launch route and
 * one bundled file (lib/cli/launch_bundle.js), so what grows with the code
 * is the bundle's size: V8 reads, hashes and deserializes all of it on every
 * launch. Before the bundle, the budget counted modules (41) and their
 * source (251 KB): Deno paid per module, and bundling them cut a launch's
 * CPU by about a fifth (docs/BENCHMARKS.md, the fourth round). The bundle
 * of issue 21's fourth round is 194 KB.
 */
const LAUNCH_BUNDLE_BYTES_BUDGET = 195_000;

Deno.test("the launch bundle stays within its budget of bytes", () => {
  const bytes = Deno.statSync(join(ROOT_PATH, BUNDLE_PATH)).size;
  assert.ok(
    bytes <= LAUNCH_BUNDLE_BYTES_BUDGET,
    `${BUNDLE_PATH} is ${bytes} bytes, more than its budget of ${LAUNCH_BUNDLE_BYTES_BUDGET}: ` +
      "move code that only some launches need (help texts, error paths) into a lazily imported module; " +
      "measure with deno task bench before raising the budget",
  );
});

Deno.test("the launch bundle is fresh: deno task bundle would write the same file", async () => {
  assert.equal(await staleBundleProblem(ROOT_PATH), undefined);
});

Deno.test("the launch bundle names import.meta once: the root, in lazy_import.ts", () => {
  // Bundled, every module's import.meta.url is the bundle's (lib/cli/): a
  // path built from it in a module of another folder would point elsewhere.
  const bundle = Deno.readTextFileSync(join(ROOT_PATH, BUNDLE_PATH));
  assert.deepEqual(bundle.match(/.*import\.meta.*/g), [
    `var SOURCE_ROOT = new URL("../../", import.meta.url);`,
  ]);
});

Deno.test("the launch route sends every command but run to the source", () => {
  const names = Object.keys(COMMANDS).filter((name) => name !== "run");
  assert.deepEqual([...SOURCE_COMMANDS].sort(), names.sort());
  assert.equal(launchesSession(["run", "claude"]), true);
  assert.equal(launchesSession(["claude", "--", "-p"]), true);
  assert.equal(launchesSession(["--service=github", "claude"]), true);
  assert.equal(launchesSession(["services", "list"]), false);
  assert.equal(launchesSession(["--help"]), false);
  assert.equal(launchesSession([]), false);
});

Deno.test("the launch bundle holds every module a launch imports lazily, but the schemas and help", () => {
  assert.deepEqual(Object.keys(BUNDLED_LAZY_MODULES).sort(), [
    "lib/broker/client.ts",
    "lib/cli/run.ts",
    "lib/config/suggestion.ts",
    "lib/config/toml_parser.ts",
    "lib/profiles/loader.ts",
  ]);
  for (const path of Object.keys(BUNDLED_LAZY_MODULES)) {
    assert.ok(LAZY_MODULES.includes(path), path);
  }
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
  const launch = await launchGraph();
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
  const call = /importLazily<[^;]*?>\(\s*"([^"]+)"/g;
  const used = new Set<string>(
    Object.values(COMMANDS).map((spec: CommandSpec) => spec.module),
  );
  for (const file of libFiles()) {
    for (const match of codeOf(file).matchAll(call)) {
      used.add(match[1]);
    }
  }
  assert.deepEqual([...used].sort(), [...LAZY_MODULES].sort());
});

Deno.test("importLazily is called with a literal path, except by the command table's loader", () => {
  // A module's path from the root, or a `node:` URL (needs no --include).
  const literal = /importLazily<[^;]*?>\(\s*("[^"]+"|new URL\("node:[^"]+"\))/g;
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
