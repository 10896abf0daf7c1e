/**
 * Replacing this process with another program: `execve(2)` through Deno's
 * FFI (Deno has no exec of its own), so that the token shim becomes its MCP
 * server instead of staying resident as its parent. Linux (glibc's
 * `libc.so.6`) and macOS (`libSystem.dylib`); {@linkcode openExec} returns
 * undefined wherever that is impossible (Windows, no `Deno.dlopen`, the FFI
 * permission refused, the library missing, e.g. on musl) and the caller
 * spawns the program instead. FFI is stable in Deno 2.9: `--allow-ffi` (in
 * sherlock's `--allow-all`) is enough, no `--unstable-ffi`.
 *
 * What Deno changed in this process and execve would pass on, measured on
 * Deno 2.9.6 (`/proc/<pid>/status`), and what {@linkcode Exec.exec} does
 * about it:
 * - SIGPIPE is ignored (Rust's runtime does that), and an ignored signal
 *   stays ignored across execve: a server writing to a closed pipe would get
 *   EPIPE instead of dying. It is set back to SIG_DFL, as Rust's and Deno's
 *   own spawn do for a child. Every other ignored signal was ignored by
 *   whoever started sherlock (e.g. nohup) and stays so, as it would for a
 *   server the agent started directly.
 * - Handlers (SIGSEGV and SIGBUS for V8, glibc's SIGSETXID, and any signal
 *   listener) are reset to SIG_DFL by execve itself.
 * - The calling (main) thread's signal mask is empty, but Deno's signal
 *   thread blocks nearly all: the mask is set to empty before execve anyway,
 *   so that no signal stays blocked in the server.
 * - File descriptors 0–2 are inherited as they are: Deno opens them neither
 *   close-on-exec nor non-blocking; every descriptor Deno opens itself is
 *   close-on-exec.
 * - The soft RLIMIT_NOFILE that Deno raises at start-up stays raised, as it
 *   did for a server spawned by the shim.
 *
 * @module
 */

/** What one execve gets: all three are copied into C strings. */
export interface ExecRequest {
  /** The program's path (execve does no PATH search). */
  path: string;
  /** Its whole argv, argv[0] included. */
  argv: readonly string[];
  /** Its whole environment. */
  env: Readonly<Record<string, string>>;
}

/** libc's execve, opened; {@linkcode openExec} makes one. */
export interface Exec {
  /**
   * Replaces this process with `request.path`: returns only when execve
   * failed, with the errno (this process's signal state then restored).
   * Throws a `TypeError` for a string holding a NUL byte, which no C string
   * can carry.
   */
  exec(request: ExecRequest): number;
  /** Closes the library (only useful when exec failed). */
  close(): void;
}

/** errno values the caller maps (the same on Linux and macOS). */
export const Errno = {
  /** No such file. */
  ENOENT: 2,
  /** Argument list too long. */
  E2BIG: 7,
  /** Exec format error. */
  ENOEXEC: 8,
  /** Permission denied. */
  EACCES: 13,
} as const;

const SIGPIPE = 13;

/** How each platform spells what differs. */
interface Platform {
  library: string;
  /** The function that returns errno's address. */
  errno: string;
  /** sigprocmask's SIG_SETMASK. */
  setMask: number;
}

const PLATFORMS: Partial<Record<typeof Deno.build.os, Platform>> = {
  linux: { library: "libc.so.6", errno: "__errno_location", setMask: 2 },
  darwin: { library: "libSystem.dylib", errno: "__error", setMask: 3 },
};

// glibc's sigset_t is 128 bytes, macOS's 4: an all-zero buffer of the
// larger size is the empty set on both.
const SIGSET_BYTES = 128;

function symbols(errno: string) {
  return {
    execve: { parameters: ["buffer", "buffer", "buffer"], result: "i32" },
    sigprocmask: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
    signal: { parameters: ["i32", "pointer"], result: "pointer" },
    errnoLocation: { name: errno, parameters: [], result: "pointer" },
  } as const;
}

/**
 * Opens libc's execve for this platform, or returns undefined when this
 * process cannot exec (see the module's documentation); never throws.
 */
export function openExec(): Exec | undefined {
  const platform = PLATFORMS[Deno.build.os];
  if (platform === undefined || typeof Deno.dlopen !== "function") {
    return undefined;
  }
  let library: Deno.DynamicLibrary<ReturnType<typeof symbols>>;
  try {
    library = Deno.dlopen(platform.library, symbols(platform.errno));
  } catch {
    // No FFI permission, or no such library: spawn instead.
    return undefined;
  }
  const libc = library.symbols;
  return {
    exec(request) {
      const strings = new CStrings([
        request.path,
        ...request.argv,
        ...Object.entries(request.env).map(([name, value]) =>
          `${name}=${value}`
        ),
      ]);
      const path = strings.at(0);
      const argv = strings.pointerArray(1, 1 + request.argv.length);
      const envp = strings.pointerArray(1 + request.argv.length);
      const oldMask = new Uint8Array(new ArrayBuffer(SIGSET_BYTES));
      libc.sigprocmask(
        platform.setMask,
        new Uint8Array(new ArrayBuffer(SIGSET_BYTES)),
        oldMask,
      );
      const oldPipe = libc.signal(SIGPIPE, null);
      libc.execve(path, argv, envp);
      // Still here: execve failed. Read errno before anything else can
      // change it, then put back what the rest of this run expects.
      const errno = new Deno.UnsafePointerView(libc.errnoLocation()!)
        .getInt32();
      libc.signal(SIGPIPE, oldPipe);
      libc.sigprocmask(platform.setMask, oldMask, null);
      return errno;
    },
    close() {
      library.close();
    },
  };
}

/**
 * NUL-terminated UTF-8 copies of some strings in one off-heap buffer, and
 * NULL-terminated arrays of pointers to them. (A buffer from
 * `new ArrayBuffer` never moves, so its pointers stay valid while it is
 * referenced.)
 */
class CStrings {
  #buffer: Uint8Array;
  #offsets: number[] = [];
  #base: bigint;

  constructor(strings: readonly string[]) {
    const encoder = new TextEncoder();
    const encoded = strings.map((text) => {
      const bytes = encoder.encode(text);
      if (bytes.includes(0)) {
        throw new TypeError("a C string cannot hold a NUL byte");
      }
      return bytes;
    });
    const size = encoded.reduce((sum, bytes) => sum + bytes.length + 1, 0);
    this.#buffer = new Uint8Array(new ArrayBuffer(Math.max(size, 128)));
    let offset = 0;
    for (const bytes of encoded) {
      this.#offsets.push(offset);
      this.#buffer.set(bytes, offset);
      offset += bytes.length + 1; // the buffer is zeroed: the NUL is there
    }
    this.#base = BigInt(
      Deno.UnsafePointer.value(Deno.UnsafePointer.of(this.#buffer)),
    );
  }

  /** String `index` alone, as a NUL-terminated buffer. */
  at(index: number): Uint8Array {
    const start = this.#offsets[index];
    return this.#buffer.subarray(start, this.#buffer.indexOf(0, start) + 1);
  }

  /** Pointers to strings `from` to `to` (exclusive), then NULL. */
  pointerArray(from: number, to = this.#offsets.length): BigUint64Array {
    const pointers = new BigUint64Array(
      new ArrayBuffer(Math.max((to - from + 1) * 8, 128)),
    );
    for (let index = from; index < to; index++) {
      pointers[index - from] = this.#base + BigInt(this.#offsets[index]);
    }
    return pointers;
  }
}
