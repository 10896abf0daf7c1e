/**
 * A session's id, and the files it wrote, recorded before they are written
 * so that they are removed when the session ends — and, when sherlock
 * itself died (SIGKILL, power loss), by the next sherlock that starts.
 *
 * A record is `$XDG_STATE_HOME/sherlock/sessions/<session>.json`: the
 * session's process and, once spawned, its agent's (pid and start time
 * each), and each file's path and SHA-256. A session is over only when both
 * processes are gone: an agent that outlived a killed sherlock still reads
 * its config. Every file is written through a temporary file named after
 * its writer (`private_files.ts` `temporaryPath`); the sweep removes those
 * of dead writers too, so a kill in the middle of a write leaves no token.
 * A file is removed only while it still holds exactly what sherlock wrote,
 * so a file the operator replaced in the meantime is never touched. Records
 * live in the state folder rather than the runtime folder because a
 * `config-file` profile writes outside the runtime folder, and such a file
 * must still be cleaned up after a reboot.
 *
 * @module
 */

import { join } from "../runtime/path.ts";
import { type MergeRestore, restoreMergedConfig } from "./merged_config.ts";
import { CantCreateError } from "../errors.ts";
import { isProcessRunning, readProcStat } from "../os/processes.ts";
import {
  describeFsError,
  ensurePrivateDir,
  readTextIfPresent,
  removeDeadTemporaries,
  removeDeadTemporariesOf,
  removeIfPresent,
  sha256Hex,
  writeFileAtomically,
  writeFileExclusively,
} from "../private_files.ts";

/** One file a session wrote. */
export interface WrittenFile {
  /** Its absolute path. */
  path: string;
  /**
   * The SHA-256 of the bytes sherlock wrote, for a file where someone else
   * might put theirs (config-file mode): it is removed only while it still
   * holds these bytes. Null for a file of sherlock's private runtime
   * folder with a session-unique name, which is always removed.
   */
  sha256: string | null;
}

/** What a session wrote, and which process it belongs to. */
export interface SessionRecord {
  /** The record format. */
  version: 1;
  /** The session id. */
  session: string;
  /** The agent's profile name. */
  agent: string;
  /** The pid of the sherlock process that runs the session. */
  pid: number;
  /** That process's start time (Linux), to survive pid reuse. */
  processStart: string | null;
  /** The agent's pid, once it was started. */
  agentPid?: number;
  /** The agent's start time (Linux), to survive pid reuse. */
  agentProcessStart?: string | null;
  /** When the session started (RFC 3339). */
  created: string;
  /** The files it wrote. */
  files: WrittenFile[];
  /** The operator's files it merged into, and how to put them back. */
  restores?: MergeRestore[];
}

/** A session's id: 12 random hex digits. */
export function newSessionId(): string {
  return crypto.randomUUID().replaceAll("-", "").slice(0, 12);
}

/** The folder of session records. */
export function sessionsDir(stateDir: string): string {
  return join(stateDir, "sessions");
}

/** Starts a record for this process; files are added before they are written. */
export function newSessionRecord(
  session: string,
  agent: string,
): SessionRecord {
  return {
    version: 1,
    session,
    agent,
    pid: Deno.pid,
    processStart: processStartTime(Deno.pid),
    created: isoTimestamp(Date.now()),
    files: [],
  };
}

/**
 * `ms` since the epoch as `Date#toISOString` writes it
 * (`2026-12-05T08:30:00.000Z`), for years 0 to 9999. Computed here because
 * the first `toISOString` of a process costs about 0.8 ms of CPU time
 * (V8's date machinery), measured on the launch path (docs/BENCHMARKS.md).
 */
export function isoTimestamp(ms: number): string {
  const days = Math.floor(ms / 86_400_000);
  const inDay = ms - days * 86_400_000;
  // Days since 1970-01-01 to a civil date (proleptic Gregorian), counted
  // in 400-year eras from 0000-03-01 so that leap days come last.
  const shifted = days + 719_468;
  const era = Math.floor(shifted / 146_097);
  const dayOfEra = shifted - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) -
      Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra -
    (365 * yearOfEra + Math.floor(yearOfEra / 4) -
      Math.floor(yearOfEra / 100));
  const monthFromMarch = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthFromMarch + 2) / 5) + 1;
  const month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const pad = (value: number, width: number) =>
    String(value).padStart(width, "0");
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${
    pad(Math.floor(inDay / 3_600_000), 2)
  }:${pad(Math.floor(inDay / 60_000) % 60, 2)}:${
    pad(Math.floor(inDay / 1000) % 60, 2)
  }.${pad(inDay % 1000, 3)}Z`;
}

/** Saves a record (0600 in a 0700 folder). */
export function saveSessionRecord(
  stateDir: string,
  record: SessionRecord,
): void {
  const folder = sessionsDir(stateDir);
  ensurePrivateDir(folder);
  writeFileAtomically({
    path: join(folder, `${record.session}.json`),
    bytes: new TextEncoder().encode(JSON.stringify(record)),
    mode: 0o600,
    // A record that holds an operator's original file must survive a power
    // loss; one that only lists rendered files need not.
    durable: (record.restores ?? []).length > 0,
  });
}

/**
 * Records the session's agent once it runs, so that the session counts as
 * alive while the agent does, even if this sherlock is killed. Saves the
 * record only when it was saved before (the session wrote a file).
 */
export function recordAgent(
  stateDir: string,
  record: SessionRecord,
  pid: number,
): void {
  record.agentPid = pid;
  record.agentProcessStart = processStartTime(pid);
  if (record.files.length === 0 && (record.restores ?? []).length === 0) {
    return;
  }
  try {
    saveSessionRecord(stateDir, record);
  } catch {
    // The agent runs already: without the pid the session only ends
    // early if sherlock is killed, which is no reason to stop it now.
  }
}

/**
 * Ends a session: removes each of its files that still holds what sherlock
 * wrote, puts back the operator's files it merged into, then removes the
 * record. Never throws for a file that is already gone. Returns warnings
 * for the operator (a merged file that changed during the session).
 */
export function endSession(stateDir: string, record: SessionRecord): string[] {
  for (const file of record.files) {
    removeIfUnchanged(file);
    removeDeadTemporariesOf(file.path);
  }
  const warnings: string[] = [];
  for (const restore of record.restores ?? []) {
    const warning = restoreMergedConfig(restore);
    if (warning !== undefined) warnings.push(warning);
    removeDeadTemporariesOf(restore.path);
  }
  removeIfPresent(join(sessionsDir(stateDir), `${record.session}.json`));
  return warnings;
}

/**
 * Ends every recorded session whose processes are gone (see
 * {@linkcode isSessionAlive}), and removes the temporary files of records
 * whose writer died mid-write. Returns the records it ended; `onWarning`
 * gets what {@linkcode endSession} warns about. A record that cannot be
 * read is left for the operator to inspect.
 */
export function sweepStaleSessions(
  stateDir: string,
  onWarning: (message: string) => void = () => {},
): SessionRecord[] {
  removeDeadTemporaries(sessionsDir(stateDir));
  const swept: SessionRecord[] = [];
  for (const record of readSessionRecords(stateDir)) {
    if (isSessionAlive(record)) continue;
    if ((record.restores ?? []).length === 0) {
      for (const warning of endSession(stateDir, record)) onWarning(warning);
      swept.push(record);
      continue;
    }
    // Putting an operator's file back must not race another sherlock
    // that sweeps the same record or merges into the same file.
    const lock = lockMergesSync(stateDir);
    try {
      const current = readSessionRecord(stateDir, record.session);
      if (current === undefined) continue; // Someone else swept it.
      for (const warning of endSession(stateDir, current)) onWarning(warning);
      swept.push(current);
    } finally {
      lock.close();
    }
  }
  return swept;
}

/**
 * Ends every dead session that merged into `path`. Call it while holding
 * the merge lock, before merging into `path`: the file must hold the
 * operator's content again, not a dead session's servers.
 */
export function endStaleMergesInto(
  stateDir: string,
  path: string,
  onWarning: (message: string) => void = () => {},
): void {
  for (const record of readSessionRecords(stateDir)) {
    if (
      !isSessionAlive(record) &&
      (record.restores ?? []).some((restore) => restore.path === path)
    ) {
      for (const warning of endSession(stateDir, record)) onWarning(warning);
    }
  }
}

const MERGE_LOCK_NAME = "merge.lock";

function openMergeLock(stateDir: string): Deno.FsFile {
  const folder = sessionsDir(stateDir);
  ensurePrivateDir(folder);
  return Deno.openSync(join(folder, MERGE_LOCK_NAME), {
    create: true,
    write: true,
    mode: 0o600,
  });
}

/**
 * Takes the lock that serializes merges into operators' files and the
 * restores of dead sessions' merges. Close the file to release it.
 */
export async function lockMerges(stateDir: string): Promise<Deno.FsFile> {
  const lock = openMergeLock(stateDir);
  try {
    await lock.lock(true);
  } catch (error) {
    lock.close();
    throw error;
  }
  return lock;
}

/** {@linkcode lockMerges}, blocking (for the synchronous sweep). */
export function lockMergesSync(stateDir: string): Deno.FsFile {
  const lock = openMergeLock(stateDir);
  try {
    lock.lockSync(true);
  } catch (error) {
    lock.close();
    throw error;
  }
  return lock;
}

/** One session's record as it is on disk now, if it is there and readable. */
function readSessionRecord(
  stateDir: string,
  session: string,
): SessionRecord | undefined {
  try {
    const text = readTextIfPresent(
      join(sessionsDir(stateDir), `${session}.json`),
    );
    if (text === undefined) return undefined;
    const record = JSON.parse(text) as SessionRecord;
    return record.version === 1 && Array.isArray(record.files)
      ? record
      : undefined;
  } catch {
    return undefined;
  }
}

/** Every readable session record. */
export function readSessionRecords(stateDir: string): SessionRecord[] {
  const folder = sessionsDir(stateDir);
  const records: SessionRecord[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(folder)];
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return records;
    throw new CantCreateError(
      `cannot read folder ${folder}: ${describeFsError(error)}`,
    );
  }
  for (const entry of entries) {
    if (!entry.isFile || !entry.name.endsWith(".json")) continue;
    try {
      const text = readTextIfPresent(join(folder, entry.name));
      if (text === undefined) continue;
      const record = JSON.parse(text) as SessionRecord;
      if (record.version === 1 && Array.isArray(record.files)) {
        records.push(record);
      }
    } catch {
      // A record we cannot read is not ours to delete.
    }
  }
  return records;
}

/**
 * The live session that wrote `path`, if any, other than the session
 * `except` (the one asking, whose record already lists the path).
 */
export function liveSessionOwning(
  stateDir: string,
  path: string,
  except?: string,
): SessionRecord | undefined {
  return readSessionRecords(stateDir).find((record) =>
    record.session !== except && isSessionAlive(record) &&
    (record.files.some((file) => file.path === path) ||
      (record.restores ?? []).some((restore) => restore.path === path))
  );
}

/**
 * True while the sherlock that runs the session, or its agent, runs: an
 * agent that outlived a killed sherlock still reads the session's config.
 */
export function isSessionAlive(record: SessionRecord): boolean {
  return isProcessRunning(record.pid, record.processStart) ||
    (record.agentPid !== undefined &&
      isProcessRunning(record.agentPid, record.agentProcessStart ?? null));
}

/**
 * Writes a file of this session: 0600, atomically, and exclusively — if
 * anything already exists at `path`, nothing is written and
 * {@linkcode CantCreateError} says who owns it. The record of `session`
 * must already list the file (see {@linkcode recordFile}).
 */
export function writeSessionFile(
  options: { stateDir: string; session: string; path: string; text: string },
): void {
  const written = writeFileExclusively({
    path: options.path,
    bytes: new TextEncoder().encode(options.text),
    mode: 0o600,
    durable: false,
  });
  if (written) return;
  const owner = liveSessionOwning(
    options.stateDir,
    options.path,
    options.session,
  );
  throw new CantCreateError(
    owner
      ? `${options.path} is in use by sherlock session ${owner.session} ` +
        `(${owner.agent}, pid ${owner.pid}); wait for it to end`
      : `${options.path} exists and sherlock did not write it; ` +
        "move it away or change the profile's [mcp] path",
  );
}

/**
 * Adds a file to the record (before it is written). `text` is hashed for a
 * file outside sherlock's private runtime folder (see {@linkcode WrittenFile});
 * pass null for one inside it: hashing costs milliseconds at start-up.
 */
export function recordFile(
  record: SessionRecord,
  path: string,
  text: string | null,
): void {
  record.files.push({ path, sha256: text === null ? null : sha256Hex(text) });
}

function removeIfUnchanged(file: WrittenFile): void {
  if (file.sha256 === null) {
    removeIfPresent(file.path);
    return;
  }
  let bytes: Uint8Array;
  try {
    bytes = Deno.readFileSync(file.path);
  } catch {
    return;
  }
  if (sha256Hex(bytes) === file.sha256) removeIfPresent(file.path);
}

/** The process's start time in clock ticks since boot (Linux), else null. */
function processStartTime(pid: number): string | null {
  return readProcStat(pid)?.startTime ?? null;
}
