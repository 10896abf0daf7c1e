/**
 * Tokens kept for a session's shim. A session cannot write a token holding
 * `$` into its config (agents expand it), so the daemon keeps such a token,
 * fetched for the session's `POST /v1/tokens`, and serves it to that
 * session's shim instead of fetching it again: one fetch, one audit entry.
 * In memory only, per registered session (`sessions.ts`: the key of the
 * registration whose capability asked, never a session id a caller names)
 * and service, taken at most once, gone when the session ends, and gone
 * after {@linkcode HANDOFF_TTL_MS} (the shim then fetches as usual).
 *
 * @module
 */

import type { ServedToken } from "./token_cache.ts";

/**
 * How long a kept token waits for its shim: the agent starts its servers
 * when it starts, so this only needs to cover a slow start.
 */
export const HANDOFF_TTL_MS = 120_000;

/** The most tokens kept at once; the oldest goes first. */
const MAX_HANDOFFS = 1024;

/** Which token is kept: the session, the service, and its `[token]` table. */
export interface HandoffKey {
  /** The registered session it was fetched for (its `RegisteredSession.key`). */
  session: string;
  /** The service's name. */
  service: string;
  /** The cache key of the service's `[token]` table (a changed table does not match). */
  tokenKey: string;
}

interface Held {
  served: ServedToken;
  tokenKey: string;
  until: number;
}

/** The kept tokens of one daemon. */
export class TokenHandoffs {
  #held = new Map<string, Held>();

  /** Keeps `served` for the shim of `key`'s session (replacing any earlier one). */
  hold(key: HandoffKey, served: ServedToken, now = Date.now()): void {
    this.#prune(now);
    const id = handoffId(key);
    this.#held.delete(id);
    if (this.#held.size >= MAX_HANDOFFS) {
      this.#held.delete(this.#held.keys().next().value as string);
    }
    const until = Math.min(now + HANDOFF_TTL_MS, served.expiresAt ?? Infinity);
    this.#held.set(id, { served, tokenKey: key.tokenKey, until });
  }

  /** The token kept for `key`, removed as it is taken; undefined if none. */
  take(key: HandoffKey, now = Date.now()): ServedToken | undefined {
    this.#prune(now);
    const id = handoffId(key);
    const held = this.#held.get(id);
    if (held === undefined) return undefined;
    this.#held.delete(id);
    return held.tokenKey === key.tokenKey ? held.served : undefined;
  }

  /** Forgets the tokens kept for `session` (it ended). */
  forget(session: string): void {
    for (const id of [...this.#held.keys()]) {
      if (id.startsWith(`${session}\0`)) this.#held.delete(id);
    }
  }

  /** Forgets every kept token (logout, idle lock). */
  clear(): void {
    this.#held.clear();
  }

  /** How many tokens are kept. */
  get size(): number {
    return this.#held.size;
  }

  #prune(now: number): void {
    for (const [id, held] of this.#held) {
      if (held.until <= now) this.#held.delete(id);
    }
  }
}

function handoffId(key: HandoffKey): string {
  return `${key.session}\0${key.service}`;
}
