/**
 * `private_key_jwt` client authentication (RFC 7523 §2.2, OpenID Connect
 * Core §9): a short-lived JWT the client signs with its private key, sent
 * as `client_assertion` in place of a secret. The key is a PKCS#8 PEM from
 * the store (`[token] client_key`); its type picks the algorithm: RS256
 * for RSA, ES256 for a P-256 EC key. Signed with WebCrypto; the key never
 * leaves this process and is named in no error.
 *
 * @module
 */

import { BrokerRequestError } from "../request_error.ts";
import { randomString } from "./rules.ts";

/** RFC 7523's `client_assertion_type` for a JWT. */
export const JWT_ASSERTION_TYPE =
  "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/** How long an assertion is valid: the token request follows at once. */
const ASSERTION_LIFETIME_S = 60;

/** The JWS algorithms a client key may sign with. */
export type AssertionAlgorithm = "RS256" | "ES256";

/** A client's signed assertion, with the algorithm its key picked. */
export interface ClientAssertion {
  assertion: string;
  algorithm: AssertionAlgorithm;
}

/**
 * Signs a client assertion: `iss` = `sub` = `clientId`, `aud` = the
 * authorization server's issuer (RFC 7523 §3: the server it is meant for;
 * MCP's client-credentials extension names the issuer), a random `jti`,
 * `iat` now and `exp` a minute later. `now` is in ms since the epoch.
 * Throws `invalid_config` when the PEM is not a PKCS#8 RSA or P-256 key.
 */
export async function signClientAssertion(
  options: {
    clientId: string;
    audience: string;
    pem: string;
    service: string;
    keyName: string;
    now: number;
  },
): Promise<ClientAssertion> {
  const { key, algorithm } = await importClientKey(
    options.pem,
    options.service,
    options.keyName,
  );
  const iat = Math.floor(options.now / 1000);
  const header = { alg: algorithm, typ: "JWT" };
  const payload = {
    iss: options.clientId,
    sub: options.clientId,
    aud: options.audience,
    jti: randomString(16),
    iat,
    exp: iat + ASSERTION_LIFETIME_S,
  };
  const input = `${base64url(JSON.stringify(header))}.${
    base64url(JSON.stringify(payload))
  }`;
  const signature = await crypto.subtle.sign(
    algorithm === "RS256"
      ? { name: "RSASSA-PKCS1-v1_5" }
      : { name: "ECDSA", hash: "SHA-256" },
    key,
    new TextEncoder().encode(input),
  );
  // WebCrypto's ECDSA signature is r‖s already: JWS's form (RFC 7518 §3.4).
  return {
    assertion: `${input}.${base64url(new Uint8Array(signature))}`,
    algorithm,
  };
}

/** The key of a PKCS#8 PEM, RSA or P-256, and the algorithm it signs with. */
async function importClientKey(
  pem: string,
  service: string,
  keyName: string,
): Promise<{ key: CryptoKey; algorithm: AssertionAlgorithm }> {
  // `sherlock secret set` refuses line breaks (a secret may go into a
  // header): the PEM comes on one line (`tr -d '\n' < key.pem`), or its
  // base64 body alone.
  const match =
    /^\s*(?:-----BEGIN PRIVATE KEY-----)?([A-Za-z0-9+/=\s]+?)(?:-----END PRIVATE KEY-----)?\s*$/
      .exec(pem);
  const der = match ? decodeBase64(match[1].replace(/\s+/g, "")) : undefined;
  if (der !== undefined) {
    const tries: [
      AssertionAlgorithm,
      RsaHashedImportParams | EcKeyImportParams,
    ][] = [
      ["ES256", { name: "ECDSA", namedCurve: "P-256" }],
      ["RS256", { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }],
    ];
    for (const [algorithm, params] of tries) {
      try {
        const key = await crypto.subtle.importKey(
          "pkcs8",
          der,
          params,
          false,
          ["sign"],
        );
        return { key, algorithm };
      } catch {
        // Not this type: try the next.
      }
    }
  }
  throw new BrokerRequestError({
    code: "invalid_config",
    message:
      `service ${service}'s client key "${keyName}" is not a PKCS#8 PEM private key (RSA or P-256 EC, "-----BEGIN PRIVATE KEY-----"); store one with "tr -d '\\n' < key.pem | sherlock secret set ${keyName}" (convert another form with "openssl pkcs8 -topk8 -nocrypt")`,
  });
}

function decodeBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

function base64url(data: string | Uint8Array): string {
  const bytes = typeof data === "string"
    ? new TextEncoder().encode(data)
    : data;
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(
    /=+$/,
    "",
  );
}
