/**
 * The token sources in-process (lib/broker/daemon/sources/): the registry
 * and the service schema name the same sources, the secret source reads the
 * store, and the command source runs its helper and owns the `ttl` fallback.
 */

import assert from "node:assert/strict";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "smol-toml";
import { formatProblem } from "../../lib/config/toml_files.ts";
import type { SecretStore } from "../../lib/broker/daemon/secret_store.ts";
import { BrokerRequestError } from "../../lib/broker/daemon/request_error.ts";
import {
  registeredSources,
  tokenSource,
} from "../../lib/broker/daemon/sources/registry.ts";
import type { SourceContext } from "../../lib/broker/daemon/sources/token_source.ts";
import { type Service, validateService } from "../../lib/services/schema.ts";
import { TOKEN_SOURCES } from "../../lib/services/token_sources.ts";

/** A stdio service `s` with the given `[token]` lines. */
function serviceText(tokenLines: string): string {
  return `[service]\nname = "s"\n[server]\ncommand = "srv"\n[token]\n${tokenLines}\n`;
}

function validService(tokenLines: string): Service {
  const result = validateService(
    parse(serviceText(tokenLines)),
    serviceText(tokenLines),
  );
  assert.ok(result.ok, "the service should be valid");
  return result.value;
}

/** A store holding `secrets`; the sources only read. */
function storeWith(secrets: Record<string, string>): SecretStore {
  const store: Pick<SecretStore, "get"> = { get: (name) => secrets[name] };
  return store as SecretStore;
}

function context(options: Partial<SourceContext> = {}): SourceContext {
  return { store: storeWith({}), ...options };
}

Deno.test("registry: a source for every name the schema accepts but none, and no other", () => {
  assert.deepEqual(
    registeredSources(),
    TOKEN_SOURCES.filter((name) => name !== "none").sort(),
  );
  for (const name of registeredSources()) {
    assert.equal(typeof tokenSource(name).fetchToken, "function");
  }
});

Deno.test("schema: accepts every registered source name, and lists exactly the names when refusing one", () => {
  for (const name of [...registeredSources(), "none"]) {
    const text = serviceText(`source = "${name}"`);
    const result = validateService(parse(text), text);
    // Keys a source requires may be missing; its name must not be the problem.
    if (!result.ok) assert.notEqual(result.problem.key, "token.source", name);
  }
  const text = serviceText(`source = "no-such-source"`);
  const result = validateService(parse(text), text);
  assert.ok(!result.ok);
  assert.equal(
    formatProblem({ path: "s.toml", ...result.problem }),
    `s.toml:6: token.source: must be one of ${
      TOKEN_SOURCES.map((name) => `"${name}"`).join(", ")
    }`,
  );
});

Deno.test("secret source: the stored secret of the service, without expiry", async () => {
  const service = validService(`source = "secret"\nenv = "T"\nttl = 60`);
  const token = await tokenSource("secret").fetchToken(
    service,
    context({ store: storeWith({ s: "stored-value", other: "x" }) }),
  );
  assert.deepEqual(token, { token: "stored-value" });
});

Deno.test("secret source: no secret stored is a no_secret answer that says how to set one", async () => {
  const service = validService(`source = "secret"\nenv = "T"`);
  const error = await tokenSource("secret").fetchToken(service, context())
    .then(() => undefined, (error: unknown) => error);
  assert.ok(error instanceof BrokerRequestError);
  assert.equal(error.code, "no_secret");
  assert.equal(error.status, 404);
  assert.equal(
    error.message,
    `no secret stored for service s; run "sherlock secret set s"`,
  );
});

Deno.test("command source: ttl gives a lifetime only to a token printed without one", async () => {
  const source = tokenSource("command");
  const before = Date.now();
  const bare = await source.fetchToken(
    validService(
      `source = "command"\ncommand = ["sh", "-c", "echo bare"]\nenv = "T"\nttl = 60`,
    ),
    context(),
  );
  assert.equal(bare.token, "bare");
  assert.ok(bare.expiresAt !== undefined);
  assert.ok(bare.expiresAt >= before + 60_000);
  assert.ok(bare.expiresAt <= Date.now() + 60_000);

  const expiry = "2999-01-01T00:00:00Z";
  const json = JSON.stringify({ token: "j", expires_at: expiry });
  const dated = await source.fetchToken(
    validService(
      `source = "command"\ncommand = ["printf", '${json}']\nenv = "T"\nttl = 60`,
    ),
    context(),
  );
  assert.deepEqual(dated, { token: "j", expiresAt: Date.parse(expiry) });

  const undated = await source.fetchToken(
    validService(`source = "command"\ncommand = ["echo", "u"]\nenv = "T"`),
    context(),
  );
  assert.deepEqual(undated, { token: "u" });
});

Deno.test("command source: the helper runs in helperCwd", async () => {
  const folder = await realpath(await mkdtemp(join(tmpdir(), "sources-")));
  try {
    const token = await tokenSource("command").fetchToken(
      validService(`source = "command"\ncommand = ["pwd"]\nenv = "T"`),
      context({ helperCwd: folder }),
    );
    assert.equal(token.token, folder);
  } finally {
    await rm(folder, { recursive: true });
  }
});

Deno.test("command source: a failing helper is a helper_failed answer with its stderr", async () => {
  const error = await tokenSource("command").fetchToken(
    validService(
      `source = "command"\ncommand = ["sh", "-c", "echo nope >&2; exit 3"]\nenv = "T"`,
    ),
    context(),
  ).then(() => undefined, (error: unknown) => error);
  assert.ok(error instanceof BrokerRequestError);
  assert.equal(error.code, "helper_failed");
  assert.equal(error.status, 502);
  assert.equal(
    error.message,
    "credential helper of service s (sh) exited with 3: nope",
  );
});
