/**
 * Validating an OpenID Connect ID token (OIDC Core §3.1.3.7) with WebCrypto:
 * the JWS signature with a key of the provider's JWKS (RS256/384/512,
 * PS256, ES256/384), then `iss`, `aud` (and `azp` when there are several
 * audiences), `exp` (with a minute of clock skew), and the `nonce` the
 * login sent. No JOSE library: this is all the login needs.
 *
 * @module
 */

/** The claims sherlock reads from a valid ID token. */
export interface IdTokenClaims {
  iss: string;
  sub: string;
  aud: string | string[];
  exp: number;
  iat?: number;
  nonce?: string;
  email?: string;
  [claim: string]: unknown;
}

/** A JSON Web Key as a JWKS lists it. */
export interface Jwk {
  kty: string;
  kid?: string;
  alg?: string;
  use?: string;
  [member: string]: unknown;
}

/** What the ID token must say. */
export interface IdTokenExpectations {
  issuer: string;
  clientId: string;
  /** The nonce of the authorization request; undefined: none was sent. */
  nonce?: string;
  /** The time to check `exp` against, in ms (default: now). */
  now?: number;
}

/** Why an ID token was refused: a message that never holds the token. */
export class IdTokenError extends Error {
  /** Creates the error. */
  constructor(message: string) {
    super(message);
    this.name = "IdTokenError";
  }
}

/** Clock skew allowed on `exp`, in seconds. */
const SKEW_S = 60;

/**
 * The claims of `token` once its signature (a key of `keys`) and its claims
 * check out; throws {@linkcode IdTokenError} otherwise.
 */
export async function verifyIdToken(
  token: string,
  keys: readonly Jwk[],
  expected: IdTokenExpectations,
): Promise<IdTokenClaims> {
  const parts = token.split(".");
  if (parts.length !== 3) throw new IdTokenError("the ID token is not a JWS");
  const header = decodeJson(parts[0], "header");
  const claims = decodeJson(parts[1], "payload") as Partial<IdTokenClaims>;
  const alg = typeof header.alg === "string" ? header.alg : "";
  const algorithm = ALGORITHMS[alg];
  if (!algorithm) {
    throw new IdTokenError(
      `the ID token is signed with ${
        alg || "no algorithm"
      }, which sherlock does not accept`,
    );
  }
  const kid = typeof header.kid === "string" ? header.kid : undefined;
  const candidates = keys.filter((key) =>
    key.kty === algorithm.kty && (key.use === undefined || key.use === "sig") &&
    (key.alg === undefined || key.alg === alg) &&
    (kid === undefined || key.kid === kid)
  );
  if (candidates.length === 0) {
    throw new IdTokenError(
      `the provider's JWKS has no ${alg} key${kid ? ` with kid ${kid}` : ""}`,
    );
  }
  const signed = new TextEncoder().encode(`${parts[0]}.${parts[1]}`);
  const signature = decodeBase64Url(parts[2]);
  let valid = false;
  for (const jwk of candidates) {
    let key: CryptoKey;
    try {
      key = await crypto.subtle.importKey(
        "jwk",
        publicPart(jwk),
        algorithm.import,
        false,
        ["verify"],
      );
    } catch {
      continue;
    }
    if (
      await crypto.subtle.verify(algorithm.verify, key, signature, signed)
    ) {
      valid = true;
      break;
    }
  }
  if (!valid) throw new IdTokenError("the ID token's signature is not valid");
  checkClaims(claims, expected);
  return claims as IdTokenClaims;
}

/**
 * Checks the claims of a signature-checked ID token (exported for the
 * tests); throws {@linkcode IdTokenError}.
 */
export function checkClaims(
  claims: Partial<IdTokenClaims>,
  expected: IdTokenExpectations,
): void {
  if (claims.iss !== expected.issuer) {
    throw new IdTokenError(
      `the ID token was issued by ${
        String(claims.iss)
      }, not ${expected.issuer}`,
    );
  }
  if (typeof claims.sub !== "string" || claims.sub === "") {
    throw new IdTokenError("the ID token has no subject");
  }
  const audiences = typeof claims.aud === "string"
    ? [claims.aud]
    : Array.isArray(claims.aud)
    ? claims.aud
    : [];
  if (!audiences.includes(expected.clientId)) {
    throw new IdTokenError(
      `the ID token is not for client ${expected.clientId}`,
    );
  }
  if (
    audiences.length > 1 && claims.azp !== undefined &&
    claims.azp !== expected.clientId
  ) {
    throw new IdTokenError(
      `the ID token was issued to another party (azp)`,
    );
  }
  const now = (expected.now ?? Date.now()) / 1000;
  if (typeof claims.exp !== "number" || claims.exp + SKEW_S < now) {
    throw new IdTokenError("the ID token has expired");
  }
  if (expected.nonce !== undefined && claims.nonce !== expected.nonce) {
    throw new IdTokenError(
      "the ID token's nonce is not the one sent; refused (a replayed or injected token)",
    );
  }
}

interface Algorithm {
  kty: "RSA" | "EC";
  import: RsaHashedImportParams | EcKeyImportParams;
  verify: AlgorithmIdentifier | RsaPssParams | EcdsaParams;
}

/**
 * The claims of a JWT, decoded and not verified: for saying who a token
 * names (a workload token, an opaque-looking access token), never for
 * trusting it. Undefined when `token` is no JWT.
 */
export function unverifiedClaims(
  token: string,
): Record<string, unknown> | undefined {
  const parts = token.split(".");
  if (parts.length !== 3) return undefined;
  try {
    return decodeJson(parts[1], "payload");
  } catch {
    return undefined;
  }
}

const rsa = (hash: string): Algorithm => ({
  kty: "RSA",
  import: { name: "RSASSA-PKCS1-v1_5", hash },
  verify: { name: "RSASSA-PKCS1-v1_5" },
});
const ec = (curve: string, hash: string): Algorithm => ({
  kty: "EC",
  import: { name: "ECDSA", namedCurve: curve },
  verify: { name: "ECDSA", hash },
});

/** The JWS algorithms accepted (RFC 7518), never `none` or HMAC. */
const ALGORITHMS: Readonly<Record<string, Algorithm>> = {
  RS256: rsa("SHA-256"),
  RS384: rsa("SHA-384"),
  RS512: rsa("SHA-512"),
  PS256: {
    kty: "RSA",
    import: { name: "RSA-PSS", hash: "SHA-256" },
    verify: { name: "RSA-PSS", saltLength: 32 },
  },
  ES256: ec("P-256", "SHA-256"),
  ES384: ec("P-384", "SHA-384"),
};

/** The members WebCrypto needs; `alg`, `use`, `key_ops` would conflict. */
function publicPart(jwk: Jwk): JsonWebKey {
  const { kty, n, e, crv, x, y } = jwk as Record<string, string>;
  return jwk.kty === "RSA" ? { kty, n, e } : { kty, crv, x, y };
}

function decodeJson(part: string, what: string): Record<string, unknown> {
  try {
    const value = JSON.parse(new TextDecoder().decode(decodeBase64Url(part)));
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      return value;
    }
  } catch {
    // Below.
  }
  throw new IdTokenError(`the ID token's ${what} is not JSON`);
}

/** Base64url to bytes; throws {@linkcode IdTokenError} on bad input. */
function decodeBase64Url(text: string): Uint8Array<ArrayBuffer> {
  try {
    const base64 = text.replaceAll("-", "+").replaceAll("_", "/");
    const binary = atob(base64 + "=".repeat((4 - base64.length % 4) % 4));
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    throw new IdTokenError("the ID token is not base64url");
  }
}

/**
 * Who signed in, as the ID token of a token answer names them
 * (`preferred_username`, else `email`, with the `sub`), or undefined when
 * the answer has none or it does not hold. The token came straight from
 * the token endpoint (OpenID Connect Core §3.1.3.7 lets that stand in for
 * checking its signature); its issuer, audience and expiry must still
 * hold. It only names the account for the operator; nothing keeps it.
 */
export function signedInAs(
  idToken: unknown,
  expected: IdTokenExpectations,
): string | undefined {
  if (typeof idToken !== "string") return undefined;
  const claims = unverifiedClaims(idToken);
  if (!claims) return undefined;
  try {
    checkClaims(claims, expected);
  } catch {
    return undefined;
  }
  const printable = (value: unknown) =>
    typeof value === "string" && value !== ""
      // The server's words: no control character, one short line.
      ? value.replace(/[\p{Cc}\p{Cf}]/gu, "").slice(0, 200)
      : undefined;
  const sub = printable(claims.sub)!;
  const name = printable(claims.preferred_username) ?? printable(claims.email);
  return name !== undefined && name !== sub ? `${name} (subject ${sub})` : sub;
}
