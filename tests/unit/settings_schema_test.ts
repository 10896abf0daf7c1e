/** config.toml's schema and its problems (lib/config/settings_schema.ts). */

import assert from "node:assert/strict";
import { parse } from "smol-toml";
import { formatProblem } from "../../lib/config/toml_files.ts";
import { validateSettings } from "../../lib/config/settings_schema.ts";

function validate(text: string) {
  return validateSettings(parse(text), text);
}

Deno.test("settings: idle_timeout up to 7 days", () => {
  const result = validate("[broker]\nidle_timeout = 604800\n");
  assert.ok(result.ok);
  assert.equal(result.value.broker.idle_timeout, 604800);
});

Deno.test("settings problems: an idle_timeout too large for a timer", () => {
  const result = validate("[broker]\nidle_timeout = 2200000\n");
  assert.ok(!result.ok, "the settings should be invalid");
  assert.equal(
    formatProblem({ path: "config.toml", ...result.problem }),
    "config.toml:2: broker.idle_timeout: must be at most 604800 seconds (7 days)",
  );
});

Deno.test('settings: [login] provider = "oidc" with its keys', () => {
  const result = validate(
    '[login]\nprovider = "oidc"\nissuer = "https://id.example.com"\nclient_id = "sherlock"\naudience = "api"\n',
  );
  assert.ok(result.ok);
  assert.equal(result.value.login.provider, "oidc");
  assert.equal(result.value.login.issuer, "https://id.example.com");
  assert.equal(
    result.value.login.scopes,
    undefined,
    "the default is applied where used",
  );
});

Deno.test("settings problems: oidc without its keys, oidc keys for local, a plain-http issuer", () => {
  const problem = (text: string) => {
    const result = validate(text);
    assert.ok(!result.ok, "the settings should be invalid");
    return formatProblem({ path: "config.toml", ...result.problem });
  };
  assert.match(
    problem('[login]\nprovider = "oidc"\nclient_id = "c"\n'),
    /login\.issuer: provider = "oidc" needs issuer/,
  );
  assert.match(
    problem('[login]\nissuer = "https://id.example.com"\n'),
    /login\.issuer: applies only to provider = "oidc"/,
  );
  assert.match(
    problem(
      '[login]\nprovider = "oidc"\nissuer = "http://id.example.com"\nclient_id = "c"\n',
    ),
    /login\.issuer: must be the provider's issuer URL/,
  );
  assert.match(
    problem(
      '[login]\nprovider = "oidc"\nissuer = "https://id.example.com"\nclient_id = "c"\nscopes = ["email"]\n',
    ),
    /login\.scopes: must include "openid"/,
  );
  assert.match(
    problem('[login]\nprovider = "ldap"\n'),
    /must be "local" or "oidc"/,
  );
});
