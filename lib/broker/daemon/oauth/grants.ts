/**
 * What the OAuth client keeps in the encrypted store: a service's grant
 * (its refresh token and where to use it) and a client registration per
 * authorization server (with its client secret, if the server gave one),
 * keyed by the server's issuer. Access tokens come here only when one is
 * the grant's only credential (it does not expire and came without a
 * refresh token, as GitHub's OAuth Apps answer); others live in the
 * daemon's memory only.
 *
 * @module
 */

import { sha256Hex } from "../../../runtime/sha256.ts";
import type { SecretStore } from "../secret_store.ts";
import type { ClientAuthMethod } from "./rules.ts";

/** A service's grant, as stored. */
export interface StoredGrant {
  issuer: string;
  clientId: string;
  /** How the client secret is sent; absent for a public client. */
  clientAuth?: ClientAuthMethod;
  /**
   * The store name of the client secret (`[token] client_secret`); absent
   * when the secret is the registration's (or there is none).
   */
  clientSecretName?: string;
  tokenEndpoint: string;
  revocationEndpoint?: string;
  /** The RFC 8707 resource sent, or null when `send_resource = false`. */
  resource: string | null;
  scopes: string[];
  /**
   * Scopes a remote server asked for with a 403 `insufficient_scope` that
   * the grant lacks: the next `sherlock auth` asks for them as well.
   */
  scopesNeeded?: string[];
  refreshToken?: string;
  /**
   * An access token that states no expiry and came without a refresh
   * token: the grant's only credential, served until a server refuses it.
   */
  accessToken?: string;
  /**
   * Set by an `invalid_grant`, or a refused `accessToken`: the grant is
   * dead until `sherlock auth`.
   */
  needsAuthorization?: boolean;
}

/** A client registration at one authorization server. */
export interface StoredClient {
  issuer: string;
  clientId: string;
  /** The client secret the registration answered, if any. */
  clientSecret?: string;
  /** How that secret is sent to the token endpoint. */
  clientAuth?: ClientAuthMethod;
  /** Registered with the device grant (RFC 8628) among its grant types. */
  deviceGrant?: boolean;
  /** Registered with the JWT-bearer grant (RFC 7523: ID-JAGs, `ema.ts`). */
  jwtBearer?: boolean;
}

/** The store name of a service's grant. */
function grantKey(service: string): string {
  return `oauth.grant.${service}`;
}

/** The store name of the registration at `issuer` (hashed: URLs have dots). */
function clientKey(issuer: string): string {
  return `oauth.client.${sha256Hex(issuer).slice(0, 40)}`;
}

/** The grant of `service`, or undefined. */
export function readGrant(
  store: SecretStore,
  service: string,
): StoredGrant | undefined {
  return parse<StoredGrant>(store.get(grantKey(service)));
}

/** Stores (replaces) the grant of `service`; written to disk at once. */
export function writeGrant(
  store: SecretStore,
  service: string,
  grant: StoredGrant,
): Promise<void> {
  return store.set(grantKey(service), JSON.stringify(grant));
}

/**
 * Compare-and-swap of `service`'s grant (another daemon may share the
 * store): under the store's lock, `change` gets the grant on disk now and
 * returns the grant to write, or undefined to leave it. Resolves to
 * whether it wrote.
 */
export function updateGrant(
  store: SecretStore,
  service: string,
  change: (current: StoredGrant | undefined) => StoredGrant | undefined,
): Promise<boolean> {
  return store.update(grantKey(service), (text) => {
    const next = change(parse<StoredGrant>(text));
    return next === undefined ? undefined : JSON.stringify(next);
  });
}

/**
 * Runs `work` while no other daemon sharing the store refreshes
 * `service`'s grant (see {@linkcode SecretStore.exclusively}).
 */
export function whileRefreshing<T>(
  store: SecretStore,
  service: string,
  work: () => Promise<T>,
): Promise<T> {
  return store.exclusively(`oauth.refresh.${service}`, work);
}

/** Forgets the grant of `service`; true when there was one. */
export function removeGrant(
  store: SecretStore,
  service: string,
): Promise<boolean> {
  return store.remove(grantKey(service));
}

/** The dynamic registration at `issuer`, if one was made. */
export function readClient(
  store: SecretStore,
  issuer: string,
): StoredClient | undefined {
  const client = parse<StoredClient>(store.get(clientKey(issuer)));
  // A hash collision or an edited entry must not lend one server's client to another.
  return client?.issuer === issuer ? client : undefined;
}

/** Keeps the dynamic registration at `issuer`. */
export function writeClient(
  store: SecretStore,
  client: StoredClient,
): Promise<void> {
  return store.set(clientKey(client.issuer), JSON.stringify(client));
}

function parse<T>(text: string | undefined): T | undefined {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}
