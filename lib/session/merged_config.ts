/**
 * The `merge` delivery, for agents that read their MCP servers only from a
 * file of their own (Gemini CLI's `~/.gemini/settings.json`): sherlock
 * merges its servers into the operator's file for the session and puts the
 * file back byte for byte when the session ends — or, after a crash, when
 * the next sherlock starts.
 *
 * Guarantees:
 * - The original bytes and mode are kept in the session record (0600)
 *   before the file is touched; the merged file is written atomically.
 * - If the file still holds what sherlock wrote, the original comes back
 *   exactly (or the file goes, if there was none). If someone changed it
 *   during the session, only sherlock's servers are taken out again (the
 *   operator's entries of the same name come back) and the change is kept.
 * - A file that is not plain JSON is never touched; a second concurrent
 *   session on the same file is refused.
 * - Tokens never go into this file: the merge delivery always uses the
 *   token shim.
 *
 * @module
 */

import { CantCreateError } from "../errors.ts";
import { dirname, isAbsolute, join } from "../runtime/path.ts";
import {
  describeFsError,
  removeIfPresent,
  sha256Hex,
  writeFileAtomically,
} from "../private_files.ts";

/** What it takes to put a merged file back, kept in the session record. */
export interface MergeRestore {
  /** The file (symlinks resolved). */
  path: string;
  /** The original bytes, base64; null when there was no file. */
  original: string | null;
  /** The original's permission bits (null when there was no file). */
  mode: number | null;
  /** The SHA-256 of the merged bytes sherlock wrote. */
  written: string;
  /** For each top-level key sherlock merged into, the entries it replaced (null: there was none). */
  replaced: Record<string, Record<string, unknown>>;
  /** The top-level keys that did not exist before. */
  addedKeys: string[];
}

/** The merged document, and what the merge replaced. */
export interface MergeResult {
  /** The operator's document with sherlock's servers in it. */
  merged: Record<string, unknown>;
  /** The operator's entries that sherlock's replaced, by key and name (null: none). */
  replaced: Record<string, Record<string, unknown>>;
  /** Top-level keys the operator's document did not have. */
  addedKeys: string[];
}

/**
 * Merges `ours` (e.g. `{mcpServers: {…}}`) into `existing`, key by key.
 * Throws when a key of `existing` that must be merged into is not an object.
 */
export function mergeServers(
  existing: Record<string, unknown>,
  ours: Record<string, unknown>,
): MergeResult {
  const merged: Record<string, unknown> = { ...existing };
  const replaced: Record<string, Record<string, unknown>> = {};
  const addedKeys: string[] = [];
  for (const [key, servers] of Object.entries(ours)) {
    const current = existing[key];
    if (current !== undefined && !isPlainObject(current)) {
      throw new Error(`"${key}" is not an object`);
    }
    if (current === undefined) addedKeys.push(key);
    const before = (current ?? {}) as Record<string, unknown>;
    replaced[key] = {};
    for (const name of Object.keys(servers as Record<string, unknown>)) {
      replaced[key][name] = Object.hasOwn(before, name) ? before[name] : null;
    }
    merged[key] = { ...before, ...(servers as Record<string, unknown>) };
  }
  return { merged, replaced, addedKeys };
}

/**
 * Takes sherlock's servers out of a document that was changed during the
 * session: each replaced entry comes back, each added one goes, and a key
 * that sherlock added goes when nothing else is left in it.
 */
export function unmergeServers(
  current: Record<string, unknown>,
  restore: Pick<MergeRestore, "replaced" | "addedKeys">,
): Record<string, unknown> {
  const result: Record<string, unknown> = { ...current };
  for (const [key, entries] of Object.entries(restore.replaced)) {
    if (!isPlainObject(result[key])) continue;
    const servers = { ...(result[key] as Record<string, unknown>) };
    for (const [name, previous] of Object.entries(entries)) {
      if (previous === null) delete servers[name];
      else servers[name] = previous;
    }
    if (restore.addedKeys.includes(key) && Object.keys(servers).length === 0) {
      delete result[key];
    } else result[key] = servers;
  }
  return result;
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
  const text = JSON.stringify(unmerged, null, 2) + "\n";
  writeFileAtomically({
    path: restore.path,
    bytes: new TextEncoder().encode(text),
    mode: (Deno.statSync(restore.path).mode ?? 0o600) & 0o777,
  });
  return `${restore.path} changed during the session; sherlock removed its servers and kept the other changes`;
}

/** True for a JSON object (not an array, not null). */
export function isPlainObject(
  value: unknown,
): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
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

/**
 * Parses an operator's file as a JSON object; a file of only white space
 * counts as an empty one. Throws {@linkcode CantCreateError} otherwise.
 */
export function parseOperatorJson(
  path: string,
  bytes: Uint8Array,
): Record<string, unknown> {
  let parsed: unknown;
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    parsed = text.trim() === "" ? {} : JSON.parse(text);
  } catch {
    throw new CantCreateError(
      `${path} is not plain JSON (comments?); sherlock merges its servers only into a JSON file and left it untouched`,
    );
  }
  if (!isPlainObject(parsed)) {
    throw new CantCreateError(
      `${path} does not hold a JSON object; sherlock left it untouched`,
    );
  }
  return parsed;
}

/** A file's bytes, or undefined when it does not exist. */
export function readBytesIfPresent(path: string): Uint8Array | undefined {
  try {
    return Deno.readFileSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new CantCreateError(`cannot read ${path}: ${describeFsError(error)}`);
  }
}

/** Bytes as base64 (the record is JSON). */
export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let index = 0; index < bytes.length; index += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(index, index + 0x8000));
  }
  return btoa(binary);
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, index) => byte === b[index]);
}

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (character) => character.charCodeAt(0));
}
