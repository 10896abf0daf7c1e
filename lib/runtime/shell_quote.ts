/**
 * Quoting a word for a POSIX shell: for the command lines sherlock shows
 * (`--dry-run`, `-v`) and the one it writes into an agent's settings (the
 * key helper's command). Not the npm `shell-quote` package: one function,
 * and no npm package on the launch path. Here rather than in
 * `cli/output.ts` so that `launch/` may use it (docs/architecture.md,
 * "Import rules").
 *
 * @module
 */

/** Quotes a word for a POSIX shell, only when it needs it. */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
