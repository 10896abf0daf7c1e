/**
 * Running the daemon: claim the socket (one daemon per user, however many
 * start at once), serve until asked to stop, remove the socket on the way
 * out.
 *
 * The folder must be the user's own (a symlink or another user's folder is
 * refused, and so is another user's socket in it). Claiming happens under
 * an exclusive lock on `broker.lock` beside the socket: test-connect the
 * socket; if something answers, another daemon serves and this one leaves;
 * otherwise remove the stale socket and bind a new one, with the umask set
 * so that it is created 0600 (never chmod'ed afterwards, which would leave
 * a window).
 *
 * @module
 */

import { socketPathProblem, untrustedSocketProblem } from "../socket_path.ts";
import process from "node:process";
import { join } from "node:path";
import { CantCreateError } from "../../errors.ts";
import type { SherlockPaths } from "../../config/sherlock_paths.ts";
import { ensurePrivateDir, removeIfPresent } from "../../private_files.ts";
import { loadSettings, type Settings } from "../../config/settings.ts";
import { InvalidFileError } from "../../config/toml_files.ts";
import { BrokerRequestError } from "./request_error.ts";
import { ValidationCache } from "../../config/validation_cache.ts";
import { VERSION } from "../../version.ts";
import { MAX_BODY_BYTES } from "../protocol.ts";
import {
  appendAudit,
  appendRotating,
  type RotationOptions,
} from "./audit_log.ts";
import { handleRequest } from "./handler.ts";
import { type HttpServer, serveHttp } from "./http_server.ts";
import { LoginState } from "./login_state.ts";
import { daemonClock } from "./clock.ts";
import { TokenBroker } from "./token_broker.ts";
import { setNonDumpable } from "../../os/libc.ts";

/**
 * The file in the runtime folder that every serving daemon holds a shared
 * lock on for its whole life. A non-dumpable daemon's `/proc/<pid>/environ`
 * is private, so `/proc/locks` is how a process of the same user (a test,
 * an operator with `grep`) tells which daemon serves which folder.
 */
export const LIVE_LOCK_NAME = "broker.live";

/** How a daemon runs. */
export interface ServeOptions {
  paths: SherlockPaths;
  /** sherlock's settings (idle timeout). */
  settings: Settings;
  /** Writes a line to the daemon's log. */
  log: (line: string) => void;
}

/**
 * The daemon's log in the background: timestamped lines appended to `path`
 * (0600), rotated by size like the audit log. Each entry stays one line
 * (see {@linkcode oneLogLine}), so a message cannot forge another entry.
 */
export function brokerLogWriter(
  path: string,
  rotation: RotationOptions = {},
): (line: string) => void {
  return (line) => {
    try {
      appendRotating(
        path,
        `${new Date().toISOString()} ${oneLogLine(line)}\n`,
        rotation,
      );
    } catch {
      // A full disk must not stop the daemon; the line is lost.
    }
  };
}

/**
 * `line` with backslashes and control characters (C0, DEL, C1) escaped
 * (`\\`, `\n`, `\x1b`, `\x9b`…): a message that quotes a name or a
 * server's answer can neither start a new log entry nor send escape
 * sequences to the terminal of whoever reads the log.
 */
export function oneLogLine(line: string): string {
  // deno-lint-ignore no-control-regex -- control characters are the point
  return line.replace(/[\\\x00-\x1f\x7f-\x9f]/g, (character) => {
    if (character === "\\") return "\\\\";
    if (character === "\n") return "\\n";
    if (character === "\t") return "\\t";
    if (character === "\r") return "\\r";
    return `\\x${character.charCodeAt(0).toString(16).padStart(2, "0")}`;
  });
}

/** What {@linkcode serveBroker} did. */
export type ServeOutcome = "served" | "already-running";

/**
 * Serves until `POST /v1/shutdown`, SIGTERM or SIGINT. Returns
 * `already-running` at once when another daemon holds the socket.
 */
export async function serveBroker(
  options: ServeOptions,
): Promise<ServeOutcome> {
  const { paths, log } = options;
  const socket = paths.socket;
  // Before the first secret is in memory: other processes of this user
  // must not read the daemon's memory (ptrace, /proc/<pid>/mem).
  if (!setNonDumpable() && Deno.build.os === "linux") {
    log("cannot make the broker non-dumpable; its memory is readable");
  }
  const started = new Date();
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => stop = resolve);

  const validationCache = new ValidationCache();
  // The system clock, unless a test names its offset file.
  const clock = daemonClock(Deno.env);
  const login = new LoginState({
    clock,
    storePath: paths.secretStore,
    idleTimeoutSeconds: options.settings.broker.idle_timeout,
    onIdleLock: (provider) => {
      tokens.clear();
      log(
        provider === "oidc"
          ? "idle timeout: login forgotten, store locked"
          : "idle timeout: store locked",
      );
      try {
        appendAudit(paths.stateDir, { event: "idle_lock", provider });
      } catch (error) {
        // A timer's exception would end the daemon; the lock itself worked.
        log(`cannot write the audit log: ${(error as Error).message}`);
      }
    },
    onRemembered: ({ unlocked, line }) => {
      log(line);
      try {
        appendAudit(
          paths.stateDir,
          unlocked
            ? { event: "login", provider: "local", keyring: login.keyringName }
            : {
              event: "login_failed",
              provider: "local",
              keyring: login.keyringName,
              reason: "wrong_remembered_key",
            },
        );
      } catch (error) {
        log(`cannot write the audit log: ${(error as Error).message}`);
      }
    },
  });
  const tokens = new TokenBroker({
    paths,
    login,
    validationCache,
    clock,
    helperCwd: Deno.env.get("HOME"),
  });
  const context = {
    login,
    tokens,
    stateDir: paths.stateDir,
    started,
    shutdown: () => setTimeout(stop, 0),
    log,
    settings: async () => {
      try {
        return await loadSettings({ paths, cache: validationCache });
      } catch (error) {
        if (!(error instanceof InvalidFileError)) throw error;
        throw new BrokerRequestError({
          code: "invalid_config",
          message: error.message,
        });
      }
    },
  };

  ensurePrivateDir(paths.runtimeDir);
  const live = await holdLiveLock(paths.runtimeDir);
  const server = await claimSocket({
    runtimeDir: paths.runtimeDir,
    socket,
    serve: () =>
      serveHttp({
        path: socket,
        handler: (request) => handleRequest(request, context),
        maxBodyBytes: MAX_BODY_BYTES,
        log,
      }),
  });
  if (server === undefined) {
    live.close();
    return "already-running";
  }
  log(`sherlock ${VERSION} broker serving on ${socket} (pid ${Deno.pid})`);

  const onSignal = () => stop();
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    Deno.addSignalListener(signal, onSignal);
  }
  await stopped;
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    Deno.removeSignalListener(signal, onSignal);
  }
  // Closing the listener removes the socket at once (Deno unlinks it), so
  // the next client starts a new daemon while this one lets its open
  // requests finish with the store still unlocked. Nothing is removed by
  // path afterwards: by then the path may be the new daemon's socket, and
  // inode numbers are reused too soon to tell.
  // An authorization waiting for its browser would hold the shutdown.
  tokens.oauth.close();
  login.oidc.close();
  await server.shutdown();
  login.logout();
  tokens.clear();
  live.close();
  log("broker stopped");
  return "served";
}

/**
 * Binds the socket unless another daemon answers on it. Serialized by an
 * exclusive lock so that concurrent daemons cannot remove each other's
 * socket.
 */
async function claimSocket(
  options: {
    runtimeDir: string;
    socket: string;
    serve: () => HttpServer;
  },
): Promise<HttpServer | undefined> {
  // Refuses another user's folder or a symlink, tightens a folder of ours.
  ensurePrivateDir(options.runtimeDir);
  // Another user's socket here (put in while the folder was open to them)
  // is neither a broker to leave the work to nor sherlock's to remove.
  const untrusted = untrustedSocketProblem(options.socket);
  if (untrusted !== undefined) throw new CantCreateError(untrusted);
  const lock = await Deno.open(join(options.runtimeDir, "broker.lock"), {
    create: true,
    write: true,
    mode: 0o600,
  });
  try {
    await lock.lock(true);
    if (await answers(options.socket)) return undefined;
    // Nobody answered: a socket there is stale and goes; anything else in
    // the way is not sherlock's to remove.
    const problem = socketPathProblem(options.socket);
    if (problem !== undefined) throw new CantCreateError(problem);
    removeIfPresent(options.socket);
    const previous = process.umask(0o177);
    try {
      return options.serve();
    } finally {
      process.umask(previous);
    }
  } finally {
    await lock.unlock().catch(() => {});
    lock.close();
  }
}

/** Opens {@linkcode LIVE_LOCK_NAME} and takes its shared lock. */
async function holdLiveLock(runtimeDir: string): Promise<Deno.FsFile> {
  const file = await Deno.open(join(runtimeDir, LIVE_LOCK_NAME), {
    create: true,
    write: true,
    mode: 0o600,
  });
  // Shared: a daemon still finishing its last requests and its successor
  // both hold it, and neither waits.
  await file.lock(false);
  return file;
}

async function answers(socket: string): Promise<boolean> {
  try {
    const connection = await Deno.connect({ transport: "unix", path: socket });
    connection.close();
    return true;
  } catch {
    return false;
  }
}
