/**
 * Putting back an operator's file that sherlock merged its servers into
 * (the `merge` delivery, Gemini CLI): byte for byte when it still holds what
 * sherlock wrote, else only sherlock's servers are taken out again. The
 * merge itself is pure (`lib/render/merge.ts`); writing it is
 * `rendered_config.ts`'s. Tokens never go into such a file: the merge
 * delivery always uses the token shim.
 *
 * @module
 */

import { dirname, isAbsolute, join } from "../runtime/path.ts";
import { equalBytes, fromBase64 } from "../runtime/bytes.ts";
import {
  documentText,
  isPlainObject,
  type MergeChanges,
  unmergeServers,
} from "../render/merge.ts";
import {
  readBytesIfPresent,
  removeIfPresent,
  sha256Hex,
  writeFileAtomically,
} from "../private_files.ts";

/** What it takes to put a merged file back, kept in the session record. */
export interface MergeRestore extends MergeChanges {
  /** The file (symlinks resolved). */
  path: string;
  /** The original bytes, base64; null when there was no file. */
  original: string | null;
  /** The original's permission bits (null when there was no file). */
  mode: number | null;
  /** The SHA-256 of the merged bytes sherlock wrote. */
  written: string;
}

/**
 * Puts a merged file back (see the module's guarantees). Returns a warning
 * for the operator when the file changed during the session, else undefined.
 */
export function restoreMergedConfig(restore: MergeRestore): string | undefined {
  const current = readBytesIfPresent(restore.path);
  if (current === undefined) {
    return restore.original === null
      ? undefined
      : `${restore.path} was removed during the session; sherlock did not recreate it`;
  }
  // Already put back (by a sherlock that died before it removed the
  // record, say): nothing to do, and nothing changed.
  if (
    restore.original !== null &&
    equalBytes(current, fromBase64(restore.original))
  ) {
    return undefined;
  }
  if (sha256Hex(current) === restore.written) {
    if (restore.original === null) removeIfPresent(restore.path);
    else {
      writeFileAtomically({
        path: restore.path,
        bytes: fromBase64(restore.original),
        mode: restore.mode ?? 0o600,
      });
    }
    return undefined;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(current));
  } catch {
    return `${restore.path} changed during the session and is no longer JSON; ` +
      "sherlock left it as it is (its servers may still be in it)";
  }
  if (!isPlainObject(parsed)) {
    return `${restore.path} changed during the session; sherlock left it as it is`;
  }
  const unmerged = unmergeServers(parsed, restore);
  // Nothing of sherlock's is left in it (the operator took it out): the
  // file is the operator's alone, and stays exactly as they wrote it.
  if (JSON.stringify(unmerged) === JSON.stringify(parsed)) return undefined;
  const text = documentText(unmerged);
  writeFileAtomically({
    path: restore.path,
    bytes: new TextEncoder().encode(text),
    mode: (Deno.statSync(restore.path).mode ?? 0o600) & 0o777,
  });
  return `${restore.path} changed during the session; sherlock removed its servers and kept the other changes`;
}

/**
 * Follows symlinks, so that a dotfile managed as a symlink stays one — also
 * a dangling one, whose target sherlock then creates and removes again.
 */
export function resolveSymlinks(path: string): string {
  let current = path;
  // As many links as Linux follows (MAXSYMLINKS) before it gives up.
  for (let hops = 0; hops < 40; hops++) {
    try {
      return Deno.realPathSync(current);
    } catch {
      // Missing: a dangling symlink is followed by hand below.
    }
    let target: string;
    try {
      target = Deno.readLinkSync(current);
    } catch {
      return current; // Not a symlink: a file that does not exist yet.
    }
    current = isAbsolute(target)
      ? target
      : join(realPathOr(dirname(current)), target);
  }
  return current;
}

function realPathOr(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}
