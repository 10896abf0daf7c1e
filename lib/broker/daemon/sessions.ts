/**
 * The daemon's table of live sessions: who may get which token.
 *
 * `sherlock run` registers its session (`POST /v1/sessions`: agent,
 * services, its own pid) and gets a random capability that it and its
 * shims present with every token request. A token is served only to a
 * capability the table knows, only for that session's services, and the
 * audit log names the session and agent registered here, never what a
 * caller claims. A session is forgotten when sherlock ends it, or once its
 * process is gone: checked on every use and every
 * {@linkcode SWEEP_INTERVAL_MS}, with the process's start time compared so
 * that a reused pid does not keep a session alive.
 *
 * The table keys sessions by the SHA-256 of their capability, so a lookup
 * compares hashes, never the capability itself. See docs/security.md for
 * what this defends and what it does not.
 *
 * @module
 */

import process from "node:process";
import { sha256Hex } from "../../private_files.ts";
import { readProcStat } from "../../os/processes.ts";
import { BrokerRequestError } from "./request_error.ts";

/** How often the table drops the sessions of processes that are gone. */
export const SWEEP_INTERVAL_MS = 60_000;

/** The most sessions at once: a bound on what requests can make it hold. */
export const MAX_SESSIONS = 4096;

/** A session id: what `sherlock run` makes, with room for other clients. */
const SESSION_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** One registered session. */
export interface RegisteredSession {
  /**
   * What tells this registration from any other, also a later one with
   * the same session id: the SHA-256 of its capability.
   */
  key: string;
  /** The session's id. */
  session: string;
  /** The agent it was registered for. */
  agent: string;
  /** The services it may get tokens for. */
  services: ReadonlySet<string>;
  /** The agent's own credentials it may get (`[credentials]`). */
  credentials: ReadonlySet<string>;
  /** The pid of the sherlock that runs it. */
  pid: number;
  /** That process's start time (Linux), so that a reused pid does not match. */
  processStart: string | null;
}

/** What registering a session takes (validated by the handler). */
export interface SessionRegistration {
  /** The session's id. */
  session: string;
  /** The agent's profile name. */
  agent: string;
  /** The services it may get tokens for. */
  services: readonly string[];
  /** The agent's own credentials it may get; none when absent. */
  credentials?: readonly string[];
  /** The pid of the sherlock that runs it. */
  pid: number;
}

/** The live sessions of one daemon. */
export class SessionTable {
  #byHash = new Map<string, RegisteredSession>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #onForget: (key: string) => void;

  /**
   * Creates an empty table; `onForget` hears the key of every session it
   * forgets (ended, or its process gone), to drop what was kept for it.
   */
  constructor(options: { onForget?: (key: string) => void } = {}) {
    this.#onForget = options.onForget ?? (() => {});
  }

  /** How many sessions are registered (the dead included until checked). */
  get size(): number {
    return this.#byHash.size;
  }

  /**
   * Registers a session; returns its new capability (256 bits from
   * `crypto.getRandomValues`, hex). Throws {@linkcode BrokerRequestError}
   * when the pid is not a live process of this user, when the session id
   * is live already, or when the table is full.
   */
  register(registration: SessionRegistration): string {
    if (!SESSION_PATTERN.test(registration.session)) {
      throw badRequest(`"session" must be 1 to 64 letters, digits, - or _`);
    }
    const { pid } = registration;
    if (!Number.isSafeInteger(pid) || pid <= 1 || pid === Deno.pid) {
      throw badRequest(`"pid" must be the pid of the sherlock that asks`);
    }
    this.sweep();
    if (!isProcessAlive(pid)) {
      throw badRequest(`process ${pid} is not a live process of this user`);
    }
    for (const known of this.#byHash.values()) {
      if (known.session === registration.session) {
        throw badRequest(`session ${registration.session} is registered`);
      }
    }
    if (this.#byHash.size >= MAX_SESSIONS) {
      throw badRequest(`the broker holds ${MAX_SESSIONS} live sessions`);
    }
    const capability = Array.from(
      crypto.getRandomValues(new Uint8Array(32)),
      (byte) => byte.toString(16).padStart(2, "0"),
    ).join("");
    const key = sha256Hex(capability);
    this.#byHash.set(key, {
      key,
      session: registration.session,
      agent: registration.agent,
      services: new Set(registration.services),
      credentials: new Set(registration.credentials ?? []),
      pid,
      processStart: processStartTime(pid),
    });
    this.#startSweeping();
    return capability;
  }

  /**
   * The live session of `capability`. Throws {@linkcode BrokerRequestError}
   * `unknown_session` for a capability never given, one whose session
   * ended, or one whose sherlock is gone (which is forgotten then).
   */
  resolve(capability: string): RegisteredSession {
    const hash = sha256Hex(capability);
    const session = this.#byHash.get(hash);
    if (session !== undefined && isSessionAlive(session)) return session;
    if (session !== undefined) this.#forget(hash);
    throw new BrokerRequestError({
      code: "unknown_session",
      message:
        "the broker knows no such session: it ended, its sherlock is gone, or it was never registered",
    });
  }

  /**
   * Ends the session `session` if `capability` is its own; returns the
   * session it ended. A wrong capability ends nothing.
   */
  end(session: string, capability: string): RegisteredSession | undefined {
    const hash = sha256Hex(capability);
    const known = this.#byHash.get(hash);
    if (known === undefined || known.session !== session) return undefined;
    this.#forget(hash);
    return known;
  }

  /** Forgets every session whose process is gone. */
  sweep(): void {
    for (const [hash, session] of this.#byHash) {
      if (!isSessionAlive(session)) this.#forget(hash);
    }
  }

  #forget(hash: string): void {
    this.#byHash.delete(hash);
    this.#onForget(hash);
    if (this.#byHash.size === 0) this.#stopSweeping();
  }

  #startSweeping(): void {
    if (this.#timer !== undefined) return;
    const timer = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS);
    // The sweep alone must not keep the daemon running.
    Deno.unrefTimer(timer as unknown as number);
    this.#timer = timer;
  }

  #stopSweeping(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

function badRequest(message: string): BrokerRequestError {
  return new BrokerRequestError({ code: "bad_request", message });
}

/** True while the session's process exists and is the one that registered. */
function isSessionAlive(session: RegisteredSession): boolean {
  if (!isProcessAlive(session.pid)) return false;
  const start = processStartTime(session.pid);
  return start === session.processStart;
}

/**
 * True while `pid` exists and is this user's. On Linux from /proc (another
 * user's process with the same pid is not the sherlock that registered);
 * elsewhere from `kill(pid, 0)`, where EPERM means another user's.
 */
function isProcessAlive(pid: number): boolean {
  if (Deno.build.os === "linux") {
    try {
      return Deno.statSync(`/proc/${pid}`).uid === Deno.uid();
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The process's start time in clock ticks since boot (Linux), else null. */
function processStartTime(pid: number): string | null {
  return readProcStat(pid)?.startTime ?? null;
}
