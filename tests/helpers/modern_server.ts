/**
 * A remote MCP server that serves only the 2026-07-28 revision, built on the
 * official SDK v2's own modern-only serving (`createMcpHandler(factory, {
 * legacy: "reject" })` of `@modelcontextprotocol/server` 2.4.0), on loopback
 * HTTP: no `initialize`, no `Mcp-Session-Id`, `server/discover`, the
 * per-request `_meta` envelope, `subscriptions/listen` for notifications and
 * multi-round-trip (`input_required`) results for mid-request questions.
 * With `era: "dual"` the same factory also serves 2025-era traffic (the
 * SDK's stateless fallback, `legacy: "stateless"`).
 *
 * Optional bearer-token check: a request without the right token gets 401
 * with `WWW-Authenticate: Bearer …` (and `requireScope` a 403
 * `insufficient_scope` for one tool). Every request is counted and its
 * `Mcp-Method`/`Mcp-Name`/`MCP-Protocol-Version` headers recorded.
 *
 * Tools: `echo` (its `text`), `whoami` (the SHA-256 of the bearer),
 * `confirm` (asks an elicitation, answers with the action and content),
 * `ask_model` (asks sampling, answers with the model's text), and
 * `slow` (answers only once cancelled), `add_tool` (registers the tool
 * `added` and publishes
 * `notifications/tools/list_changed`; `notifyToolsChanged()` does the same
 * from outside a request).
 *
 * In a test:
 *
 * ```ts
 * await using server = await startModernServer({ token: "tok_…" });
 * // server.url, server.counts, server.notifyToolsChanged()
 * ```
 *
 * As a subprocess (prints `{"url":…}` on one line, serves until killed):
 *
 * ```sh
 * deno run --allow-all tests/helpers/modern_server.ts [--token tok_…] \
 *   [--port 0] [--era modern|dual]
 * ```
 *
 * @module
 */

import {
  createMcpHandler,
  inputRequired,
  type McpHttpHandler,
  McpServer,
} from "@modelcontextprotocol/server";
import { z } from "zod";
import { createHash } from "node:crypto";

/** The name this server gives in its `server/discover` answer. */
export const MODERN_SERVER_NAME = "sherlock-modern-test-server";

/** The revision the modern-only server serves. */
export const MODERN_REVISION = "2026-07-28";

/** Which eras the server serves. */
export type ServedEra = "modern" | "dual";

/** How to start the server. */
export interface ModernServerOptions {
  /** The one bearer token accepted; no token check when unset. */
  token?: string;
  /** `modern` (default): 2026-07-28 only; `dual`: 2025 traffic too. */
  era?: ServedEra;
  /** Put into `WWW-Authenticate` as `resource_metadata` (RFC 9728). */
  resourceMetadataUrl?: string;
  /**
   * A `tools/call` of `tool` needs `scope`: when `holds` says the token
   * lacks it, the answer is 403 with `WWW-Authenticate: Bearer
   * error="insufficient_scope", scope="<scope>"`.
   */
  requireScope?: {
    tool: string;
    scope: string;
    holds: (token: string) => boolean;
  };
  /** The port (default: a random free one). */
  port?: number;
}

/** One request as it reached the server. */
export interface SeenRequest {
  /** The HTTP method. */
  httpMethod: string;
  /** The JSON-RPC method of the body, if any. */
  method?: string;
  /** The `Mcp-Method` header. */
  mcpMethod: string | null;
  /** The `Mcp-Name` header. */
  mcpName: string | null;
  /** The `MCP-Protocol-Version` header. */
  protocolVersion: string | null;
  /** The `Mcp-Session-Id` header (a modern client sends none). */
  sessionId: string | null;
  /** The `Authorization` header's presence (never its value). */
  authorized: boolean;
  /** The request's URL (to check that no token is in it). */
  url: string;
  /** The JSON-RPC body (parsed), if any. */
  body?: unknown;
}

/** What reached the server. */
export interface ModernCounts {
  /** Every HTTP request. */
  requests: number;
  /** Those answered 401. */
  unauthorized: number;
  /** Those answered 403 `insufficient_scope`. */
  insufficientScope: number;
  /** JSON-RPC methods received, by name. */
  methods: Record<string, number>;
  /** Every request, in order. */
  seen: SeenRequest[];
}

/** A running server. */
export interface ModernServer extends AsyncDisposable {
  /** The MCP endpoint. */
  url: string;
  /** What reached it so far (live). */
  counts: ModernCounts;
  /** Replaces the accepted token. */
  setToken(token: string): void;
  /**
   * Registers the tool `added` (from now on in every `tools/list`) and
   * publishes `notifications/tools/list_changed` to every open
   * `subscriptions/listen` stream.
   */
  notifyToolsChanged(): void;
  /** How many `slow` calls started, and how many were cancelled. */
  slow(): { started: number; cancelled: number };
  /** Stops listening. */
  close(): Promise<void>;
}

/** The hex SHA-256 of a token, as `whoami` answers it. */
export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Starts the server on 127.0.0.1. */
export function startModernServer(
  options: ModernServerOptions = {},
): Promise<ModernServer> {
  let token = options.token;
  const counts: ModernCounts = {
    requests: 0,
    unauthorized: 0,
    insufficientScope: 0,
    methods: {},
    seen: [],
  };
  // Shared by every per-request instance, so that a tool added once is
  // listed from then on.
  const state: SharedState = {
    added: false,
    slowStarted: 0,
    slowCancelled: 0,
  };
  const addTool = () => {
    state.added = true;
    handler.notify.toolsChanged();
  };
  const handler: McpHttpHandler = createMcpHandler(
    () => newServer({ state, addTool }),
    {
      legacy: options.era === "dual" ? "stateless" : "reject",
      // Tests may leave a listen stream open; no keep-alive timer to leak.
      keepAliveMs: 0,
    },
  );

  const challenge = (status: number, parameters: string[]) => {
    if (options.resourceMetadataUrl) {
      parameters.push(`resource_metadata="${options.resourceMetadataUrl}"`);
    }
    return Response.json(
      { error: status === 401 ? "invalid_token" : "insufficient_scope" },
      {
        status,
        headers: { "WWW-Authenticate": `Bearer ${parameters.join(", ")}` },
      },
    );
  };

  const serve = async (
    original: Request,
    info: Deno.ServeHandlerInfo,
  ): Promise<Response> => {
    counts.requests++;
    // Deno's request.signal also aborts once a response is sent (its
    // legacy behaviour); the SDK reads it as "the client went away", so it
    // gets one that aborts when the client leaves before the answer starts
    // (a cancelled call answered as JSON) or when the exchange is over (a
    // closed event stream).
    const gone = new AbortController();
    let answered = false;
    original.signal.addEventListener("abort", () => {
      if (!answered) gone.abort();
    }, { once: true });
    info.completed.finally(() => gone.abort());
    const request = new Request(original.url, {
      method: original.method,
      headers: original.headers,
      body: original.body,
      signal: gone.signal,
    });
    const url = new URL(request.url);
    if (url.pathname !== "/mcp") return new Response(null, { status: 404 });
    const body = request.method === "POST"
      ? await request.clone().json().catch(() => undefined)
      : undefined;
    const method = typeof body?.method === "string" ? body.method : undefined;
    if (method) counts.methods[method] = (counts.methods[method] ?? 0) + 1;
    const header = request.headers.get("authorization") ?? "";
    counts.seen.push({
      httpMethod: request.method,
      method,
      mcpMethod: request.headers.get("mcp-method"),
      mcpName: request.headers.get("mcp-name"),
      protocolVersion: request.headers.get("mcp-protocol-version"),
      sessionId: request.headers.get("mcp-session-id"),
      authorized: header !== "",
      url: request.url,
      body,
    });
    const bearer = /^Bearer (\S+)$/i.exec(header)?.[1];
    if (token !== undefined && bearer !== token) {
      counts.unauthorized++;
      const parameters = ['realm="mcp"'];
      if (bearer !== undefined) parameters.push('error="invalid_token"');
      return challenge(401, parameters);
    }
    const required = options.requireScope;
    if (
      required && method === "tools/call" &&
      body?.params?.name === required.tool && !required.holds(bearer ?? "")
    ) {
      counts.insufficientScope++;
      return challenge(403, [
        'error="insufficient_scope"',
        `scope="${required.scope}"`,
      ]);
    }
    const response = await handler.fetch(request, {
      authInfo: bearer === undefined
        ? undefined
        : { token: bearer, clientId: "test", scopes: [] },
    });
    answered = true;
    return response;
  };

  const http = Deno.serve({
    hostname: "127.0.0.1",
    port: options.port ?? 0,
    onListen() {},
  }, serve);
  const close = async () => {
    await handler.close();
    await http.shutdown();
  };
  return Promise.resolve({
    url: `http://127.0.0.1:${http.addr.port}/mcp`,
    counts,
    setToken(value) {
      token = value;
    },
    notifyToolsChanged: addTool,
    slow: () => ({
      started: state.slowStarted,
      cancelled: state.slowCancelled,
    }),
    close,
    [Symbol.asyncDispose]: close,
  });
}

/** What every per-request instance shares. */
interface SharedState {
  /** Whether `add_tool` (or `notifyToolsChanged`) ran. */
  added: boolean;
  /** How many `slow` calls started. */
  slowStarted: number;
  /** How many of them were cancelled (their request's stream closed). */
  slowCancelled: number;
}

/** One server instance (one per HTTP request): the tools. */
function newServer(
  shared: { state: SharedState; addTool: () => void },
): McpServer {
  const server = new McpServer(
    { name: MODERN_SERVER_NAME, version: "1.0.0" },
    { capabilities: { tools: { listChanged: true } } },
  );
  server.registerTool("echo", {
    description: "Answers with its text argument.",
    inputSchema: z.object({ text: z.string() }),
  }, ({ text }) => ({ content: [{ type: "text", text }] }));
  server.registerTool("whoami", {
    description: "Answers with the SHA-256 of the bearer token it got.",
  }, (ctx) => ({
    content: [{ type: "text", text: sha256(ctx.http?.authInfo?.token ?? "") }],
  }));
  server.registerTool("confirm", {
    description: "Asks the user to confirm (an elicitation), then says so.",
  }, (ctx) => {
    const answer = ctx.mcpReq.inputResponses?.confirm as
      | { action?: string; content?: Record<string, unknown> }
      | undefined;
    if (answer === undefined) {
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: "Proceed?",
            requestedSchema: {
              type: "object",
              properties: { ok: { type: "boolean" } },
              required: ["ok"],
            },
          }),
        },
      });
    }
    return {
      content: [{
        type: "text",
        text: `${answer.action}:${JSON.stringify(answer.content ?? {})}`,
      }],
    };
  });
  server.registerTool("ask_model", {
    description: "Asks the client's model (sampling), then answers with it.",
  }, (ctx) => {
    const answer = ctx.mcpReq.inputResponses?.sample as
      | { content?: { type?: string; text?: string } }
      | undefined;
    if (answer === undefined) {
      return inputRequired({
        inputRequests: {
          sample: inputRequired.createMessage({
            messages: [{
              role: "user",
              content: { type: "text", text: "Say hello." },
            }],
            maxTokens: 20,
          }),
        },
      });
    }
    return {
      content: [{ type: "text", text: `model:${answer.content?.text}` }],
    };
  });
  server.registerTool("slow", {
    description: "Answers only once its request is cancelled.",
  }, async (ctx) => {
    shared.state.slowStarted++;
    // No timer: only a cancellation (or the server's close) ends it.
    await new Promise<void>((resolve) => {
      ctx.mcpReq.signal.addEventListener("abort", () => {
        shared.state.slowCancelled++;
        resolve();
      }, { once: true });
    });
    return { content: [{ type: "text", text: "slow" }] };
  });
  server.registerTool("add_tool", {
    description: "Adds the tool `added` and says that the list changed.",
  }, () => {
    shared.addTool();
    return { content: [{ type: "text", text: "added" }] };
  });
  if (shared.state.added) {
    server.registerTool("added", {
      description: "The tool add_tool added.",
    }, () => ({ content: [{ type: "text", text: "here" }] }));
  }
  return server;
}

/** A server running as a child process (see {@linkcode spawnModernServer}). */
export interface ModernServerProcess extends AsyncDisposable {
  /** The MCP endpoint. */
  url: string;
  /** The child. */
  child: Deno.ChildProcess;
}

/**
 * Starts the server as a child process of this module (for tests whose
 * server must outlive or stand apart from the test's event loop); disposing
 * sends SIGTERM and waits for it.
 */
export async function spawnModernServer(
  options: Pick<ModernServerOptions, "token" | "era" | "port"> = {},
): Promise<ModernServerProcess> {
  const args = ["run", "--allow-all", new URL(import.meta.url).pathname];
  if (options.token !== undefined) args.push("--token", options.token);
  if (options.era !== undefined) args.push("--era", options.era);
  if (options.port !== undefined) args.push("--port", String(options.port));
  const child = new Deno.Command(Deno.execPath(), {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) {
      await child.status;
      throw new Error("modern_server: the child exited before its URL");
    }
    text += value;
  }
  reader.releaseLock();
  const { url } = JSON.parse(text.slice(0, text.indexOf("\n")));
  return {
    url,
    child,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGTERM");
      } catch {
        // Already gone.
      }
      await child.stdout.cancel().catch(() => {});
      await child.status;
    },
  };
}

async function main(args: string[]) {
  const options: ModernServerOptions = {};
  for (let i = 0; i < args.length; i++) {
    switch (args[i]) {
      case "--token":
        options.token = args[++i];
        break;
      case "--port":
        options.port = Number(args[++i]);
        break;
      case "--era":
        options.era = args[++i] as ServedEra;
        break;
      default:
        throw new Error(`modern_server: unknown argument ${args[i]}`);
    }
  }
  const server = await startModernServer(options);
  console.log(JSON.stringify({ url: server.url }));
  const stop = () => server.close().then(() => Deno.exit(0));
  Deno.addSignalListener("SIGTERM", stop);
  Deno.addSignalListener("SIGINT", stop);
}

if (import.meta.main) await main(Deno.args);
