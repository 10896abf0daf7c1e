/**
 * Speaks MCP to one rendered server entry with the official SDK client,
 * as an agent would: starts a stdio entry (the server itself, or sherlock's
 * shim or bridge in front of it) or connects to a remote one, then
 * `initialize` and `tools/list`, each step time-boxed and timed. For
 * `sherlock services test`; the SDK is heavy, so only that command loads
 * this module (through `importLazily`), never the launch path.
 *
 * @module
 */

// The SDK's "./*" export maps `x.js` to the code but `x.js.d.ts` to the
// types; each @ts-types names the subpath whose types do resolve.
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/client/sse"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport";
import type { ServerEntry } from "../render/servers.ts";
import { VERSION } from "../version.ts";

/** The steps of a probe, in order. */
export type ProbeStepName = "initialize" | "tools/list";

/** One step that ran, and how long it took. */
export interface ProbeStep {
  /** The step. */
  step: ProbeStepName;
  /** Milliseconds, from the step's start to its answer or failure. */
  ms: number;
}

/** One tool of the server's `tools/list` answer. */
export interface ProbedTool {
  /** The tool's name. */
  name: string;
  /** Its description's first line, if it has one. */
  description: string;
}

/** What a probe found. */
export type ProbeResult =
  | {
    ok: true;
    /** The server's `serverInfo`. */
    server: { name: string; version: string };
    /** Its tools, in the order it listed them. */
    tools: ProbedTool[];
    /** Every step, timed. */
    steps: ProbeStep[];
  }
  | {
    ok: false;
    /** The step that failed. */
    failed: ProbeStepName;
    /** Why, in a few words (no value of the entry's env or headers). */
    reason: string;
    /** What kind of failure, for the one line on what to do. */
    cause: "start" | "closed" | "timeout" | "garbage" | "error";
    /** The steps that ran, the failed one last. */
    steps: ProbeStep[];
    /**
     * The last lines the server wrote on stderr (stdio entries), with the
     * entry's env and header values, and every run that looks like a
     * token, replaced by `[redacted]` and control characters escaped: a
     * server that prints its token shows no token.
     */
    stderrTail: string[];
  };

/** What to probe, and how. */
export interface ProbeOptions {
  /** The entry, as a session would render it (tokens in place). */
  entry: ServerEntry;
  /**
   * The environment a stdio entry starts with before its own `env`: the
   * agent's (what the server would inherit from the agent).
   */
  env: Readonly<Record<string, string>>;
  /** The working folder of a stdio entry. */
  cwd?: string;
  /** The time each step may take, in milliseconds. */
  timeoutMs: number;
}

/** How many lines of the server's stderr a failure shows. */
export const STDERR_TAIL_LINES = 10;

/**
 * Probes the entry: `initialize`, then `tools/list`. Never throws for
 * anything the server does; always closes the transport (a stdio server
 * is stopped) before it returns.
 */
export async function probeServer(options: ProbeOptions): Promise<ProbeResult> {
  const stderr = new StderrTail(entryValues(options.entry));
  let garbage = false;
  const transport = newTransport(options, stderr);
  const client = new Client({
    name: "sherlock-services-test",
    version: VERSION,
  });
  client.onerror = (error: Error) => {
    // The SDK skips a stdout line that is not JSON-RPC and reports it here.
    if (error instanceof SyntaxError || error.name === "ZodError") {
      garbage = true;
    }
  };
  const steps: ProbeStep[] = [];
  let step: ProbeStepName = "initialize";
  let started = performance.now();
  const fail = (error: unknown): ProbeResult => {
    steps.push({ step, ms: Math.round(performance.now() - started) });
    const { reason, cause } = describeFailure(error, {
      step,
      garbage,
      timeoutMs: options.timeoutMs,
      entry: options.entry,
    });
    return {
      ok: false,
      failed: step,
      reason,
      cause,
      steps,
      stderrTail: stderr.lines(),
    };
  };
  try {
    try {
      await client.connect(transport, { timeout: options.timeoutMs });
    } catch (error) {
      return fail(error);
    }
    steps.push({ step, ms: Math.round(performance.now() - started) });
    step = "tools/list";
    started = performance.now();
    let listed;
    try {
      listed = await client.listTools(undefined, {
        timeout: options.timeoutMs,
      });
    } catch (error) {
      return fail(error);
    }
    steps.push({ step, ms: Math.round(performance.now() - started) });
    const info = client.getServerVersion();
    return {
      ok: true,
      server: { name: info?.name ?? "?", version: info?.version ?? "?" },
      tools: listed.tools.map((tool) => ({
        name: tool.name,
        description: (tool.description ?? "").split("\n")[0].trim(),
      })),
      steps,
    };
  } finally {
    await closeQuietly(client, transport);
  }
}

function newTransport(options: ProbeOptions, stderr: StderrTail): Transport {
  const { entry } = options;
  if (entry.kind === "stdio") {
    const transport = new StdioClientTransport({
      command: entry.command,
      args: entry.args,
      env: { ...options.env, ...entry.env },
      cwd: options.cwd,
      stderr: "pipe",
    });
    transport.stderr?.on("data", (chunk: Uint8Array | string) => {
      stderr.add(chunk);
    });
    return transport;
  }
  const requestInit = { headers: { ...entry.headers } };
  const url = new URL(entry.url);
  return entry.transport === "sse"
    ? new SSEClientTransport(url, {
      requestInit,
      // The event stream's GET carries the headers too (the token's, inline).
      eventSourceInit: {
        fetch: (input, init) =>
          fetch(input, {
            ...init,
            headers: { ...init?.headers, ...entry.headers },
          }),
      },
    })
    : new StreamableHTTPClientTransport(url, { requestInit });
}

/** The reason and cause of a failed step, in the operator's words. */
function describeFailure(
  error: unknown,
  context: {
    step: ProbeStepName;
    garbage: boolean;
    timeoutMs: number;
    entry: ServerEntry;
  },
): {
  reason: string;
  cause: "start" | "closed" | "timeout" | "garbage" | "error";
} {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | undefined)?.code;
  const seconds = context.timeoutMs / 1000;
  for (
    const [errno, what] of [["ENOENT", "not found"], [
      "EACCES",
      "permission denied",
    ]]
  ) {
    if (code === errno || new RegExp(`\\b${errno}\\b`).test(message)) {
      return {
        reason: `could not start ${
          context.entry.kind === "stdio" ? context.entry.command : "it"
        }: ${what}`,
        cause: "start",
      };
    }
  }
  if (/timed out|timeout/i.test(message)) {
    return {
      reason: context.garbage
        ? `no answer to ${context.step} within ${seconds} s, and it printed lines on stdout that are not JSON-RPC`
        : `no answer to ${context.step} within ${seconds} s`,
      cause: context.garbage ? "garbage" : "timeout",
    };
  }
  if (/connection closed/i.test(message)) {
    return {
      reason: context.garbage
        ? `the server closed the connection during ${context.step}, after lines on stdout that are not JSON-RPC`
        : `the server closed the connection during ${context.step} (it exited?)`,
      cause: context.garbage ? "garbage" : "closed",
    };
  }
  return {
    reason: `${context.step} failed: ${message.split("\n")[0]}`,
    cause: "error",
  };
}

async function closeQuietly(client: Client, transport: Transport) {
  try {
    await client.close();
  } catch {
    // Closing a transport that never started.
  }
  try {
    await transport.close();
  } catch {
    // Already closed.
  }
}

/**
 * The entry's env and header values worth hiding: an inline token is one
 * of them (a shim's or bridge's token is in no value here, nor in this
 * process).
 */
function entryValues(entry: ServerEntry): string[] {
  const values = entry.kind === "stdio"
    ? Object.values(entry.env ?? {})
    : Object.values(entry.headers ?? {});
  // Short values ("1", "true") would redact ordinary words.
  return values.filter((value) => value.length >= 8)
    .sort((a, b) => b.length - a.length);
}

/**
 * A run that may be a token: 24 or more characters of base64url, base64,
 * dots or hex (API keys, JWTs), redacted when it mixes letters and digits.
 * A path's parts, split by `/`, are mostly shorter; a hash or UUID in the
 * tail is redacted too, the price of catching tokens nobody named.
 */
const TOKEN_SHAPED = /[A-Za-z0-9_\-.~+=]{24,}/g;

/** The last lines a server wrote on stderr, bounded in memory. */
class StderrTail {
  #text = "";
  #decoder = new TextDecoder();
  #hidden: string[];

  constructor(hidden: string[]) {
    this.#hidden = hidden;
  }

  add(chunk: Uint8Array | string): void {
    this.#text += typeof chunk === "string"
      ? chunk
      : this.#decoder.decode(chunk, { stream: true });
    if (this.#text.length > 16_384) this.#text = this.#text.slice(-8_192);
  }

  lines(): string[] {
    let text = this.#text;
    for (const value of this.#hidden) {
      text = text.replaceAll(value, "[redacted]");
    }
    // A token the shim or the bridge fetched is in no value of the entry,
    // nor in this process: what looks like one goes too.
    text = text.replace(
      TOKEN_SHAPED,
      (run) => /[0-9]/.test(run) && /[A-Za-z]/.test(run) ? "[redacted]" : run,
    );
    return text.split("\n").map((line) => printable(line.trimEnd()))
      .filter((line) => line !== "").slice(-STDERR_TAIL_LINES);
  }
}

/** `line` with control characters escaped, for the operator's terminal. */
function printable(line: string): string {
  return line.replace(
    // deno-lint-ignore no-control-regex -- control characters are the point
    /[\x00-\x08\x0b-\x1f\x7f]/g,
    (character) =>
      `\\x${character.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
}
