/**
 * The audit log: which session of which agent received which service's
 * token, when, and until when — never a token's value. JSON lines in
 * `$XDG_STATE_HOME/sherlock/audit.log`, 0600 in a 0700 folder. The entry
 * type and the reader are in `../audit_entries.ts`, which the CLI reads
 * without loading the daemon.
 *
 * The audit log and the daemon's own `broker.log` are rotated by size: a
 * line that would take the file past {@linkcode LOG_ROTATE_BYTES} first
 * moves it to `<name>.1` (and `.1` to `.2`, …), and the oldest beyond
 * {@linkcode LOG_KEEP} is dropped, so neither grows forever.
 *
 * @module
 */

import { join } from "node:path";
import { ensurePrivateDir } from "../../private_files.ts";
import type { AuditEntry } from "../audit_entries.ts";

/** The audit log's path. */
export function auditLogPath(stateDir: string): string {
  return join(stateDir, "audit.log");
}

/** The size at which a log is rotated. */
export const LOG_ROTATE_BYTES = 1024 * 1024;

/** How many rotated files of a log are kept (`<name>.1` … `<name>.3`). */
export const LOG_KEEP = 3;

/** How a log is rotated. */
export interface RotationOptions {
  /** Rotate before a line would take the file past this (default 1 MiB). */
  maxBytes?: number;
  /** Rotated files kept (default {@linkcode LOG_KEEP}). */
  keep?: number;
}

/** Appends one entry (the time is filled in). */
export function appendAudit(
  stateDir: string,
  entry: Omit<AuditEntry, "time">,
  rotation: RotationOptions = {},
): void {
  ensurePrivateDir(stateDir);
  const line = JSON.stringify({ time: new Date().toISOString(), ...entry }) +
    "\n";
  appendRotating(auditLogPath(stateDir), line, rotation);
}

/**
 * Appends `text` to the log at `path` (created 0600; its folder must
 * exist), rotating it first when `text` would take it past the size.
 */
export function appendRotating(
  path: string,
  text: string,
  rotation: RotationOptions = {},
): void {
  const bytes = new TextEncoder().encode(text);
  const maxBytes = rotation.maxBytes ?? LOG_ROTATE_BYTES;
  let size = 0;
  try {
    size = Deno.statSync(path).size;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  if (size > 0 && size + bytes.length > maxBytes) {
    rotate(path, rotation.keep ?? LOG_KEEP);
  }
  const file = Deno.openSync(path, { append: true, create: true, mode: 0o600 });
  try {
    file.writeSync(bytes);
  } finally {
    file.close();
  }
}

/**
 * `<path>.<keep-1>` → `<path>.<keep>` (replacing the oldest), …, `<path>` →
 * `<path>.1`. Renames keep each file's mode. Two daemons sharing the folder
 * may both rotate at once: the worst is one rotation too many.
 */
function rotate(path: string, keep: number): void {
  for (let index = keep - 1; index >= 0; index--) {
    try {
      Deno.renameSync(
        index === 0 ? path : `${path}.${index}`,
        `${path}.${index + 1}`,
      );
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }
}
