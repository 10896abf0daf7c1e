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
import { dirname } from "./runtime/path.ts";

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
 * atomic for every reader; only a power loss could lose them).
 */
export function writeFileAtomically(
  options: { path: string; bytes: Uint8Array; mode: number; durable?: boolean },
): void {
  const temporary = `${options.path}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  let created = false;
  try {
    const file = Deno.openSync(temporary, {
      write: true,
      createNew: true,
      mode: 0o600,
    });
    created = true;
    try {
      writeAllSync(file, options.bytes);
      if (options.durable ?? true) file.syncDataSync();
    } finally {
      file.close();
    }
    Deno.chmodSync(temporary, options.mode);
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
