/**
 * A CI runner's login: `sherlock login --subject-token-file PATH` (and
 * `--subject-token-env VAR`) exchanges a workload identity token at a real
 * OpenID provider (oidc-provider, tests/fixtures/oauth/, its token-exchange
 * grant trusting a "CI platform" issuer, `ci_issuer.ts` — the one stand-in:
 * GitHub Actions' issuer cannot run here), with no terminal (stdin closed)
 * and no passphrase; then a non-interactive agent run gets its `exchange`
 * and `command` services' tokens. A refused or expired workload token is
 * 77 with the provider's error, an unreachable provider 69, a missing token
 * 78; the workload token and every token issued appear in no file, output,
 * argv or environment.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type AuthServer,
  type AuthServerOptions,
  CI_SUBJECT,
  type CiIssuer,
  createCiIssuer,
  startAuthServer,
} from "../fixtures/oauth/mod.ts";
import {
  AGENT,
  type BrokerHome,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { filesContaining } from "../helpers/leaks.ts";
import type { SherlockResult } from "../helpers/sherlock.ts";
import { fetchToken, registerSession } from "../../lib/broker/client.ts";
import { SherlockError } from "../../lib/errors.ts";

const CLIENT_ID = "sherlock-ci";
const AUDIENCE = "api://sherlock";
const ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token";

interface Setup extends AsyncDisposable {
  as: AuthServer;
  ci: CiIssuer;
  home: BrokerHome;
  /** A folder outside the HOME, as a CI runner's $RUNNER_TEMP. */
  runnerTemp: string;
  /** Writes a fresh workload token (0600) into runnerTemp; its path. */
  tokenFile(options?: { expiresIn?: number; audience?: string }): Promise<{
    path: string;
    token: string;
  }>;
}

async function setup(options: AuthServerOptions = {}): Promise<Setup> {
  const ci = await createCiIssuer();
  const as = await startAuthServer({
    accessTokenTtlSeconds: 60,
    requireResource: false,
    tokenExchange: true,
    workloadIssuers: [ci],
    clients: [{
      client_id: CLIENT_ID,
      redirect_uris: ["http://127.0.0.1/callback"],
    }],
    ...options,
  });
  const home = await createBrokerHome();
  const runnerTemp = Deno.makeTempDirSync({ prefix: "sherlock-runner-" });
  Deno.mkdirSync(join(home.configHome, "sherlock"), { recursive: true });
  // Tokens through the shim: the rendered config holds none.
  Deno.writeTextFileSync(
    join(home.configHome, "sherlock", "config.toml"),
    `[login]\nprovider = "oidc"\nissuer = "${as.issuer}"\nclient_id = "${CLIENT_ID}"\nscopes = ["openid"]\naudience = "${AUDIENCE}"\n\n[render]\ntokens = "shim"\n`,
  );
  return {
    as,
    ci,
    home,
    runnerTemp,
    async tokenFile(file = {}) {
      const token = await ci.sign({
        audience: file.audience ?? as.issuer,
        expiresIn: file.expiresIn,
      });
      const path = join(runnerTemp, `oidc-${crypto.randomUUID()}.jwt`);
      Deno.writeTextFileSync(path, `${token}\n`, { mode: 0o600 });
      return { path, token };
    },
    async [Symbol.asyncDispose]() {
      try {
        await home[Symbol.asyncDispose]();
      } finally {
        await as[Symbol.asyncDispose]();
        Deno.removeSync(runnerTemp, { recursive: true });
      }
    },
  };
}

/** A stdio server that prints the SHA-256 of its token (never the token). */
function hashingServer(home: BrokerHome, name: string): string {
  return home.writeScript(
    `${name}-server`,
    `printf %s "$API_TOKEN" | sha256sum | cut -d' ' -f1`,
  );
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(text),
  );
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** Asserts no needle in the outputs, the HOME's files, the daemon's argv/env. */
function assertNoLeak(
  home: BrokerHome,
  needles: string[],
  results: SherlockResult[],
): void {
  assert.ok(needles.every((needle) => needle.length > 20));
  const outputs = results.map((r) => r.stdout + r.stderr).join("\n");
  for (const needle of needles) {
    assert.ok(!outputs.includes(needle), "a token in sherlock's output");
  }
  assert.deepEqual(filesContaining(home.root, needles), []);
  for (const pid of home.daemonPids()) {
    for (const file of ["cmdline", "environ"]) {
      const text = Deno.readTextFileSync(`/proc/${pid}/${file}`);
      for (const needle of needles) {
        assert.ok(!text.includes(needle), `a token in the daemon's ${file}`);
      }
    }
  }
}

Deno.test("CI: login with a subject token file, then a non-interactive agent run, with no terminal and no passphrase", async () => {
  await using s = await setup();
  const { as, home } = s;
  const { path, token: subjectToken } = await s.tokenFile();

  // stdin closed, no terminal, no $BROWSER: nobody could answer a prompt.
  const login = await home.sherlock(["login", "--subject-token-file", path]);
  assert.equal(login.code, 0, login.stderr);
  assert.equal(login.stderr, "");
  assert.match(
    login.stdout,
    new RegExp(
      `^logged in: subject repo:org/app:ref:refs/heads/main \\(the workload token's claims from https://token\\.actions\\.githubusercontent\\.com, decoded, not verified\\) at ${as.issuer} with a workload token, since \\S+; ends at \\S+\\n$`,
    ),
  );
  assert.equal(as.counts.authorization, 0, "no browser flow");
  assert.equal(as.counts.device_authorization, 0, "no device flow");
  // What arrived at the provider: RFC 8693 with the configured client,
  // scopes and audience, verified against the CI issuer's key.
  assert.equal(as.exchanges.length, 1);
  const [exchange] = as.exchanges;
  assert.equal(exchange.clientId, CLIENT_ID);
  assert.equal(exchange.subjectTokenType, ID_TOKEN_TYPE);
  assert.equal(
    exchange.requestedTokenType,
    "urn:ietf:params:oauth:token-type:access_token",
  );
  assert.equal(exchange.audience, AUDIENCE);
  assert.equal(exchange.scope, "openid");
  assert.equal(exchange.workloadSubject, CI_SUBJECT);
  const loginToken = exchange.issued!;
  assert.ok(loginToken);

  const who = await home.sherlock(["whoami", "--verbose"]);
  assert.equal(who.code, 0, who.stderr);
  assert.ok(who.stdout.includes(`subject ${CI_SUBJECT}`), who.stdout);
  assert.match(who.stdout, /the local store is locked/);
  assert.match(
    who.stdout,
    /logged in with: a workload token \(claims from subject_token\)/,
  );

  // A non-interactive agent run: an exchange service (its token exchanged
  // from the login's) and a command service.
  home.addAgent();
  const helper = home.addHelperService("cmd");
  home.writeService(
    "api",
    `[service]\nname = "api"\n[server]\ncommand = ${
      JSON.stringify(hashingServer(home, "api"))
    }\n[token]\nsource = "exchange"\nenv = "API_TOKEN"\naudience = "api-alpha"\n`,
  );
  const { result, record } = await home.runAgent({
    args: ["-p", "summarize the failing tests"],
    runServers: "",
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(helper.runs(), 1, "the command service's helper ran");
  const served = as.exchanges.find((e) => e.audience === "api-alpha");
  assert.ok(served?.issued, "the api service's token was exchanged");
  assert.equal(
    served.subjectTokenType,
    "urn:ietf:params:oauth:token-type:access_token",
  );
  assert.equal(record!.servers!.api.code, 0, record!.servers!.api.stderr);
  assert.equal(
    record!.servers!.api.stdout.trim(),
    await sha256(served.issued),
    "the server got the exchanged token",
  );
  assert.deepEqual(record!.args, ["-p", "summarize the failing tests"]);

  const needles = [subjectToken, loginToken, served.issued];
  for (const needle of needles) {
    assert.ok(!JSON.stringify(record!.env).includes(needle), "agent env");
    assert.ok(!JSON.stringify(record!.args).includes(needle), "agent argv");
  }
  assertNoLeak(home, needles, [login, who, result]);
});

Deno.test("CI: login with --subject-token-env; the broker it starts does not inherit the variable", async () => {
  await using s = await setup();
  const { as, home } = s;
  const subjectToken = await s.ci.sign({ audience: as.issuer });
  const login = await home.sherlock(
    [
      "login",
      "--subject-token-env",
      "CI_OIDC_TOKEN",
      "--subject-token-type",
      "jwt",
    ],
    { env: { CI_OIDC_TOKEN: subjectToken } },
  );
  assert.equal(login.code, 0, login.stderr);
  assert.ok(login.stdout.includes(`subject ${CI_SUBJECT}`), login.stdout);
  assert.equal(
    as.exchanges[0].subjectTokenType,
    "urn:ietf:params:oauth:token-type:jwt",
  );
  const who = await home.sherlock(["whoami"]);
  assert.equal(who.code, 0, who.stderr);
  assertNoLeak(home, [subjectToken, as.exchanges[0].issued!], [login, who]);
});

Deno.test("CI: a refused workload token is 77 with the provider's error, never the token", async (t) => {
  await using s = await setup();
  const { as, home } = s;
  await t.step("expired", async () => {
    const { path, token } = await s.tokenFile({ expiresIn: -60 });
    const result = await home.sherlock(["login", "--subject-token-file", path]);
    assert.equal(result.code, 77, result.stderr);
    assert.match(
      result.stderr,
      /^sherlock: the provider http:\S+ refused the workload token: invalid_grant \(the subject_token has expired\)\n$/,
    );
    assert.ok(!result.stderr.includes(token));
  });
  await t.step("for another audience", async () => {
    const { path, token } = await s.tokenFile({ audience: "someone-else" });
    const result = await home.sherlock(["login", "--subject-token-file", path]);
    assert.equal(result.code, 77, result.stderr);
    assert.match(result.stderr, /audience is not http:/);
    assert.ok(!result.stderr.includes(token));
  });
  await t.step("not signed by the CI issuer", async () => {
    const other = await createCiIssuer(s.ci.issuer);
    const token = await other.sign({ audience: as.issuer });
    const path = join(s.runnerTemp, "forged.jwt");
    Deno.writeTextFileSync(path, token, { mode: 0o600 });
    const result = await home.sherlock(["login", "--subject-token-file", path]);
    assert.equal(result.code, 77, result.stderr);
    assert.match(result.stderr, /not signed by a trusted key/);
    assert.ok(!result.stderr.includes(token));
    const who = await home.sherlock(["whoami"]);
    assert.equal(who.code, 77, "no login after refusals");
  });
});

Deno.test("CI: when the exchanged login expires, the next token request is 77 naming --subject-token-file", async () => {
  await using s = await setup({ accessTokenTtlSeconds: 2 });
  const { home } = s;
  const { path } = await s.tokenFile();
  const login = await home.sherlock(["login", "--subject-token-file", path]);
  assert.equal(login.code, 0, login.stderr);
  home.writeService(
    "api",
    `[service]\nname = "api"\n[server]\nurl = "https://api.example/mcp"\n[token]\nsource = "exchange"\naudience = "api-alpha"\n`,
  );
  const { capability } = await registerSession({
    socket: home.socket,
    session: "c1c1c1c1c1c1",
    agent: AGENT,
    services: ["api"],
    pid: Deno.pid,
  });
  home.advanceClock(2200);
  await assert.rejects(
    fetchToken(home.socket, { service: "api", capability }),
    (error: Error) => {
      assert.ok(error instanceof SherlockError);
      assert.equal(error.exitCode, 77);
      assert.match(
        error.message,
        /^the login at http:\S+ from a workload token has expired; run "sherlock login --subject-token-file PATH" \(or --subject-token-env VAR\) with a fresh one$/,
      );
      return true;
    },
  );
  // A fresh workload token logs in again.
  const again = await home.sherlock([
    "login",
    "--subject-token-file",
    (await s.tokenFile()).path,
  ]);
  assert.equal(again.code, 0, again.stderr);
});

Deno.test("CI: provider down is 69; no token, no [login] or a bad flag are one line", async (t) => {
  await using s = await setup();
  const { as, home } = s;
  const { path, token } = await s.tokenFile();
  await t.step("provider down", async () => {
    await as.down();
    try {
      const result = await home.sherlock([
        "login",
        "--subject-token-file",
        path,
      ]);
      assert.equal(result.code, 69, result.stderr);
      assert.match(
        result.stderr,
        /^sherlock: http:\/\/127\.0\.0\.1:\d+ cannot be reached[^\n]*\n$/,
      );
      assert.ok(!result.stderr.includes(token));
    } finally {
      await as.up();
    }
  });
  await t.step("no token file, an empty variable", async () => {
    const missing = await home.sherlock([
      "login",
      "--subject-token-file",
      join(s.runnerTemp, "nothing-here"),
    ]);
    assert.equal(missing.code, 78, missing.stderr);
    assert.match(
      missing.stderr,
      /^sherlock: the subject token file \S+nothing-here does not exist: the CI job must write the workload token there before "sherlock login"\n$/,
    );
    const empty = await home.sherlock(
      ["login", "--subject-token-env", "CI_OIDC_TOKEN"],
      { env: { CI_OIDC_TOKEN: "" } },
    );
    assert.equal(empty.code, 78, empty.stderr);
    assert.match(
      empty.stderr,
      /^sherlock: the environment variable CI_OIDC_TOKEN holds no token\n$/,
    );
  });
  await t.step("bad flags", async () => {
    const type = await home.sherlock([
      "login",
      "--subject-token-file",
      path,
      "--subject-token-type",
      "saml2",
    ]);
    assert.equal(type.code, 2, type.stderr);
    assert.match(type.stderr, /--subject-token-type saml2 is not one/);
    const both = await home.sherlock([
      "login",
      "--subject-token-file",
      path,
      "--device",
    ]);
    assert.equal(both.code, 2, both.stderr);
  });
  await t.step("no [login] provider = oidc", async () => {
    Deno.writeTextFileSync(
      join(home.configHome, "sherlock", "config.toml"),
      "",
    );
    const result = await home.sherlock([
      "login",
      "--subject-token-file",
      path,
    ]);
    assert.equal(result.code, 78, result.stderr);
    assert.match(
      result.stderr,
      /^sherlock: --subject-token-file needs \[login\] provider = "oidc"/,
    );
  });
  assert.equal(as.exchanges.length, 0, "no request reached the exchange");
});
