/**
 * Whether a service could start now, as `sherlock services` shows it: its
 * command is on PATH (or its URL's host resolves), and its token is
 * available (the secret stored, the helper present, the OAuth grant held).
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

/**
 * Whether a service's token is available: `ready` (stored, held, helper
 * present), `missing` (what to do is in the text), `unknown` (the broker is
 * not running or locked), `none` (the service takes no token).
 */
export type TokenReadiness = "ready" | "missing" | "unknown" | "none";

/** What the broker said about the store, for the token column. */
export type StoreView =
  | { kind: "not-running" }
  | { kind: "locked" }
  | {
    kind: "unlocked";
    /** The names of the stored secrets. */
    secrets: ReadonlySet<string>;
    /** The OAuth services that hold a live grant. */
    authorized: ReadonlySet<string>;
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
  const { token } = service;
  const name = service.service.name;
  switch (token.source) {
    case "none":
      return { status: "none", text: "-" };
    case "command": {
      const helper = token.command?.[0] ?? "";
      const found = findExecutable(helper, searchPath);
      return found.found
        ? { status: "ready", text: "helper present" }
        : { status: "missing", text: `helper ${helper} not found` };
    }
    default:
      if (store.kind === "not-running") {
        return { status: "unknown", text: "unknown (broker not running)" };
      }
      if (store.kind === "locked") {
        return { status: "unknown", text: 'unknown (run "sherlock login")' };
      }
      if (token.source === "oauth") {
        return store.authorized.has(name)
          ? { status: "ready", text: "OAuth grant held" }
          : {
            status: "missing",
            text: `no grant (run "sherlock auth ${name}")`,
          };
      }
      return store.secrets.has(name)
        ? { status: "ready", text: "secret stored" }
        : {
          status: "missing",
          text: `no secret (run "sherlock secret set ${name}")`,
        };
  }
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
    service.token.source === "secret" || service.token.source === "oauth"
  );
  if (!asks) return { kind: "not-running" };
  try {
    if (await brokerHealth(socket) === undefined) {
      return { kind: "not-running" };
    }
    if (!(await whoami(socket)).loggedIn) return { kind: "locked" };
    const secrets = await listSecrets(socket);
    const oauth = await authorizationStatus(socket);
    return {
      kind: "unlocked",
      secrets: new Set(secrets.secrets.map((secret) => secret.name)),
      authorized: new Set(
        oauth.services.filter((status) => status.authorized)
          .map((status) => status.service),
      ),
    };
  } catch (error) {
    if (error instanceof UnavailableError) return { kind: "not-running" };
    if (error instanceof NoPermissionError) return { kind: "locked" };
    throw error;
  }
}
