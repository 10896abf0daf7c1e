/**
 * The one advice every command gives for the broker's login
 * (`loginAdvice` of lib/broker/client.ts): its whole table, and the state
 * read from `whoami`.
 */

import assert from "node:assert/strict";
import {
  loginAdvice,
  type LoginNeed,
  type LoginState,
  loginState,
} from "../../lib/broker/client.ts";

const LOGIN = 'run "sherlock login"';
const LOCAL = 'run "sherlock login --local"';
const CREATE = 'run "sherlock login" (it creates the local store)';
const CREATE_LOCAL =
  'run "sherlock login --local" (it creates the local store)';

/** state → [store, sso, any]: undefined where the need is met. */
const TABLE: [LoginState, (string | undefined)[]][] = [
  [{ broker: "not-running" }, [LOGIN, LOGIN, LOGIN]],
  [{ broker: "running", store: "unlocked", sso: false }, [
    undefined,
    LOGIN,
    undefined,
  ]],
  [{ broker: "running", store: "unlocked", sso: true }, [
    undefined,
    undefined,
    undefined,
  ]],
  [{ broker: "running", store: "locked", sso: false }, [LOGIN, LOGIN, LOGIN]],
  [{ broker: "running", store: "absent", sso: false }, [CREATE, LOGIN, CREATE]],
  // Logged in by SSO: "sherlock login" is held, the store takes --local.
  [{ broker: "running", store: "locked", sso: true }, [
    LOCAL,
    undefined,
    undefined,
  ]],
  [{ broker: "running", store: "absent", sso: true }, [
    CREATE_LOCAL,
    undefined,
    undefined,
  ]],
];

Deno.test("loginAdvice: one line per broker state and need, never sherlock login while the SSO login is held", () => {
  const needs: LoginNeed[] = ["store", "sso", "any"];
  for (const [state, expected] of TABLE) {
    assert.deepEqual(
      needs.map((need) => loginAdvice(state, need)),
      expected,
      JSON.stringify(state),
    );
  }
});

Deno.test("loginState: read from whoami; an SSO login leaves the store as whoami says", () => {
  assert.deepEqual(loginState(undefined), { broker: "not-running" });
  const base = { provider: "local", storeExists: true };
  assert.deepEqual(
    loginState({ ...base, loggedIn: true, storeUnlocked: true }),
    { broker: "running", store: "unlocked", sso: false },
  );
  assert.deepEqual(
    loginState({ ...base, loggedIn: false }),
    { broker: "running", store: "locked", sso: false },
  );
  assert.deepEqual(
    loginState({ ...base, storeExists: false, loggedIn: false }),
    { broker: "running", store: "absent", sso: false },
  );
  const oidc = {
    issuer: "https://id.example",
    subject: "tester",
    since: "2026-01-01T00:00:00Z",
    accessTokenExpiresAt: "2026-01-01T01:00:00Z",
    refreshToken: true,
    tokenExchange: false,
  };
  assert.deepEqual(
    loginState({
      ...base,
      provider: "oidc",
      loggedIn: true,
      storeUnlocked: false,
      oidc,
    }),
    { broker: "running", store: "locked", sso: true },
  );
  // An answer without storeUnlocked: loggedIn is the SSO login's then.
  assert.deepEqual(
    loginState({ ...base, provider: "oidc", loggedIn: true, oidc }),
    { broker: "running", store: "locked", sso: true },
  );
});
