/**
 * `/proc/<pid>/stat` (Linux), read in one place: the process tree that
 * forwarded signals reach, and the start time that tells a session's
 * process from a later one with the same pid.
 *
 * @module
 */

/** The fields of `/proc/<pid>/stat` that sherlock uses. */
export interface ProcStat {
  /** The parent's pid (field 4). */
  ppid: number;
  /** The process group (field 5). */
  pgrp: number;
  /** The start time in clock ticks since boot (field 22), as written. */
  startTime: string;
}

/**
 * Parses the text of `/proc/<pid>/stat`, or returns undefined when it is
 * not one. The command name (field 2) may hold spaces and parentheses, so
 * the fields are counted from its last closing parenthesis.
 */
export function parseProcStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(")");
  if (close === -1) return undefined;
  // fields[0] is field 3 (the state).
  const fields = text.slice(close + 2).split(" ");
  const ppid = Number(fields[1]);
  const pgrp = Number(fields[2]);
  const startTime = fields[19];
  if (!Number.isInteger(ppid) || !Number.isInteger(pgrp)) return undefined;
  if (startTime === undefined || !/^\d+$/.test(startTime)) return undefined;
  return { ppid, pgrp, startTime };
}

/** The stat of `pid`, or undefined when it is gone (or not on Linux). */
export function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return undefined;
  }
}
