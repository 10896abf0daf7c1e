/**
 * `sherlock run [--dry-run] <agent> [args…]`, and `sherlock <agent> [args…]`.
 *
 * sherlock's own options come before the agent's name; everything after
 * the name belongs to the agent, verbatim (`sherlock claude --help` shows
 * Claude's help).
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { type DryRunReport, runSession } from "../launch/session.ts";
import { COMMANDS, isHelpFlag } from "./commands.ts";
import { commandContext } from "./context.ts";
import { columns, printLine, printWarning, shellQuote } from "./output.ts";

/** Runs the command; returns the exit code. */
export async function runCommand(args: readonly string[]): Promise<number> {
  let dryRun = false;
  let index = 0;
  for (; index < args.length; index++) {
    const arg = args[index];
    if (arg === "--dry-run") dryRun = true;
    else if (isHelpFlag(arg)) {
      // After --dry-run: the dispatcher printed it when it came first.
      printLine(COMMANDS.run.help);
      return 0;
    } else if (arg === "--") {
      index++;
      break;
    } else if (arg.startsWith("-")) {
      throw new UsageError(
        `unknown option ${arg} for run; sherlock's options go before the agent's name (see sherlock run --help)`,
      );
    } else break;
  }
  const agent = args[index];
  if (agent === undefined) {
    throw new UsageError(
      'run needs an agent\'s name; run "sherlock agents" to list them',
    );
  }
  const context = commandContext();
  const outcome = await runSession({
    agent,
    userArgs: args.slice(index + 1),
    dryRun,
    env: context.env,
    uid: context.uid,
    paths: context.paths,
    onWarning: printWarning,
  });
  if (outcome.kind === "exited") return outcome.exitCode;
  printDryRun(outcome.report);
  return 0;
}

function printDryRun(report: DryRunReport): void {
  const { profile } = report;
  const rows: string[][] = [
    [
      "agent",
      `${profile.profile.agent.name} (${
        profile.source === "built-in" ? "built-in" : profile.path
      })`,
    ],
    [
      "executable",
      report.executableProblem
        ? `${report.executable} (${report.executableProblem})`
        : report.executable,
    ],
    ["session", report.session],
    ["argv", report.argv.map(shellQuote).join(" ")],
  ];
  const set = Object.entries(report.envSet);
  if (set.length === 0) rows.push(["env set", "(nothing)"]);
  for (const [name, value] of set) {
    rows.push(["env set", `${name}=${shellQuote(value)}`]);
  }
  for (const name of report.envRemoved) {
    rows.push(["env removed", `${name} (forbidden by the profile)`]);
  }
  rows.push([
    "services",
    report.services.length > 0
      ? report.services.join(", ")
      : "(none in services.d)",
  ]);
  const mcp = profile.profile.mcp;
  rows.push([
    "config",
    report.configPath === undefined
      ? `in argv (${mcp.format}; tokens always through the shim)`
      : report.merged
      ? `merged into ${report.configPath} (${mcp.format}; put back byte for byte when the session ends; tokens always through the shim)`
      : `${report.configPath} (${mcp.mode}, ${mcp.format}; written 0600 when the session starts, removed when it ends)`,
  ]);
  for (const line of columns(rows)) printLine(line);
  printLine(
    report.merged
      ? "--- sherlock's part of the merged config (tokens redacted) ---"
      : report.configPath === undefined
      ? "--- flag values (tokens redacted) ---"
      : "--- rendered config (tokens redacted) ---",
  );
  Deno.stdout.writeSync(new TextEncoder().encode(report.configText));
}
