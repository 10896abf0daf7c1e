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
import { findExecutable } from "../launch/spawn.ts";
import type { Service } from "../services/loader.ts";

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
  const { server } = service;
  if ("command" in server) {
    const found = findExecutable(server.command, searchPath);
    if (found.found) return `found ${found.path}`;
    return found.reason === "missing"
      ? `${server.command}: not on PATH`
      : `${found.path}: not executable`;
  }
  const host = new URL(server.url).hostname.replace(/^\[|\]$/g, "");
  return await resolves(host) ? `${host} resolves` : `${host} does not resolve`;
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
  const { token } = service;
  const name = service.service.name;
  switch (token.source) {
    case "none":
      return "-";
    case "command": {
      const helper = token.command?.[0] ?? "";
      const found = findExecutable(helper, searchPath);
      return found.found ? "helper present" : `helper ${helper} not found`;
    }
    default:
      if (store.kind === "not-running") return "unknown (broker not running)";
      if (store.kind === "locked") return 'unknown (run "sherlock login")';
      if (token.source === "oauth") {
        return store.authorized.has(name)
          ? "OAuth grant held"
          : `no grant (run "sherlock auth ${name}")`;
      }
      return store.secrets.has(name)
        ? "secret stored"
        : `no secret (run "sherlock secret set ${name}")`;
  }
}
