/**
 * Reading a credential helper's output, in-process: every accepted shape,
 * every refusal, and that no message quotes what the helper printed.
 */

import assert from "node:assert/strict";
import {
  HelperError,
  parseHelperOutput,
} from "../../lib/broker/daemon/sources/credential_helper.ts";

const NOW = Date.parse("2030-01-01T00:00:00Z");
const label = "credential helper of service x (h)";

function parse(stdout: string) {
  return parseHelperOutput({ label, stdout, now: NOW });
}

Deno.test("parseHelperOutput: a bare token, or JSON with an optional future expiry", () => {
  assert.deepEqual(parse("ghp_abc\n"), { token: "ghp_abc" });
  assert.deepEqual(parse("  ghp_abc  \n\n"), { token: "ghp_abc" });
  assert.deepEqual(parse('{"token": "t"}'), { token: "t" });
  assert.deepEqual(parse('{"token": "t", "expires_at": null}'), { token: "t" });
  assert.deepEqual(
    parse('{"token": "t", "expires_at": "2030-01-01T03:00:00+02:00"}').token,
    "t",
  );
  assert.equal(
    parse('{"token": "t", "expires_at": "2030-01-01T00:00:01Z"}').expiresAt,
    NOW + 1000,
  );
  // Extra fields are the helper's business.
  assert.deepEqual(parse('{"token": "t", "scope": "repo"}'), { token: "t" });
});

Deno.test("parseHelperOutput: junk is refused without quoting it", () => {
  const secret = "tok_do_not_print";
  const cases: [string, RegExp][] = [
    ["", /printed no token/],
    ["\n  \n", /printed no token/],
    [`${secret} more`, /more than one word/],
    [`${secret}\nmore`, /more than one word/],
    [`{"token": "${secret}"`, /invalid JSON/],
    [`{"access_token": "${secret}"}`, /without a string "token"/],
    ['{"token": ""}', /without a string "token"/],
    ['{"token": "  "}', /without a string "token"/],
    ['{"token": ["x"]}', /without a string "token"/],
    [`{"token": "${secret}\\n"}`, /control characters/],
    [`{"token": "${secret}\\u0000"}`, /control characters/],
    [`{"token": "${secret}", "expires_at": "soon"}`, /not an RFC 3339 time/],
    [`{"token": "${secret}", "expires_at": 1893456000}`, /not an RFC 3339/],
    [
      `{"token": "${secret}", "expires_at": "2029-12-31T23:59:59Z"}`,
      /already expired at 2029-12-31T23:59:59\.000Z/,
    ],
    [
      `{"token": "${secret}", "expires_at": "2030-01-01T00:00:00Z"}`,
      /already expired/,
    ],
  ];
  for (const [stdout, message] of cases) {
    let thrown: unknown;
    try {
      parse(stdout);
    } catch (error) {
      thrown = error;
    }
    assert.ok(thrown instanceof HelperError, JSON.stringify(stdout));
    assert.match(thrown.message, message, JSON.stringify(stdout));
    assert.ok(thrown.message.startsWith(label), thrown.message);
    assert.equal(
      thrown.message.includes(secret),
      false,
      JSON.stringify(stdout),
    );
  }
});
