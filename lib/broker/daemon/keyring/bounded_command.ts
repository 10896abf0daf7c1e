/**
 * One run of a keyring's command-line tool (`secret-tool`, `security`,
 * `powershell`) with a hard bound on its time: a keyring that stalls (a
 * locked collection waiting for a prompt nobody sees, a D-Bus that does not
 * answer) must cost a broker a second or two, never minutes. The secret
 * goes on stdin, never into argv.
 *
 * @module
 */

/** How long one keyring call may take before its process group is killed. */
export const KEYRING_TIMEOUT_MS = 1500;

/** What a bounded run gives back. */
export interface BoundedResult {
  /** The exit code; undefined when the process was killed or did not start. */
  readonly code: number | undefined;
  /** Its stdout (at most {@linkcode MAX_OUTPUT_BYTES}). */
  readonly stdout: Uint8Array;
  /** Its stderr as text, trimmed, at most a few hundred characters. */
  readonly stderr: string;
  /** Why it gave no exit code: not installed, timed out, or failed to start. */
  readonly failure?: string;
}

/** The most stdout or stderr kept: a key is 44 bytes of base64. */
export const MAX_OUTPUT_BYTES = 16 * 1024;

/**
 * Runs `program` with `args` (never a secret), writes `stdin` to it, and
 * returns within about `timeoutMs` whatever the program does: at the
 * deadline its process group is killed.
 */
export async function runBounded(
  options: {
    program: string;
    args: readonly string[];
    stdin?: Uint8Array;
    timeoutMs?: number;
    env?: Record<string, string>;
  },
): Promise<BoundedResult> {
  const timeoutMs = options.timeoutMs ?? KEYRING_TIMEOUT_MS;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(options.program, {
      args: [...options.args],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      env: options.env,
      // Its own process group: the deadline stops what it started too.
      detached: true,
    }).spawn();
  } catch (error) {
    return {
      code: undefined,
      stdout: new Uint8Array(),
      stderr: "",
      failure: error instanceof Deno.errors.NotFound
        ? `${options.program} is not installed`
        : `${options.program} could not be started`,
    };
  }
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch {
      try {
        child.kill("SIGKILL");
      } catch {
        // Gone already.
      }
    }
  }, timeoutMs);
  // Something the tool started may keep its pipes open after it exited
  // or was killed: the reads end at the deadline as well.
  const readers = [child.stdout.getReader(), child.stderr.getReader()];
  const stopReading = setTimeout(
    () => readers.forEach((reader) => reader.cancel().catch(() => {})),
    timeoutMs + PIPE_GRACE_MS,
  );
  const stdout = readBounded(readers[0]);
  const stderr = readBounded(readers[1]);
  try {
    const writer = child.stdin.getWriter();
    try {
      if (options.stdin) await writer.write(options.stdin);
      await writer.close();
    } catch {
      // It exited without reading: its status says why.
    }
    const status = await child.status;
    const [out, err] = await Promise.all([stdout, stderr]);
    const text = new TextDecoder().decode(err).trim().replaceAll(
      /\s*\r?\n\s*/g,
      " | ",
    ).slice(0, 300);
    if (timedOut) {
      out.fill(0);
      return {
        code: undefined,
        stdout: new Uint8Array(),
        stderr: text,
        failure: `${options.program} did not answer within ${
          timeoutMs / 1000
        } s`,
      };
    }
    return {
      code: status.signal ? undefined : status.code,
      stdout: out,
      stderr: text,
      ...(status.signal
        ? { failure: `${options.program} was killed by ${status.signal}` }
        : {}),
    };
  } finally {
    clearTimeout(timer);
    clearTimeout(stopReading);
  }
}

/** How long the pipes are read after the deadline. */
const PIPE_GRACE_MS = 200;

/** Reads a stream to its end, keeping at most {@linkcode MAX_OUTPUT_BYTES}. */
async function readBounded(
  reader: ReadableStreamDefaultReader<Uint8Array>,
): Promise<Uint8Array> {
  const buffer = new Uint8Array(MAX_OUTPUT_BYTES);
  let length = 0;
  for (;;) {
    let chunk: Uint8Array;
    try {
      const next = await reader.read();
      if (next.done) break;
      chunk = next.value;
    } catch {
      break;
    }
    const room = MAX_OUTPUT_BYTES - length;
    if (room > 0) {
      buffer.set(chunk.subarray(0, room), length);
      length += Math.min(room, chunk.length);
    }
    chunk.fill(0);
  }
  return buffer.subarray(0, length);
}
