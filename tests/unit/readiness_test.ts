/**
 * The token column of `sherlock services` and `doctor`: every
 * `[token] source` is judged as itself, never as a secret.
 */

import assert from "node:assert/strict";
import {
  SOURCE_READINESS,
  type StoreView,
  tokenReadiness,
} from "../../lib/mcp/readiness.ts";
import { TOKEN_SOURCES } from "../../lib/services/token_sources.ts";
import { service } from "../helpers/services.ts";

const exchange = service(`
[service]
name = "wiki"
[server]
url = "https://wiki.example/mcp"
[token]
source = "exchange"
audience = "api-wiki"
`);

const secret = service(`
[service]
name = "docs"
[server]
url = "https://docs.example/mcp"
[token]
source = "secret"
header = "Authorization"
`);

const oauth = service(`
[service]
name = "linear"
[server]
url = "https://linear.example/mcp"
[token]
source = "oauth"
`);

const helper = service(`
[service]
name = "github"
[server]
command = "github-mcp-server"
[token]
source = "command"
command = ["no-such-helper-on-path"]
env = "GITHUB_TOKEN"
`);

const none = service(`
[service]
name = "plain"
[server]
command = "plain-server"
`);

const EMPTY = new Set<string>();

function open(sso: boolean): StoreView {
  return {
    kind: "running",
    sso,
    store: "unlocked",
    secrets: EMPTY,
    authorized: EMPTY,
  };
}

Deno.test("readiness: every token source has its own entry", () => {
  assert.deepEqual(
    Object.keys(SOURCE_READINESS).sort(),
    [...TOKEN_SOURCES].sort(),
  );
});

Deno.test("readiness: an exchange service needs the SSO login, not a secret", () => {
  assert.deepEqual(tokenReadiness(exchange, open(true), ""), {
    status: "ready",
    text: "SSO login held",
  });
  // The store locked (an SSO login alone) does not hide the SSO login.
  assert.deepEqual(
    tokenReadiness(exchange, {
      kind: "running",
      sso: true,
      store: "locked",
    }, ""),
    { status: "ready", text: "SSO login held" },
  );
  assert.deepEqual(tokenReadiness(exchange, open(false), ""), {
    status: "missing",
    text: 'no SSO login (run "sherlock login")',
    advice: 'run "sherlock login"',
  });
  assert.equal(
    tokenReadiness(exchange, { kind: "not-running" }, "").status,
    "unknown",
  );
});

Deno.test("readiness: only a secret service is told to store a secret", () => {
  const services = { exchange, secret, oauth, command: helper, none };
  for (const source of TOKEN_SOURCES) {
    const text = tokenReadiness(services[source], open(false), "").text;
    assert.equal(
      text.includes("secret set"),
      source === "secret",
      `${source}: ${text}`,
    );
  }
});

Deno.test("readiness: secret, oauth, command and none as before", () => {
  const stored: StoreView = {
    kind: "running",
    sso: false,
    store: "unlocked",
    secrets: new Set(["docs"]),
    authorized: new Set(["linear"]),
  };
  assert.equal(tokenReadiness(secret, stored, "").text, "secret stored");
  assert.equal(tokenReadiness(oauth, stored, "").text, "OAuth grant held");
  assert.equal(
    tokenReadiness(oauth, open(false), "").text,
    'no grant (run "sherlock auth linear")',
  );
  // No grant, but Enterprise-Managed Authorization from the SSO login.
  assert.deepEqual(
    tokenReadiness(oauth, {
      kind: "running",
      sso: true,
      store: "locked",
      authorized: EMPTY,
      ema: new Set(["linear"]),
    }, ""),
    { status: "ready", text: "from the SSO login (EMA)" },
  );
  const locked: StoreView = {
    kind: "running",
    sso: false,
    store: "locked",
  };
  assert.equal(
    tokenReadiness(secret, locked, "").text,
    'unknown (run "sherlock login")',
  );
  assert.equal(
    tokenReadiness(helper, locked, "").text,
    "helper no-such-helper-on-path not found",
  );
  assert.deepEqual(tokenReadiness(none, locked, ""), {
    status: "none",
    text: "-",
  });
});

Deno.test("readiness: logged in by SSO with the local store locked, a secret and a grant are unknown until sherlock login --local", () => {
  const sso: StoreView = {
    kind: "running",
    sso: true,
    store: "locked",
    authorized: EMPTY,
    ema: EMPTY,
  };
  for (const service of [secret, oauth]) {
    assert.deepEqual(tokenReadiness(service, sso, ""), {
      status: "unknown",
      text: 'unknown (run "sherlock login --local")',
      advice: 'run "sherlock login --local"',
    });
  }
});

Deno.test("readiness: with no broker running, a store or SSO token is unknown, and the advice is sherlock login", () => {
  for (const service of [secret, oauth, exchange]) {
    assert.deepEqual(tokenReadiness(service, { kind: "not-running" }, ""), {
      status: "unknown",
      text: "unknown (broker not running)",
      advice: 'run "sherlock login"',
    });
  }
});

Deno.test("readiness: a client-credentials service is ready when its secret or key is stored, with no grant", () => {
  const withCredential = (line: string) =>
    service(`
[service]
name = "ci"
[server]
url = "https://ci.example/mcp"
[token]
source = "oauth"
grant = "client_credentials"
client_id = "runner"
${line}
`);
  const bySecret = withCredential('client_secret = "ci-secret"');
  const byKey = withCredential('client_key = "ci-key"');
  const view = (names: string[]): StoreView => ({
    kind: "running",
    sso: false,
    store: "unlocked",
    secrets: new Set(names),
    authorized: EMPTY,
  });
  assert.deepEqual(tokenReadiness(bySecret, view(["ci-secret"]), ""), {
    status: "ready",
    text: "client secret stored (no person)",
  });
  assert.deepEqual(tokenReadiness(byKey, view([]), ""), {
    status: "missing",
    text: 'no client key (run "sherlock secret set ci-key")',
  });
  assert.equal(
    tokenReadiness(byKey, { kind: "running", sso: false, store: "locked" }, "")
      .status,
    "unknown",
  );
});
