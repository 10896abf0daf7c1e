/**
 * The stand-in agent that `sherlock run` starts for the conformance adapter
 * (`sherlock_client.ts`): it does what an agent CLI does with the rendered
 * config — reads the file named by `$SHERLOCK_MCP_CONFIG`, starts its one
 * stdio entry (the `sherlock bridge …` sherlock rendered) with its own
 * environment plus the entry's `env`, and speaks MCP to it with the official
 * SDK's client: `initialize`, `tools/list`, then `tools/call` of the first
 * tool listed.
 *
 * When a request is answered with the bridge's error naming
 * `sherlock auth <service>` (no grant yet, or a server that wants more
 * scope), it runs that command — standing in for the operator who reads the
 * error and runs it in another terminal — and retries the request, at most
 * {@linkcode MAX_REAUTHORIZATIONS} times (a person gives up too: the
 * `auth/scope-retry-limit` scenario checks that the loop ends).
 *
 * Environment (set by the adapter in sherlock's, which passes it on):
 * `CONFORMANCE_SHERLOCK`, sherlock's argv as JSON (`deno run … main.ts` or a
 * compiled binary). Exits 0 when every request got an answer, 1 otherwise,
 * with one line per step on stderr.
 *
 * @module
 */

// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

/** How many times a request may send the operator to `sherlock auth`. */
export const MAX_REAUTHORIZATIONS = 2;

/** One stdio entry of the rendered config. */
interface StdioEntry {
  command: string;
  args?: string[];
  env?: Record<string, string>;
}

function log(line: string): void {
  console.error(`standin-agent: ${line}`);
}

/** The single stdio entry of the rendered `{"mcpServers": …}` config. */
function renderedEntry(): { name: string; entry: StdioEntry } {
  const path = Deno.env.get("SHERLOCK_MCP_CONFIG");
  if (!path) throw new Error("SHERLOCK_MCP_CONFIG is not set");
  const servers = JSON.parse(Deno.readTextFileSync(path)).mcpServers ?? {};
  const entries = Object.entries(servers) as [string, StdioEntry][];
  const stdio = entries.filter(([, entry]) => entry.command !== undefined);
  if (stdio.length !== 1) {
    throw new Error(
      `expected one stdio server in the rendered config, found ${stdio.length}: ${
        JSON.stringify(servers)
      }`,
    );
  }
  const [name, entry] = stdio[0];
  return { name, entry };
}

/** The `sherlock auth <service>` an error names, if it names one. */
function authCommandIn(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : String(error);
  return /sherlock auth ([\w.-]+)/.exec(message)?.[1];
}

/** Runs `sherlock auth <service>` as the operator would; true on exit 0. */
async function authorize(service: string): Promise<boolean> {
  const argv = JSON.parse(Deno.env.get("CONFORMANCE_SHERLOCK") ?? "null");
  if (!Array.isArray(argv)) throw new Error("CONFORMANCE_SHERLOCK is not set");
  const [program, ...rest] = argv as string[];
  const env = Deno.env.toObject();
  // The operator's shell, not the agent's session: no session variables.
  for (const name of Object.keys(env)) {
    if (name.startsWith("SHERLOCK_")) delete env[name];
  }
  const result = await new Deno.Command(program, {
    args: [...rest, "auth", service],
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  log(`sherlock auth ${service} exited ${result.code}`);
  return result.code === 0;
}

/**
 * Runs `request`; when the bridge's answer sends the operator to
 * `sherlock auth`, runs it and tries again.
 */
async function withReauthorization<T>(
  what: string,
  request: () => Promise<T>,
): Promise<T> {
  for (let attempt = 0;; attempt++) {
    try {
      const result = await request();
      log(`${what}: answered`);
      return result;
    } catch (error) {
      const service = authCommandIn(error);
      log(`${what}: ${error instanceof Error ? error.message : error}`);
      if (!service || attempt >= MAX_REAUTHORIZATIONS) throw error;
      if (!await authorize(service)) throw error;
    }
  }
}

/** The arguments the conformance servers' tools expect. */
function argumentsFor(tool: string): Record<string, unknown> {
  return tool === "add_numbers" ? { a: 5, b: 3 } : {};
}

async function main(): Promise<number> {
  const client = new Client({
    name: "sherlock-standin-agent",
    version: "1.0.0",
  });
  try {
    const { name, entry } = renderedEntry();
    log(`starting server ${name}: ${entry.command}`);
    const transport = new StdioClientTransport({
      command: entry.command,
      args: entry.args ?? [],
      env: { ...Deno.env.toObject(), ...entry.env },
      stderr: "inherit",
    });
    await client.connect(transport);
    log("initialize: answered");
    const { tools } = await withReauthorization(
      "tools/list",
      () => client.listTools(),
    );
    const tool = tools[0]?.name;
    if (tool !== undefined) {
      await withReauthorization(
        `tools/call ${tool}`,
        () => client.callTool({ name: tool, arguments: argumentsFor(tool) }),
      );
    }
    return 0;
  } catch (error) {
    log(`failed: ${error instanceof Error ? error.message : error}`);
    return 1;
  } finally {
    await client.close().catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main());
