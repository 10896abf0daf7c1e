/**
 * `sherlock run [--dry-run] [--service NAME…|--no-service NAME…] <agent>
 * [args…]`, and `sherlock <agent> [args…]`.
 *
 * sherlock's own options come before the agent's name; everything after
 * the name belongs to the agent, verbatim (`sherlock claude --help` shows
 * Claude's help).
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { findExecutable } from "../launch/spawn.ts";
import type { SessionPlan } from "../launch/plan.ts";
import { executeSession, prepareSession } from "../launch/session.ts";
import { shellQuote } from "../runtime/shell_quote.ts";
import { COMMANDS, isHelpFlag } from "./commands.ts";
import { commandContext } from "./context.ts";
import {
  printColumns,
  printHelp,
  printLine,
  printText,
  printWarning,
  SLOW_HELPER_MS,
  whileWaiting,
} from "./output.ts";

/** Runs the command; returns the exit code. */
export async function runCommand(args: readonly string[]): Promise<number> {
  const flags = { dryRun: false, strict: false, verbose: false };
  const only: string[] = [];
  const without: string[] = [];
  let index = 0;
  for (; index < args.length; index++) {
    const arg = args[index];
    const [option, inline] = splitOption(arg);
    if (option === "--service" || option === "--no-service") {
      const value = inline ?? args[++index];
      if (value === undefined || value === "") {
        throw new UsageError(
          `${option} needs a service's name (${option} NAME, before the agent's name)`,
        );
      }
      (option === "--service" ? only : without).push(value);
    } else if (arg === "--dry-run") flags.dryRun = true;
    else if (arg === "--strict") flags.strict = true;
    else if (arg === "-v" || arg === "--verbose") flags.verbose = true;
    else if (isHelpFlag(arg)) {
      // After another option: the dispatcher printed it when it came first.
      printHelp(COMMANDS.run.help);
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
  const verbose = flags.verbose || context.env.SHERLOCK_VERBOSE === "1";
  const plan = await prepareSession({
    agent,
    userArgs: args.slice(index + 1),
    env: context.env,
    paths: context.paths,
    onWarning: printWarning,
    strict: flags.strict,
    verbose,
    serviceFlags: { only, without },
  });
  if (flags.dryRun) {
    printDryRun(plan);
    return 0;
  }
  return await executeSession(plan, {
    paths: context.paths,
    onWarning: printWarning,
    onSummary: verbose ? printWarning : undefined,
    // A credential helper may take a while; a fast one shows nothing.
    waitFor: (what, work) =>
      whileWaiting(what, work, { afterMs: SLOW_HELPER_MS }),
  });
}

/** `--service=NAME` as `["--service", "NAME"]`; any other argument alone. */
function splitOption(arg: string): [string, string | undefined] {
  const equals = arg.indexOf("=");
  return arg.startsWith("--") && equals > 0
    ? [arg.slice(0, equals), arg.slice(equals + 1)]
    : [arg, undefined];
}

/** Prints the plan: what would run, with what, and the config it would get. */
function printDryRun(plan: SessionPlan): void {
  const { profile, document, config } = plan;
  const lookup = findExecutable(plan.executable, plan.env.PATH);
  const executable = lookup.found ? lookup.path : plan.executable;
  const rows: string[][] = [
    [
      "agent",
      `${profile.profile.agent.name} (${
        profile.source === "built-in" ? "built-in" : profile.path
      })`,
    ],
    [
      "executable",
      lookup.found
        ? executable
        : lookup.reason === "missing"
        ? `${executable} (not found on PATH)`
        : `${executable} (${lookup.path} is not executable)`,
    ],
    ["session", plan.session],
    ["argv", [executable, ...plan.args].map(shellQuote).join(" ")],
  ];
  const set = Object.entries(plan.envSet);
  if (set.length === 0) rows.push(["env set", "(nothing)"]);
  for (const [name, value] of set) {
    rows.push(["env set", `${name}=${shellQuote(value)}`]);
  }
  for (const name of plan.envRemoved) {
    rows.push(["env removed", `${name} (forbidden by the profile)`]);
  }
  rows.push([
    "services",
    config.kind === "none"
      ? config.argument === undefined
        ? '(none: the profile has [mcp] mode = "none")'
        : `(none: ${config.argument} needs no session)`
      : plan.services.length > 0
      ? plan.services.map((service) => service.service.name).join(", ")
      : plan.excluded.length > 0 || plan.leftOut.length > 0
      ? "(none)"
      : "(none in services.d)",
  ]);
  for (const left of plan.excluded) {
    rows.push(["left out", `${left.service} (${left.reason})`]);
  }
  for (const left of plan.leftOut) {
    rows.push(["left out", `${left.service} (${left.reason})`]);
  }
  const mcp = profile.profile.mcp;
  if (config.kind === "none" || mcp.mode === "none") {
    rows.push(["config", "(none, and no broker)"]);
    printColumns(rows, "first column");
    return;
  }
  rows.push([
    "config",
    config.kind === "argv"
      ? `in argv (${mcp.format}; tokens always through the shim)`
      : config.kind === "merge"
      ? `merged into ${config.path} (${mcp.format}; put back byte for byte when the session ends; tokens always through the shim)`
      : `${config.path} (${mcp.mode}, ${mcp.format}; written 0600 when the session starts, removed when it ends)`,
  ]);
  printColumns(rows, "first column");
  printLine(
    config.kind === "merge"
      ? "--- sherlock's part of the merged config (tokens redacted) ---"
      : config.kind === "argv"
      ? "--- flag values (tokens redacted) ---"
      : "--- rendered config (tokens redacted) ---",
  );
  const text = document.kind === "json"
    ? document.text
    : document.values.join("\n") + "\n";
  printText(text);
}
