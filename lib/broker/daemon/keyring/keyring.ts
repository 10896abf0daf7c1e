/**
 * The OS keyring that keeps a store's remembered key (`sherlock login
 * --remember`): Secret Service on Linux (`secret-tool`), the Keychain on
 * macOS (`/usr/bin/security`), Credential Manager on Windows (PowerShell).
 * One item per store, named by the store's id and updated in place. Every
 * call is bounded ({@linkcode KEYRING_TIMEOUT_MS}); a keyring that is
 * missing, locked or stalls is "no key", never a reason to wait or to fall
 * back to a plaintext copy. What each one protects: docs/security.md.
 *
 * @module
 */

import { ExitCode, SherlockError } from "../../../errors.ts";
import { KEYRING_TIMEOUT_MS } from "./bounded_command.ts";

export { KEYRING_TIMEOUT_MS };

/** What a lookup found. */
export type KeyringLookup =
  /** The item's value: the remembered key's text (base64). */
  | { readonly kind: "found"; readonly value: string }
  /** No such item (on Linux also: a locked collection that would not say). */
  | { readonly kind: "absent" }
  /** The keyring could not be asked: why, in a few words, no secret. */
  | { readonly kind: "unavailable"; readonly reason: string };

/** What an item is: which store's key, under which label. */
export interface KeyringItem {
  /** The store's id (`SecretStore.id`): names the item. */
  readonly id: string;
  /** The human-readable label, e.g. the store's path. */
  readonly label: string;
}

/** One OS keyring. */
export interface Keyring {
  /** Its name for people: "Secret Service", "Keychain", "Credential Manager". */
  readonly name: string;
  /** The item of the store `id`. Never throws. */
  lookup(id: string): Promise<KeyringLookup>;
  /**
   * Creates or replaces the item (one per store, updated in place) with
   * `value`, which the tool reads on its stdin. Throws
   * {@linkcode KeyringUnavailableError} when it cannot.
   */
  store(item: KeyringItem, value: string): Promise<void>;
  /**
   * Removes the item; resolves to false when there was none. Throws
   * {@linkcode KeyringUnavailableError} when the keyring cannot be asked.
   */
  remove(id: string): Promise<boolean>;
}

/** The keyring cannot be used now (missing, locked, stalled, refused). */
export class KeyringUnavailableError extends SherlockError {
  /** Why, without the keyring's name; no secret. */
  readonly reason: string;

  /** Creates the error; `reason` holds no secret. */
  constructor(keyring: string, reason: string) {
    super(
      `the ${keyring} keyring cannot be used: ${reason}`,
      ExitCode.Unavailable,
    );
    this.name = "KeyringUnavailableError";
    this.reason = reason;
  }
}

/** What the backends are given: the bound on each call, for tests. */
export interface KeyringOptions {
  /** The bound on each call (default {@linkcode KEYRING_TIMEOUT_MS}). */
  timeoutMs?: number;
}

/** The service name every backend files the items under. */
export const KEYRING_SERVICE = "sherlock";
