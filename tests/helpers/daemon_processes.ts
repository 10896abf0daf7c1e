/**
 * Finding the broker daemons of a test HOME by scanning /proc: the daemon
 * is started by sherlock, not by the test, so there is no child to wait on.
 *
 * @module
 */

/**
 * The pids of the live (not zombie) `sherlock broker serve` processes whose
 * environment has `XDG_RUNTIME_DIR=<runtimeHome>`, found by scanning /proc.
 */
export function brokerDaemonPids(runtimeHome: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const folder = `/proc/${entry.name}`;
    try {
      const argv = Deno.readTextFileSync(`${folder}/cmdline`).split("\0");
      const index = argv.indexOf("broker");
      if (index === -1 || argv[index + 1] !== "serve") continue;
      if (processState(Number(entry.name)) === "Z") continue;
      const environ = Deno.readTextFileSync(`${folder}/environ`).split("\0");
      if (environ.includes(`XDG_RUNTIME_DIR=${runtimeHome}`)) {
        pids.push(Number(entry.name));
      }
    } catch {
      // The process ended while we looked.
    }
  }
  return pids.sort((a, b) => a - b);
}

/** A process's state letter (R, S, Z…), or undefined when it is gone. */
export function processState(pid: number): string | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0];
  } catch {
    return undefined;
  }
}

/** True while `pid` exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  const state = processState(pid);
  return state !== undefined && state !== "Z";
}
