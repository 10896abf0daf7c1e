/**
 * Whether a service could start now, as `sherlock services` shows it: its
 * command is on PATH (or its URL's host resolves), and its token is
 * available (the secret stored, the helper present, the OAuth grant held,
 * the SSO login held), judged per `[token] source`.
 * Reads the file system and DNS, and asks the broker only what the caller
 * gives it; the broker's answers come in as {@linkcode StoreView}.
 *
 * @module
 */

import { lookup } from "node:dns/promises";
import {
  authorizationStatus,
  brokerHealth,
  listSecrets,
  whoami,
} from "../broker/client.ts";
import { NoPermissionError, UnavailableError } from "../errors.ts";
import { findExecutable } from "../launch/spawn.ts";
import type { Service } from "../services/loader.ts";
import type { TokenSourceName } from "../services/token_sources.ts";

/**
 * Whether a service's token is available: `ready` (stored, held, helper
 * present), `missing` (what to do is in the text), `unknown` (the broker is
 * not running or locked), `none` (the service takes no token).
 */
export type TokenReadiness = "ready" | "missing" | "unknown" | "none";

/**
 * What the broker said, for the token column: whether it runs, whether an
 * SSO login is held, and what the local store and the OAuth grants hold
 * (undefined where the broker could not say: the store locked).
 */
export type StoreView =
  | { kind: "not-running" }
  | {
    kind: "running";
    /** True while an SSO login (`[login] provider = "oidc"`) is held. */
    sso: boolean;
    /** The names of the stored secrets; undefined while the store is locked. */
    secrets?: ReadonlySet<string>;
    /**
     * The OAuth services that hold a live grant (or get one from the SSO
     * login); undefined while neither the store nor an SSO login is open.
     */
    authorized?: ReadonlySet<string>;
    /**
     * The OAuth services without a grant whose server takes a token from
     * the SSO login instead (Enterprise-Managed Authorization).
     */
    ema?: ReadonlySet<string>;
  };

/** How long a host name may take to resolve. */
export const RESOLVE_TIMEOUT_MS = 3000;

/**
 * `found <path>` / `not on PATH` for a stdio server, `resolves` /
 * `does not resolve` for a remote one.
 */
export async function serverReachability(
  service: Service,
  searchPath: string | undefined,
): Promise<string> {
  return (await serverReadiness(service, searchPath)).text;
}

/**
 * {@linkcode serverReachability} with its verdict: `reachable` is true when
 * the command was found or the host resolves.
 */
export async function serverReadiness(
  service: Service,
  searchPath: string | undefined,
): Promise<{ reachable: boolean; text: string }> {
  const { server } = service;
  if ("command" in server) {
    const found = findExecutable(server.command, searchPath);
    if (found.found) return { reachable: true, text: `found ${found.path}` };
    return {
      reachable: false,
      text: found.reason === "missing"
        ? `${server.command}: not on PATH`
        : `${found.path}: not executable`,
    };
  }
  const host = new URL(server.url).hostname.replace(/^\[|\]$/g, "");
  return await resolves(host)
    ? { reachable: true, text: `${host} resolves` }
    : { reachable: false, text: `${host} does not resolve` };
}

/** True when `host` resolves (through the system's resolver, /etc/hosts too). */
async function resolves(host: string): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      lookup(host).then(() => true, () => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), RESOLVE_TIMEOUT_MS);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether the service's token is available, in a few words. */
export function tokenAvailability(
  service: Service,
  store: StoreView,
  searchPath: string | undefined,
): string {
  return tokenReadiness(service, store, searchPath).text;
}

/** {@linkcode tokenAvailability} with its verdict. */
export function tokenReadiness(
  service: Service,
  store: StoreView,
  searchPath: string | undefined,
): { status: TokenReadiness; text: string } {
  return SOURCE_READINESS[service.token.source].readiness({
    service,
    store,
    searchPath,
  });
}

/** How the token column judges one `[token] source`. */
export interface SourceReadiness {
  /** Whether its verdict needs the broker's answers ({@linkcode storeView}). */
  asksBroker: boolean;
  /** The verdict for `service`, from what the broker said and the PATH. */
  readiness(context: {
    service: Service;
    store: StoreView;
    searchPath: string | undefined;
  }): { status: TokenReadiness; text: string };
}

/**
 * Every `[token] source` and how its token's availability is judged. A
 * `Record` over {@linkcode TokenSourceName}: a source added to
 * `TOKEN_SOURCES` without its entry here fails the type check, rather than
 * being judged as some other source (a working `exchange` service once
 * showed "no secret").
 */
export const SOURCE_READINESS: Readonly<
  Record<TokenSourceName, SourceReadiness>
> = {
  none: {
    asksBroker: false,
    readiness: () => ({ status: "none", text: "-" }),
  },
  command: {
    asksBroker: false,
    readiness: ({ service, searchPath }) => {
      const helper = service.token.command?.[0] ?? "";
      const found = findExecutable(helper, searchPath);
      return found.found
        ? { status: "ready", text: "helper present" }
        : { status: "missing", text: `helper ${helper} not found` };
    },
  },
  secret: {
    asksBroker: true,
    readiness: ({ service, store }) => {
      const name = service.service.name;
      if (store.kind === "not-running") return BROKER_NOT_RUNNING;
      if (store.secrets === undefined) return STORE_LOCKED;
      return store.secrets.has(name)
        ? { status: "ready", text: "secret stored" }
        : {
          status: "missing",
          text: `no secret (run "sherlock secret set ${name}")`,
        };
    },
  },
  oauth: {
    asksBroker: true,
    readiness: ({ service, store }) => {
      const name = service.service.name;
      if (store.kind === "not-running") return BROKER_NOT_RUNNING;
      // No person: ready when the client's own secret or key is stored.
      if (service.token.grant === "client_credentials") {
        const key = service.token.client_key !== undefined;
        const entry = service.token.client_key ?? service.token.client_secret;
        if (store.secrets === undefined) return STORE_LOCKED;
        return entry !== undefined && store.secrets.has(entry)
          ? {
            status: "ready",
            text: `client ${key ? "key" : "secret"} stored (no person)`,
          }
          : {
            status: "missing",
            text: `no client ${
              key ? "key" : "secret"
            } (run "sherlock secret set ${entry}")`,
          };
      }
      if (store.authorized === undefined) return STORE_LOCKED;
      if (store.authorized.has(name)) {
        return { status: "ready", text: "OAuth grant held" };
      }
      // No grant, but the server takes one made from the SSO login.
      if (store.ema?.has(name)) {
        return { status: "ready", text: "from the SSO login (EMA)" };
      }
      return {
        status: "missing",
        text: `no grant (run "sherlock auth ${name}")`,
      };
    },
  },
  exchange: {
    asksBroker: true,
    // The token is exchanged at the provider on each fetch: the SSO login
    // is what must be held now; the provider's consent is not seen here.
    readiness: ({ store }) => {
      if (store.kind === "not-running") return BROKER_NOT_RUNNING;
      return store.sso
        ? { status: "ready", text: "SSO login held" }
        : { status: "missing", text: 'no SSO login (run "sherlock login")' };
    },
  },
};

const BROKER_NOT_RUNNING = {
  status: "unknown",
  text: "unknown (broker not running)",
} as const;

const STORE_LOCKED = {
  status: "unknown",
  text: 'unknown (run "sherlock login")',
} as const;

/**
 * What the broker says about the store, without starting it: the token
 * column is a look, not an action. Not asked when no service reads the
 * store.
 */
export async function storeView(
  socket: string,
  services: readonly Service[],
): Promise<StoreView> {
  const asks = services.some((service) =>
    SOURCE_READINESS[service.token.source].asksBroker
  );
  if (!asks) return { kind: "not-running" };
  try {
    if (await brokerHealth(socket) === undefined) {
      return { kind: "not-running" };
    }
    const who = await whoami(socket);
    const sso = who.oidc !== undefined;
    if (!who.loggedIn) return { kind: "running", sso };
    // An SSO login alone leaves the store locked: the secrets are not
    // listed then, the OAuth status (EMA) still is.
    const secrets = who.storeUnlocked === false
      ? undefined
      : await listSecrets(socket).catch(lockedIsUndefined);
    const oauth = await authorizationStatus(socket).catch(lockedIsUndefined);
    return {
      kind: "running",
      sso,
      secrets: secrets &&
        new Set(secrets.secrets.map((secret) => secret.name)),
      authorized: oauth && new Set(
        oauth.services.filter((status) => status.authorized)
          .map((status) => status.service),
      ),
      ema: oauth && new Set(
        oauth.services.filter((status) => status.ema === true)
          .map((status) => status.service),
      ),
    };
  } catch (error) {
    if (error instanceof UnavailableError) return { kind: "not-running" };
    throw error;
  }
}

/** A refusal for a locked store is "cannot say"; anything else is thrown. */
function lockedIsUndefined(error: unknown): undefined {
  if (error instanceof NoPermissionError) return undefined;
  throw error;
}
