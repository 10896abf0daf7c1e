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

import { findExecutable } from "../launch/spawn.ts";
import type { SessionPlan } from "../launch/plan.ts";
import { executeSession, prepareSession } from "../launch/session.ts";
import { shellQuote } from "../runtime/shell_quote.ts";
import type { ParsedArguments } from "./commands.ts";
import type { CommandContext } from "./context.ts";
import {
  type Printer,
  printer,
  SLOW_HELPER_MS,
  whileWaiting,
} from "./output.ts";

/** Runs the command; returns the exit code. */
export async function runCommand(
  args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const [agent] = args.positionals;
  const out = printer(context);
  const verbose = args.has("--verbose") ||
    context.env.SHERLOCK_VERBOSE === "1";
  const plan = await prepareSession({
    agent,
    userArgs: args.rest,
    env: context.env,
    paths: context.paths,
    onWarning: out.warning,
    strict: args.has("--strict"),
    verbose,
    serviceFlags: {
      only: args.values("--service"),
      without: args.values("--no-service"),
    },
  });
  if (args.has("--dry-run")) {
    printDryRun(plan, out);
    return 0;
  }
  return await executeSession(plan, {
    paths: context.paths,
    onWarning: out.warning,
    onSummary: verbose ? out.warning : undefined,
    // A credential helper may take a while; a fast one shows nothing.
    waitFor: (what, work) =>
      whileWaiting(what, work, { afterMs: SLOW_HELPER_MS }),
  });
}

/** Prints the plan: what would run, with what, and the config it would get. */
function printDryRun(plan: SessionPlan, out: Printer): void {
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
    out.columns(rows, "first column");
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
  out.columns(rows, "first column");
  out.line(
    config.kind === "merge"
      ? "--- sherlock's part of the merged config (tokens redacted) ---"
      : config.kind === "argv"
      ? "--- flag values (tokens redacted) ---"
      : "--- rendered config (tokens redacted) ---",
  );
  const text = document.kind === "json"
    ? document.text
    : document.values.join("\n") + "\n";
  out.text(text);
}
