/**
 * The one refresh of the daemon: the refresh-token grant's rules, for a
 * `sherlock auth` grant in the store and for the SSO login held in memory
 * alike, behind {@linkcode GrantStorage}. The rules: the grant is read at
 * the refresh's turn (another daemon, or a fallback grant before it, may
 * have rotated the refresh token: a spent one presented again makes many
 * servers revoke the grant, RFC 9700 §4.14.2); a rotated refresh token is
 * stored — compare and swap on the spent one — before the answer is used;
 * `invalid_grant` makes the grant dead, unless it was replaced meanwhile
 * (a dead grant never overwrites a newer one); a grant that changed while
 * the request ran is read again. One at a time per grant is the caller's
 * (the store's lock, the login's queue).
 *
 * @module
 */

import { failed, type JsonAnswer } from "./http.ts";
import {
  requestRefresh,
  type TokenClient,
  type TokenServer,
} from "./token_endpoint.ts";

/** What a refresh needs of a grant. */
export interface RefreshableGrant {
  refreshToken: string;
  /** The RFC 8707 resource sent with every refresh (none when null). */
  resource?: string | null;
  server: TokenServer;
  client: TokenClient;
}

/** Where a grant lives: the store (`sherlock auth`) or memory (the login). */
export interface GrantStorage {
  /**
   * The grant as it is now; undefined when there is none with a refresh
   * token (or it is dead).
   */
  read(): Promise<RefreshableGrant | undefined>;
  /**
   * Keeps a successful answer to the refresh of `spent` (its rotated
   * refresh token, if any) — only while the grant still holds `spent`.
   * Resolves to false when the grant changed meanwhile; throws when it
   * cannot be kept (then the answer is not used).
   */
  keep(spent: string, answer: JsonAnswer): Promise<boolean>;
  /**
   * Marks the grant dead after `invalid_grant` — only while it still holds
   * `spent`; false when it changed meanwhile.
   */
  markDead(spent: string): Promise<boolean>;
}

/** How a refresh ended. */
export type RefreshOutcome =
  /** No grant with a refresh token. */
  | { kind: "none" }
  /** The server answered `invalid_grant`: the grant is marked dead. */
  | { kind: "dead" }
  /**
   * The server's answer: a success already kept, or another error (for
   * the caller's reader to word).
   */
  | { kind: "answered"; answer: JsonAnswer; kept: boolean };

/** How many times a grant that keeps changing is read again. */
const MAX_ROUNDS = 4;

/**
 * One refresh of the grant in `storage`, by the rules of the module.
 * `parameters`: more form fields (`resource`, `scope`, `audience`).
 */
export async function refreshGrant(
  storage: GrantStorage,
  options: { parameters?: URLSearchParams | Record<string, string> } = {},
): Promise<RefreshOutcome> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const grant = await storage.read();
    if (!grant) return { kind: "none" };
    const spent = grant.refreshToken;
    const parameters = new URLSearchParams(options.parameters);
    if (
      grant.resource !== undefined && grant.resource !== null &&
      !parameters.has("resource")
    ) {
      parameters.set("resource", grant.resource);
    }
    const answer = await requestRefresh({
      server: grant.server,
      client: grant.client,
      refreshToken: spent,
      parameters,
    });
    const json = answer.json as Record<string, unknown> | undefined;
    if (answer.status === 400 && json?.error === "invalid_grant") {
      if (await storage.markDead(spent)) return { kind: "dead" };
      continue;
    }
    // GitHub answers its errors with HTTP 200: those are not kept.
    if (answer.status !== 200 || typeof json?.error === "string") {
      return { kind: "answered", answer, kept: false };
    }
    if (await storage.keep(spent, answer)) {
      return { kind: "answered", answer, kept: true };
    }
  }
  throw failed(
    "the grant changed during every refresh tried; try again",
  );
}

/** The rotated refresh token of a successful answer, else `spent`. */
export function rotatedRefreshToken(answer: JsonAnswer, spent: string): string {
  const json = answer.json as Record<string, unknown> | undefined;
  return typeof json?.refresh_token === "string" && json.refresh_token !== ""
    ? json.refresh_token
    : spent;
}
