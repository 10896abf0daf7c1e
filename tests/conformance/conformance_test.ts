/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`,
 * pinned in {@linkcode SUITE_PACKAGE}) against sherlock's real commands:
 * every `auth/*` client scenario the suite lists (the 2025-11-25 ones, the
 * 2025-03-26 back-compat ones, the draft ones and the extensions), plus
 * {@linkcode OTHER_SCENARIOS}. For each, the suite starts the scenario's
 * MCP server (and authorization server), runs `sherlock_client.ts` with its
 * URL — a throwaway HOME, `sherlock login`, `sherlock auth`, then
 * `sherlock run` of a stand-in agent speaking MCP through `sherlock bridge`
 * — and judges what reached its servers.
 *
 * Each scenario's outcome is compared with `baseline.json`: a scenario
 * listed there must fail (one that passes fails this test, so the list
 * cannot go stale: remove its entry), and any other must pass.
 *
 * The suite needs Node 22's `fs.globSync` (this machine has Node 20), so it
 * runs under Deno from `.cache/conformance/` (scripts/test.sh installs it
 * there with npm; this test does too when it is missing).
 *
 * @module
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { REPO_ROOT } from "../helpers/sherlock.ts";

/** The suite's npm package, pinned (keep in step with scripts/test.sh). */
export const SUITE_PACKAGE = "@modelcontextprotocol/conformance@0.2.0-alpha.12";

/** The client scenarios run besides the `auth/*` ones. */
export const OTHER_SCENARIOS: readonly string[] = [
  "initialize",
  "tools_call",
  "sse-retry",
];

const SUITE_PREFIX = join(REPO_ROOT, ".cache", "conformance");
const SUITE_CLI = join(
  SUITE_PREFIX,
  "node_modules",
  "@modelcontextprotocol",
  "conformance",
  "dist",
  "index.js",
);
const CLIENT_TS = fileURLToPath(
  new URL("./sherlock_client.ts", import.meta.url),
);
const BASELINE_PATH = fileURLToPath(
  new URL("./baseline.json", import.meta.url),
);

/**
 * How long the suite lets one client run, in milliseconds (its default,
 * 30 s, is tight for five Deno processes on two busy cores).
 */
const CLIENT_TIMEOUT_MS = 120_000;

/**
 * How many scenarios run at once (`CONFORMANCE_CONCURRENCY`, default 2):
 * each is a handful of Deno processes that mostly wait on each other.
 */
const CONCURRENCY = Math.max(
  1,
  Number(Deno.env.get("CONFORMANCE_CONCURRENCY") ?? "2") || 1,
);

/** `baseline.json`: the scenarios known to fail, each with its reason. */
interface Baseline {
  /** The suite's package the baseline was recorded with. */
  suite: string;
  /** Scenario → why sherlock fails it (from the suite's own output). */
  expectedFailures: Record<string, string>;
}

/** One check the suite reported. */
interface Check {
  id: string;
  status: string;
  description?: string;
  errorMessage?: string;
}

/** The installed suite's version, if any. */
function installedVersion(): string | undefined {
  const manifest = join(SUITE_CLI, "..", "..", "package.json");
  if (!existsSync(manifest)) return undefined;
  return JSON.parse(Deno.readTextFileSync(manifest)).version;
}

/** Installs the pinned suite when it is missing; throws when it cannot. */
async function ensureSuite(): Promise<void> {
  if (
    `@modelcontextprotocol/conformance@${installedVersion()}` === SUITE_PACKAGE
  ) {
    return;
  }
  const npm = await new Deno.Command("npm", {
    args: [
      "install",
      "--prefix",
      SUITE_PREFIX,
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      SUITE_PACKAGE,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!npm.success) {
    throw new Error(
      `npm install ${SUITE_PACKAGE} failed: ${
        new TextDecoder().decode(npm.stderr).trim().split("\n").at(-1)
      }`,
    );
  }
}

/** Runs the suite's CLI under Deno; returns its exit code and output. */
async function suite(
  args: string[],
): Promise<{ code: number; output: string }> {
  const result = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", SUITE_CLI, ...args],
    cwd: REPO_ROOT,
    env: { NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return {
    code: result.code,
    output: decode(result.stdout) + decode(result.stderr),
  };
}

/** The suite's `auth/*` client scenarios, from its own list. */
async function authScenarios(): Promise<string[]> {
  const { code, output } = await suite(["list", "--client"]);
  assert.equal(code, 0, `conformance list failed:\n${output}`);
  return [...output.matchAll(/^\s*-\s+(auth\/\S+)/gm)].map((m) => m[1]);
}

/**
 * The folder the suite saved a scenario's results in: `<name>-<time>/`
 * under the output folder (`auth/<name>-<time>/` for `auth/<name>`).
 */
function resultFolder(outputDir: string): string {
  for (const entry of Deno.readDirSync(outputDir)) {
    if (!entry.isDirectory) continue;
    const folder = join(outputDir, entry.name);
    if (existsSync(join(folder, "checks.json"))) return folder;
    const nested = [...Deno.readDirSync(folder)].find((inner) =>
      inner.isDirectory && existsSync(join(folder, inner.name, "checks.json"))
    );
    if (nested) return join(folder, nested.name);
  }
  throw new Error(`the suite saved no results in ${outputDir}`);
}

/** What a failed scenario shows: its failing checks and the client's stderr. */
function failureReport(folder: string): string {
  const checks = JSON.parse(
    Deno.readTextFileSync(join(folder, "checks.json")),
  ) as Check[];
  const failing = checks.filter((check) =>
    check.status !== "SUCCESS" &&
    check.status !== "INFO"
  ).map((check) =>
    `  ${check.status} ${check.id}: ${check.errorMessage ?? check.description}`
  );
  const stderr = Deno.readTextFileSync(join(folder, "stderr.txt")).trimEnd()
    .split("\n").slice(-30).map((line) => `  | ${line}`);
  return [
    "checks not passed:",
    ...(failing.length > 0 ? failing : ["  (none)"]),
    "the client's stderr (last lines):",
    ...stderr,
  ].join("\n");
}

const baseline = JSON.parse(Deno.readTextFileSync(BASELINE_PATH)) as Baseline;
await ensureSuite();
const scenarios = [...OTHER_SCENARIOS, ...await authScenarios()];
/**
 * The scenarios this run checks: all of them, or those named in
 * `CONFORMANCE_SCENARIOS` (comma-separated), to rerun one.
 */
const selected = Deno.env.get("CONFORMANCE_SCENARIOS")?.split(",").map((
  name,
) => name.trim()).filter((name) => name !== "") ?? scenarios;

Deno.test("conformance: the baseline was recorded with the pinned suite", () => {
  assert.equal(baseline.suite, SUITE_PACKAGE);
  for (const scenario of selected) {
    assert.ok(
      scenarios.includes(scenario),
      `CONFORMANCE_SCENARIOS names ${scenario}, which the suite does not run`,
    );
  }
  for (const scenario of Object.keys(baseline.expectedFailures)) {
    assert.ok(
      scenarios.includes(scenario),
      `baseline.json lists ${scenario}, which the suite does not run`,
    );
  }
});

/** How a scenario ended. */
interface Outcome {
  passed: boolean;
  /** The failing checks and the client's stderr, or the suite's output. */
  details: string;
}

/** Runs one scenario through the suite. */
async function runScenario(scenario: string): Promise<Outcome> {
  const outputDir = await Deno.makeTempDir({ prefix: "conformance-" });
  try {
    const { code, output } = await suite([
      "client",
      "--command",
      `${Deno.execPath()} run --allow-all --quiet ${CLIENT_TS}`,
      "--scenario",
      scenario,
      "--timeout",
      String(CLIENT_TIMEOUT_MS),
      "--output-dir",
      outputDir,
    ]);
    let details: string;
    try {
      details = failureReport(resultFolder(outputDir));
    } catch {
      details = output;
    }
    return { passed: code === 0, details };
  } finally {
    await Deno.remove(outputDir, { recursive: true });
  }
}

/** Runs `items` through `work`, `limit` at a time; results in order. */
async function inPool<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

Deno.test({
  name: `conformance: every scenario passes, except the baseline's, which fail`,
  // One test for all the scenarios, so that they can run side by side.
  async fn() {
    const started = Date.now();
    const outcomes = await inPool(selected, CONCURRENCY, runScenario);
    const problems: string[] = [];
    const summary: string[] = [];
    selected.forEach((scenario, index) => {
      const { passed, details } = outcomes[index];
      const expectedFailure = baseline.expectedFailures[scenario];
      summary.push(
        `${passed ? "pass" : "FAIL"} ${scenario}${
          expectedFailure === undefined ? "" : " (baseline: fails)"
        }`,
      );
      if (expectedFailure === undefined && !passed) {
        problems.push(
          `${scenario} failed, and baseline.json does not list it\n${details}`,
        );
      }
      if (expectedFailure !== undefined && passed) {
        problems.push(
          `${scenario} passes now: remove it from tests/conformance/baseline.json (it said: ${expectedFailure})`,
        );
      }
    });
    console.error(
      `conformance: ${selected.length} scenarios in ${
        Math.round((Date.now() - started) / 1000)
      } s, ${CONCURRENCY} at a time\n${summary.join("\n")}`,
    );
    if (problems.length > 0) assert.fail(problems.join("\n\n"));
  },
});
