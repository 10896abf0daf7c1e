/**
 * Running a service's credential helper (`[token] source = "command"`).
 *
 * The helper gets no terminal (stdin is /dev/null) and a time limit. It
 * prints either the bare token or JSON `{"token": "…", "expires_at":
 * "<RFC 3339>"}`. On failure its stderr is shown to the operator; its stdout
 * never is, because it may hold a token.
 *
 * @module
 */

import { concatBytes } from "../../../runtime/bytes.ts";
import { hasControlCharacters } from "../../../config/names.ts";

/** What a helper produced. */
export interface HelperToken {
  token: string;
  /** When it expires, in ms since the epoch, if the helper said. */
  expiresAt?: number;
}

/** A helper that failed; the message names the service and never the token. */
export class HelperError extends Error {
  /** Creates the error. */
  constructor(message: string) {
    super(message);
    this.name = "HelperError";
  }
}

/** How to run one helper. */
export interface RunHelperOptions {
  /** The service's name, for messages. */
  service: string;
  /** The helper's argv. */
  command: readonly string[];
  /** Seconds before it is killed. */
  timeoutSeconds: number;
  /** The folder it runs in. */
  cwd?: string;
  /** The daemon's clock, for a relative expiry (the system's when unset). */
  now?: () => number;
}

/** The most stderr shown for a failing helper. */
const MAX_STDERR_CHARS = 2_000;

/** The most stdout a helper may print (a token is far smaller). */
export const MAX_HELPER_STDOUT_BYTES = 64 * 1024;

/** How long after SIGTERM a helper that is out of time gets SIGKILL. */
const KILL_GRACE_MS = 1_000;

/**
 * How long the pipes may stay open after the helper exited: whatever it
 * left running in the background may hold them, and must not hold the
 * token request too.
 */
const PIPE_GRACE_MS = 1_000;

/**
 * Runs the helper and returns its token. Throws {@linkcode HelperError}.
 * Returns (or throws) at most about `timeoutSeconds` + 2 s after the call,
 * whatever the helper and the processes it starts do.
 */
export async function runCredentialHelper(
  options: RunHelperOptions,
): Promise<HelperToken> {
  const [program, ...args] = options.command;
  const label = `credential helper of service ${options.service} (${program})`;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(program, {
      args,
      cwd: options.cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      // Its own process group, so that a timeout stops whatever it started.
      detached: true,
    }).spawn();
  } catch (error) {
    throw new HelperError(
      `${label} could not be started: ${
        error instanceof Deno.errors.NotFound
          ? "not found on PATH"
          : (error as Error).message
      }`,
    );
  }
  const stdout = collect(child.stdout, { limit: MAX_HELPER_STDOUT_BYTES });
  const stderr = collect(child.stderr, { limit: 16 * 1024, keepTail: true });
  let timedOut = false;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  const timer = setTimeout(() => {
    timedOut = true;
    kill(child, "SIGTERM");
    killTimer = setTimeout(() => kill(child, "SIGKILL"), KILL_GRACE_MS);
  }, options.timeoutSeconds * 1000);
  let status: Deno.CommandStatus;
  try {
    status = await child.status;
  } finally {
    clearTimeout(timer);
    clearTimeout(killTimer);
  }
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    Promise.all([stdout.done, stderr.done]),
    new Promise((resolve) => graceTimer = setTimeout(resolve, PIPE_GRACE_MS)),
  ]);
  clearTimeout(graceTimer);
  await Promise.all([stdout.cancel(), stderr.cancel()]);
  if (timedOut) {
    throw new HelperError(
      `${label} did not finish within ${options.timeoutSeconds} s and was stopped; ` +
        "raise [token] timeout or fix the helper",
    );
  }
  if (!status.success) {
    const text = new TextDecoder().decode(stderr.bytes()).trim().slice(
      -MAX_STDERR_CHARS,
    );
    const how = status.signal
      ? `was killed by ${status.signal}`
      : `exited with ${status.code}`;
    throw new HelperError(
      `${label} ${how}${
        text
          ? `: ${text.replaceAll(/\r?\n/g, " | ")}`
          : " and printed nothing on stderr"
      }`,
    );
  }
  if (stdout.overflowed) {
    throw new HelperError(
      `${label} printed more than ${MAX_HELPER_STDOUT_BYTES} bytes; print the bare token or JSON {"token": …}`,
    );
  }
  return parseHelperOutput({
    label,
    stdout: new TextDecoder().decode(stdout.bytes()),
    now: (options.now ?? Date.now)(),
  });
}

/** A pipe being read into memory. */
interface Collected {
  /** Resolves at the end of the stream (or when it fails or is cancelled). */
  done: Promise<void>;
  /** Stops reading and releases the pipe. */
  cancel(): Promise<void>;
  /** What was read (the first `limit` bytes, or the last with `keepTail`). */
  bytes(): Uint8Array;
  /** True when more than `limit` bytes came. */
  readonly overflowed: boolean;
}

function collect(
  stream: ReadableStream<Uint8Array>,
  options: { limit: number; keepTail?: boolean },
): Collected {
  const reader = stream.getReader();
  let chunks: Uint8Array[] = [];
  let total = 0;
  let overflowed = false;
  const done = (async () => {
    try {
      while (true) {
        const { value, done } = await reader.read();
        if (done) return;
        total += value.length;
        if (total > options.limit) {
          overflowed = true;
          if (!options.keepTail) continue;
        }
        chunks.push(value);
        if (options.keepTail && total > options.limit) {
          const tail = concatBytes(chunks);
          chunks = [tail.slice(-options.limit)];
          total = chunks[0].length;
        }
      }
    } catch {
      // Cancelled, or the pipe broke: keep what was read.
    }
  })();
  return {
    done,
    async cancel() {
      await reader.cancel().catch(() => {});
      await done;
    },
    bytes: () => concatBytes(chunks).slice(0, options.limit),
    get overflowed() {
      return overflowed;
    },
  };
}

/**
 * Reads a helper's stdout: the bare token (one line, no spaces) or a JSON
 * object with a string `token` and an optional RFC 3339 `expires_at` that is
 * still in the future. Never quotes the output in an error.
 */
export function parseHelperOutput(
  options: { label: string; stdout: string; now: number },
): HelperToken {
  const text = options.stdout.trim();
  if (text === "") throw new HelperError(`${options.label} printed no token`);
  if (!text.startsWith("{")) {
    if (/\s/.test(text)) {
      throw new HelperError(
        `${options.label} printed more than one word; print the bare token or JSON {"token": …}`,
      );
    }
    return { token: text };
  }
  let parsed: { token?: unknown; expires_at?: unknown };
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new HelperError(`${options.label} printed invalid JSON`);
  }
  if (typeof parsed.token !== "string" || parsed.token.trim() === "") {
    throw new HelperError(
      `${options.label} printed JSON without a string "token"`,
    );
  }
  if (hasControlCharacters(parsed.token)) {
    throw new HelperError(
      `${options.label} printed a "token" with control characters (a newline?); it would break the header or variable it goes into`,
    );
  }
  if (parsed.expires_at === undefined || parsed.expires_at === null) {
    return { token: parsed.token };
  }
  const expiresAt = typeof parsed.expires_at === "string"
    ? Date.parse(parsed.expires_at)
    : NaN;
  if (Number.isNaN(expiresAt)) {
    throw new HelperError(
      `${options.label} printed an "expires_at" that is not an RFC 3339 time`,
    );
  }
  if (expiresAt <= options.now) {
    throw new HelperError(
      `${options.label} printed a token that already expired at ${
        new Date(expiresAt).toISOString()
      }`,
    );
  }
  return { token: parsed.token, expiresAt };
}

function kill(child: Deno.ChildProcess, signal: Deno.Signal): void {
  try {
    Deno.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}
