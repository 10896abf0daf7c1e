/**
 * ID token validation (`lib/broker/daemon/oauth/id_token.ts`) with tokens
 * signed here by WebCrypto (RS256 and ES256 keys made for the test): a
 * valid one, and each check that must refuse one.
 */

import assert from "node:assert/strict";
import {
  IdTokenError,
  type Jwk,
  signedInAs,
  verifyIdToken,
} from "../../lib/broker/daemon/oauth/id_token.ts";

const ISSUER = "https://id.example.com";
const CLIENT = "sherlock-cli";

function b64url(bytes: Uint8Array | string): string {
  const raw = typeof bytes === "string"
    ? new TextEncoder().encode(bytes)
    : bytes;
  let binary = "";
  for (const byte of raw) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(
    /=+$/,
    "",
  );
}

interface Signer {
  alg: string;
  jwk: Jwk;
  sign(
    claims: Record<string, unknown>,
    header?: Record<string, unknown>,
  ): Promise<string>;
}

async function signer(alg: "RS256" | "ES256", kid: string): Promise<Signer> {
  const params = alg === "RS256"
    ? {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    }
    : { name: "ECDSA", namedCurve: "P-256" };
  const pair = await crypto.subtle.generateKey(params, true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  const jwk = {
    ...(await crypto.subtle.exportKey("jwk", pair.publicKey)),
    kid,
    alg,
    use: "sig",
  } as Jwk;
  return {
    alg,
    jwk,
    async sign(claims, header = {}) {
      const input = `${
        b64url(JSON.stringify({ alg, kid, typ: "JWT", ...header }))
      }.${b64url(JSON.stringify(claims))}`;
      const signature = await crypto.subtle.sign(
        alg === "RS256"
          ? { name: "RSASSA-PKCS1-v1_5" }
          : { name: "ECDSA", hash: "SHA-256" },
        pair.privateKey,
        new TextEncoder().encode(input),
      );
      return `${input}.${b64url(new Uint8Array(signature))}`;
    },
  };
}

function claims(extra: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: ISSUER,
    sub: "alice",
    aud: CLIENT,
    exp: now + 300,
    iat: now,
    nonce: "n-1",
    email: "alice@example.com",
    ...extra,
  };
}

const expected = { issuer: ISSUER, clientId: CLIENT, nonce: "n-1" };

Deno.test("verifyIdToken: RS256 and ES256 tokens from the JWKS pass", async () => {
  const rs = await signer("RS256", "r1");
  const es = await signer("ES256", "e1");
  const keys = [rs.jwk, es.jwk];
  for (const s of [rs, es]) {
    const valid = await verifyIdToken(await s.sign(claims()), keys, expected);
    assert.equal(valid.sub, "alice");
    assert.equal(valid.email, "alice@example.com");
  }
});

Deno.test("verifyIdToken: refuses a bad signature, another key, alg none, and each wrong claim", async () => {
  const rs = await signer("RS256", "r1");
  const other = await signer("RS256", "r2");
  const keys = [rs.jwk];
  const refuses = async (token: string, pattern: RegExp, exp = expected) => {
    await assert.rejects(
      verifyIdToken(token, keys, exp),
      (error: Error) =>
        error instanceof IdTokenError && pattern.test(error.message),
    );
  };
  const good = await rs.sign(claims());
  const [h, p] = good.split(".");
  const forged = `${h}.${b64url(JSON.stringify(claims({ sub: "mallory" })))}.${
    good.split(".")[2]
  }`;
  await refuses(forged, /signature is not valid/);
  await refuses(await other.sign(claims()), /no RS256 key with kid r2/);
  await refuses(
    `${b64url(JSON.stringify({ alg: "none" }))}.${p}.`,
    /signed with none/,
  );
  await refuses(`${h}.${p}`, /not a JWS/);
  await refuses(
    await rs.sign(claims({ iss: "https://evil" })),
    /issued by https:\/\/evil/,
  );
  await refuses(
    await rs.sign(claims({ aud: "another-client" })),
    /not for client sherlock-cli/,
  );
  await refuses(
    await rs.sign(claims({ exp: Math.floor(Date.now() / 1000) - 3600 })),
    /has expired/,
  );
  await refuses(
    await rs.sign(claims({ nonce: "n-2" })),
    /nonce is not the one sent/,
  );
  await refuses(await rs.sign(claims({ nonce: undefined })), /nonce/);
  await refuses(await rs.sign(claims({ sub: "" })), /no subject/);
  // Several audiences: azp must be this client.
  await refuses(
    await rs.sign(claims({ aud: [CLIENT, "api"], azp: "api" })),
    /another party/,
  );
  // No nonce expected (a device-grant login, a refresh): none is checked.
  const noNonce = await verifyIdToken(
    await rs.sign(claims({ nonce: undefined })),
    keys,
    { issuer: ISSUER, clientId: CLIENT },
  );
  assert.equal(noNonce.sub, "alice");
});

Deno.test("signedInAs: names the account of a token answer's ID token only when iss, aud and exp hold", () => {
  const unsigned = (claims: Record<string, unknown>) =>
    `${b64url('{"alg":"RS256"}')}.${b64url(JSON.stringify(claims))}.sig`;
  const exp = Math.floor(Date.now() / 1000) + 600;
  const expected = { issuer: ISSUER, clientId: CLIENT };
  const good = { iss: ISSUER, aud: CLIENT, exp, sub: "u-1" };
  assert.equal(signedInAs(unsigned(good), expected), "u-1");
  assert.equal(
    signedInAs(
      unsigned({ ...good, preferred_username: "alice\u001b[31m" }),
      expected,
    ),
    "alice[31m (subject u-1)",
    "no control character reaches the terminal",
  );
  assert.equal(
    signedInAs(unsigned({ ...good, email: "a@example.com" }), expected),
    "a@example.com (subject u-1)",
  );
  for (
    const bad of [
      { ...good, iss: "https://evil.example" },
      { ...good, aud: "another-client" },
      { ...good, exp: exp - 3600 },
    ]
  ) {
    assert.equal(signedInAs(unsigned(bad), expected), undefined);
  }
  assert.equal(signedInAs(undefined, expected), undefined);
  assert.equal(signedInAs("not-a-jwt", expected), undefined);
});
