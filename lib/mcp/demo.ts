/**
 * The two halves of `sherlock demo` that speak MCP, both on the official
 * SDK (v1): a small stdio server with one tool that shows a token reached
 * it without showing the token, and a stand-in agent that reads the MCP
 * config sherlock rendered for it, starts the entry as an agent would,
 * lists the tools and calls the demo's. They are internal subcommands of
 * the same binary (`sherlock demo server`, `sherlock demo agent`), so the
 * demo needs nothing installed. The SDK is heavy: only `sherlock demo`
 * loads this module (through `importLazily`), never the launch path.
 *
 * @module
 */

// The SDK's "./*" export maps `x.js` to the code but `x.js.d.ts` to the
// types; each @ts-types names the subpath whose types do resolve.
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import process from "node:process";
import { ConfigError } from "../errors.ts";
import { sha256Hex } from "../runtime/sha256.ts";
import { VERSION } from "../version.ts";

/** The demo server's one tool. */
export const DEMO_TOOL = "token_check";

/** The variable the demo server reads its token from. */
export const DEMO_TOKEN_ENV = "DEMO_TOKEN";

/** How long each MCP step of the stand-in agent may take. */
const STEP_TIMEOUT_MS = 60_000;

/**
 * What the demo tool says about a token: its length and a prefix of its
 * SHA-256, enough to compare with what was stored and useless to a thief.
 */
export function tokenFingerprint(token: string): string {
  return `${token.length} characters, sha256 ${sha256Hex(token).slice(0, 12)}…`;
}

/**
 * Serves the demo server on stdin/stdout until stdin closes. Its tool
 * answers with the fingerprint of the token in {@linkcode DEMO_TOKEN_ENV},
 * read when called (the shim put it there before starting the server).
 */
export async function serveDemoServer(): Promise<void> {
  const server = new McpServer({
    name: "sherlock-demo-server",
    version: VERSION,
  });
  server.registerTool(DEMO_TOOL, {
    description:
      "Says whether this server got a token, by its length and a SHA-256 prefix (never the token)",
  }, () => {
    const token = Deno.env.get(DEMO_TOKEN_ENV);
    const text = token === undefined || token === ""
      ? `no token in ${DEMO_TOKEN_ENV}`
      : `the server got a token: ${tokenFingerprint(token)}`;
    return { content: [{ type: "text", text }], isError: !token };
  });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
  });
  await server.connect(transport);
  // The transport does not notice the end of stdin by itself.
  process.stdin.on("end", () => void server.close());
  await closed;
}

/** What the stand-in agent did, for `sherlock demo` to check. */
export interface DemoAgentResult {
  /** The tool's answer (text). */
  answer: string;
  /** Whether the tool said it failed. */
  isError: boolean;
}

/** How the stand-in agent runs. */
export interface DemoAgentOptions {
  /** Its argv: `--mcp-config=PATH` (from the demo's profile). */
  args: readonly string[];
  /** Says one step, as it happens. */
  say: (line: string) => void;
}

/**
 * The stand-in agent: reads the rendered config named by `--mcp-config`,
 * starts each server entry with its own environment added to the agent's
 * (as most agents do), lists its tools and calls the demo tool. Throws
 * {@linkcode ConfigError} when the config is not what sherlock renders.
 */
export async function runDemoAgent(
  options: DemoAgentOptions,
): Promise<DemoAgentResult> {
  const path = configPath(options.args);
  const servers = readServers(path);
  const names = Object.keys(servers);
  options.say(
    `my MCP config is ${path} (from sherlock run): servers ${names.join(", ")}`,
  );
  const entry = servers.demo;
  if (entry === undefined) {
    throw new ConfigError(`${path}: no "demo" server in mcpServers`);
  }
  options.say(
    `starting the demo server's entry: ${entry.command} … ${
      entry.args.includes("shim") ? "(sherlock's token shim in front)" : ""
    }`.trimEnd(),
  );
  const transport = new StdioClientTransport({
    command: entry.command,
    args: entry.args,
    env: { ...Deno.env.toObject(), ...entry.env },
    stderr: "inherit",
  });
  const client = new Client({ name: "sherlock-demo-agent", version: VERSION });
  try {
    await client.connect(transport, { timeout: STEP_TIMEOUT_MS });
    const info = client.getServerVersion();
    options.say(`initialize → ${info?.name ?? "?"} ${info?.version ?? ""}`);
    const tools = await client.listTools(undefined, {
      timeout: STEP_TIMEOUT_MS,
    });
    options.say(
      `tools/list → ${tools.tools.map((tool) => tool.name).join(", ")}`,
    );
    const result = await client.callTool(
      { name: DEMO_TOOL, arguments: {} },
      undefined,
      {
        timeout: STEP_TIMEOUT_MS,
      },
    );
    const content = Array.isArray(result.content) ? result.content : [];
    const answer = content
      .filter((part): part is { type: "text"; text: string } =>
        typeof part === "object" && part !== null && part.type === "text"
      )
      .map((part) => part.text)
      .join(" ");
    options.say(`tools/call ${DEMO_TOOL} → ${answer}`);
    return { answer, isError: result.isError === true };
  } finally {
    await client.close();
  }
}

/** One stdio entry of an `mcpServers` document. */
interface StdioEntry {
  command: string;
  args: string[];
  env: Record<string, string>;
}

function configPath(args: readonly string[]): string {
  for (const [index, arg] of args.entries()) {
    if (arg.startsWith("--mcp-config=")) {
      return arg.slice("--mcp-config=".length);
    }
    if (arg === "--mcp-config" && args[index + 1] !== undefined) {
      return args[index + 1];
    }
  }
  throw new ConfigError(
    "the demo agent runs from sherlock demo, which gives it --mcp-config=PATH",
  );
}

function readServers(path: string): Record<string, StdioEntry> {
  let document: unknown;
  try {
    document = JSON.parse(Deno.readTextFileSync(path));
  } catch (error) {
    throw new ConfigError(
      `${path}: cannot read the MCP config: ${(error as Error).message}`,
    );
  }
  const servers = (document as { mcpServers?: unknown })?.mcpServers;
  if (typeof servers !== "object" || servers === null) {
    throw new ConfigError(`${path}: no mcpServers object`);
  }
  const result: Record<string, StdioEntry> = {};
  for (const [name, value] of Object.entries(servers)) {
    const entry = value as Partial<StdioEntry>;
    if (typeof entry?.command !== "string") continue;
    result[name] = {
      command: entry.command,
      args: Array.isArray(entry.args) ? entry.args.map(String) : [],
      env: typeof entry.env === "object" && entry.env !== null
        ? Object.fromEntries(
          Object.entries(entry.env).map(([key, v]) => [key, String(v)]),
        )
        : {},
    };
  }
  return result;
}
