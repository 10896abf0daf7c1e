/**
 * The pure rules of `source = "exchange"` (`sources/exchange.ts`): which
 * mode, the RFC 8693 form, reading the provider's answer, and what of a
 * refusal is shown.
 */

import assert from "node:assert/strict";
import {
  exchangeForm,
  readIssued,
  targetForm,
  TOKEN_TYPES,
} from "../../lib/broker/daemon/sources/exchange.ts";
import { redactTokens } from "../../lib/broker/daemon/oauth/rules.ts";
import {
  exchangeMode,
  TOKEN_EXCHANGE_GRANT,
} from "../../lib/broker/daemon/oauth/oidc_login.ts";
import type { JsonAnswer } from "../../lib/broker/daemon/oauth/http.ts";
import { BrokerRequestError } from "../../lib/broker/daemon/request_error.ts";

function answer(status: number, json: unknown): JsonAnswer {
  return { status, headers: new Headers(), json, notJson: false };
}

const CONTEXT = {
  service: "jira",
  issuer: "https://id.example.com",
  endpoint: "https://id.example.com/token",
  now: 1_000_000,
};

Deno.test("exchangeMode: discovery decides unless mode says", () => {
  const offered = { grantTypesSupported: [TOKEN_EXCHANGE_GRANT] };
  assert.equal(exchangeMode({}, offered), "exchange");
  assert.equal(
    exchangeMode({}, { grantTypesSupported: ["refresh_token"] }),
    "refresh",
  );
  assert.equal(exchangeMode({}, {}), "refresh");
  assert.equal(exchangeMode({ mode: "refresh" }, offered), "refresh");
  assert.equal(exchangeMode({ mode: "exchange" }, {}), "exchange");
});

Deno.test("exchangeForm: subject type, requested type default, the service's targets", () => {
  assert.deepEqual(
    exchangeForm({ audience: "api", scopes: ["a", "b"] }, "st"),
    {
      grant_type: TOKEN_EXCHANGE_GRANT,
      subject_token: "st",
      subject_token_type: TOKEN_TYPES.access_token,
      requested_token_type: TOKEN_TYPES.access_token,
      audience: "api",
      scope: "a b",
    },
  );
  const id = exchangeForm({
    subject: "id_token",
    resource: "https://r",
    requested_token_type: "urn:x:jwt",
  }, "it");
  assert.equal(id.subject_token_type, TOKEN_TYPES.id_token);
  assert.equal(id.requested_token_type, "urn:x:jwt");
  assert.equal(id.resource, "https://r");
  assert.equal(id.audience, undefined);
  assert.deepEqual(targetForm({}), {});
});

Deno.test("readIssued: the token and its expiry; a refusal is exchange_refused without token-like text", () => {
  assert.deepEqual(
    readIssued(
      answer(200, { access_token: "tok", expires_in: 60, token_type: "N_A" }),
      CONTEXT,
    ),
    { token: "tok", expiresAt: 1_060_000 },
  );
  const refused = readIssued(
    answer(400, {
      error: "invalid_target",
      error_description:
        "subject eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.sig is not for api",
    }),
    CONTEXT,
  );
  assert.ok(refused instanceof BrokerRequestError);
  assert.equal(refused.code, "exchange_refused");
  assert.equal(
    refused.message,
    "the provider https://id.example.com refused a token for service jira: invalid_target (subject [redacted] is not for api)",
  );
  const down = readIssued(answer(503, {}), CONTEXT);
  assert.ok(down instanceof BrokerRequestError);
  assert.equal(down.code, "oauth_failed");
  const empty = readIssued(answer(200, { token_type: "Bearer" }), CONTEXT);
  assert.ok(empty instanceof BrokerRequestError);
  assert.match(empty.message, /answered no token for service jira/);
  assert.equal(redactTokens("short words stay"), "short words stay");
});
