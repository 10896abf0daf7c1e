/**
 * Profile, service and config files that validated before, with the
 * schema's output: importing zod is dear at start-up (docs/BENCHMARKS.md),
 * so the launch path validates a file only when its text changed. Texts are
 * compared, not hashed (exact, and cheaper at start-up). A new version or
 * cache revision drops every entry; failures are never cached, so they are
 * reported every time.
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
const CACHE_REVISION = 4;

/** Entries beyond this are dropped, oldest first. */
const MAX_ENTRIES = 256;

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

  /**
   * Opens the cache in `cacheDir` (nothing is read until now, nothing is
   * written until {@linkcode ValidationCache.save}). Without a folder, the
   * cache only lives in memory.
   */
  constructor(cacheDir?: string) {
    this.#file = cacheDir ? join(cacheDir, "validated.json") : undefined;
    this.#entries = this.#file ? readEntries(this.#file) : {};
  }

  /** The key for one file: its kind and path. */
  static key(kind: string, path: string): string {
    return `${kind}\0${path}`;
  }

  /** The cached normalized value for `key`, if `text` is what validated. */
  get(key: string, text: string): unknown {
    const entry = Object.hasOwn(this.#entries, key)
      ? this.#entries[key]
      : undefined;
    return entry?.text === text ? entry.value : undefined;
  }

  /** Records a successful validation of `text`. */
  set(key: string, text: string, value: unknown): void {
    this.#entries[key] = { used: Date.now(), text, value };
    this.#dirty = true;
  }

  /**
   * Writes the cache back when something was added. A failure to write is
   * ignored: the cache only saves time, it is never needed for correctness.
   */
  save(): void {
    if (this.#file === undefined) return;
    // What a sherlock killed while writing the cache left (the operator's
    // validated files, never a token), so that it does not pile up.
    removeDeadTemporariesOf(this.#file);
    if (!this.#dirty) return;
    const kept = Object.entries(this.#entries)
      .sort(([, a], [, b]) => b.used - a.used)
      .slice(0, MAX_ENTRIES);
    const document: CacheDocument = {
      version: VERSION,
      revision: CACHE_REVISION,
      entries: Object.fromEntries(kept),
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
}

function readEntries(file: string): Record<string, CacheEntry> {
  try {
    const text = readTextIfPresent(file);
    if (text === undefined) return {};
    const document = JSON.parse(text) as CacheDocument;
    if (
      document.version !== VERSION || document.revision !== CACHE_REVISION
    ) return {};
    if (typeof document.entries !== "object" || document.entries === null) {
      return {};
    }
    return document.entries;
  } catch {
    return {};
  }
}
