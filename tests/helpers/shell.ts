/**
 * Quoting for the /bin/sh scripts that tests write (credential helpers,
 * fake servers, the fake agent's launcher).
 *
 * @module
 */

/** Quotes a word for /bin/sh. */
export function sh(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
