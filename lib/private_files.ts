/**
 * Private folders (0700) and private files (0600) written atomically.
 *
 * Used for everything that may hold a secret or that an attacker on a shared
 * machine could want to swap: rendered configs, the socket folder, the
 * secret store, session records, the audit log.
 *
 * @module
 */

import { CantCreateError } from "./errors.ts";
import { dirname, join } from "./runtime/path.ts";
import { isProcessRunning, readProcStat } from "./os/processes.ts";

/** The SHA-256 of a string or bytes as lowercase hex (see `sha256.ts`). */
export { sha256Hex } from "./runtime/sha256.ts";

/**
 * Makes sure `path` is a folder that only the current user can enter: creates
 * it (and missing parents) with mode 0700, tightens a folder of ours that is
 * wider, and refuses a symlink or a folder that another user owns.
 */
export function ensurePrivateDir(path: string): void {
  try {
    Deno.mkdirSync(path, { recursive: true, mode: 0o700 });
  } catch (error) {
    // Something that is not a folder is in the way: said below.
    if (!(error instanceof Deno.errors.AlreadyExists)) {
      throw new CantCreateError(
        `cannot create folder ${path}: ${describeFsError(error)}`,
      );
    }
  }
  const info = Deno.lstatSync(path);
  const problem = foreignDirProblem(path, info);
  if (problem !== undefined) throw new CantCreateError(problem);
  if (info.mode !== null && (info.mode & 0o077) !== 0) {
    Deno.chmodSync(path, 0o700);
  }
}

/**
 * Why `path` (whose lstat is `info`) is not a folder of the current user's:
 * a symlink, something else than a folder, or another user's folder. The
 * mode is left to the caller: {@linkcode ensurePrivateDir} tightens a
 * folder of ours, the broker's client refuses one that is open to others.
 */
export function foreignDirProblem(
  path: string,
  info: Deno.FileInfo,
): string | undefined {
  if (info.isSymlink || !info.isDirectory) {
    return `${path} is not a plain folder (a symlink or a file); remove it and try again`;
  }
  const uid = Deno.uid();
  if (uid !== null && info.uid !== null && info.uid !== uid) {
    return `${path} belongs to another user (uid ${info.uid}); remove it or set XDG_RUNTIME_DIR`;
  }
  return undefined;
}

/**
 * Writes `data` to `path` with mode 0600: first to a new file beside it
 * (created exclusively, so a planted symlink cannot redirect it), synced,
 * then renamed over `path`. Readers see the old content or the new, never a
 * part. The parent folder must exist.
 */
export function writePrivateFile(path: string, data: string): void {
  writeFileAtomically({
    path,
    bytes: new TextEncoder().encode(data),
    mode: 0o600,
  });
}

/**
 * Like {@linkcode writePrivateFile}, for bytes and any mode (used to put an
 * operator's own file back exactly as it was). `durable: false` skips the
 * fsync, for files that only live as long as a session (a rename is still
 * atomic for every reader; only a power loss could lose them). The
 * temporary file is named by {@linkcode temporaryPath}, so that
 * {@linkcode removeDeadTemporaries} finds it if this process dies first.
 */
export function writeFileAtomically(
  options: { path: string; bytes: Uint8Array; mode: number; durable?: boolean },
): void {
  const temporary = temporaryPath(options.path);
  let created = false;
  try {
    created = writeNewFile(temporary, options);
    Deno.renameSync(temporary, options.path);
  } catch (error) {
    // Remove only what this call created: whatever else sits at the
    // temporary name is not ours.
    if (created) removeIfPresent(temporary);
    throw new CantCreateError(
      `cannot write ${options.path}: ${describeFsError(error)}`,
    );
  }
}

/**
 * Writes a file that must not replace anything: like
 * {@linkcode writeFileAtomically}, but published with link(), which fails
 * when anything is at `path` — a file, a folder, a planted symlink. Returns
 * false then (nothing is written); throws {@linkcode CantCreateError} for
 * any other failure.
 */
export function writeFileExclusively(
  options: { path: string; bytes: Uint8Array; mode: number; durable?: boolean },
): boolean {
  const temporary = temporaryPath(options.path);
  let created = false;
  try {
    created = writeNewFile(temporary, options);
    Deno.linkSync(temporary, options.path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.AlreadyExists && created) return false;
    throw new CantCreateError(
      `cannot write ${options.path}: ${describeFsError(error)}`,
    );
  } finally {
    if (created) removeIfPresent(temporary);
  }
}

/**
 * Creates `path` exclusively (0600 until written, so a planted symlink
 * cannot redirect it and nobody reads a part), writes every byte, syncs
 * unless `durable` is false, then sets `mode`. Returns true; throws the
 * file-system error (after removing what it created, if it can).
 */
function writeNewFile(
  path: string,
  options: { bytes: Uint8Array; mode: number; durable?: boolean },
): true {
  const file = Deno.openSync(path, {
    write: true,
    createNew: true,
    mode: 0o600,
  });
  try {
    try {
      writeAllSync(file, options.bytes);
      if (options.durable ?? true) file.syncDataSync();
    } finally {
      file.close();
    }
    Deno.chmodSync(path, options.mode);
  } catch (error) {
    removeIfPresent(path);
    throw error;
  }
  return true;
}

/**
 * A fresh temporary name beside `path` that says which process writes it:
 * `<path>.<8 hex>.sherlock-<pid>-<start>.tmp`, where `<start>` is the
 * process's start time (Linux; 0 elsewhere), so that a later process with
 * the same pid is not taken for the writer. A process killed between
 * creating it and renaming or linking it leaves it behind, and
 * {@linkcode removeDeadTemporaries} removes it once the writer is gone.
 */
export function temporaryPath(path: string): string {
  writerTag ??= `${Deno.pid}-${readProcStat(Deno.pid)?.startTime ?? "0"}`;
  return `${path}.${crypto.randomUUID().slice(0, 8)}.sherlock-${writerTag}.tmp`;
}

let writerTag: string | undefined;

const TEMPORARY_NAME = /^(.*)\.[0-9a-f]{8}\.sherlock-(\d+)-(\d+)\.tmp$/;

/**
 * Removes the temporary files in `folder` (only those for the file named
 * `name`, when given) whose writer is gone: what a sherlock killed in the
 * middle of a write left (see {@linkcode temporaryPath}). A live writer's
 * file is left alone. Returns the paths it removed; a folder that is gone
 * or unreadable is nothing to remove.
 */
export function removeDeadTemporaries(folder: string, name?: string): string[] {
  const removed: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(folder)];
  } catch {
    return removed;
  }
  for (const entry of entries) {
    const match = TEMPORARY_NAME.exec(entry.name);
    if (match === null || entry.isDirectory) continue;
    if (name !== undefined && match[1] !== name) continue;
    const start = match[3] === "0" ? null : match[3];
    if (isProcessRunning(Number(match[2]), start)) continue;
    const path = join(folder, entry.name);
    try {
      removeIfPresent(path);
      removed.push(path);
    } catch {
      // Not ours to remove after all (another user's folder): left as is.
    }
  }
  return removed;
}

/** {@linkcode removeDeadTemporaries} for the temporaries of the file `path`. */
export function removeDeadTemporariesOf(path: string): string[] {
  const folder = dirname(path);
  const name = path.slice(folder.length).replace(/^[\\/]+/, "");
  return removeDeadTemporaries(folder, name);
}

/** Writes every byte (a single write may take only a part). */
export function writeAllSync(file: Deno.FsFile, bytes: Uint8Array): void {
  let written = 0;
  while (written < bytes.length) {
    written += file.writeSync(bytes.subarray(written));
  }
}

/** Removes a file; a file that is already gone is not an error. */
export function removeIfPresent(path: string): void {
  try {
    Deno.removeSync(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** Reads a text file, or returns undefined when it does not exist. */
export function readTextIfPresent(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/**
 * A file's bytes, or undefined when it does not exist. Throws
 * {@linkcode CantCreateError} when it exists but cannot be read.
 */
export function readBytesIfPresent(path: string): Uint8Array | undefined {
  try {
    return Deno.readFileSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new CantCreateError(`cannot read ${path}: ${describeFsError(error)}`);
  }
}

/** Ensures the folder that will hold `path` exists and is private. */
export function ensurePrivateParent(path: string): void {
  ensurePrivateDir(dirname(path));
}

/** A short reason for a file-system error, without a stack trace. */
export function describeFsError(error: unknown): string {
  if (error instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (error instanceof Deno.errors.NotFound) return "no such file or folder";
  if (error instanceof Deno.errors.AlreadyExists) return "already exists";
  if (error instanceof Deno.errors.IsADirectory) return "it is a folder";
  if (error instanceof Deno.errors.NotADirectory) {
    return "a part of its path is not a folder";
  }
  if (error instanceof Error) return error.message;
  return String(error);
}
