/**
 * `deno task drift [agent…]`: catches agent CLIs that changed under
 * sherlock. For each built-in profile's CLI (or the ones named) it asks the
 * npm registry for the newest release, installs it next to the pinned one
 * (`.cache/drift/<agent>-<version>/`), runs that agent's e2e test file
 * against it, diffs the MCP-related lines of `--help` between the pinned and
 * the newest, and prints a table. Usage and exit codes:
 * {@linkcode DRIFT_HELP}.
 *
 * The e2e tests read the newest version through `SHERLOCK_E2E_CLIS` (see
 * tests/e2e/install_clis.ts), so the pinned installs in `.cache/e2e/` stay
 * as they are. The scheduled workflow `.github/workflows/drift.yml` runs
 * this weekly; it is not part of `scripts/test.sh`.
 *
 * @module
 */

import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/** Exit codes of `deno task drift`. */
export const DriftExit = {
  /** Every newest release passed (or is the pinned one). */
  Ok: 0,
  /** A newest release failed its e2e test, or could not be checked. */
  Drifted: 1,
  /** The command line was wrong. */
  Usage: 2,
} as const;

/** The help text. */
export const DRIFT_HELP = `Usage: deno task drift [AGENT]...

For each agent (default: every built-in profile with an e2e test), installs
the pinned and the newest release of its CLI from the npm registry into
.cache/drift/<agent>-<version>/, runs tests/e2e/<agent>_test.ts against it,
and prints: agent, pinned version (tests/e2e/clis.json), newest version,
pass/fail, and the MCP-related --help lines (mcp, config, server, settings)
that changed. An agent whose newest release is the pinned one is not
re-tested. Logs: .cache/drift/<agent>-<version>/e2e.log. SHERLOCK_E2E_CLIS
names another clis.json to take the pinned versions from.

Exit codes: 0 no drift, 1 a newest release failed or could not be checked,
2 usage.`;

/** What one agent's check found. */
export interface DriftRow {
  /** The agent (a built-in profile and key of clis.json). */
  agent: string;
  /** The version in tests/e2e/clis.json. */
  pinned: string;
  /** The newest on the npm registry, if it could be read. */
  newest?: string;
  /**
   * `pass`/`fail`: the e2e test against the newest; `pinned`: the newest is
   * the pinned one (not re-run); `error`: could not be checked.
   */
  result: "pass" | "fail" | "pinned" | "error";
  /** For `fail` and `error`: one line saying what happened. */
  detail?: string;
  /** The MCP-related `--help` lines that changed. */
  help?: HelpDiff;
}

/** MCP-related `--help` lines only in the pinned or only in the newest. */
export interface HelpDiff {
  /** Lines the newest no longer prints. */
  removed: string[];
  /** Lines only the newest prints. */
  added: string[];
}

/** The words that make a `--help` line MCP-related. */
const MCP_WORDS = /mcp|config|server|settings/i;

/**
 * The MCP-related lines of a `--help` text: those mentioning mcp, config,
 * server or settings, with colours removed and whitespace collapsed (a
 * re-wrapped column is no change).
 */
export function mcpHelpLines(help: string): string[] {
  const lines = help
    // deno-lint-ignore no-control-regex
    .replace(/\x1b\[[0-9;]*m/g, "")
    .split(/\r?\n/)
    .map((line) => line.trim().replace(/\s+/g, " "))
    .filter((line) => line !== "" && MCP_WORDS.test(line));
  return [...new Set(lines)];
}

/** The MCP-related lines that differ between two `--help` texts. */
export function diffHelp(pinned: string, newest: string): HelpDiff {
  const before = mcpHelpLines(pinned);
  const after = mcpHelpLines(newest);
  return {
    removed: before.filter((line) => !after.includes(line)),
    added: after.filter((line) => !before.includes(line)),
  };
}

/**
 * Compares two versions as npm orders them (numeric `major.minor.patch`,
 * then a release above its prereleases, prerelease parts numerically or
 * by text): negative when `a` is older, 0 when equal, positive when newer.
 */
export function compareVersions(a: string, b: string): number {
  const split = (version: string): [string[], string[]] => {
    const [core, ...pre] = version.replace(/^v/, "").split("+")[0].split("-");
    return [core.split("."), pre.length > 0 ? pre.join("-").split(".") : []];
  };
  const part = (x: string, y: string): number => {
    const numeric = /^\d+$/;
    if (numeric.test(x) && numeric.test(y)) {
      return Math.sign(Number(x) - Number(y));
    }
    if (numeric.test(x) !== numeric.test(y)) return numeric.test(x) ? -1 : 1;
    return x < y ? -1 : x > y ? 1 : 0;
  };
  const [coreA, preA] = split(a);
  const [coreB, preB] = split(b);
  for (let i = 0; i < Math.max(coreA.length, coreB.length); i++) {
    const order = part(coreA[i] ?? "0", coreB[i] ?? "0");
    if (order !== 0) return order;
  }
  if (preA.length === 0 || preB.length === 0) {
    return preA.length === preB.length ? 0 : preA.length === 0 ? 1 : -1;
  }
  for (let i = 0; i < Math.max(preA.length, preB.length); i++) {
    if (preA[i] === undefined) return -1;
    if (preB[i] === undefined) return 1;
    const order = part(preA[i], preB[i]);
    if (order !== 0) return order;
  }
  return 0;
}

/** True when any row means drift (the exit code is then 1). */
export function drifted(rows: readonly DriftRow[]): boolean {
  return rows.some((row) => row.result === "fail" || row.result === "error");
}

function helpSummary(row: DriftRow): string {
  if (!row.help) return row.result === "pinned" ? "-" : "(no --help)";
  const { removed, added } = row.help;
  if (removed.length + added.length === 0) return "no change";
  return `+${added.length} -${removed.length} lines`;
}

function resultLabel(row: DriftRow): string {
  switch (row.result) {
    case "pass":
      return "pass";
    case "fail":
      return "FAIL";
    case "pinned":
      return "pinned is newest";
    case "error":
      return "ERROR";
  }
}

/**
 * The report: a Markdown table (agent, pinned, newest, e2e, MCP help),
 * then, per agent, why it failed and the `--help` lines that changed.
 */
export function renderDriftReport(rows: readonly DriftRow[]): string {
  const header = ["agent", "pinned", "newest", "e2e", "MCP help"];
  const cells = rows.map((row) => [
    row.agent,
    row.pinned,
    row.newest ?? "?",
    resultLabel(row),
    helpSummary(row),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...cells.map((line) => line[column].length))
  );
  const line = (values: string[]) =>
    `| ${values.map((value, i) => value.padEnd(widths[i])).join(" | ")} |`;
  const out = [
    line(header),
    `|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`,
    ...cells.map(line),
  ];
  for (const row of rows) {
    const changes = [
      ...(row.help?.removed ?? []).map((text) => `- ${text}`),
      ...(row.help?.added ?? []).map((text) => `+ ${text}`),
    ];
    if (!row.detail && changes.length === 0) continue;
    out.push("", `${row.agent} ${row.pinned} -> ${row.newest ?? "?"}:`);
    if (row.detail) out.push(`  ${row.detail}`);
    if (changes.length > 0) {
      out.push("  MCP-related --help lines (- pinned only, + newest only):");
      out.push(...changes.map((text) => `    ${text}`));
    }
  }
  return out.join("\n") + "\n";
}

/** A failure of the command line: one line and exit 2. */
export class DriftUsageError extends Error {
  /** Creates the error; `message` is the line the operator reads. */
  constructor(message: string) {
    super(message);
    this.name = "DriftUsageError";
  }
}

/**
 * The agents to check: those named (each must be one of `known`), or all
 * of `known`. Throws a {@linkcode DriftUsageError}.
 */
export function parseDriftArgs(
  args: readonly string[],
  known: readonly string[],
): { agents: string[]; help: boolean } {
  if (args.some((arg) => arg === "--help" || arg === "-h")) {
    return { agents: [], help: true };
  }
  for (const arg of args) {
    if (arg.startsWith("-")) {
      throw new DriftUsageError(`unknown option ${arg}; see --help`);
    }
    if (!known.includes(arg)) {
      throw new DriftUsageError(
        `unknown agent ${arg}; the agents are ${known.join(", ")}`,
      );
    }
  }
  return {
    agents: args.length > 0 ? [...new Set(args)] : [...known],
    help: false,
  };
}

// ---------------------------------------------------------------------------
// I/O

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
/** The pins: tests/e2e/clis.json, or the file SHERLOCK_E2E_CLIS names. */
const CLIS_JSON = Deno.env.get("SHERLOCK_E2E_CLIS") ||
  join(ROOT, "tests", "e2e", "clis.json");
const INSTALL_CLIS = join(ROOT, "tests", "e2e", "install_clis.ts");
const DRIFT_CACHE = join(ROOT, ".cache", "drift");
/** How long one CLI's `--help` may take. */
const HELP_TIMEOUT_MS = 60_000;

interface PinsFile {
  clis: Record<string, { package: string; version: string; bin: string }>;
}

/** The agents drift checks: built-in profiles with a pin and an e2e test. */
function knownAgents(pins: PinsFile): string[] {
  return Object.keys(pins.clis).filter((key) =>
    exists(join(ROOT, "profiles", `${key}.toml`)) &&
    exists(join(ROOT, "tests", "e2e", `${key}_test.ts`))
  );
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

function say(line: string): void {
  Deno.stderr.writeSync(new TextEncoder().encode(`drift: ${line}\n`));
}

async function run(
  program: string,
  options: {
    args: string[];
    env?: Record<string, string>;
    clearEnv?: boolean;
    timeoutMs?: number;
  },
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = new Deno.Command(program, {
    args: options.args,
    cwd: ROOT,
    env: options.env,
    clearEnv: options.clearEnv ?? false,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = options.timeoutMs === undefined ? undefined : setTimeout(
    () => {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
    },
    options.timeoutMs,
  );
  const output = await child.output();
  clearTimeout(timer);
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

function lastLine(text: string): string {
  // deno-lint-ignore no-control-regex
  const plain = text.replace(/\x1b\[[0-9;]*m/g, "");
  return plain.split("\n").map((line) => line.trim()).filter(Boolean).at(-1) ??
    "(no output)";
}

/** `npm view <package> version`: the registry's newest release. */
async function newestVersion(pkg: string): Promise<string> {
  const result = await run("npm", {
    args: ["view", pkg, "version"],
    timeoutMs: 120_000,
  });
  const version = result.stdout.trim();
  if (result.code !== 0 || version === "") {
    throw new Error(
      `npm view ${pkg} version failed: ${lastLine(result.stderr)}`,
    );
  }
  return version;
}

/**
 * Writes `.cache/drift/<agent>-<version>/clis.json`: the pins with
 * `agent` at `version`. The e2e harness installs there when
 * SHERLOCK_E2E_CLIS names it, so `.cache/e2e/` is never touched.
 */
function writePins(
  options: { pins: PinsFile; agent: string; version: string },
): string {
  const { pins, agent, version } = options;
  const folder = join(DRIFT_CACHE, `${agent}-${version}`);
  Deno.mkdirSync(folder, { recursive: true });
  const changed: PinsFile = structuredClone(pins);
  changed.clis[agent].version = version;
  const file = join(folder, "clis.json");
  Deno.writeTextFileSync(file, JSON.stringify(changed, null, 2) + "\n");
  return file;
}

/** Installs `agent` as the pins in `clisFile` say; returns its path. */
async function install(agent: string, clisFile: string): Promise<string> {
  const result = await run(Deno.execPath(), {
    args: ["run", "--allow-all", INSTALL_CLIS, agent],
    env: { SHERLOCK_E2E_CLIS: clisFile },
  });
  const path = result.stdout.trim().split("\t")[2];
  if (result.code !== 0 || !path) {
    throw new Error(`installing failed: ${lastLine(result.stderr)}`);
  }
  return path;
}

/**
 * `<cli> --help` with a throwaway HOME and no inherited secrets; Copilot
 * unpacks its package into the version's drift folder, as its e2e test does.
 */
async function helpText(
  cli: string,
  options: { home: string; clisFile: string },
): Promise<string> {
  const { home, clisFile } = options;
  const result = await run(cli, {
    args: ["--help"],
    env: {
      HOME: home,
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      NO_COLOR: "1",
      TERM: "dumb",
      COPILOT_AUTO_UPDATE: "false",
      COPILOT_PKG_CACHE_HOME: join(dirname(clisFile), "copilot"),
    },
    clearEnv: true,
    timeoutMs: HELP_TIMEOUT_MS,
  });
  return result.stdout + result.stderr;
}

async function checkAgent(agent: string, pins: PinsFile): Promise<DriftRow> {
  const pin = pins.clis[agent];
  const row: DriftRow = { agent, pinned: pin.version, result: "error" };
  try {
    row.newest = await newestVersion(pin.package);
  } catch (error) {
    row.detail = (error as Error).message;
    return row;
  }
  if (compareVersions(row.newest, pin.version) === 0) {
    row.result = "pinned";
    return row;
  }
  const folder = join(DRIFT_CACHE, `${agent}-${row.newest}`);
  const clisFile = writePins({ pins, agent, version: row.newest });
  say(`${agent}: pinned ${pin.version}, newest ${row.newest}; installing`);
  const pinnedFile = writePins({ pins, agent, version: pin.version });
  let newestCli: string;
  let pinnedCli: string;
  try {
    pinnedCli = await install(agent, pinnedFile);
    newestCli = await install(agent, clisFile);
  } catch (error) {
    row.detail = `${agent} ${row.newest}: ${(error as Error).message}`;
    return row;
  }
  const home = Deno.makeTempDirSync({ prefix: "sherlock-drift-" });
  try {
    row.help = diffHelp(
      await helpText(pinnedCli, { home, clisFile: pinnedFile }),
      await helpText(newestCli, { home, clisFile }),
    );
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
  const log = join(folder, "e2e.log");
  say(`${agent} ${row.newest}: running tests/e2e/${agent}_test.ts`);
  const test = await run(Deno.execPath(), {
    args: ["test", "--allow-all", join("tests", "e2e", `${agent}_test.ts`)],
    env: { SHERLOCK_E2E_CLIS: clisFile, NO_COLOR: "1" },
  });
  Deno.writeTextFileSync(log, test.stdout + test.stderr);
  if (test.code === 0) {
    row.result = "pass";
  } else {
    row.result = "fail";
    const failed = [...(test.stdout + test.stderr).matchAll(
      /^(.+?) \.\.\. FAILED/gm,
    )].map((match) => match[1]);
    row.detail = `${
      failed.length > 0
        ? `failed: ${failed.join("; ")}`
        : `deno test exited ${test.code}`
    } (log: ${relative(ROOT, log)})`;
  }
  return row;
}

/** Runs drift; returns the exit code. */
export async function drift(args: readonly string[]): Promise<number> {
  const pins = JSON.parse(Deno.readTextFileSync(CLIS_JSON)) as PinsFile;
  const known = knownAgents(pins);
  let parsed: { agents: string[]; help: boolean };
  try {
    parsed = parseDriftArgs(args, known);
  } catch (error) {
    if (!(error instanceof DriftUsageError)) throw error;
    say(error.message);
    return DriftExit.Usage;
  }
  if (parsed.help) {
    console.log(DRIFT_HELP);
    return DriftExit.Ok;
  }
  const rows: DriftRow[] = [];
  for (const agent of parsed.agents) rows.push(await checkAgent(agent, pins));
  Deno.stdout.writeSync(new TextEncoder().encode(renderDriftReport(rows)));
  if (drifted(rows)) {
    say(
      `the newest release of ${
        rows.filter((row) => row.result === "fail" || row.result === "error")
          .map((row) => row.agent).join(", ")
      } fails with sherlock: fix the profile or recipe, then bump tests/e2e/clis.json`,
    );
    return DriftExit.Drifted;
  }
  return DriftExit.Ok;
}

if (import.meta.main) {
  Deno.exit(await drift(Deno.args));
}
