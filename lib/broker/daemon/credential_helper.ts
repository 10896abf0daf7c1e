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

/** What a helper produced. */
export interface HelperToken {
  /** The token. */
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
}

/** The most stderr shown for a failing helper. */
const MAX_STDERR_CHARS = 2_000;

/** Runs the helper and returns its token. Throws {@linkcode HelperError}. */
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
  let timedOut = false;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  const timer = setTimeout(() => {
    timedOut = true;
    kill(child, "SIGTERM");
    killTimer = setTimeout(() => kill(child, "SIGKILL"), 1_000);
  }, options.timeoutSeconds * 1000);
  const output = await child.output();
  clearTimeout(timer);
  clearTimeout(killTimer);
  if (timedOut) {
    throw new HelperError(
      `${label} did not finish within ${options.timeoutSeconds} s and was stopped; ` +
        "raise [token] timeout or fix the helper",
    );
  }
  if (!output.success) {
    const stderr = new TextDecoder().decode(output.stderr).trim().slice(
      -MAX_STDERR_CHARS,
    );
    const how = output.signal
      ? `was killed by ${output.signal}`
      : `exited with ${output.code}`;
    throw new HelperError(
      `${label} ${how}${
        stderr
          ? `: ${stderr.replaceAll("\n", " | ")}`
          : " and printed nothing on stderr"
      }`,
    );
  }
  return parseHelperOutput({
    label,
    stdout: new TextDecoder().decode(output.stdout),
    now: Date.now(),
  });
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
