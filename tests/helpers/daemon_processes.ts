/**
 * Finding the broker daemons of a test HOME by scanning /proc: the daemon
 * is started by sherlock, not by the test, so there is no child to wait on.
 *
 * @module
 */

/**
 * The pids of the live (not zombie) `sherlock broker serve` processes whose
 * environment has `XDG_RUNTIME_DIR=<runtimeHome>`, found by scanning /proc,
 * or that hold the lock on `<runtimeHome>/sherlock/broker.live`: a daemon is
 * non-dumpable, so only root can read its environment.
 */
export function brokerDaemonPids(runtimeHome: string): number[] {
  const holders = liveLockHolders(`${runtimeHome}/sherlock/broker.live`);
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const folder = `/proc/${entry.name}`;
    try {
      const argv = Deno.readTextFileSync(`${folder}/cmdline`).split("\0");
      const index = argv.indexOf("broker");
      if (index === -1 || argv[index + 1] !== "serve") continue;
      if (processState(Number(entry.name)) === "Z") continue;
      if (holders.has(Number(entry.name))) {
        pids.push(Number(entry.name));
        continue;
      }
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

/** The pids that hold a lock on the file at `path`, from /proc/locks. */
export function liveLockHolders(path: string): Set<number> {
  const holders = new Set<number>();
  let info: Deno.FileInfo;
  let locks: string;
  try {
    info = Deno.statSync(path);
    locks = Deno.readTextFileSync("/proc/locks");
  } catch {
    return holders;
  }
  const dev = info.dev;
  // glibc's gnu_dev_major/minor; /proc/locks prints them in hex.
  const major = Math.floor(dev / 256) % 4096 +
    Math.floor(dev / 2 ** 32) - Math.floor(dev / 2 ** 32) % 4096;
  const high = Math.floor(dev / 4096);
  const minor = dev % 256 + (high - high % 256) % 2 ** 32;
  for (const line of locks.split("\n")) {
    // "1: FLOCK  ADVISORY  READ 1234 fd:01:56789 0 EOF"; waiters have "->".
    const match = /^\d+: \S+\s+\S+\s+\S+\s+(\d+) ([0-9a-f]+):([0-9a-f]+):(\d+) /
      .exec(line);
    if (
      match && Number(match[4]) === info.ino &&
      parseInt(match[2], 16) === major && parseInt(match[3], 16) === minor
    ) {
      holders.add(Number(match[1]));
    }
  }
  return holders;
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
