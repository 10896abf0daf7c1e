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
 * A store with a remembered key (`sherlock login --remember`) is unlocked
 * from the OS keyring, with no passphrase, when a request needs the login
 * ({@linkcode LoginState.unlockRemembered}): after the daemon starts and
 * after the idle timeout, not after an explicit logout. Where the keyring
 * is missing, locked or stalls, the bounded lookup gives up within
 * 1.5 s (`keyring/bounded_command.ts`) and the login stays what it was (the
 * client exits 77 or `sherlock login` asks for the passphrase).
 *
 * @module
 */

import { userInfo } from "node:os";
import { Buffer } from "node:buffer";
import { randomBytes } from "node:crypto";
import type {
  LoginAnswer,
  RememberAnswer,
  RememberedKeyStatus,
  Whoami,
} from "../protocol.ts";
import { OidcLogin } from "./oauth/oidc_login.ts";
import type { Clock } from "./clock.ts";
import {
  createStore,
  readStoreSummary,
  REMEMBERED_KEY_BYTES,
  type SecretStore,
  storeExists,
  StoreExistsError,
  storeHasRememberedKey,
  StoreLockedError,
  unlockStore,
  unlockStoreWithKey,
  WrongPassphraseError,
} from "./secret_store.ts";
import { type Keyring, KeyringUnavailableError } from "./keyring/keyring.ts";
import { systemKeyring } from "./keyring/system_keyring.ts";

/**
 * After a look in the keyring that found no key, the next one waits this
 * long: a request that needs the login then costs no keyring call, and an
 * operator who unlocks the keyring is served within a few seconds.
 */
export const KEYRING_RETRY_MS = 5_000;

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
  /** The OS keyring of remembered keys (default: this OS's). */
  keyring?: Keyring;
  /**
   * Called with one line (no secret) when the keyring's key unlocked the
   * store, or when it was there but did not open it.
   */
  onRemembered?: (event: { unlocked: boolean; line: string }) => void;
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
  #keyring: Keyring;
  /** How the last look in the keyring went, for whoami. */
  #remembered: RememberedKeyStatus | undefined;
  /** When the last look found nothing (ms), for {@linkcode KEYRING_RETRY_MS}. */
  #lastMiss = -Infinity;
  /** After an explicit logout the keyring is not asked again until a login. */
  #keyringPaused = false;
  /** The look in the keyring under way, which concurrent requests share. */
  #looking: Promise<void> | undefined;

  /** Starts logged out. */
  constructor(options: LoginStateOptions) {
    this.#options = options;
    this.oidc = new OidcLogin({ clock: options.clock });
    this.#keyring = options.keyring ?? systemKeyring();
  }

  /** The keyring's name ("Secret Service", "Keychain", "Credential Manager"). */
  get keyringName(): string {
    return this.#keyring.name;
  }

  /**
   * Unlocks the store with the key the OS keyring remembers, when nothing
   * is logged in, the store has a remembered slot, and the keyring gives
   * the key (within `KEYRING_TIMEOUT_MS`). Never throws: a
   * keyring that is missing, locked or holds a stale key leaves the login
   * as it was, with the reason in `whoami().remembered`. Concurrent calls
   * share one look; after a miss the next look waits
   * {@linkcode KEYRING_RETRY_MS}.
   */
  unlockRemembered(): Promise<void> {
    if (this.loggedIn || this.#keyringPaused) return Promise.resolve();
    if (this.#looking) return this.#looking;
    if (Date.now() - this.#lastMiss < KEYRING_RETRY_MS) {
      return Promise.resolve();
    }
    // Most stores have no remembered key: one read of the header, no wait.
    if (!storeHasRememberedKey(this.#options.storePath)) {
      this.#remembered = undefined;
      return Promise.resolve();
    }
    // Not in the logins' turn: a passphrase login that waits out its delay
    // must not hold up a request. Whichever unlocks first is the login.
    const looking = this.#unlockRememberedNow().catch(() => {}).finally(() => {
      this.#looking = undefined;
    });
    this.#looking = looking;
    return looking;
  }

  async #unlockRememberedNow(): Promise<void> {
    if (this.loggedIn || this.#keyringPaused) return;
    const path = this.#options.storePath;
    let id: string;
    try {
      const summary = await readStoreSummary(path);
      if (!summary.remembered) {
        this.#remembered = undefined;
        return;
      }
      id = summary.id;
    } catch {
      // No store, or one that cannot be read: the passphrase login says why.
      this.#remembered = undefined;
      return;
    }
    const keyring = this.#keyring.name;
    const found = await this.#keyring.lookup(id);
    if (found.kind !== "found") {
      this.#lastMiss = Date.now();
      this.#remembered = found.kind === "absent"
        ? {
          keyring,
          state: "absent",
          reason: `no item in the ${keyring} keyring (or it is locked)`,
        }
        : { keyring, state: "unavailable", reason: found.reason };
      return;
    }
    const key = decodeKey(found.value);
    try {
      const store = await unlockStoreWithKey(path, key);
      if (this.loggedIn || this.#keyringPaused) {
        // A login or a logout came first.
        store.lock();
        return;
      }
      this.#store = store;
      this.#since = new Date();
      this.#remembered = { keyring, state: "unlocked" };
      this.touch();
      this.#options.onRemembered?.({
        unlocked: true,
        line:
          `unlocked the store with the key the ${keyring} keyring remembers`,
      });
    } catch (error) {
      this.#lastMiss = Date.now();
      const line = (error as Error).message;
      this.#remembered = { keyring, state: "wrong", reason: line };
      this.#options.onRemembered?.({ unlocked: false, line });
    } finally {
      key.fill(0);
    }
  }

  /**
   * Keeps a new remembered key for the unlocked store: the item in the
   * keyring first (replaced in place), then the store's slot. A keyring
   * that cannot take it changes nothing in the store. Throws
   * {@linkcode StoreLockedError} when the store is locked.
   */
  async remember(): Promise<RememberAnswer> {
    const store = this.#store;
    if (!store) throw new StoreLockedError();
    const key = randomBytes(REMEMBERED_KEY_BYTES);
    try {
      await this.#keyring.store(
        { id: store.id, label: `sherlock: key of ${store.path}` },
        key.toString("base64"),
      );
      try {
        await store.setRememberedKey(key);
      } catch (error) {
        // Not kept in the store: the item would only be a stale one.
        await this.#keyring.remove(store.id).catch(() => false);
        throw error;
      }
    } finally {
      key.fill(0);
    }
    this.#keyringPaused = false;
    this.#remembered = { keyring: this.#keyring.name, state: "kept" };
    return { keyring: this.#keyring.name, removedItem: false };
  }

  /**
   * Forgets the remembered key: when the store is unlocked, its slot first
   * (after which the item opens nothing), then the keyring's item (a
   * locked store keeps a slot that nothing opens any more until the next
   * login with `--forget`). Throws {@linkcode KeyringUnavailableError}
   * when the item cannot be removed, saying whether the slot was.
   */
  async forget(): Promise<RememberAnswer> {
    let id: string | undefined = this.#store?.id;
    if (id === undefined) {
      try {
        id = (await readStoreSummary(this.#options.storePath)).id;
      } catch {
        id = undefined;
      }
    }
    const slotRemoved = this.#store !== undefined;
    await this.#store?.setRememberedKey(undefined);
    this.#remembered = undefined;
    let removedItem = false;
    try {
      removedItem = id === undefined ? false : await this.#keyring.remove(id);
    } catch (error) {
      if (!(error instanceof KeyringUnavailableError) || !slotRemoved) {
        throw error;
      }
      throw new KeyringUnavailableError(
        this.#keyring.name,
        `${error.reason}; the store's slot was removed, so the item left there opens nothing`,
      );
    }
    return {
      keyring: this.#keyring.name,
      removedItem,
      ...(this.#store ? {} : { slotKept: true }),
    };
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
    const remembered = this.#rememberedStatus();
    if (remembered) answer.remembered = remembered;
    if (this.loggedIn) {
      answer.user = oidc ? (oidc.email ?? oidc.subject) : userName();
      answer.since = oidc?.since ?? this.#since?.toISOString();
      if (this.#locksAt) answer.locksAt = this.#locksAt.toISOString();
    }
    return answer;
  }

  /** What whoami says of the remembered key. */
  #rememberedStatus(): RememberedKeyStatus | undefined {
    const kept = { keyring: this.#keyring.name, state: "kept" } as const;
    if (this.#store) {
      return this.#store.remembered ? this.#remembered ?? kept : undefined;
    }
    // Not asked (after a logout): what the store's header says.
    return this.#remembered ??
      (storeHasRememberedKey(this.#options.storePath) ? kept : undefined);
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
    this.#keyringPaused = false;
    // The look in the keyring said nothing about this login.
    this.#remembered = undefined;
    this.touch();
    return { ...this.whoami(), created };
  }

  /**
   * Locks the store and forgets the login (the OIDC one too; revoking its
   * refresh token at the provider is `oidc.logout()`, awaited before).
   */
  logout(): Whoami {
    // Asked to lock: the keyring must not unlock it again at once.
    this.#keyringPaused = true;
    this.#remembered = undefined;
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
      // Unlike a logout, the idle lock lets the keyring unlock it again.
      this.#keyringPaused = false;
      this.#options.onIdleLock(provider);
    }, seconds * 1000);
    // The timer must not keep a daemon alive that is shutting down.
    Deno.unrefTimer(this.#idleTimer as unknown as number);
  }
}

/** A remembered key from its base64 text; a malformed one opens nothing. */
function decodeKey(text: string): Buffer {
  const key = Buffer.from(text, "base64");
  return key.toString("base64") === text ? key : Buffer.alloc(0);
}

function userName(): string {
  try {
    return userInfo().username;
  } catch {
    return Deno.env.get("USER") ?? `uid ${Deno.uid()}`;
  }
}
