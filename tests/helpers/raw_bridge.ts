/**
 * `sherlock bridge` as a real process spoken to line by line (JSON-RPC on
 * its stdin and stdout): for what the SDK's client hides, such as the
 * error a request gets.
 *
 * @module
 */

import {
  assertNoStackTrace,
  HANG_GUARD_MS,
  sherlockCommand,
} from "./sherlock.ts";

/** A running bridge. */
export interface RawBridge {
  /** Writes one message as a line to its stdin. */
  send(message: unknown): Promise<void>;
  /** The next line from stdout, parsed. */
  receive(): Promise<Record<string, unknown>>;
  /** Closes stdin; resolves with the exit code, the rest of stdout, stderr. */
  end(): Promise<{ code: number; rest: string; stderr: string }>;
}

/** The `initialize` request a client sends first. */
export const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "raw", version: "1" },
  },
};

/**
 * Starts `sherlock <args>` (a `bridge …` command) with exactly `env`
 * (nothing inherited) in `cwd`.
 */
export function startRawBridge(
  options: { args: string[]; env: Record<string, string>; cwd: string },
): RawBridge {
  const [program, ...rest] = sherlockCommand(options.args);
  const child = new Deno.Command(program, {
    args: rest,
    env: options.env,
    clearEnv: true,
    cwd: options.cwd,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const guard = setTimeout(() => child.kill("SIGKILL"), HANG_GUARD_MS);
  const writer = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let stderr = "";
  const stderrDone = child.stderr.pipeThrough(new TextDecoderStream())
    .pipeTo(
      new WritableStream({
        write: (chunk) => {
          stderr += chunk;
        },
      }),
    );
  return {
    send: (message: unknown) =>
      writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n")),
    async receive(): Promise<Record<string, unknown>> {
      while (!buffered.includes("\n")) {
        const { value, done } = await reader.read();
        if (done) {
          throw new Error(`the bridge closed stdout; stderr: ${stderr}`);
        }
        buffered += value;
      }
      const at = buffered.indexOf("\n");
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      return JSON.parse(line);
    },
    async end(): Promise<{ code: number; rest: string; stderr: string }> {
      await writer.close();
      let rest = buffered;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        rest += value;
      }
      const status = await child.status;
      await stderrDone;
      clearTimeout(guard);
      assertNoStackTrace(stderr);
      return { code: status.code, rest, stderr };
    },
  };
}
