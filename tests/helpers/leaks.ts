/**
 * The search for leaked secrets: tokens no file holds by chance, and every
 * file (by name or bytes) that holds one.
 *
 * @module
 */

import { join } from "node:path";

/** A random, token-looking string that no file contains by chance. */
export function randomToken(prefix = "tok"): string {
  return `${prefix}_${crypto.randomUUID().replaceAll("-", "")}`;
}

/**
 * Every regular file under `root` (recursively) whose name or bytes contain
 * one of `needles`, except below the folders in `skip`.
 */
export function filesContaining(
  root: string,
  needles: readonly string[],
  skip: readonly string[] = [],
): string[] {
  const found: string[] = [];
  const encoder = new TextEncoder();
  const patterns = needles.map((needle) => encoder.encode(needle));
  const walk = (folder: string) => {
    for (const entry of Deno.readDirSync(folder)) {
      const path = join(folder, entry.name);
      if (skip.includes(path)) continue;
      if (needles.some((needle) => entry.name.includes(needle))) {
        found.push(path);
      }
      if (entry.isDirectory) walk(path);
      else if (entry.isFile) {
        const bytes = Deno.readFileSync(path);
        if (patterns.some((pattern) => indexOfBytes(bytes, pattern) !== -1)) {
          found.push(path);
        }
      }
    }
  };
  walk(root);
  return found;
}

function indexOfBytes(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) continue outer;
    }
    return i;
  }
  return -1;
}
