/**
 * A fake agent CLI for tests: a real program that records how sherlock
 * started it, then exits the way the test asks.
 *
 * It is started through a `/bin/sh` wrapper (see `agent.ts`) that passes its
 * own `$0` first, so the record holds the executable sherlock ran and the
 * exact arguments after it. Everything is controlled by environment
 * variables that the test sets in sherlock's environment (and that sherlock
 * passes through to the agent like any other):
 *
 * - `FAKE_AGENT_RECORD`: where to write the record (JSON, replaced
 *   atomically). It is written once when the agent starts (`state:
 *   "running"`), again for each signal, and last when it exits (`state:
 *   "exited"`). Without it, the agent records nothing.
 * - `FAKE_AGENT_CONFIG`: where to find the rendered config, to record its
 *   text and mode: `env:<VAR>` (the variable holds the path),
 *   `path:<absolute path>`, or `arg:<regex>` (the first argument that
 *   matches; the first capture group is the path).
 * - `FAKE_AGENT_WAIT_FOR`: a path; the agent waits until it exists.
 *   While waiting, SIGINT, SIGTERM and SIGHUP are recorded; a signal named
 *   in `FAKE_AGENT_SURVIVE` (comma-separated) is only recorded, any other
 *   makes the agent exit 128+N, as a shell would report it.
 * - `FAKE_AGENT_STDOUT`: text to print on stdout.
 * - `FAKE_AGENT_READ_STDIN=1`: read stdin to its end and record it.
 * - `FAKE_AGENT_RUN_SERVERS`: text for the servers' stdin. The agent starts
 *   each stdio server of the rendered config (`mcpServers` entries with a
 *   `command`, as Claude Code or Gemini CLI would: its own environment plus
 *   the entry's `env`), writes the text to its stdin, closes it, and
 *   records its stdout, stderr and exit code — before the first record.
 * - `FAKE_AGENT_KILL`: a signal to kill itself with, after waiting.
 * - `FAKE_AGENT_EXIT`: the exit code (default 0).
 *
 * @module
 */

import { constants } from "node:os";

/** What the fake agent records. */
export interface AgentRecord {
  /** `running` until the agent is about to exit. */
  state: "running" | "exited";
  /** The path sherlock executed (the wrapper's `$0`). */
  argv0: string;
  /** The arguments after the executable, verbatim. */
  args: string[];
  /** The agent's whole environment (the wrapper adds nothing but PWD). */
  env: Record<string, string>;
  /** The agent's working folder. */
  cwd: string;
  pid: number;
  /** The rendered config, when `FAKE_AGENT_CONFIG` says where it is. */
  config: ConfigSeen | null;
  /** The signals received, in order. */
  signals: string[];
  /** What was read from stdin, with `FAKE_AGENT_READ_STDIN=1`. */
  stdin: string | null;
  /** The stdio servers it ran, by name, with `FAKE_AGENT_RUN_SERVERS`. */
  servers: Record<string, ServerRun> | null;
}

/** One stdio server the fake agent ran. */
export interface ServerRun {
  /** Its exit code (128+N when signal N ended it). */
  code: number;
  /** Everything it printed on stdout. */
  stdout: string;
  /** Everything it printed on stderr. */
  stderr: string;
}

/** The rendered config as the agent saw it. */
export interface ConfigSeen {
  /** Its path. */
  path: string;
  /** Its text, or null when it did not exist. */
  text: string | null;
  /** Its permission bits, e.g. 0o600. */
  mode: number | null;
  /** Its folder's permission bits. */
  dirMode: number | null;
}

const SIGNALS: Deno.Signal[] = ["SIGINT", "SIGTERM", "SIGHUP"];

function configPath(spec: string | undefined, args: string[]): string | null {
  if (!spec) return null;
  const colon = spec.indexOf(":");
  const kind = spec.slice(0, colon);
  const value = spec.slice(colon + 1);
  if (kind === "env") return Deno.env.get(value) ?? null;
  if (kind === "path") return value;
  if (kind === "arg") {
    const pattern = new RegExp(value);
    for (const arg of args) {
      const match = pattern.exec(arg);
      if (match) return match[1] ?? match[0];
    }
    return null;
  }
  throw new Error(`bad FAKE_AGENT_CONFIG: ${spec}`);
}

function modeOf(path: string): number | null {
  try {
    return (Deno.statSync(path).mode ?? 0) & 0o777;
  } catch {
    return null;
  }
}

function seeConfig(path: string | null): ConfigSeen | null {
  if (path === null) return null;
  let text: string | null = null;
  try {
    text = Deno.readTextFileSync(path);
  } catch {
    text = null;
  }
  const folder = path.slice(0, path.lastIndexOf("/")) || "/";
  return { path, text, mode: modeOf(path), dirMode: modeOf(folder) };
}

/** Runs every stdio server of a `{"mcpServers": …}` config. */
async function runServers(
  text: string | null,
  input: string,
): Promise<Record<string, ServerRun>> {
  const servers = (JSON.parse(text ?? "{}").mcpServers ?? {}) as Record<
    string,
    { command?: string; args?: string[]; env?: Record<string, string> }
  >;
  const runs: Record<string, ServerRun> = {};
  for (const [name, entry] of Object.entries(servers)) {
    if (entry.command === undefined) continue;
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(entry.command, {
        args: entry.args ?? [],
        env: entry.env ?? {},
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
    } catch (error) {
      runs[name] = { code: 127, stdout: "", stderr: String(error) };
      continue;
    }
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(input));
    await writer.close();
    const output = await child.output();
    runs[name] = {
      code: output.signal
        ? 128 + (constants.signals as Record<string, number>)[output.signal]
        : output.code,
      stdout: new TextDecoder().decode(output.stdout),
      stderr: new TextDecoder().decode(output.stderr),
    };
  }
  return runs;
}

function write(path: string | undefined, record: AgentRecord): void {
  if (!path) return;
  const temporary = `${path}.${Deno.pid}.tmp`;
  Deno.writeTextFileSync(temporary, JSON.stringify(record, null, 2));
  Deno.renameSync(temporary, path);
}

async function main(): Promise<never> {
  const [argv0, ...args] = Deno.args;
  const env = Deno.env.toObject();
  const recordPath = env.FAKE_AGENT_RECORD;
  const record: AgentRecord = {
    state: "running",
    argv0,
    args,
    env,
    cwd: Deno.cwd(),
    pid: Deno.pid,
    config: seeConfig(configPath(env.FAKE_AGENT_CONFIG, args)),
    signals: [],
    stdin: null,
    servers: null,
  };
  if (env.FAKE_AGENT_RUN_SERVERS !== undefined) {
    record.servers = await runServers(
      record.config?.text ?? null,
      env.FAKE_AGENT_RUN_SERVERS,
    );
  }
  if (env.FAKE_AGENT_STDOUT) {
    Deno.stdout.writeSync(new TextEncoder().encode(env.FAKE_AGENT_STDOUT));
  }
  if (env.FAKE_AGENT_READ_STDIN === "1") {
    record.stdin = await new Response(Deno.stdin.readable).text();
  }

  const exit = (code: number): never => {
    record.state = "exited";
    write(recordPath, record);
    Deno.exit(code);
  };

  const waitFor = env.FAKE_AGENT_WAIT_FOR;
  if (waitFor) {
    const survive = (env.FAKE_AGENT_SURVIVE ?? "").split(",");
    for (const signal of SIGNALS) {
      Deno.addSignalListener(signal, () => {
        record.signals.push(signal);
        if (survive.includes(signal)) write(recordPath, record);
        else exit(128 + (constants.signals as Record<string, number>)[signal]);
      });
    }
    write(recordPath, record);
    // Poll: the test creates the file when it wants the agent to go on.
    while (!exists(waitFor)) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } else {
    write(recordPath, record);
  }

  if (env.FAKE_AGENT_KILL) {
    record.state = "exited";
    write(recordPath, record);
    Deno.kill(Deno.pid, env.FAKE_AGENT_KILL as Deno.Signal);
    // The signal's default action ends the process; keep the event loop
    // alive until it does.
    setInterval(() => {}, 1000);
    await new Promise(() => {});
  }
  return exit(Number(env.FAKE_AGENT_EXIT ?? "0"));
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

if (import.meta.main) await main();
