/**
 * The bridge's token: asked for through a callback (the broker, for
 * `sherlock bridge`), kept in memory until shortly before it expires, one
 * fetch for all the requests that need it at once, and refreshed on demand
 * after a 401 — only once for a burst of 401s to the same token.
 *
 * @module
 */

/** A token as the callback hands it over. */
export interface BridgeToken {
  /** The token. Never logged, never printed. */
  token: string;
  /** When it expires, in ms since the epoch; null or absent when unknown. */
  expiresAt?: number | null;
}

/**
 * Where the bridge's tokens come from. `forceRefresh` asks for a new token
 * rather than a cached one: the server refused the last one, `refused`.
 */
export type GetToken = (
  options: { forceRefresh: boolean; refused?: string },
) => Promise<BridgeToken>;

/** The most a token is renewed ahead of its expiry. */
const MAX_MARGIN_MS = 30_000;

/** The token of one bridge. */
export class TokenKeeper {
  #getToken: GetToken;
  #now: () => number;
  #current?: { token: string; freshUntil: number };
  #inFlight?: Promise<string>;

  /** Creates the keeper; `now` is for tests. */
  constructor(getToken: GetToken, now: () => number = Date.now) {
    this.#getToken = getToken;
    this.#now = now;
  }

  /**
   * The token: the kept one while it is fresh, else a new one. With
   * `refused`, the token the server refused: a new one is asked for with
   * `forceRefresh`, unless another request already replaced it. Throws
   * what the callback throws.
   */
  async get(refused?: string): Promise<string> {
    const current = this.#current;
    if (current && current.token !== refused) {
      if (refused !== undefined || this.#now() < current.freshUntil) {
        return current.token;
      }
    }
    if (this.#inFlight) {
      const shared = this.#inFlight;
      if (refused === undefined) return await shared;
      // A fetch that started before the 401 may bring the refused token back.
      const token = await shared.catch(() => undefined);
      if (token !== undefined && token !== refused) return token;
      // Another 401 may have started the forced fetch meanwhile.
      const forced = this.#inFlight as Promise<string> | undefined;
      if (forced) return await forced;
    }
    const fetching = this.#fetch(refused);
    this.#inFlight = fetching;
    try {
      return await fetching;
    } finally {
      this.#inFlight = undefined;
    }
  }

  /**
   * Stops serving `token` (a 403 `insufficient_scope` refused it): the
   * next request asks the broker, which serves a new grant's token once
   * `sherlock auth` has stepped up. No refresh is forced: one would bring
   * the same scopes.
   */
  forget(token: string): void {
    if (this.#current?.token === token) this.#current = undefined;
  }

  async #fetch(refused: string | undefined): Promise<string> {
    this.#current = undefined;
    const fetchedAt = this.#now();
    const { token, expiresAt } = await this.#getToken(
      refused === undefined
        ? { forceRefresh: false }
        : { forceRefresh: true, refused },
    );
    if (typeof expiresAt === "number") {
      const margin = Math.min(MAX_MARGIN_MS, (expiresAt - fetchedAt) / 2);
      this.#current = { token, freshUntil: expiresAt - margin };
    } else {
      // Without an expiry it is only good for the requests waiting now
      // (and as the token a 401 refers to).
      this.#current = { token, freshUntil: -Infinity };
    }
    return token;
  }
}
