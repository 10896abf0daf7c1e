/**
 * `sherlock completions bash|zsh|fish`: prints a shell's completion script;
 * and `sherlock completions --complete -- WORD…`, which that script runs at
 * each completion: prints the candidates for the last word, one a line.
 *
 * Completion must be fast and must never disturb anything: names come from
 * the folders' file names (no file is parsed), and secrets' names only from
 * a broker that already runs and is unlocked — it is never started, and
 * nothing is asked. A failure prints nothing (the shell then offers
 * nothing) rather than an error line in the middle of the command line.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { listTomlFiles } from "../config/toml_files.ts";
import { importLazily } from "../runtime/lazy_import.ts";
import {
  type CompletionRequest,
  completionRequest,
  type NameKind,
} from "./completion_candidates.ts";
import {
  completionScript,
  FILES_DIRECTIVE,
  type Shell,
  SHELLS,
} from "./completion_scripts.ts";
import type { ParsedArguments } from "./commands.ts";
import type { CommandContext } from "./context.ts";
import { type Printer, printer } from "./output.ts";

/** Runs the command; returns the exit code. */
export async function completionsCommand(
  args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  if (args.has("--complete")) {
    const words = args.rest.length > 0 ? args.rest : [""];
    await printCandidates(completionRequest(words), { context, out });
    return 0;
  }
  const [shell] = args.positionals;
  if (shell === undefined) {
    throw new UsageError(
      `usage: sherlock completions <${SHELLS.join("|")}>`,
    );
  }
  out.text(completionScript(shell as Shell));
  return 0;
}

async function printCandidates(
  request: CompletionRequest,
  options: { context: CommandContext; out: Printer },
): Promise<void> {
  const { context, out } = options;
  const seen = new Set<string>();
  const candidates = [...request.words];
  for (const kind of request.names) {
    for (const name of await namesOf(kind, context)) {
      if (name.startsWith(request.prefix)) candidates.push(name);
    }
  }
  for (const candidate of candidates) {
    if (seen.has(candidate)) continue;
    seen.add(candidate);
    out.line(candidate);
  }
  if (request.files) out.line(FILES_DIRECTIVE);
}

/** The names of `kind`; none when they cannot be had quietly. */
async function namesOf(
  kind: NameKind,
  context: CommandContext,
): Promise<string[]> {
  const { paths } = context;
  try {
    if (kind === "services") {
      return listTomlFiles(paths.servicesDir).map((file) => file.name);
    }
    if (kind === "oauth-services") {
      return listTomlFiles(paths.servicesDir)
        .filter((file) => {
          try {
            return isOAuthServiceText(Deno.readTextFileSync(file.path));
          } catch {
            return false;
          }
        })
        .map((file) => file.name);
    }
    if (kind === "agents") {
      const { profileNames } = await importLazily<
        typeof import("../profiles/loader.ts")
      >("lib/profiles/loader.ts");
      return [...profileNames(paths)].sort();
    }
    const client = await importLazily<typeof import("../broker/client.ts")>(
      "lib/broker/client.ts",
    );
    // brokerHealth only asks: it never starts a broker.
    if (await client.brokerHealth(paths.socket) === undefined) return [];
    const { secrets } = await client.listSecrets(paths.socket);
    return secrets.map((secret) => secret.name);
  } catch {
    // An unreadable folder, a locked store: nothing to offer.
    return [];
  }
}

/**
 * True when a services.d file's text says `[token] source = "oauth"`
 * (or `token = { source = "oauth" }`). Read by lines, not parsed: the
 * TOML parser is too slow for a keystroke, and a file that fools this
 * only changes what completion offers.
 */
export function isOAuthServiceText(text: string): boolean {
  if (/^\s*token\s*=\s*\{[^}\n]*\bsource\s*=\s*["']oauth["']/m.test(text)) {
    return true;
  }
  let table = "";
  for (const line of text.split("\n")) {
    const header = /^\s*\[\s*([^\]]+?)\s*\]/.exec(line);
    if (header !== null) table = header[1];
    else if (
      table === "token" && /^\s*source\s*=\s*["']oauth["']/.test(line)
    ) return true;
  }
  return false;
}
