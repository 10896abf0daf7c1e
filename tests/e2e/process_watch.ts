/**
 * Watching a process tree for a token while it runs: every few
 * milliseconds, each process below a root (and in its process group) has
 * its `/proc/<pid>/environ` and `/proc/<pid>/cmdline` searched for the
 * token, and the rendered config files named by the caller are read, so
 * that a CLI that exits by itself is seen too. Linux only.
 *
 * `/proc/<pid>/environ` is the environment a process was started with
 * (exec), or, between fork and exec, its parent's copy: a variable a
 * program sets in itself later does not show there, but every child it
 * starts with that variable does.
 *
 * @module
 */

/** What was seen of one process. */
export interface Sighting {
  /** Its pid. */
  pid: number;
  /** Its parent's pid when first seen (an orphan's changes later). */
  ppid: number;
  /** Its process group (last seen). */
  pgrp: number;
  /** Each command line it was seen with (a fork, then an exec). */
  cmdlines: string[];
  /** Whether its environment could be read at least once. */
  environRead: boolean;
  /** Whether a token was ever in its environment. */
  tokenInEnviron: boolean;
  /** Whether a token was ever in its command line. */
  tokenInCmdline: boolean;
}

/** Options of {@linkcode watchProcesses}. */
export interface WatchOptions {
  /** The root of the tree (sherlock). */
  root: number;
  /** The text to look for. */
  token: string;
  /**
   * More texts to look for, asked for on each round: tokens learnt while
   * the tree runs (an OAuth access token first seen by the server). A
   * process is searched for them each time it is looked at, so one that
   * exits before a token is learnt is searched for the others only.
   */
  moreTokens?: () => readonly string[];
  /** Files to read on each round (returns paths; missing ones are skipped). */
  files?: () => string[];
  /** How often to look (default 20 ms). */
  intervalMs?: number;
}

/** A running watch. */
export interface ProcessWatch {
  /** Every process seen, by pid. */
  sightings: Map<number, Sighting>;
  /** Each text seen of each watched file, by path. */
  files: Map<string, string[]>;
  /** Looks once more, then stops. */
  stop(): void;
}

/** Starts watching (see the module's description). */
export function watchProcesses(options: WatchOptions): ProcessWatch {
  const sightings = new Map<number, Sighting>();
  const files = new Map<string, string[]>();
  const look = () => {
    const tokens = [options.token, ...options.moreTokens?.() ?? []];
    const holds = (text: string) => tokens.some((t) => text.includes(t));
    for (const proc of treeAndGroup(options.root)) {
      const sighting = sightings.get(proc.pid) ?? {
        pid: proc.pid,
        ppid: proc.ppid,
        pgrp: proc.pgrp,
        cmdlines: [],
        environRead: false,
        tokenInEnviron: false,
        tokenInCmdline: false,
      };
      sighting.pgrp = proc.pgrp;
      const cmdline = readProc(proc.pid, "cmdline");
      if (cmdline !== undefined && cmdline !== "") {
        const shown = cmdline.split("\0").join(" ").trim();
        if (!sighting.cmdlines.includes(shown)) sighting.cmdlines.push(shown);
        if (holds(cmdline)) sighting.tokenInCmdline = true;
      }
      const environ = readProc(proc.pid, "environ");
      if (environ !== undefined && environ !== "") {
        sighting.environRead = true;
        if (holds(environ)) sighting.tokenInEnviron = true;
      }
      sightings.set(proc.pid, sighting);
    }
    for (const path of options.files?.() ?? []) {
      try {
        const text = Deno.readTextFileSync(path);
        const seen = files.get(path) ?? [];
        if (!seen.includes(text)) files.set(path, [...seen, text]);
      } catch {
        // Not there (yet, or any more).
      }
    }
  };
  look();
  const timer = setInterval(look, options.intervalMs ?? 20);
  return {
    sightings,
    files,
    stop() {
      clearInterval(timer);
      look();
    },
  };
}

interface Proc {
  pid: number;
  ppid: number;
  pgrp: number;
}

/** `root`, its live descendants, and the live members of its group. */
function treeAndGroup(root: number): Proc[] {
  const procs = new Map<number, Proc>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const stat = readProc(Number(entry.name), "stat");
    if (stat === undefined) continue;
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z") continue;
    const pid = Number(entry.name);
    procs.set(pid, { pid, ppid: Number(fields[1]), pgrp: Number(fields[2]) });
  }
  const children = new Map<number, number[]>();
  for (const proc of procs.values()) {
    children.set(proc.ppid, [...(children.get(proc.ppid) ?? []), proc.pid]);
  }
  const found = new Map<number, Proc>();
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    const proc = procs.get(pid);
    if (proc === undefined || found.has(pid)) continue;
    found.set(pid, proc);
    queue.push(...(children.get(pid) ?? []));
  }
  for (const proc of procs.values()) {
    if (proc.pgrp === root) found.set(proc.pid, proc);
  }
  return [...found.values()];
}

function readProc(pid: number, file: string): string | undefined {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/${file}`);
  } catch {
    return undefined;
  }
}
