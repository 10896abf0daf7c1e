/**
 * `sherlock doctor [--json]`: one screen of checks, a verdict each —
 * sherlock itself, the runtime folder, the broker (asked, never started),
 * every profile and service, and the agents' own settings that can keep
 * sherlock's servers out. Exit 0 when no check failed, 1 otherwise. Prints
 * no secret: the facts it gathers hold none (`lib/doctor/`).
 *
 * @module
 */

import { allPass, type Check, doctorChecks } from "../doctor/checks.ts";
import { gatherFacts } from "../doctor/gather.ts";
import { fromFileUrl } from "../runtime/path.ts";
import { VERSION } from "../version.ts";
import type { ParsedArguments } from "./commands.ts";
import type { CommandContext } from "./context.ts";
import type { DoctorJson } from "./json_shapes.ts";
import { columns, escapeControls, type Printer, printer } from "./output.ts";

/** The exit code of `sherlock doctor` when a check failed. */
export const DOCTOR_FAILED = 1;

/** Runs the command; returns the exit code. */
export async function doctorCommand(
  args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const json = args.has("--json");
  const out = printer(context);
  const { env, paths } = context;
  const facts = await gatherFacts({
    env,
    paths,
    cwd: Deno.cwd(),
    sherlock: { version: VERSION, runsFrom: runsFrom() },
  });
  const checks = doctorChecks(facts);
  const ok = allPass(checks);
  if (json) {
    const shape: DoctorJson = { ok, checks };
    out.json(shape);
  } else printChecks(checks, { ok, out });
  return ok ? 0 : DOCTOR_FAILED;
}

/** The compiled binary, or the source tree's main.ts and the Deno running it. */
function runsFrom(): string {
  if (Deno.build.standalone) return Deno.execPath();
  const main = fromFileUrl(new URL("../../main.ts", import.meta.url));
  return `${main} (source, deno ${Deno.version.deno})`;
}

function printChecks(
  checks: readonly Check[],
  options: { ok: boolean; out: Printer },
): void {
  const { ok, out } = options;
  const rows: string[][] = [];
  for (const check of checks) {
    rows.push([
      check.verdict.toUpperCase(),
      check.group,
      check.name,
      escapeControls(check.detail),
    ]);
    if (check.fix !== null) {
      rows.push(["", "", "", `-> ${escapeControls(check.fix)}`]);
    }
  }
  for (const line of columns(rows)) out.line(line);
  const failed = checks.filter((check) => check.verdict === "fail").length;
  const warned = checks.filter((check) => check.verdict === "warn").length;
  out.line();
  out.line(
    ok
      ? `all checks pass${
        warned > 0 ? ` (${warned} warning${warned === 1 ? "" : "s"})` : ""
      }`
      : `${failed} check${failed === 1 ? "" : "s"} failed`,
  );
}
