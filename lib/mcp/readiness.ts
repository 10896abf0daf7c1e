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
  loginAdvice,
  loginState,
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
    /** The local store: what `secret` services and OAuth grants need. */
    store: "unlocked" | "locked" | "absent";
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
): TokenVerdict {
  return SOURCE_READINESS[service.token.source].readiness({
    service,
    store,
    searchPath,
  });
}

/** A token's availability: its status, its text, and what to run. */
export interface TokenVerdict {
  /** The verdict. */
  status: TokenReadiness;
  /** The token column's text (the advice included). */
  text: string;
  /**
   * What to run when the broker's login is what keeps the token from
   * being seen or used ({@linkcode loginAdvice}).
   */
  advice?: string;
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
  }): TokenVerdict;
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
      if (store.secrets === undefined) return storeLocked(store);
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
        if (store.secrets === undefined) return storeLocked(store);
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
      if (store.authorized === undefined) return storeLocked(store);
      if (store.authorized.has(name)) {
        return { status: "ready", text: "OAuth grant held" };
      }
      // No grant, but the server takes one made from the SSO login.
      if (store.ema?.has(name)) {
        return { status: "ready", text: "from the SSO login (EMA)" };
      }
      // The grants are kept in the local store: while it is locked (an SSO
      // login alone) the broker cannot say whether one is held.
      if (store.store !== "unlocked") return storeLocked(store);
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
        : noSsoLogin(loginAdvice(viewLogin(store), "sso") ?? "");
    },
  },
};

const BROKER_NOT_RUNNING: TokenVerdict = {
  status: "unknown",
  text: "unknown (broker not running)",
  advice: loginAdvice({ broker: "not-running" }, "any"),
};

/** The local store is not open: the one advice for the broker's state. */
function storeLocked(
  store: Extract<StoreView, { kind: "running" }>,
): TokenVerdict {
  const advice = loginAdvice(viewLogin(store), "store") ?? "";
  return { status: "unknown", text: `unknown (${advice})`, advice };
}

/** An `exchange` service without the SSO login it takes its token from. */
function noSsoLogin(advice: string): TokenVerdict {
  return { status: "missing", text: `no SSO login (${advice})`, advice };
}

/** The login the view was made from, as {@linkcode loginAdvice} reads it. */
function viewLogin(store: Extract<StoreView, { kind: "running" }>) {
  return { broker: "running", sso: store.sso, store: store.store } as const;
}

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
    const login = loginState(who);
    const sso = who.oidc !== undefined;
    const store = login.broker === "running" ? login.store : "locked";
    if (!who.loggedIn) return { kind: "running", sso, store };
    // An SSO login alone leaves the store locked: the secrets are not
    // listed then, the OAuth status (EMA) still is.
    const secrets = who.storeUnlocked === false
      ? undefined
      : await listSecrets(socket).catch(lockedIsUndefined);
    const oauth = await authorizationStatus(socket).catch(lockedIsUndefined);
    return {
      kind: "running",
      sso,
      store,
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
