/**
 * The one libc call the broker daemon needs that Deno does not offer:
 * `prctl(PR_SET_DUMPABLE, 0)`, through Deno's FFI (stable in Deno 2:
 * `--allow-ffi`, which `--allow-all` includes, and no `--unstable-*` flag).
 *
 * A non-dumpable process is what ssh-agent and gpg-agent make of
 * themselves: Linux then owns its `/proc/<pid>` files by root and refuses
 * `ptrace`, `/proc/<pid>/mem` and `/proc/<pid>/environ` to other processes
 * of the same user that lack `CAP_SYS_PTRACE`, and writes no core dump.
 * Only the daemon imports this; the launch path never loads it.
 *
 * @module
 */

/** `PR_SET_DUMPABLE` from `<linux/prctl.h>`. */
const PR_SET_DUMPABLE = 4;

/** The C libraries to try, glibc first, then musl's name. */
const LIBC_NAMES = ["libc.so.6", "libc.so"];

/**
 * Makes this process non-dumpable on Linux. True when it is now; false on
 * other systems, or when no libc could be loaded or the call failed (the
 * caller decides whether to say so). Never throws.
 */
export function setNonDumpable(): boolean {
  if (Deno.build.os !== "linux") return false;
  for (const name of LIBC_NAMES) {
    let library;
    try {
      library = Deno.dlopen(name, {
        prctl: {
          parameters: ["i32", "u64", "u64", "u64", "u64"],
          result: "i32",
        },
      });
    } catch {
      continue;
    }
    try {
      return library.symbols.prctl(PR_SET_DUMPABLE, 0n, 0n, 0n, 0n) === 0;
    } catch {
      return false;
    } finally {
      library.close();
    }
  }
  return false;
}
