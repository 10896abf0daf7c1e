/**
 * "Did you mean …?": the known name closest to a mistyped one, by edit
 * distance. Used for unknown keys in operator files, unknown commands and
 * agents, and secrets that no service reads. Pure, with no imports, so the
 * launch path may load it only when a name is wrong.
 *
 * @module
 */

/**
 * The longest word for which a suggestion is looked for: longer than any
 * key, command, agent or secret name by far.
 */
export const MAX_SUGGESTED_LENGTH = 128;

/**
 * The candidate closest to `word`, when it is close enough to be a typo:
 * at most one edit for names of up to four characters, two for longer
 * ones (a swap of two neighbours counts as one edit). Undefined when none
 * is, when two are equally close (a guess would mislead), or when `word` is
 * longer than {@linkcode MAX_SUGGESTED_LENGTH} (then `candidates` is not
 * read at all).
 */
export function closestName(
  word: string,
  candidates: Iterable<string>,
): string | undefined {
  // A word far longer than any name is no typo of one, and measuring it
  // would cost its length times each candidate's (a key of 900 K
  // characters: seconds and hundreds of MB per candidate).
  if (word.length > MAX_SUGGESTED_LENGTH) return undefined;
  const limit = word.length <= 4 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = Infinity;
  let tie = false;
  for (const candidate of new Set(candidates)) {
    if (candidate === word) continue;
    // The lengths' difference is a lower bound of the distance: such a
    // candidate can be neither the answer nor a tie with it.
    if (Math.abs(candidate.length - word.length) > limit) continue;
    const distance = editDistance(word, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
      tie = false;
    } else if (distance === bestDistance) {
      tie = true;
    }
  }
  return bestDistance <= limit && !tie ? best : undefined;
}

/** ` (did you mean NAME?)` for the closest candidate, else "". */
export function didYouMean(
  word: string,
  candidates: Iterable<string>,
): string {
  const name = closestName(word, candidates);
  return name === undefined ? "" : ` (did you mean ${name}?)`;
}

/**
 * The optimal-string-alignment distance between two strings: insertions,
 * deletions, substitutions and swaps of adjacent characters, each one edit.
 */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from(
    { length: rows },
    (_, i) =>
      Array.from({ length: cols }, (_, j) => i === 0 ? j : j === 0 ? i : 0),
  );
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(
        d[i - 1][j] + 1,
        d[i][j - 1] + 1,
        d[i - 1][j - 1] + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}
