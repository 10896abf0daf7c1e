/**
 * How the login commands and `sherlock broker status` describe a login: a
 * module of its own, so that `sherlock login` does not load the `broker`
 * command (and what that one imports).
 *
 * @module
 */

import type { Whoami } from "../broker/protocol.ts";
import type { WhoamiJson } from "./json_shapes.ts";

/** One line describing a login, as `whoami` and `broker status` print it. */
export function describeLogin(who: Whoami): string {
  if (!who.loggedIn) {
    return who.storeExists
      ? `not logged in (${who.provider} store locked; run "sherlock login")`
      : `not logged in (no ${who.provider} store yet; "sherlock login" creates it)`;
  }
  const locks = who.locksAt ? `, locks when idle at ${who.locksAt}` : "";
  return `${who.user} via the ${who.provider} provider, since ${who.since}${locks}`;
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
  };
}
