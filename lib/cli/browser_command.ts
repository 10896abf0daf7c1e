/**
 * `$BROWSER` as a command line, the way gh and git take it: words split as
 * a POSIX shell splits them (blanks; single quotes; double quotes with `\`
 * before `"`, `\`, `$` and `` ` ``; a backslash outside quotes), no
 * expansion of variables, globs or `~`. The page to open goes where a word
 * says `%s` (the xdg convention; `%%` is a `%`), else after the last word.
 *
 * @module
 */

/** The argv to run for `browser` and `target`, or a problem in words. */
export function browserArgv(
  browser: string,
  target: string,
): { argv: string[] } | { problem: string } {
  const words = splitCommandLine(browser);
  if ("problem" in words) return words;
  if (words.words.length === 0) return { problem: "it is empty" };
  let substituted = false;
  const argv = words.words.map((word) =>
    word.replace(/%%|%s/g, (match) => {
      if (match === "%%") return "%";
      substituted = true;
      return target;
    })
  );
  return { argv: substituted ? argv : [...argv, target] };
}

/** Splits a command line into words as `sh` would, without expansions. */
export function splitCommandLine(
  line: string,
): { words: string[] } | { problem: string } {
  const words: string[] = [];
  let word: string | undefined;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i++) {
    const char = line[i];
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else word += char;
    } else if (quote === '"') {
      if (char === '"') quote = undefined;
      else if (
        char === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1])
      ) {
        word += line[++i];
      } else word += char;
    } else if (char === " " || char === "\t" || char === "\n") {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (char === "'" || char === '"') {
      quote = char;
      word ??= "";
    } else if (char === "\\") {
      if (i + 1 >= line.length) return { problem: "it ends with a lone \\" };
      word = (word ?? "") + line[++i];
    } else word = (word ?? "") + char;
  }
  if (quote !== undefined) return { problem: `a ${quote} is not closed` };
  if (word !== undefined) words.push(word);
  return { words };
}
