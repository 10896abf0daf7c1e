/**
 * Profile, service and config files that validated before, with the
 * schema's output: importing zod is dear at start-up (docs/BENCHMARKS.md),
 * so the launch path validates a file only when its text changed. Texts are
 * compared, not hashed (exact, and cheaper at start-up). A new version or
 * cache revision drops every entry; failures are never cached, so they are
 * reported every time. Entries of files that are gone are dropped at the
 * next save, and the whole is kept small: every launch reads it.
 *
 * @module
 */

import { join } from "../runtime/path.ts";
import {
  ensurePrivateDir,
  readTextIfPresent,
  removeDeadTemporariesOf,
  writeFileAtomically,
} from "../private_files.ts";
import { VERSION } from "../version.ts";

/**
 * Bump when a schema's output changes shape, or it refuses more, without a
 * version change, so that entries written by the older schema are not
 * reused.
 */
const CACHE_REVISION = 10;

/** What begins the key of a note that is no file's ({@linkcode ValidationCache.noteKey}). */
const NOTE_PREFIX = "note:";

/** Entries beyond this are dropped, oldest first. */
const MAX_ENTRIES = 256;

/**
 * The entries' texts and values together stay below this many characters
 * (oldest dropped first): an operator file may hold up to 1 MiB, and every
 * launch reads the whole cache.
 */
const MAX_TOTAL_CHARS = 4 * 1024 * 1024;

/** A cache file larger than this was not written by this version: ignored. */
const MAX_FILE_BYTES = 3 * MAX_TOTAL_CHARS;

interface CacheEntry {
  /** When the entry was last written, in ms since the epoch. */
  used: number;
  /** The file's text that validated. */
  text: string;
  /** The schema's normalized output. */
  value: unknown;
}

interface CacheDocument {
  version: string;
  revision: number;
  entries: Record<string, CacheEntry>;
}

/** The validation cache of one process: read once, written once if changed. */
export class ValidationCache {
  #file: string | undefined;
  #entries: Record<string, CacheEntry>;
  #dirty = false;
  /** The keys looked up or set by this process: their files exist. */
  #touched = new Set<string>();
  /**
   * The `used` stamp of the newest entry: a later `set` gets a larger one
   * even within the same millisecond, so "newest" is never a tie.
   */
  #newest = 0;

  /**
   * Opens the cache in `cacheDir` (nothing is read until now, nothing is
   * written until {@linkcode ValidationCache.save}). Without a folder, the
   * cache only lives in memory.
   */
  constructor(cacheDir?: string) {
    this.#file = cacheDir ? join(cacheDir, "validated.json") : undefined;
    const read = this.#file ? readEntries(this.#file) : undefined;
    this.#entries = read?.entries ?? {};
    for (const entry of Object.values(this.#entries)) {
      if (typeof entry?.used === "number" && entry.used > this.#newest) {
        this.#newest = entry.used;
      }
    }
    // A cache file that could not be used is replaced at the next save.
    this.#dirty = read?.unusable ?? false;
  }

  /** The key for one file: its kind and path. */
  static key(kind: string, path: string): string {
    return `${kind}\0${path}`;
  }

  /**
   * The key of a note that is no file's (where a command was found): never
   * checked with an lstat nor dropped for not being read, so that launches
   * that need different notes (agents with other services or another PATH)
   * do not rewrite the cache in turn; the caps drop the oldest.
   */
  static noteKey(kind: string, name: string): string {
    return `${NOTE_PREFIX}${kind}\0${name}`;
  }

  /** The cached normalized value for `key`, if `text` is what validated. */
  get(key: string, text: string): unknown {
    this.#touched.add(key);
    const entry = Object.hasOwn(this.#entries, key)
      ? this.#entries[key]
      : undefined;
    return entry?.text === text ? entry.value : undefined;
  }

  /** Records a successful validation of `text`. */
  set(key: string, text: string, value: unknown): void {
    this.#touched.add(key);
    this.#newest = Math.max(Date.now(), this.#newest + 1);
    this.#entries[key] = { used: this.#newest, text, value };
    this.#dirty = true;
    // The broker's cache lives in memory for the daemon's whole life.
    if (this.#file === undefined) this.#entries = keptEntries(this.#entries);
  }

  /**
   * Writes the cache back when something was added, or when an entry's
   * file is gone. A failure to write is ignored: the cache only saves time,
   * it is never needed for correctness.
   */
  save(): void {
    if (this.#file === undefined) return;
    // What a sherlock killed while writing the cache left (the operator's
    // validated files, never a token), so that it does not pile up.
    removeDeadTemporariesOf(this.#file);
    this.#forgetGoneFiles();
    if (!this.#dirty) return;
    const document: CacheDocument = {
      version: VERSION,
      revision: CACHE_REVISION,
      entries: keptEntries(this.#entries),
    };
    try {
      ensurePrivateDir(join(this.#file, ".."));
      writeFileAtomically({
        path: this.#file,
        bytes: new TextEncoder().encode(JSON.stringify(document)),
        mode: 0o600,
        durable: false,
      });
      this.#dirty = false;
    } catch {
      // The cache is an optimization; a read-only home must not stop a launch.
    }
  }

  /**
   * Drops the entries of files that are gone (one lstat for each entry not
   * read by this process: those read just now exist).
   */
  #forgetGoneFiles(): void {
    for (const key of Object.keys(this.#entries)) {
      if (this.#touched.has(key) || key.startsWith(NOTE_PREFIX)) continue;
      const path = key.slice(key.indexOf("\0") + 1);
      if (path.startsWith("built-in:") || entryExists(path)) continue;
      delete this.#entries[key];
      this.#dirty = true;
    }
  }
}

/** The newest entries, within {@linkcode MAX_ENTRIES} and the size cap. */
function keptEntries(
  entries: Record<string, CacheEntry>,
): Record<string, CacheEntry> {
  const kept: Record<string, CacheEntry> = {};
  let total = 0;
  const newestFirst = Object.entries(entries)
    .sort(([, a], [, b]) => b.used - a.used)
    .slice(0, MAX_ENTRIES);
  for (const [key, entry] of newestFirst) {
    total += entry.text.length + (JSON.stringify(entry.value)?.length ?? 0);
    if (total > MAX_TOTAL_CHARS) break;
    kept[key] = entry;
  }
  return kept;
}

function entryExists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    // Only a file known to be gone is forgotten.
    return !(error instanceof Deno.errors.NotFound);
  }
}

function readEntries(
  file: string,
): { entries: Record<string, CacheEntry>; unusable: boolean } {
  const unusable = { entries: {}, unusable: true };
  try {
    // Checked before reading: a cache written by an older sherlock may be
    // huge, and every launch would read it whole.
    const info = Deno.statSync(file);
    if (!info.isFile || info.size > MAX_FILE_BYTES) return unusable;
    const text = readTextIfPresent(file);
    if (text === undefined) return { entries: {}, unusable: false };
    const document = JSON.parse(text) as CacheDocument;
    if (
      document.version !== VERSION || document.revision !== CACHE_REVISION ||
      typeof document.entries !== "object" || document.entries === null
    ) return unusable;
    return { entries: document.entries, unusable: false };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return { entries: {}, unusable: false };
    }
    return unusable;
  }
}
