/**
 * Where a session's rendered config goes, and writing it there.
 *
 * `cli-flag` and `env-var` profiles get a file per session in the runtime
 * folder (`<agent>.<session>.mcp.<ext>`), so concurrent sessions of one
 * agent never see or delete each other's file. A `config-file` profile names
 * its own path; sherlock writes there only when nothing is there yet —
 * unless the profile says `merge = true`: then sherlock merges its servers
 * into the operator's file (`lib/render/merge.ts`) and puts it back
 * afterwards (`merged_config.ts`).
 *
 * @module
 */

import { dirname, join } from "../runtime/path.ts";
import { CantCreateError } from "../errors.ts";
import { toBase64 } from "../runtime/bytes.ts";
import {
  describeFsError,
  ensurePrivateDir,
  readBytesIfPresent,
  sha256Hex,
  writeFileAtomically,
} from "../private_files.ts";
import {
  documentText,
  type MergeResult,
  mergeServers,
  parseOperatorJson,
} from "../render/merge.ts";
import { type MergeRestore, resolveSymlinks } from "./merged_config.ts";
import {
  endStaleMergesInto,
  liveSessionOwning,
  lockMerges,
  recordFile,
  saveSessionRecord,
  type SessionRecord,
  writeSessionFile,
} from "./records.ts";

/** The per-session file name in the runtime folder. */
export function runtimeConfigPath(
  options: {
    runtimeDir: string;
    agent: string;
    session: string;
    extension: string;
  },
): string {
  return join(
    options.runtimeDir,
    `${options.agent}.${options.session}.mcp.${options.extension}`,
  );
}

/** What to write, and for which session. */
export interface WriteRenderedConfigOptions {
  /** sherlock's state folder (for the session record). */
  stateDir: string;
  /** sherlock's private runtime folder. */
  runtimeDir: string;
  /** The session's record; the file is added to it before it is written. */
  record: SessionRecord;
  /** The file's path. */
  path: string;
  /** The rendered document. */
  text: string;
}

/**
 * Records, then writes the rendered config: 0600, atomically, never over an
 * existing file. A file in the runtime folder gets a private (0700) folder;
 * elsewhere (config-file mode) missing folders are created 0700 and existing
 * ones, which belong to the operator, are left as they are.
 */
export function writeRenderedConfig(options: WriteRenderedConfigOptions): void {
  const folder = dirname(options.path);
  const inRuntimeDir = folder === options.runtimeDir;
  if (inRuntimeDir) {
    ensurePrivateDir(folder);
  } else {
    try {
      Deno.mkdirSync(folder, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw new CantCreateError(
        `cannot create folder ${folder}: ${describeFsError(error)}`,
      );
    }
  }
  // Nobody but this session writes its file in the private runtime folder.
  recordFile(options.record, options.path, inRuntimeDir ? null : options.text);
  saveSessionRecord(options.stateDir, options.record);
  try {
    writeSessionFile({
      stateDir: options.stateDir,
      session: options.record.session,
      path: options.path,
      text: options.text,
    });
  } catch (error) {
    // What is at the path is not ours, even if its bytes happen to match.
    options.record.files.pop();
    saveSessionRecord(options.stateDir, options.record);
    throw error;
  }
}

/** What to merge, and for which session. */
export interface WriteMergedConfigOptions {
  /** sherlock's state folder (session records). */
  stateDir: string;
  /** The session's record; the restore is saved in it before the file is touched. */
  record: SessionRecord;
  /** The operator's file. */
  path: string;
  /** sherlock's part, e.g. `{mcpServers: {…}}`. */
  document: Record<string, unknown>;
  /** Gets what putting back a dead session's merge into the file warns about. */
  onWarning?: (message: string) => void;
}

/**
 * Merges sherlock's servers into the operator's file, written atomically,
 * after its original bytes and mode are saved in the session record. Throws
 * {@linkcode CantCreateError} when the file is not plain JSON (it is left
 * untouched) or another live session has merged into it.
 */
export async function writeMergedConfig(
  options: WriteMergedConfigOptions,
): Promise<void> {
  const path = resolveSymlinks(options.path);
  const lock = await lockMerges(options.stateDir);
  try {
    const owner = liveSessionOwning(options.stateDir, path);
    if (owner) {
      throw new CantCreateError(
        `${path} is in use by sherlock session ${owner.session} (${owner.agent}, pid ${owner.pid}); wait for it to end`,
      );
    }
    // A dead session's servers are not the operator's: put them back first.
    endStaleMergesInto(options.stateDir, path, options.onWarning);
    const original = readBytesIfPresent(path);
    const existing = original === undefined
      ? {}
      : parseOperatorJson(path, original);
    let result: MergeResult;
    try {
      result = mergeServers(existing, options.document);
    } catch (error) {
      throw new CantCreateError(
        `${path}: ${(error as Error).message}; sherlock left it untouched`,
      );
    }
    const text = documentText(result.merged);
    const mode = original === undefined
      ? null
      : (Deno.statSync(path).mode ?? 0o600) & 0o777;
    const restore: MergeRestore = {
      path,
      original: original === undefined ? null : toBase64(original),
      mode,
      written: sha256Hex(text),
      replaced: result.replaced,
      addedKeys: result.addedKeys,
    };
    options.record.restores = [...(options.record.restores ?? []), restore];
    saveSessionRecord(options.stateDir, options.record);
    try {
      if (original === undefined) {
        Deno.mkdirSync(join(path, ".."), { recursive: true, mode: 0o700 });
      }
      writeFileAtomically({
        path,
        bytes: new TextEncoder().encode(text),
        mode: mode ?? 0o600,
      });
    } catch (error) {
      options.record.restores = options.record.restores.filter((entry) =>
        entry !== restore
      );
      saveSessionRecord(options.stateDir, options.record);
      throw new CantCreateError(
        `cannot write ${path}: ${describeFsError(error)}`,
      );
    }
  } finally {
    lock.close();
  }
}
