/**
 * `sherlock demo`: sherlock's main job end to end, on nothing but itself,
 * as `docker run hello-world` is Docker's. In a throwaway home (HOME and
 * every XDG folder, so the operator's config, store, broker and runtime
 * folder are never touched) it writes a stand-in agent's profile and a
 * demo MCP server's service (both this binary: `sherlock demo agent`,
 * `sherlock demo server`), creates a store with a passphrase it makes up
 * and never shows, stores a made-up token, and runs the agent through
 * `sherlock run`: the token reaches the server through the shim, the
 * agent lists and calls the server's tool, whose answer shows a
 * fingerprint of the token (never the token). Then it checks the rendered
 * config is gone, stops the demo's broker, removes the throwaway home, and
 * exits with the agent's exit code. Every step is printed as it happens:
 * it is also the smoke test of a freshly installed binary.
 *
 * @module
 */

import { CantCreateError, ExitCode } from "../errors.ts";
import { describeFsError } from "../private_files.ts";
import { importLazily } from "../runtime/lazy_import.ts";
import { join } from "../runtime/path.ts";
import { selfCommand } from "../self_command.ts";
import type { ParsedArguments } from "./commands.ts";
import type { CommandContext } from "./context.ts";
import { type Printer, printer } from "./output.ts";

/** The stand-in agent's profile name (not a command's name: no alias clash). */
export const DEMO_AGENT = "demo-agent";

/** The demo service's name, and so its secret's. */
export const DEMO_SERVICE = "demo";

type DemoModule = typeof import("../mcp/demo.ts");

function loadDemoModule(): Promise<DemoModule> {
  return importLazily<DemoModule>("lib/mcp/demo.ts");
}

/** Runs `sherlock demo`, or one of its internal halves. */
export async function demoCommand(
  parsed: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  if (parsed.subcommand === "server") {
    const demo = await loadDemoModule();
    await demo.serveDemoServer();
    return 0;
  }
  if (parsed.subcommand === "agent") {
    const demo = await loadDemoModule();
    const config = parsed.value("--mcp-config");
    const result = await demo.runDemoAgent({
      args: config === undefined ? [] : ["--mcp-config", config],
      say: (line) => out.line(`  agent: ${line}`),
    });
    return result.isError ? 1 : 0;
  }
  return await runDemo(context, out);
}

/** The TOML of the stand-in agent's profile. */
export function demoAgentProfile(self: readonly string[]): string {
  return [
    "# sherlock demo's stand-in agent: this sherlock, as `sherlock demo agent`.",
    "[agent]",
    `name = ${JSON.stringify(DEMO_AGENT)}`,
    `executable = ${JSON.stringify(self[0])}`,
    'description = "sherlock demo\'s stand-in agent"',
    "",
    "[mcp]",
    'mode = "cli-flag"',
    'flag = "--mcp-config"',
    'value = "{path}"',
    "joined = true",
    'format = "mcp-json"',
    "",
    "[argv]",
    `prefix = ${JSON.stringify([...self.slice(1), "demo", "agent"])}`,
    "",
  ].join("\n");
}

/** The TOML of the demo service: this sherlock's demo server, token via the shim. */
export function demoServiceToml(
  self: readonly string[],
  tokenEnv: string,
): string {
  return [
    "# sherlock demo's MCP server: this sherlock, as `sherlock demo server`.",
    "[service]",
    `name = ${JSON.stringify(DEMO_SERVICE)}`,
    'description = "sherlock demo\'s MCP server"',
    "",
    "[server]",
    `command = ${JSON.stringify(self[0])}`,
    `args = ${JSON.stringify([...self.slice(1), "demo", "server"])}`,
    "",
    "[token]",
    'source = "secret"',
    `env = ${JSON.stringify(tokenEnv)}`,
    'delivery = "shim"',
    "",
  ].join("\n");
}

/**
 * The environment of the demo's sherlock processes: the operator's, with
 * HOME and every XDG folder in the throwaway home, and no `SHERLOCK_*`
 * setting of the operator's. From source, Deno's own cache stays where it
 * was (it is Deno's, not sherlock's), so the children do not compile
 * everything again.
 */
export function demoEnvironment(
  env: Readonly<Record<string, string | undefined>>,
  options: { home: string; runtimeDir: string; fromSource: boolean },
): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (key.startsWith("SHERLOCK_") || key.startsWith("XDG_")) continue;
    if (value !== undefined) result[key] = value;
  }
  if (options.fromSource && result.DENO_DIR === undefined) {
    const cache = env.XDG_CACHE_HOME ??
      (env.HOME ? join(env.HOME, ".cache") : undefined);
    if (cache !== undefined) result.DENO_DIR = join(cache, "deno");
  }
  const { home } = options;
  return {
    ...result,
    HOME: home,
    XDG_CONFIG_HOME: join(home, "config"),
    XDG_DATA_HOME: join(home, "data"),
    XDG_STATE_HOME: join(home, "state"),
    XDG_CACHE_HOME: join(home, "cache"),
    XDG_RUNTIME_DIR: options.runtimeDir,
  };
}

/** A random string of `bytes` bytes, base64url: the passphrase and the token. */
function randomText(bytes: number): string {
  const data = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...data)).replaceAll("+", "-")
    .replaceAll("/", "_").replaceAll("=", "");
}

/** What one sherlock child printed, and its exit code. */
interface ChildResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function runChild(
  args: readonly string[],
  options: { env: Record<string, string>; stdin?: string },
): Promise<ChildResult> {
  const [program, ...rest] = selfCommand();
  const child = new Deno.Command(program, {
    args: [...rest, ...args],
    env: options.env,
    clearEnv: true,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    try {
      await writer.write(new TextEncoder().encode(options.stdin));
      await writer.close();
    } catch {
      // It stopped before reading: its exit code and stderr say why.
    }
  }
  const output = await child.output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** Runs `sherlock run` with its output shown line by line as it comes. */
async function runSession(
  env: Record<string, string>,
  out: Printer,
): Promise<{ code: number; stdout: string }> {
  const [program, ...rest] = selfCommand();
  const child = new Deno.Command(program, {
    args: [...rest, "run", "-v", "--strict", DEMO_AGENT],
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const relay = async (
    stream: ReadableStream<Uint8Array>,
    prefix: string,
  ): Promise<string> => {
    let all = "";
    let pending = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      all += chunk;
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) out.line(`${prefix}${line}`);
    }
    if (pending !== "") out.line(`${prefix}${pending}`);
    return all;
  };
  const [stdout] = await Promise.all([
    relay(child.stdout, "   | "),
    relay(child.stderr, "   | "),
  ]);
  const status = await child.status;
  return { code: status.code, stdout };
}

function step(out: Printer, number: number, text: string): void {
  out.line(`${number}. ${text}`);
}

/** The rendered configs left in the demo's runtime folder. */
function renderedConfigs(runtimeDir: string): string[] {
  try {
    return [...Deno.readDirSync(join(runtimeDir, "sherlock"))]
      .map((entry) => entry.name)
      .filter((name) => name.endsWith(".mcp.json"));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

function childFailure(
  out: Printer,
  failure: { what: string; result: ChildResult },
): number {
  const { what, result } = failure;
  for (const line of result.stderr.split("\n").filter((l) => l !== "")) {
    out.error(`demo: ${what}: ${line.replace(/^sherlock: /, "")}`);
  }
  return result.code === 0 ? ExitCode.Software : result.code;
}

/**
 * The longest broker socket path the demo uses in its home; a longer one
 * (a long `$TMPDIR`) goes to a folder of its own in /tmp, since a Unix
 * socket's path has at most 107 bytes.
 */
const MAX_SOCKET_PATH_BYTES = 100;

/** A new 0700 folder in `dir`, or the system's temporary folder (`$TMPDIR`). */
async function throwawayFolder(
  options: { dir?: string; env: Record<string, string | undefined> },
): Promise<string> {
  const { dir, env } = options;
  try {
    return await Deno.makeTempDir({ prefix: "sherlock-demo-", dir });
  } catch (error) {
    const where = dir ?? env.TMPDIR ?? "the temporary folder";
    throw new CantCreateError(
      `demo: cannot create a throwaway home in ${where}: ${
        describeFsError(error)
      }; set TMPDIR to a folder you can write`,
    );
  }
}

async function runDemo(
  context: CommandContext,
  out: Printer,
): Promise<number> {
  const demo = await loadDemoModule();
  const self = selfCommand();
  const home = await throwawayFolder({ env: context.env });
  const folders = [home];
  let runtimeDir = join(home, "run");
  let brokerStarted = false;
  let stopBroker: (() => Promise<void>) | undefined;
  let passed = false;
  try {
    const socket = join(runtimeDir, "sherlock", "broker.sock");
    if (new TextEncoder().encode(socket).length > MAX_SOCKET_PATH_BYTES) {
      runtimeDir = await throwawayFolder({ dir: "/tmp", env: context.env });
      folders.push(runtimeDir);
    }
    const env = demoEnvironment(context.env, {
      home,
      runtimeDir,
      fromSource: !Deno.build.standalone,
    });
    out.line(
      `sherlock demo: a session end to end, in a throwaway home (${home}); your own config, store and broker are not touched`,
    );
    for (
      const name of [
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "XDG_RUNTIME_DIR",
      ]
    ) {
      Deno.mkdirSync(env[name], { recursive: true, mode: 0o700 });
    }
    const configDir = join(env.XDG_CONFIG_HOME, "sherlock");
    Deno.mkdirSync(join(configDir, "agents.d"), { recursive: true });
    Deno.mkdirSync(join(configDir, "services.d"), { recursive: true });
    Deno.writeTextFileSync(
      join(configDir, "agents.d", `${DEMO_AGENT}.toml`),
      demoAgentProfile(self),
    );
    Deno.writeTextFileSync(
      join(configDir, "services.d", `${DEMO_SERVICE}.toml`),
      demoServiceToml(self, demo.DEMO_TOKEN_ENV),
    );
    step(
      out,
      1,
      `wrote a stand-in agent (agents.d/${DEMO_AGENT}.toml) and an MCP server (services.d/${DEMO_SERVICE}.toml, token source "secret", delivered by the shim); both are this sherlock`,
    );

    // Made up here and given on stdin: never in argv, never printed.
    const passphrase = randomText(24);
    stopBroker = async () => {
      const stop = await runChild(["broker", "stop"], { env });
      // A login that failed may have started no broker: nothing to say.
      if (stop.code !== 0 && brokerStarted) {
        childFailure(out, { what: "sherlock broker stop", result: stop });
      }
    };
    const login = await runChild(["login"], {
      env,
      stdin: `${passphrase}\n`,
    });
    if (login.code !== 0) {
      return childFailure(out, { what: "sherlock login", result: login });
    }
    brokerStarted = true;
    step(
      out,
      2,
      "sherlock login: created a secret store and unlocked it in a new broker (the passphrase is made up and never shown)",
    );

    const token = `demo_${randomText(24)}`;
    const fingerprint = demo.tokenFingerprint(token);
    const secret = await runChild(["secret", "set", DEMO_SERVICE], {
      env,
      stdin: `${token}\n`,
    });
    if (secret.code !== 0) {
      return childFailure(out, { what: "sherlock secret set", result: secret });
    }
    step(
      out,
      3,
      `sherlock secret set ${DEMO_SERVICE}: stored a made-up token (${fingerprint}) in the store`,
    );

    step(
      out,
      4,
      `sherlock run -v --strict ${DEMO_AGENT}: the broker gives the token to the shim, the shim starts the server with it, the agent lists and calls its tool`,
    );
    const session = await runSession(env, out);
    const reached = session.stdout.includes(
      `the server got a token: ${fingerprint}`,
    );
    step(
      out,
      5,
      `the agent exited with ${session.code}; sherlock run exits with the agent's code`,
    );
    if (session.code === 0 && !reached) {
      out.error(
        "demo: the server's answer does not match the stored token's fingerprint",
      );
      return ExitCode.Software;
    }

    const left = renderedConfigs(runtimeDir);
    if (left.length > 0) {
      out.error(
        `demo: the session's rendered config is still there: ${
          left.join(", ")
        }`,
      );
      return ExitCode.Software;
    }
    step(
      out,
      6,
      "the session's rendered config (and its token) is gone from the runtime folder",
    );
    passed = session.code === 0;
    return session.code;
  } finally {
    await stopBroker?.();
    for (const folder of folders) {
      await Deno.remove(folder, { recursive: true }).catch(() => {});
    }
    out.line(
      passed
        ? "7. stopped the demo's broker and removed the throwaway home"
        : "cleaned up: stopped the demo's broker, if it ran, and removed the throwaway home",
    );
    if (passed) {
      out.line(
        "demo passed: the token went from the store to the server through the shim, and into no file that is left",
      );
    }
  }
}
