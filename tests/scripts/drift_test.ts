/**
 * `deno task drift` (scripts/drift.ts): the pure parts (which `--help` lines
 * count, their diff, version order, the table) and its command line. The
 * registry, installs and e2e runs are exercised by running drift itself
 * (`deno task drift codex`), not here: the suite must not depend on what
 * the npm registry's newest release is today.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  compareVersions,
  diffHelp,
  drifted,
  type DriftRow,
  DriftUsageError,
  mcpHelpLines,
  parseDriftArgs,
  renderDriftReport,
} from "../../scripts/drift.ts";
import { REPO_ROOT } from "../helpers/sherlock.ts";

const PINNED_HELP = `Usage: agent [options]

Options:
  --mcp-config <file>     Load MCP servers from a JSON file
  --settings <file>       Settings file
  -p, --print             Print the answer and exit
\x1b[1m  --strict-mcp-config     Only use servers from --mcp-config\x1b[0m
`;

Deno.test("mcpHelpLines: only lines naming mcp, config, server or settings, without colour or spacing", () => {
  assert.deepEqual(mcpHelpLines(PINNED_HELP), [
    "--mcp-config <file> Load MCP servers from a JSON file",
    "--settings <file> Settings file",
    "--strict-mcp-config Only use servers from --mcp-config",
  ]);
  assert.deepEqual(mcpHelpLines("Usage: x\n  -h, --help  Help\n"), []);
});

Deno.test("diffHelp: a re-wrapped column is no change; a renamed flag is one line out, one in", () => {
  const rewrapped = PINNED_HELP.replaceAll("     ", "  ");
  assert.deepEqual(diffHelp(PINNED_HELP, rewrapped), {
    removed: [],
    added: [],
  });
  const renamed = PINNED_HELP.replace(
    "--mcp-config <file>     Load",
    "--additional-mcp-config <file>  Load",
  ).replace("  --settings <file>       Settings file\n", "");
  assert.deepEqual(diffHelp(PINNED_HELP, renamed), {
    removed: [
      "--mcp-config <file> Load MCP servers from a JSON file",
      "--settings <file> Settings file",
    ],
    added: ["--additional-mcp-config <file> Load MCP servers from a JSON file"],
  });
});

Deno.test("compareVersions: numeric parts, a release above its prereleases, npm's prerelease order", () => {
  const ascending = [
    "0.0.1790142911-g7618fb",
    "0.0.1790200000-g0000aa",
    "0.9.0",
    "0.165.0",
    "0.171.0",
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-beta.2",
    "1.0.0-beta.10",
    "1.0.0",
    "1.0.1",
    "1.10.0",
    "2.1.332",
  ];
  for (let i = 0; i < ascending.length; i++) {
    assert.equal(compareVersions(ascending[i], ascending[i]), 0);
    for (let j = i + 1; j < ascending.length; j++) {
      assert.ok(
        compareVersions(ascending[i], ascending[j]) < 0,
        `${ascending[i]} < ${ascending[j]}`,
      );
      assert.ok(
        compareVersions(ascending[j], ascending[i]) > 0,
        `${ascending[j]} > ${ascending[i]}`,
      );
    }
  }
  assert.equal(compareVersions("v1.2.3", "1.2.3"), 0);
});

const ROWS: DriftRow[] = [
  {
    agent: "codex",
    pinned: "0.165.0",
    newest: "0.171.0",
    result: "pass",
    help: { removed: [], added: [] },
  },
  {
    agent: "copilot",
    pinned: "1.0.102",
    newest: "1.1.0",
    result: "fail",
    detail: "failed: copilot via sherlock (log: .cache/drift/x/e2e.log)",
    help: {
      removed: ["--additional-mcp-config <json> Add MCP servers"],
      added: ["--mcp-config <json> Add MCP servers"],
    },
  },
  { agent: "claude", pinned: "2.1.332", newest: "2.1.332", result: "pinned" },
  {
    agent: "qwen",
    pinned: "0.24.4",
    result: "error",
    detail: "npm view @qwen-code/qwen-code version failed: E404",
  },
];

Deno.test("renderDriftReport: one aligned row per agent, then why each failed and the help lines that changed", () => {
  const report = renderDriftReport(ROWS);
  const lines = report.split("\n");
  assert.deepEqual(lines.slice(0, 6), [
    "| agent   | pinned  | newest  | e2e              | MCP help    |",
    "|---------|---------|---------|------------------|-------------|",
    "| codex   | 0.165.0 | 0.171.0 | pass             | no change   |",
    "| copilot | 1.0.102 | 1.1.0   | FAIL             | +1 -1 lines |",
    "| claude  | 2.1.332 | 2.1.332 | pinned is newest | -           |",
    "| qwen    | 0.24.4  | ?       | ERROR            | (no --help) |",
  ]);
  assert.equal(
    lines.slice(6).join("\n"),
    `
copilot 1.0.102 -> 1.1.0:
  failed: copilot via sherlock (log: .cache/drift/x/e2e.log)
  MCP-related --help lines (- pinned only, + newest only):
    - --additional-mcp-config <json> Add MCP servers
    + --mcp-config <json> Add MCP servers

qwen 0.24.4 -> ?:
  npm view @qwen-code/qwen-code version failed: E404
`,
  );
});

Deno.test("drifted: a failed or unchecked newest is drift; pass and pinned are not", () => {
  assert.equal(drifted(ROWS), true);
  assert.equal(drifted([ROWS[0], ROWS[2]]), false);
  assert.equal(drifted([ROWS[3]]), true);
});

Deno.test("parseDriftArgs: every known agent by default, the named ones once, unknown ones refused", () => {
  const known = ["copilot", "claude", "codex"];
  assert.deepEqual(parseDriftArgs([], known).agents, known);
  assert.deepEqual(parseDriftArgs(["codex", "codex"], known).agents, [
    "codex",
  ]);
  assert.equal(parseDriftArgs(["--help"], known).help, true);
  assert.throws(
    () => parseDriftArgs(["cursor"], known),
    (error: unknown) =>
      error instanceof DriftUsageError &&
      error.message ===
        "unknown agent cursor; the agents are copilot, claude, codex",
  );
  assert.throws(() => parseDriftArgs(["--all"], known), DriftUsageError);
});

Deno.test("deno task drift: an unknown agent is one line and exit 2; --help names the exit codes", async () => {
  const drift = join(REPO_ROOT, "scripts", "drift.ts");
  const run = (args: string[]) =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", drift, ...args],
      cwd: REPO_ROOT,
      stdin: "null",
    }).output();
  const decoder = new TextDecoder();
  const unknown = await run(["inspector"]);
  assert.equal(unknown.code, 2);
  assert.equal(decoder.decode(unknown.stdout), "");
  assert.match(
    decoder.decode(unknown.stderr),
    /^drift: unknown agent inspector; the agents are (\w+, )+\w+\n$/,
  );
  const help = await run(["--help"]);
  assert.equal(help.code, 0);
  assert.match(decoder.decode(help.stdout), /Exit codes: 0 no drift, 1 /);
});
