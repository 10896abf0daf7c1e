/**
 * How the login commands and `sherlock broker status` describe a login: a
 * module of its own, so that `sherlock login` does not load the `broker`
 * command (and what that one imports).
 *
 * @module
 */

import type { OidcLoginStatus, Whoami } from "../broker/protocol.ts";
import type { WhoamiJson } from "./json_shapes.ts";

/** One line describing a login, as `whoami` and `broker status` print it. */
export function describeLogin(who: Whoami): string {
  if (!who.loggedIn) {
    return who.storeExists
      ? `not logged in (${who.provider} store locked; run "sherlock login")`
      : `not logged in (no ${who.provider} store yet; "sherlock login" creates it)`;
  }
  const locks = who.locksAt ? `, locks when idle at ${who.locksAt}` : "";
  if (who.oidc) {
    return `${describeOidcLogin(who.oidc)}${locks}; the local store is ${
      who.storeUnlocked ? "unlocked" : "locked"
    }`;
  }
  return `${who.user} via the ${who.provider} provider, since ${who.since}${locks}`;
}

/** An OIDC login in one line: who, where, until when (no token). */
export function describeOidcLogin(status: OidcLoginStatus): string {
  const who = status.email
    ? `${status.email} (subject ${status.subject})`
    : `subject ${status.subject}`;
  const ends = status.refreshToken
    ? `the access token renews until the provider ends the login (next renewal by ${status.accessTokenExpiresAt})`
    : `ends at ${status.accessTokenExpiresAt}`;
  const via = status.workload?.held
    ? ` with an ID token`
    : status.workload
    ? ` with a workload token`
    : "";
  return `${
    status.workload ? workloadSubject(status.workload, who) : who
  } at ${status.issuer}${via}, since ${status.since}; ${ends}`;
}

/** Whose claims name a workload login: the operator reads how far to trust. */
function workloadSubject(
  workload: NonNullable<OidcLoginStatus["workload"]>,
  who: string,
): string {
  const from = workload.claimsIssuer ? ` from ${workload.claimsIssuer}` : "";
  if (workload.held) {
    return `${who} (the ID token's claims, decoded, not verified)`;
  }
  switch (workload.claimsFrom) {
    case "id_token":
      return who;
    case "access_token":
      return `${who} (the issued access token's claims${from}, decoded, not verified)`;
    case "subject_token":
      return `${who} (the workload token's claims${from}, decoded, not verified)`;
    default:
      return "an unnamed subject (neither the workload token nor the issued one is a JWT)";
  }
}

/**
 * `whoami --verbose`'s further lines: what the SSO login's provider offers
 * for `source = "exchange"` services.
 */
export function loginDetails(who: Whoami): string[] {
  const remembered = rememberedLine(who);
  if (!who.oidc) return remembered ? [remembered] : [];
  return [
    ...(remembered ? [remembered] : []),
    `issuer: ${who.oidc.issuer}`,
    `subject: ${who.oidc.subject}`,
    ...(who.oidc.workload
      ? [
        `logged in with: ${
          who.oidc.workload.held ? "an ID token" : "a workload token"
        } (claims from ${who.oidc.workload.claimsFrom}${
          who.oidc.workload.claimsFrom === "id_token" ? ", verified" : ""
        })`,
      ]
      : []),
    ...(who.oidc.email ? [`e-mail: ${who.oidc.email}`] : []),
    `refresh token held: ${who.oidc.refreshToken ? "yes" : "no"}`,
    who.oidc.tokenExchange
      ? `token exchange (RFC 8693): offered; exchange services use it unless their mode says "refresh"`
      : `token exchange (RFC 8693): not offered; exchange services use a refresh-token grant with their resource (RFC 8707) unless their mode says "exchange"`,
  ];
}

/**
 * Whether a key the OS keyring remembers unlocks the store, and in which
 * keyring (`whoami --verbose`, `doctor`); undefined when the store has no
 * remembered key and the keyring was not asked.
 */
export function rememberedLine(who: Whoami): string | undefined {
  const remembered = who.remembered;
  if (!remembered) return undefined;
  const where = `the ${remembered.keyring} keyring`;
  switch (remembered.state) {
    case "unlocked":
      return `remembered key: in ${where}; it unlocked the store`;
    case "kept":
      return `remembered key: in ${where} ("sherlock login --forget" removes it)`;
    case "absent":
      return `remembered key: the store has one, but ${where} holds no item for it (or is locked); "sherlock login --remember" keeps it again`;
    case "unavailable":
      return `remembered key: ${where} cannot be asked (${remembered.reason}); the passphrase unlocks the store`;
    case "wrong":
      return `remembered key: ${
        remembered.reason ?? `${where} holds a stale key`
      }`;
  }
}

/**
 * A login as `whoami --json` and `broker status --json` print it: every
 * field present, null when unknown (`who` is undefined when no broker runs).
 */
export function loginJson(
  who: Whoami | undefined,
): Omit<WhoamiJson, "brokerRunning"> {
  return {
    loggedIn: who?.loggedIn ?? false,
    provider: who?.provider ?? null,
    user: who?.user ?? null,
    since: who?.since ?? null,
    locksAt: who?.locksAt ?? null,
    storeExists: who?.storeExists ?? null,
    oidc: who?.oidc
      ? {
        issuer: who.oidc.issuer,
        subject: who.oidc.subject,
        email: who.oidc.email ?? null,
        since: who.oidc.since,
        accessTokenExpiresAt: who.oidc.accessTokenExpiresAt,
        refreshToken: who.oidc.refreshToken,
      }
      : null,
    remembered: who?.remembered
      ? {
        keyring: who.remembered.keyring,
        state: who.remembered.state,
        reason: who.remembered.reason ?? null,
      }
      : null,
  };
}
