/**
 * Where a session's rendered config goes, and writing it there.
 *
 * `cli-flag` and `env-var` profiles get a file per session in the runtime
 * folder (`<agent>.<session>.mcp.<ext>`), so concurrent sessions of one
 * agent never see or delete each other's file. A `config-file` profile names
 * its own path; sherlock writes there only when nothing is there yet.
 *
 * @module
 */

import { dirname, join } from "../file_paths.ts";
import { CantCreateError } from "../errors.ts";
import { describeFsError, ensurePrivateDir } from "../private_files.ts";
import {
  recordFile,
  saveSessionRecord,
  type SessionRecord,
  writeSessionFile,
} from "./session_files.ts";

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
  if (folder === options.runtimeDir) {
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
  recordFile(options.record, options.path, options.text);
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
