/**
 * Merging sherlock's servers into an operator's JSON document, and taking
 * them out again, for the `merge` delivery (Gemini CLI's own settings file).
 * Pure: reading, writing and putting the file back are `lib/session/`'s.
 *
 * @module
 */

import { CantCreateError } from "../errors.ts";

/** What a merge changed in the operator's document: enough to undo it. */
export interface MergeChanges {
  /** For each top-level key sherlock merged into, the entries it replaced (null: there was none). */
  replaced: Record<string, Record<string, unknown>>;
  /** The top-level keys that did not exist before. */
  addedKeys: string[];
}

/** The merged document, and what the merge replaced. */
export interface MergeResult extends MergeChanges {
  /** The operator's document with sherlock's servers in it. */
  merged: Record<string, unknown>;
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
  changes: MergeChanges,
): Record<string, unknown> {
  const result: Record<string, unknown> = { ...current };
  for (const [key, entries] of Object.entries(changes.replaced)) {
    if (!isPlainObject(result[key])) continue;
    const servers = { ...(result[key] as Record<string, unknown>) };
    for (const [name, previous] of Object.entries(entries)) {
      if (previous === null) delete servers[name];
      else servers[name] = previous;
    }
    if (changes.addedKeys.includes(key) && Object.keys(servers).length === 0) {
      delete result[key];
    } else result[key] = servers;
  }
  return result;
}

/**
 * Parses an operator's file as a JSON object; a file of only white space
 * counts as an empty one. Throws {@linkcode CantCreateError} (naming `path`)
 * otherwise.
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

/** The text sherlock writes for a (merged or unmerged) document. */
export function documentText(document: Record<string, unknown>): string {
  return JSON.stringify(document, null, 2) + "\n";
}

/** True for a JSON object (not an array, not null). */
export function isPlainObject(
  value: unknown,
): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
