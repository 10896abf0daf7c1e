/**
 * The peak resident memory of a running process tree, from `/proc` (Linux):
 * a relay may be more than one process (a launcher and its runtime), so the
 * benchmark counts the high-water mark (`VmHWM`) of the spawned process and
 * of every descendant, summed. The sum is an upper bound of the tree's real
 * peak (the processes need not peak at the same moment); for a tree of one
 * process it is exact.
 *
 * @module
 */

/** The `VmHWM` of a `/proc/<pid>/status` text, in KiB; NaN if absent. */
export function highWaterKiB(status: string): number {
  return Number(/^VmHWM:\s+(\d+)\s+kB$/m.exec(status)?.[1] ?? NaN);
}

/** The pids of `pid`'s children, over all its threads; [] once it is gone. */
function childrenOf(pid: number): number[] {
  let tasks: Deno.DirEntry[];
  try {
    tasks = [...Deno.readDirSync(`/proc/${pid}/task`)];
  } catch {
    return [];
  }
  const children: number[] = [];
  for (const task of tasks) {
    try {
      const text = Deno.readTextFileSync(
        `/proc/${pid}/task/${task.name}/children`,
      );
      children.push(...text.split(" ").filter(Boolean).map(Number));
    } catch {
      // The thread ended while being read: it has no children to count.
    }
  }
  return children;
}

/** `pid` and all its descendants that are alive now, `pid` first. */
export function processTree(pid: number): number[] {
  const tree: number[] = [];
  const pending = [pid];
  while (pending.length > 0) {
    const next = pending.shift()!;
    if (tree.includes(next)) continue;
    tree.push(next);
    pending.push(...childrenOf(next));
  }
  return tree;
}

/** What {@linkcode treePeakKiB} found. */
export interface TreePeak {
  /** The sum of the processes' `VmHWM`, in KiB. */
  peakKiB: number;
  /** How many processes were counted. */
  processes: number;
}

/**
 * The summed peak resident memory of `pid` and its live descendants. Read
 * it while the tree still runs: a reaped process has no `/proc` entry.
 */
export function treePeakKiB(pid: number): TreePeak {
  let peakKiB = 0;
  let processes = 0;
  for (const member of processTree(pid)) {
    try {
      const kib = highWaterKiB(
        Deno.readTextFileSync(`/proc/${member}/status`),
      );
      if (Number.isFinite(kib)) {
        peakKiB += kib;
        processes++;
      }
    } catch {
      // It ended between the walk and this read; it no longer counts.
    }
  }
  return { peakKiB, processes };
}
