/**
 * Processes, read from Linux's `/proc` (no library does this without a
 * `node:` import): the processes an agent started, so that a forwarded
 * signal reaches them as it would when a shell signals the job's process
 * group, and `/proc/<pid>/stat` itself.
 *
 * Some agent CLIs are launchers that do not pass signals on: the npm
 * `copilot` command leaves its native binary (and its MCP servers) running
 * on SIGTERM, and Gemini CLI and Qwen Code relaunch themselves with a parent
 * that ignores it. sherlock shares its process group with the agent, so it
 * cannot signal the group without signalling itself; it signals the agent
 * and every descendant still in that group instead (processes that moved
 * to a group of their own, like Codex's servers, are their owner's to stop).
 * Linux only; elsewhere only the agent itself is signalled. Session
 * records use the stat parser to tell a session's process from a later one
 * with the same pid.
 *
 * @module
 */

/** The pids of `root`'s descendants that share its process group, deepest last. */
export function descendantsInGroup(root: number): number[] {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync("/proc")];
  } catch {
    return [];
  }
  const children = new Map<number, number[]>();
  const groups = new Map<number, number>();
  for (const entry of entries) {
    if (!/^\d+$/.test(entry.name)) continue;
    const pid = Number(entry.name);
    const stat = readProcStat(pid);
    if (stat === undefined) continue;
    groups.set(pid, stat.pgrp);
    const siblings = children.get(stat.ppid) ?? [];
    siblings.push(pid);
    children.set(stat.ppid, siblings);
  }
  const group = groups.get(root);
  if (group === undefined) return [];
  const found: number[] = [];
  const queue = [...(children.get(root) ?? [])];
  while (queue.length > 0) {
    const pid = queue.shift() as number;
    if (groups.get(pid) === group) found.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return found;
}

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

/**
 * True while `pid` runs and is this user's (root: anyone's) — what
 * `kill(pid, 0)` tells — and, when `startTime` is given (Linux), is still
 * the process that had that start time, not a later one with the same pid.
 * A zombie does not run: an orphan whose new parent never reaps it (some
 * container inits) stays one for good. Off Linux, `node:process`'s kill
 * answers, reached through Deno's `process` global, which is set up on
 * first use: a static `node:` import would start Deno's Node compatibility
 * layer on every launch, at a cost of about a third of Deno's start-up.
 */
export function isProcessRunning(
  pid: number,
  startTime: string | null = null,
): boolean {
  if (Deno.build.os === "linux") {
    let owner: number | null;
    let text: string;
    try {
      owner = Deno.statSync(`/proc/${pid}`).uid;
      text = Deno.readTextFileSync(`/proc/${pid}/stat`);
    } catch {
      return false;
    }
    // Another user's process is not the one that wrote our files (kill
    // would fail with EPERM), unless we run as root.
    const uid = Deno.uid();
    if (uid !== 0 && owner !== uid) return false;
    const state = text[text.lastIndexOf(")") + 2];
    if (state === "Z" || state === "X") return false;
    const stat = parseProcStat(text);
    return startTime === null || stat === undefined ||
      stat.startTime === startTime;
  }
  const { process } = globalThis as unknown as {
    process: { kill(pid: number, signal: number): void };
  };
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    // ESRCH: gone. EPERM: the pid now belongs to another user.
    return false;
  }
}
