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
import { commandContext } from "./context.ts";
import { printLine, printText } from "./output.ts";

/** Runs the command; returns the exit code. */
export async function completionsCommand(
  args: readonly string[],
): Promise<number> {
  const [first, ...rest] = args;
  if (first === "--complete") {
    const words = rest[0] === "--" ? rest.slice(1) : rest;
    await printCandidates(completionRequest(words.length > 0 ? words : [""]));
    return 0;
  }
  if (args.length !== 1 || !SHELLS.includes(first as Shell)) {
    throw new UsageError(
      `usage: sherlock completions <${SHELLS.join("|")}>`,
    );
  }
  printText(completionScript(first as Shell));
  return 0;
}

async function printCandidates(request: CompletionRequest): Promise<void> {
  const seen = new Set<string>();
  const candidates = [...request.words];
  for (const kind of request.names) {
    for (const name of await namesOf(kind)) {
      if (name.startsWith(request.prefix)) candidates.push(name);
    }
  }
  for (const candidate of candidates) {
    if (seen.has(candidate)) continue;
    seen.add(candidate);
    printLine(candidate);
  }
  if (request.files) printLine(FILES_DIRECTIVE);
}

/** The names of `kind`; none when they cannot be had quietly. */
async function namesOf(kind: NameKind): Promise<string[]> {
  const { paths } = commandContext();
  try {
    if (kind === "services") {
      return listTomlFiles(paths.servicesDir).map((file) => file.name);
    }
    if (kind === "agents") {
      const { profileNames } = await importLazily<
        typeof import("../profiles/loader.ts")
      >(new URL("../profiles/loader.ts", import.meta.url));
      return [...profileNames(paths)].sort();
    }
    const client = await importLazily<typeof import("../broker/client.ts")>(
      new URL("../broker/client.ts", import.meta.url),
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
