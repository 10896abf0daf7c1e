/**
 * The pure parts of a CI runner's login (`login_workload.ts` in the CLI and
 * the daemon): the flags, reading the workload token from a real file or a
 * variable, the RFC 8693 form, what a refusal says, whose claims name the
 * login, and how `whoami` puts it.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  parseWorkloadFlags,
  readSubjectToken,
  subjectTokenType,
} from "../../lib/cli/login_workload.ts";
import {
  workloadClaims,
  workloadExchangeForm,
  workloadRefusal,
} from "../../lib/broker/daemon/oauth/workload_login.ts";
import type { JsonAnswer } from "../../lib/broker/daemon/oauth/http.ts";
import { describeOidcLogin } from "../../lib/cli/login_text.ts";
import { SherlockError } from "../../lib/errors.ts";

const ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token";

function jwt(claims: Record<string, unknown>): string {
  const part = (value: unknown) =>
    btoa(JSON.stringify(value)).replaceAll("+", "-").replaceAll("/", "_")
      .replace(/=+$/, "");
  return `${part({ alg: "RS256" })}.${part(claims)}.c2lnbmF0dXJl`;
}

function answer(status: number, json: unknown): JsonAnswer {
  return { status, json, headers: new Headers(), notJson: false };
}

Deno.test("workload flags: file or variable, the type's short names and URNs, one clear refusal each", () => {
  assert.deepEqual(parseWorkloadFlags(["--subject-token-file", "/t/oidc"]), {
    source: { file: "/t/oidc", type: ID_TOKEN },
    rest: [],
  });
  assert.deepEqual(
    parseWorkloadFlags([
      "--subject-token-env=CI_TOKEN",
      "--subject-token-type",
      "jwt",
    ]),
    {
      source: {
        env: "CI_TOKEN",
        type: "urn:ietf:params:oauth:token-type:jwt",
      },
      rest: [],
    },
  );
  assert.deepEqual(parseWorkloadFlags(["--device"]), { rest: ["--device"] });
  assert.equal(
    subjectTokenType("access_token"),
    subjectTokenType(
      "urn:ietf:params:oauth:token-type:access_token",
    ),
  );
  assert.equal(subjectTokenType("saml2"), undefined);
  assert.equal(subjectTokenType("toString"), undefined);
  const refusals: [string[], RegExp][] = [
    [["--subject-token-file"], /--subject-token-file needs a value/],
    [
      ["--subject-token-file", "a", "--subject-token-env", "B"],
      /not both/,
    ],
    [["--subject-token-type", "jwt"], /goes with --subject-token-file/],
    [["--subject-token-file", "a", "--subject-token-file", "b"], /twice/],
    [
      ["--subject-token-file", "a", "--subject-token-type", "saml2"],
      /saml2 is not one sherlock knows: use id_token, jwt, access_token/,
    ],
  ];
  for (const [args, message] of refusals) {
    assert.throws(() => parseWorkloadFlags(args), (error: Error) => {
      assert.ok(error instanceof SherlockError);
      assert.equal(error.exitCode, 2);
      assert.match(error.message, message);
      return true;
    });
  }
});

Deno.test("the workload token: trimmed from a file or a variable; missing, empty, two tokens, a FIFO or too large is 78 without quoting it", () => {
  const folder = Deno.makeTempDirSync();
  try {
    const file = join(folder, "oidc.jwt");
    Deno.writeTextFileSync(file, "  header.payload.sig\n");
    assert.equal(
      readSubjectToken({ file, type: ID_TOKEN }, {}),
      "header.payload.sig",
    );
    assert.equal(
      readSubjectToken({ env: "T", type: ID_TOKEN }, { T: "abc.def.ghi\n" }),
      "abc.def.ghi",
    );
    Deno.writeTextFileSync(join(folder, "two"), "secret-one\nsecret-two\n");
    Deno.writeTextFileSync(join(folder, "big"), "x".repeat(64 * 1024 + 1));
    Deno.writeTextFileSync(join(folder, "empty"), "\n");
    const fifo = join(folder, "fifo");
    new Deno.Command("mkfifo", { args: [fifo] }).outputSync();
    const cases: [Parameters<typeof readSubjectToken>, RegExp][] = [
      [
        [{ file: join(folder, "none"), type: ID_TOKEN }, {}],
        /none does not exist: the CI job must write/,
      ],
      [[{ file: join(folder, "empty"), type: ID_TOKEN }, {}], /holds no token/],
      [
        [{ file: join(folder, "two"), type: ID_TOKEN }, {}],
        /holds more than one token/,
      ],
      [[{ file: join(folder, "big"), type: ID_TOKEN }, {}], /big/],
      [[{ file: fifo, type: ID_TOKEN }, {}], /fifo/],
      [
        [{ env: "T", type: ID_TOKEN }, {}],
        /^the environment variable T is not set/,
      ],
    ];
    for (const [args, message] of cases) {
      assert.throws(() => readSubjectToken(...args), (error: Error) => {
        assert.ok(error instanceof SherlockError);
        assert.equal(error.exitCode, 78, error.message);
        assert.match(error.message, message);
        assert.ok(!error.message.includes("secret-one"));
        return true;
      });
    }
  } finally {
    Deno.removeSync(folder, { recursive: true });
  }
});

Deno.test("the RFC 8693 form: the public client, scopes, audience, an access token asked for", () => {
  assert.deepEqual(
    workloadExchangeForm(
      { clientId: "cli", scopes: ["openid", "email"], audience: "api" },
      { token: "tok", type: ID_TOKEN },
    ),
    {
      grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
      client_id: "cli",
      subject_token: "tok",
      subject_token_type: ID_TOKEN,
      requested_token_type: "urn:ietf:params:oauth:token-type:access_token",
      scope: "openid email",
      audience: "api",
    },
  );
  const bare = workloadExchangeForm(
    { clientId: "cli", scopes: [] },
    { token: "tok", type: ID_TOKEN },
  );
  assert.equal("scope" in bare || "audience" in bare, false);
});

Deno.test("a refusal: 77 with the provider's words (tokens redacted), 78 for a client that may not exchange", () => {
  const context = { issuer: "https://sso.example", clientId: "cli" };
  const quoted = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln";
  const refused = workloadRefusal(
    answer(400, {
      error: "invalid_grant",
      error_description: `bad subject_token ${quoted}`,
    }),
    context,
  );
  assert.equal(refused?.code, "exchange_refused");
  assert.equal(
    refused?.message,
    "the provider https://sso.example refused the workload token: invalid_grant (bad subject_token [redacted])",
  );
  const client = workloadRefusal(
    answer(400, { error: "unauthorized_client" }),
    context,
  );
  assert.equal(client?.code, "oauth_unsupported");
  assert.match(client!.message, /allow the token-exchange grant/);
  assert.equal(
    workloadRefusal(answer(200, { access_token: "x" }), context),
    undefined,
  );
  assert.equal(
    workloadRefusal(answer(503, { error: "x" }), context),
    undefined,
  );
});

Deno.test("whose claims name a workload login, and how whoami says it", () => {
  const subjectToken = jwt({ iss: "https://ci.example", sub: "repo:o/a" });
  assert.deepEqual(
    workloadClaims({ accessToken: "opaque", subjectToken })?.from,
    "subject_token",
  );
  assert.equal(
    workloadClaims({
      accessToken: jwt({ iss: "https://sso.example", sub: "svc-ci" }),
      subjectToken,
    })?.claims.sub,
    "svc-ci",
  );
  assert.equal(
    workloadClaims({ accessToken: "opaque", subjectToken: "opaque" }),
    undefined,
  );
  const status = {
    issuer: "https://sso.example",
    subject: "repo:o/a",
    since: "2026-01-01T00:00:00.000Z",
    accessTokenExpiresAt: "2026-01-01T00:05:00.000Z",
    refreshToken: false,
    tokenExchange: true,
  };
  assert.equal(
    describeOidcLogin({
      ...status,
      workload: {
        claimsFrom: "subject_token",
        claimsIssuer: "https://ci.example",
      },
    }),
    "subject repo:o/a (the workload token's claims from https://ci.example, decoded, not verified) at https://sso.example with a workload token, since 2026-01-01T00:00:00.000Z; ends at 2026-01-01T00:05:00.000Z",
  );
  assert.match(
    describeOidcLogin({ ...status, workload: { claimsFrom: "id_token" } }),
    /^subject repo:o\/a at https:\/\/sso\.example with a workload token/,
  );
});
