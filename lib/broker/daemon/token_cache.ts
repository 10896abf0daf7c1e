/**
 * Tokens kept in the daemon's memory until shortly before they expire, and
 * single-flight fetching: concurrent requests for one key share one fetch
 * (one helper run), whether or not its result may be cached.
 *
 * @module
 */

/** A token and its lifetime. */
export interface Token {
  token: string;
  /** When it expires, in ms since the epoch; unknown tokens are not cached. */
  expiresAt?: number;
}

/** A token as served, and whether it came from the cache. */
export interface ServedToken extends Token {
  /** True when no fetch was needed. */
  cached: boolean;
}

/** The most a token is refreshed ahead of its expiry. */
const MAX_MARGIN_MS = 60_000;

interface Entry extends Token {
  fetchedAt: number;
}

/** The token cache of one daemon. */
export class TokenCache {
  readonly #now: () => number;
  #entries = new Map<string, Entry>();
  #inFlight = new Map<string, Promise<Entry>>();
  /** Bumped by `clear`: a fetch that began before must not fill the cache. */
  #generation = 0;

  /** `now`: the clock, in ms since the epoch (injected by tests). */
  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  /**
   * The token for `key`: from the cache while it is fresh, else from
   * `fetch` — once, however many callers ask at the same time (a fetch
   * already running is shared: it began after the cached token went stale
   * or was dropped by {@linkcode TokenCache.forgetIf}).
   */
  async get(
    key: string,
    fetch: () => Promise<Token>,
  ): Promise<ServedToken> {
    const now = this.#now();
    const entry = this.#entries.get(key);
    if (entry && isFresh(entry, now)) {
      return { ...publicPart(entry), cached: true };
    }
    const running = this.#inFlight.get(key);
    if (running) return { ...publicPart(await running), cached: true };
    const generation = this.#generation;
    const fetching = (async () => {
      const fetchedAt = this.#now();
      const token = await fetch();
      const fresh: Entry = { ...token, fetchedAt };
      if (generation !== this.#generation) return fresh;
      if (fresh.expiresAt !== undefined) this.#entries.set(key, fresh);
      else this.#entries.delete(key);
      return fresh;
    })();
    this.#inFlight.set(key, fetching);
    try {
      return { ...publicPart(await fetching), cached: false };
    } finally {
      if (this.#inFlight.get(key) === fetching) this.#inFlight.delete(key);
    }
  }

  /**
   * Forgets every token (logout, idle lock), including those of fetches
   * still running: they answer their callers but are not kept, and a
   * request after this starts a fetch of its own.
   */
  clear(): void {
    this.#entries.clear();
    this.#inFlight.clear();
    this.#generation++;
  }

  /** Forgets the token of `key` when `refused` says so of it. */
  forgetIf(key: string, refused: (token: string) => boolean): void {
    const entry = this.#entries.get(key);
    if (entry && refused(entry.token)) this.#entries.delete(key);
  }

  /**
   * Forgets the tokens whose key starts with `prefix` (a service's, after
   * its OAuth grant changed); fetches under way are not kept either.
   */
  forget(prefix: string): void {
    for (const key of [...this.#entries.keys()]) {
      if (key.startsWith(prefix)) this.#entries.delete(key);
    }
    for (const key of [...this.#inFlight.keys()]) {
      if (key.startsWith(prefix)) this.#inFlight.delete(key);
    }
  }

  /** How many tokens are cached. */
  get size(): number {
    return this.#entries.size;
  }
}

/**
 * A token is fresh until a margin before its expiry: a tenth of its lifetime,
 * at most a minute, so that an agent does not start with a token that dies
 * moments later.
 */
export function isFresh(
  entry: Token & { fetchedAt: number },
  now: number,
): boolean {
  if (entry.expiresAt === undefined) return false;
  const margin = Math.min(
    MAX_MARGIN_MS,
    (entry.expiresAt - entry.fetchedAt) / 10,
  );
  return now < entry.expiresAt - margin;
}

function publicPart(entry: Entry): Token {
  return { token: entry.token, expiresAt: entry.expiresAt };
}
