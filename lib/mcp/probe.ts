/**
 * Speaks MCP to one rendered server entry with the official SDK's v2
 * client, as an agent would: starts a stdio entry (the server itself, or
 * sherlock's shim or bridge in front of it) or connects to a remote one,
 * settles the revision (`server/discover` for a 2026-07-28 server, else
 * the 2025 `initialize` handshake: the client's `versionNegotiation` in
 * `auto` mode) and lists the tools, each step time-boxed and timed. For
 * `sherlock services test` and `sherlock doctor`; the SDK is heavy, so only
 * they load this module (through `importLazily`), never the launch path.
 *
 * @module
 */

import {
  Client,
  type FetchLike,
  SdkHttpError,
  SSEClientTransport,
  SseError,
  StreamableHTTPClientTransport,
  type Transport,
} from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import type { ServerEntry } from "../render/servers.ts";
import { VERSION } from "../version.ts";
import type { RevisionProbe, ServerRevision } from "./revision.ts";

/**
 * The steps of a probe, in order: the first is named after what settled
 * the revision (`server/discover` for a 2026-07-28 server, `initialize`
 * for a 2025 one).
 */
export type ProbeStepName = "server/discover" | "initialize" | "tools/list";

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

/** What kind of failure, for the one line on what to do. */
export type ProbeFailureCause =
  | "start"
  | "closed"
  | "timeout"
  | "garbage"
  | "unauthorized"
  | "forbidden"
  | "error";

/** What a probe found. */
export type ProbeResult =
  | {
    ok: true;
    /** The server's `serverInfo` (`?` where a modern server names none). */
    server: { name: string; version: string };
    /** The revision the server answered with. */
    revision: ServerRevision;
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
    cause: ProbeFailureCause;
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
 * Probes the entry: the revision, then `tools/list`. Never throws for
 * anything the server does; always closes the transport (a stdio server
 * is stopped) before it returns.
 *
 * On stdio the SDK asks `server/discover` of a short-lived second copy of
 * the entry and starts the entry itself once the era is known; a server
 * that does not answer the question within the timeout is taken for a
 * 2025 one, so a silent server fails only after twice the timeout.
 */
export async function probeServer(options: ProbeOptions): Promise<ProbeResult> {
  return await runProbe(options, { listTools: true });
}

/**
 * Asks a remote server which revision it speaks, with no token (for
 * `sherlock doctor`, which never fetches one): the revision, the server's
 * refusal (HTTP 401/403), or why it did not answer.
 */
export async function probeRevision(
  options: { url: string; transport: "http" | "sse"; timeoutMs: number },
): Promise<RevisionProbe> {
  const result = await runProbe({
    entry: {
      kind: "remote",
      url: options.url,
      transport: options.transport,
      headers: {},
    },
    env: {},
    timeoutMs: options.timeoutMs,
  }, { listTools: false });
  if (result.ok) {
    return {
      kind: "answered",
      revision: result.revision,
      server: result.server,
    };
  }
  if (result.cause === "unauthorized" || result.cause === "forbidden") {
    return {
      kind: "refused",
      status: result.cause === "unauthorized" ? 401 : 403,
    };
  }
  return { kind: "failed", reason: result.reason };
}

async function runProbe(
  options: ProbeOptions,
  what: { listTools: boolean },
): Promise<ProbeResult> {
  const stderr = new StderrTail(entryValues(options.entry));
  let garbage = false;
  // The JSON-RPC method of the last HTTP request: which step a failed
  // connect was in (the question, or the 2025 handshake after it).
  let lastMethod: string | undefined;
  const transport = newTransport(options, {
    stderr,
    sent: (method) => lastMethod = method,
    garbage: () => garbage = true,
  });
  const client = new Client({
    name: "sherlock-services-test",
    version: VERSION,
  }, { versionNegotiation: { mode: "auto" } });
  client.onerror = (error: Error) => {
    // A line that is JSON but not JSON-RPC is reported here.
    if (error.name === "ZodError") garbage = true;
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
      // On stdio the SDK falls back to `initialize` whenever the question
      // is not answered as a 2026-07-28 server would; over HTTP the last
      // request says which step it was.
      if (options.entry.kind === "remote" && lastMethod !== "initialize") {
        step = "server/discover";
      }
      return fail(error);
    }
    const era = client.getProtocolEra() === "modern" ? "modern" : "legacy";
    step = era === "modern" ? "server/discover" : "initialize";
    steps.push({ step, ms: Math.round(performance.now() - started) });
    const revision: ServerRevision = {
      era,
      version: client.getNegotiatedProtocolVersion() ?? "?",
      transport: options.entry.kind === "stdio"
        ? "stdio"
        : options.entry.transport,
    };
    const info = client.getServerVersion();
    const server = { name: info?.name ?? "?", version: info?.version ?? "?" };
    if (!what.listTools) {
      return { ok: true, server, revision, tools: [], steps };
    }
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
    return {
      ok: true,
      server,
      revision,
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

function newTransport(
  options: ProbeOptions,
  watch: {
    stderr: StderrTail;
    sent: (method: string) => void;
    garbage: () => void;
  },
): Transport {
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
      watch.stderr.add(chunk);
    });
    watchStdout(transport, watch.garbage);
    return transport;
  }
  const headers = { ...entry.headers };
  const watched: FetchLike = (input, init) => {
    const method = methodOf(init?.body);
    if (method !== undefined) watch.sent(method);
    return fetch(input, init);
  };
  const url = new URL(entry.url);
  return entry.transport === "sse"
    ? new SSEClientTransport(url, {
      requestInit: { headers },
      fetch: watched,
      // The event stream's GET carries the headers too (the token's, inline).
      eventSourceInit: {
        fetch: (input, init) =>
          fetch(input, { ...init, headers: { ...init?.headers, ...headers } }),
      },
    })
    : new StreamableHTTPClientTransport(url, {
      requestInit: { headers },
      fetch: watched,
    });
}

/**
 * Calls `garbage` when the server prints a stdout line that is not JSON.
 * The v2 SDK skips such a line without a word (the v1 client reported it
 * through `onerror`), so the transport's read buffer, a private field, is
 * tapped; were it gone in another SDK version, only this diagnosis is
 * lost (a test of `services test` names it). A subclass of the transport
 * would not do: the SDK asks `server/discover` of a second copy of the
 * server only for the base class.
 */
function watchStdout(transport: StdioClientTransport, garbage: () => void) {
  const buffer = (transport as unknown as {
    _readBuffer?: { append?: (chunk: Uint8Array) => void };
  })._readBuffer;
  const append = buffer?.append;
  if (buffer === undefined || append === undefined) return;
  const decoder = new TextDecoder();
  let partial = "";
  buffer.append = (chunk: Uint8Array) => {
    if (partial.length < 65_536) {
      const lines = (partial + decoder.decode(chunk, { stream: true }))
        .split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        if (line.trim() !== "" && !isJson(line)) garbage();
      }
    }
    append.call(buffer, chunk);
  };
}

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

/** The JSON-RPC method of a request body, if it is one. */
function methodOf(body: unknown): string | undefined {
  if (typeof body !== "string") return undefined;
  try {
    const message = JSON.parse(body);
    return typeof message?.method === "string" ? message.method : undefined;
  } catch {
    return undefined;
  }
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
): { reason: string; cause: ProbeFailureCause } {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | undefined)?.code;
  const seconds = context.timeoutMs / 1000;
  const status = error instanceof SdkHttpError
    ? error.status
    : error instanceof SseError
    ? error.code
    : undefined;
  if (status === 401 || status === 403) {
    return {
      reason: `the server refused the ${
        Object.keys(
            context.entry.kind === "remote" ? context.entry.headers : {},
          ).length > 0
          ? "token"
          : "request"
      } during ${context.step} (HTTP ${status})`,
      cause: status === 401 ? "unauthorized" : "forbidden",
    };
  }
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
    // The SDK's prefix repeats the step's name.
    reason: `${context.step} failed: ${
      message.split("\n")[0].replace(
        /^Version negotiation (probe )?failed: /,
        "",
      )
    }`,
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
