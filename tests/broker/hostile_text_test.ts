/**
 * Issue 17, item 4: what a hostile authorization server or protected
 * resource says (an issuer, a `resource`, a token answer's `scope`, an
 * `error_description`) reaches `sherlock auth` and `sherlock auth status`
 * with its control characters escaped, never raw. Real processes against
 * the OAuth fixture (oidc-provider on 127.0.0.1, its front told to answer
 * with ESC, BEL and C1 controls) and a protected-resource metadata server
 * this test controls.
 */

import assert from "node:assert/strict";
import { browserEnv } from "../fixtures/oauth/mod.ts";
import { createOAuthHome, type OAuthHome } from "../helpers/oauth_home.ts";

/** A title change ended by BEL, a CSI as ESC [ and as C1, a C1 NEL, CR. */
const HOSTILE = "x\x1b]0;pwned\x07\x1b[2J\x9b31m\x85\rz";

/**
 * Fails when `bytes` (a process's stdout or stderr) hold a control
 * character a terminal obeys: C0 but newline and tab, DEL, or C1 (0xC2
 * 0x80–0x9F in UTF-8).
 */
function assertInert(bytes: string, what: string): void {
  const raw = new TextEncoder().encode(bytes);
  for (let i = 0; i < raw.length; i++) {
    const byte = raw[i];
    const c0 = byte < 0x20 && byte !== 0x0a && byte !== 0x09;
    const c1 = byte === 0xc2 && raw[i + 1] >= 0x80 && raw[i + 1] <= 0x9f;
    assert.ok(
      !c0 && byte !== 0x7f && !c1,
      `${what} has a raw control character at ${i}: ${JSON.stringify(bytes)}`,
    );
  }
}

/** `prm` is what the protected-resource metadata says; the test changes it. */
function setup(): Promise<OAuthHome> {
  return createOAuthHome({ authServer: { accessTokenTtlSeconds: 60 } });
}

Deno.test("sherlock auth and auth status: an AS's or resource's words with ESC, BEL, C1 reach the terminal escaped", async (t) => {
  await using s = await setup();
  const auth = () => s.home.sherlock(["auth", "remote"], { env: browserEnv() });

  await t.step(
    "a token answer's error_description (auth --device)",
    async () => {
      s.as.setFailure({
        mode: "token_error",
        description: `no code for you ${HOSTILE}`,
      });
      // The first poll of the device grant gets the error and stops.
      const result = await s.home.sherlock(["auth", "--device", "remote"]);
      s.as.setFailure(null);
      assert.notEqual(result.code, 0, result.stdout);
      // The broker blanks C0 controls itself; C1 ones reach the printer.
      assert.match(result.stderr, /no code for you .*\\x9b31m\\x85/);
      assertInert(result.stdout, "stdout");
      assertInert(result.stderr, "stderr");
    },
  );

  await t.step(
    "the resource the protected-resource metadata names",
    async () => {
      s.prm.resource = `https://elsewhere.example/${HOSTILE}`;
      const result = await auth();
      s.prm.resource = undefined;
      assert.notEqual(result.code, 0, result.stdout);
      assert.match(result.stderr, /\\x1b\[2J\\x9b31m\\x85\\x0dz/);
      assertInert(result.stdout, "stdout");
      assertInert(result.stderr, "stderr");
    },
  );

  await t.step("the issuer it names", async () => {
    s.prm.issuer = `${s.as.issuer}/${HOSTILE}`;
    const result = await auth();
    s.prm.issuer = undefined;
    assert.notEqual(result.code, 0, result.stdout);
    assertInert(result.stdout, "stdout");
    assertInert(result.stderr, "stderr");
  });

  await t.step(
    "a token answer's scope, in auth and in auth status",
    async () => {
      s.as.setFailure({ mode: "token_scope", scope: `mcp:tools ${HOSTILE}` });
      const result = await auth();
      s.as.setFailure(null);
      assertInert(result.stdout, "stdout");
      assertInert(result.stderr, "stderr");
      const status = await s.home.sherlock(["auth", "status"]);
      assert.equal(status.code, 0, status.stderr);
      assertInert(status.stdout, "auth status stdout");
      assertInert(status.stderr, "auth status stderr");
      const json = await s.home.sherlock(["auth", "status", "--json"]);
      assert.equal(json.code, 0, json.stderr);
      assertInert(json.stdout, "auth status --json");
      // Still JSON, the scope as the server sent it.
      const scopes = JSON.parse(json.stdout).services[0].scopes as string[];
      if (result.code === 0) assert.ok(scopes.includes(HOSTILE), json.stdout);
    },
  );
});
