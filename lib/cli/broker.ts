/**
 * `sherlock broker serve|start|stop|status|log`: the credential broker
 * daemon, in the foreground or the background, and its audit log.
 *
 * @module
 */

import { importLazily } from "../runtime/lazy_import.ts";
import {
  brokerHealth,
  ensureBroker,
  shutdownBroker,
  versionProblem,
  whoami,
} from "../broker/client.ts";
import { readAudit } from "../broker/audit_entries.ts";
import {
  errorMessage,
  ExitCode,
  UnavailableError,
  UsageError,
} from "../errors.ts";
import { ensurePrivateDir } from "../private_files.ts";
import { loadSettings } from "../config/settings.ts";
import { ValidationCache } from "../config/validation_cache.ts";
import type { ParsedArguments } from "./commands.ts";
import type { CommandContext } from "./context.ts";
import { describeLogin, loginJson } from "./login_text.ts";
import type { BrokerStatusJson } from "./json_shapes.ts";
import type { Health } from "../broker/protocol.ts";
import { escapeControls, type Printer, printer } from "./output.ts";

/** How long `broker stop` waits for the daemon to stop answering. */
const STOP_TIMEOUT_MS = 10_000;

/** Runs the command; returns the exit code. */
export async function brokerCommand(
  args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  switch (args.subcommand) {
    case "serve":
      return await serve(args.has("--background"), context);
    case "start":
      return await start(context);
    case "stop":
      return await stop(context);
    case "status":
      return await status(args.has("--json"), context);
    default:
      return log(args.value("--lines"), context);
  }
}

async function serve(
  background: boolean,
  context: CommandContext,
): Promise<number> {
  const { env, paths } = context;
  const { serveBroker, brokerLogWriter, oneLogLine } = await importLazily<
    typeof import("../broker/daemon/serve.ts")
  >("lib/broker/daemon/serve.ts");
  // Escaped as in broker.log: a message may quote a server's answer.
  let logLine = (line: string) =>
    console.error(`sherlock broker: ${oneLogLine(line)}`);
  if (background) {
    ensurePrivateDir(paths.stateDir);
    // Opened per line and rotated by size, so it never grows forever.
    logLine = brokerLogWriter(paths.brokerLog);
    // Do not hold the operator's project folder open for the daemon's life.
    if (env.HOME) Deno.chdir(env.HOME);
  }
  let outcome;
  try {
    const settings = await loadSettings({
      paths,
      cache: new ValidationCache(paths.cacheDir),
    });
    outcome = await serveBroker({ paths, settings, log: logLine });
  } catch (error) {
    // In the background nobody sees stderr: the client that started this
    // daemon quotes the log's last line.
    if (background) logLine(`cannot serve: ${errorMessage(error)}`);
    throw error;
  }
  if (outcome === "already-running") {
    logLine("another broker is already serving; leaving it be");
  }
  return 0;
}

async function start(context: CommandContext): Promise<number> {
  const out = printer(context);
  const { paths } = context;
  const socket = paths.socket;
  const health = await ensureBroker({ socket, logFile: paths.brokerLog });
  out.line(
    `broker running (pid ${health.pid}, since ${health.started}) on ${socket}`,
  );
  return 0;
}

async function stop(context: CommandContext): Promise<number> {
  const out = printer(context);
  const { paths } = context;
  const socket = paths.socket;
  const health = await brokerHealth(socket);
  if (health === undefined) {
    out.line("broker is not running");
    return 0;
  }
  await shutdownBroker(socket);
  // It stops listening at once, and exits when its open requests are done.
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while ((await brokerHealth(socket))?.pid === health.pid) {
    if (Date.now() > deadline) {
      throw new UnavailableError(
        `the broker (pid ${health.pid}) did not stop within ${
          STOP_TIMEOUT_MS / 1000
        } s; stop it with "kill ${health.pid}"`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  out.line(`broker stopped (was pid ${health.pid})`);
  return 0;
}

async function status(
  json: boolean,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  const { paths } = context;
  const socket = paths.socket;
  const health = await brokerHealth(socket);
  if (json) return await statusJson(socket, { health, out });
  if (health === undefined) {
    out.line(`broker is not running (socket ${socket})`);
    return ExitCode.Unavailable;
  }
  const rows = [
    ["broker", `running, pid ${health.pid}, sherlock ${health.version}`],
    ["since", health.started],
    ["socket", socket],
  ];
  // A daemon of another version is not asked anything more: every other
  // command refuses it too, and says the same.
  const mismatch = versionProblem(health.version);
  if (mismatch === undefined) {
    rows.push(["login", describeLogin(await whoami(socket))]);
  } else rows.push(["version", mismatch]);
  out.columns(rows, "first column");
  return mismatch === undefined ? 0 : ExitCode.Unavailable;
}

/** `broker status --json`: the same exit codes, the status as JSON. */
async function statusJson(
  socket: string,
  options: { health: Health | undefined; out: Printer },
): Promise<number> {
  const { health, out } = options;
  const mismatch = health && versionProblem(health.version);
  const shape: BrokerStatusJson = {
    running: health !== undefined,
    socket,
    pid: health?.pid ?? null,
    version: health?.version ?? null,
    started: health?.started ?? null,
    versionProblem: mismatch ?? null,
    login: health !== undefined && mismatch === undefined
      ? loginJson(await whoami(socket))
      : null,
  };
  out.json(shape);
  return health !== undefined && mismatch === undefined
    ? 0
    : ExitCode.Unavailable;
}

function log(lines: string | undefined, context: CommandContext): number {
  if (lines !== undefined && !/^\d+$/.test(lines)) {
    throw new UsageError(
      `-n takes a number of entries, not ${lines}; usage: sherlock broker log [-n N]`,
    );
  }
  const count = lines === undefined ? 20 : Number(lines);
  return printAudit(context.paths.auditLog, {
    count,
    out: printer(context),
  });
}

function printAudit(
  auditLog: string,
  options: { count: number; out: Printer },
): number {
  const { count, out } = options;
  // The audit log is a plain file; reading it needs no daemon.
  const entries = readAudit(auditLog, count);
  if (entries.length === 0) {
    out.line("the audit log is empty");
    return 0;
  }
  const rows = [[
    "TIME",
    "EVENT",
    "AGENT",
    "SESSION",
    "SERVICE",
    "SOURCE",
    "EXPIRES",
    "NOTE",
  ]];
  for (const entry of entries) {
    // Anyone who can reach the socket chooses some of these strings, and
    // the log is a plain file: print them, never obey them.
    rows.push([
      entry.time,
      entry.event,
      entry.agent ?? "-",
      entry.session ?? "-",
      entry.service ?? "-",
      entry.source ?? entry.provider ?? "-",
      entry.expiresAt ?? "-",
      entry.cached
        ? "cached"
        : [entry.keyring && `keyring: ${entry.keyring}`, entry.reason]
          .filter(Boolean).join("; "),
    ].map((cell) => escapeControls(String(cell))));
  }
  out.columns(rows, "header");
  return 0;
}
