/**
 * "Did you mean …?": the known name closest to a mistyped one, by edit
 * distance. Used for unknown keys in operator files, unknown commands and
 * agents, and secrets that no service reads. Pure, with no imports, so the
 * launch path may load it only when a name is wrong.
 *
 * @module
 */

/**
 * The candidate closest to `word`, when it is close enough to be a typo:
 * at most one edit for names of up to four characters, two for longer
 * ones (a swap of two neighbours counts as one edit). Undefined when none
 * is, or when two are equally close (a guess would mislead).
 */
export function closestName(
  word: string,
  candidates: Iterable<string>,
): string | undefined {
  const limit = word.length <= 4 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = Infinity;
  let tie = false;
  for (const candidate of new Set(candidates)) {
    if (candidate === word) continue;
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
