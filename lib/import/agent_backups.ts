/**
 * The agents' own backup copies of their config files, which keep a
 * plaintext token after the operator removes it from the file itself.
 * Confirmed in the CLIs' code: Claude Code copies `~/.claude.json` to
 * `~/.claude/backups/.claude.json.backup.<ms>` (at most one a minute, the
 * newest five kept). Copilot, Codex and Gemini keep no copy of their MCP
 * config that we could confirm, so none is listed for them. `sherlock
 * import` only names such a copy; it never edits or deletes it.
 *
 * @module
 */

import { InvalidFileError, readOperatorFile } from "../config/toml_files.ts";
import { join } from "../runtime/path.ts";

/** The name Claude Code gives each backup of `~/.claude.json`. */
const CLAUDE_BACKUP_PREFIX = ".claude.json.backup";

/**
 * The agents' backup files that exist in the operator's home, sorted:
 * Claude Code's `~/.claude/backups/.claude.json.backup*`. A folder that
 * is missing or cannot be listed yields none.
 */
export function agentBackupFiles(home: string | undefined): string[] {
  if (home === undefined || home === "") return [];
  const folder = join(home, ".claude", "backups");
  const found: string[] = [];
  try {
    for (const entry of Deno.readDirSync(folder)) {
      if (entry.name.startsWith(CLAUDE_BACKUP_PREFIX)) {
        found.push(join(folder, entry.name));
      }
    }
  } catch {
    // No backups folder (or none readable): nothing to list.
    return [];
  }
  // Code-unit order: localeCompare would load ICU's collator.
  return found.sort((a, b) => a < b ? -1 : a > b ? 1 : 0);
}

/**
 * Which of `files` hold one of `values` (the plaintext credentials found in
 * the agents' files), as text or JSON-escaped. Each file is read bounded
 * like an agent's file (a regular file of at most `maxBytes`); one that
 * cannot be read is a problem line (never its content), and the others
 * are still read. Never returns or prints a value.
 */
export function backupsHoldingCredentials(
  options: {
    files: readonly string[];
    values: readonly string[];
    maxBytes: number;
  },
): { holding: string[]; problems: string[] } {
  const holding: string[] = [];
  const problems: string[] = [];
  const needles = options.values.filter((value) => value !== "").flatMap((
    value,
  ) => [value, JSON.stringify(value).slice(1, -1)]);
  if (needles.length === 0) return { holding, problems };
  for (const path of options.files) {
    let text: string | undefined;
    try {
      text = readOperatorFile(path, "an agent's backup", options.maxBytes);
    } catch (error) {
      if (!(error instanceof InvalidFileError)) throw error;
      problems.push(`${error.message}; not searched for credentials`);
      continue;
    }
    if (text !== undefined && needles.some((needle) => text.includes(needle))) {
      holding.push(path);
    }
  }
  return { holding, problems };
}
