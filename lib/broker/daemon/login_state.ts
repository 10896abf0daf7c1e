/**
 * Who is logged in to the daemon: the `local` provider's unlocked secret
 * store, the `oidc` provider's login (`oauth/oidc_login.ts`, held in memory
 * only), since when, and the optional idle timeout that ends both again.
 * Either one is a login; `secret` and `oauth` services need the store.
 *
 * Logins take turns: each one derives a key with scrypt (128 MiB, most of a
 * second), so concurrent ones would multiply the daemon's memory, and a
 * guesser would get the machine's every core. After a wrong passphrase the
 * next login waits {@linkcode loginDelayMs}, doubling up to 30 s, until a
 * right one.
 *
 * @module
 */

import { userInfo } from "node:os";
import type { LoginAnswer, Whoami } from "../protocol.ts";
import { OidcLogin } from "./oauth/oidc_login.ts";
import type { Clock } from "./clock.ts";
import {
  createStore,
  type SecretStore,
  storeExists,
  StoreExistsError,
  unlockStore,
  WrongPassphraseError,
} from "./secret_store.ts";

/** The longest a login waits after wrong passphrases. */
export const MAX_LOGIN_DELAY_MS = 30_000;

/**
 * How long after the last wrong passphrase the next login starts, after
 * `failures` wrong ones in a row: 0, 1, 2, 4, 8… s, at most 30 s.
 */
export function loginDelayMs(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(MAX_LOGIN_DELAY_MS, 1000 * 2 ** Math.min(failures - 1, 15));
}

/** How the login state is set up. */
export interface LoginStateOptions {
  storePath: string;
  /** Lock again after this many seconds without a token request; 0 never. */
  idleTimeoutSeconds?: number;
  /**
   * Called when the idle timeout ends the login, with the provider that
   * was held (`oidc` when an OIDC login was, as for a logout).
   */
  onIdleLock: (provider: "local" | "oidc") => void;
  /** The clock of the OIDC login's expiries (the system's when unset). */
  clock?: Clock;
}

/** The login of one daemon. */
export class LoginState {
  #options: LoginStateOptions;
  #store: SecretStore | undefined;
  #since: Date | undefined;
  #locksAt: Date | undefined;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  /** The login running or last run; the next one waits for it. */
  #turn: Promise<unknown> = Promise.resolve();
  /** Wrong passphrases in a row, and when the last one was told. */
  #failures = 0;
  #lastFailure = 0;
  /** The login at the OpenID provider (`[login] provider = "oidc"`). */
  readonly oidc: OidcLogin;

  /** Starts logged out. */
  constructor(options: LoginStateOptions) {
    this.#options = options;
    this.oidc = new OidcLogin({ clock: options.clock });
  }

  /** The unlocked store, or undefined when logged out. */
  get store(): SecretStore | undefined {
    return this.#store;
  }

  /** True while the store is unlocked or an OIDC login is held. */
  get loggedIn(): boolean {
    return this.#store !== undefined || this.oidc.loggedIn;
  }

  /** What `GET /v1/whoami` answers. */
  whoami(): Whoami {
    const oidc = this.oidc.status();
    const answer: Whoami = {
      loggedIn: this.loggedIn,
      provider: oidc ? "oidc" : "local",
      storeUnlocked: this.#store !== undefined,
      storeExists: storeExists(this.#options.storePath),
    };
    if (oidc) answer.oidc = oidc;
    if (this.loggedIn) {
      answer.user = oidc ? (oidc.email ?? oidc.subject) : userName();
      answer.since = oidc?.since ?? this.#since?.toISOString();
      if (this.#locksAt) answer.locksAt = this.#locksAt.toISOString();
    }
    return answer;
  }

  /**
   * Unlocks (or, with `create`, creates) the store. When `create` finds a
   * store that appeared meanwhile (several first logins at once), it
   * unlocks that one with the same passphrase instead. Errors of the store
   * (wrong passphrase, corrupt or newer file) propagate. One login runs at
   * a time, in the order they came.
   */
  login(passphrase: string, create: boolean): Promise<LoginAnswer> {
    const turn = this.#turn.then(() => this.#loginNow(passphrase, create));
    this.#turn = turn.catch(() => {});
    return turn;
  }

  async #loginNow(passphrase: string, create: boolean): Promise<LoginAnswer> {
    const wait = this.#lastFailure + loginDelayMs(this.#failures) - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    try {
      const answer = await this.#unlock(passphrase, create);
      this.#failures = 0;
      return answer;
    } catch (error) {
      if (error instanceof WrongPassphraseError) {
        this.#failures++;
        this.#lastFailure = Date.now();
      }
      throw error;
    }
  }

  async #unlock(passphrase: string, create: boolean): Promise<LoginAnswer> {
    const path = this.#options.storePath;
    let store: SecretStore;
    let created = create;
    try {
      store = create
        ? await createStore(path, passphrase)
        : await unlockStore(path, passphrase);
    } catch (error) {
      if (!(create && error instanceof StoreExistsError)) throw error;
      store = await unlockStore(path, passphrase);
      created = false;
    }
    this.#store?.lock();
    this.#store = store;
    this.#since = new Date();
    this.touch();
    return { ...this.whoami(), created };
  }

  /**
   * Locks the store and forgets the login (the OIDC one too; revoking its
   * refresh token at the provider is `oidc.logout()`, awaited before).
   */
  logout(): Whoami {
    this.#store?.lock();
    this.#store = undefined;
    this.oidc.clear();
    this.#since = undefined;
    this.#locksAt = undefined;
    clearTimeout(this.#idleTimer);
    return this.whoami();
  }

  /** Records activity: the idle timeout starts again. */
  touch(): void {
    const seconds = this.#options.idleTimeoutSeconds;
    if (!seconds || !this.loggedIn) return;
    clearTimeout(this.#idleTimer);
    this.#locksAt = new Date(Date.now() + seconds * 1000);
    this.#idleTimer = setTimeout(() => {
      const provider = this.oidc.loggedIn ? "oidc" : "local";
      this.logout();
      this.#options.onIdleLock(provider);
    }, seconds * 1000);
    // The timer must not keep a daemon alive that is shutting down.
    Deno.unrefTimer(this.#idleTimer as unknown as number);
  }
}

function userName(): string {
  try {
    return userInfo().username;
  } catch {
    return Deno.env.get("USER") ?? `uid ${Deno.uid()}`;
  }
}
