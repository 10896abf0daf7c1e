/**
 * Validating an OpenID Connect ID token (OIDC Core §3.1.3.7): `jose`
 * verifies the JWS with a key of the provider's JWKS (RS256/384/512,
 * PS256, ES256/384 only) and checks `iss`, `aud` and `exp` (a minute of
 * clock skew); sherlock adds what `jose` leaves to the caller: a non-empty
 * `sub`, `azp` when there are several audiences, and the `nonce` the login
 * sent. Every refusal is an {@linkcode IdTokenError} of one line.
 *
 * @module
 */

import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type JSONWebKeySet,
  jwtVerify,
} from "jose";

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

/** The JWS algorithms accepted (RFC 7518), never `none` or HMAC. */
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384"];

/**
 * The claims of `token` once its signature (a key of `keys`) and its claims
 * check out; throws {@linkcode IdTokenError} otherwise.
 */
export async function verifyIdToken(
  token: string,
  keys: readonly Jwk[],
  expected: IdTokenExpectations,
): Promise<IdTokenClaims> {
  if (token.split(".").length !== 3) {
    throw new IdTokenError("the ID token is not a JWS");
  }
  let alg: unknown;
  let kid: unknown;
  try {
    ({ alg, kid } = decodeProtectedHeader(token));
  } catch {
    throw new IdTokenError("the ID token's header is not JSON");
  }
  if (typeof alg !== "string" || !ALGORITHMS.includes(alg)) {
    throw new IdTokenError(
      `the ID token is signed with ${
        typeof alg === "string" && alg ? alg : "no algorithm"
      }, which sherlock does not accept`,
    );
  }
  let claims: Partial<IdTokenClaims>;
  try {
    ({ payload: claims } = await jwtVerify<Partial<IdTokenClaims>>(
      token,
      createLocalJWKSet({ keys: keys as JSONWebKeySet["keys"] }),
      {
        algorithms: ALGORITHMS,
        issuer: expected.issuer,
        audience: expected.clientId,
        clockTolerance: SKEW_S,
        currentDate: new Date(expected.now ?? Date.now()),
        requiredClaims: ["exp"],
      },
    ));
  } catch (error) {
    throw refusal(error, { alg, kid, token, expected });
  }
  checkOidcClaims(claims, expected);
  return claims as IdTokenClaims;
}

/** `jose`'s error as one line of sherlock's (never the token). */
function refusal(
  error: unknown,
  context: {
    alg: string;
    kid: unknown;
    token: string;
    expected: IdTokenExpectations;
  },
): IdTokenError {
  if (error instanceof errors.JWKSNoMatchingKey) {
    const kid = typeof context.kid === "string"
      ? ` with kid ${context.kid}`
      : "";
    return new IdTokenError(
      `the provider's JWKS has no ${context.alg} key${kid}`,
    );
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return new IdTokenError("the ID token's signature is not valid");
  }
  if (error instanceof errors.JWTExpired) {
    return new IdTokenError("the ID token has expired");
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    const claims = unverifiedClaims(context.token) ?? {};
    if (error.claim === "iss") {
      return new IdTokenError(
        `the ID token was issued by ${
          String(claims.iss)
        }, not ${context.expected.issuer}`,
      );
    }
    if (error.claim === "aud") {
      return new IdTokenError(
        `the ID token is not for client ${context.expected.clientId}`,
      );
    }
    if (error.claim === "exp") {
      return new IdTokenError("the ID token has expired");
    }
    return new IdTokenError(`the ID token's ${error.claim} claim is not valid`);
  }
  if (error instanceof errors.JOSEError) {
    return new IdTokenError(
      `the ID token was refused (${error.code})`,
    );
  }
  return new IdTokenError("the ID token is not a valid JWS");
}

/**
 * Checks the claims of an ID token whose signature is not checked (a token
 * answer's, see {@linkcode signedInAs}); exported for the tests. Written
 * here because `jose` checks `iss`, `aud` and `exp` only inside
 * `jwtVerify`, with a signature. Throws {@linkcode IdTokenError}.
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
  const now = (expected.now ?? Date.now()) / 1000;
  if (typeof claims.exp !== "number" || claims.exp + SKEW_S < now) {
    throw new IdTokenError("the ID token has expired");
  }
  checkOidcClaims(claims, expected);
}

/**
 * What OIDC Core §3.1.3.7 asks beyond `jose`'s checks: a subject, `azp`
 * naming this client when there are several audiences, the nonce sent.
 */
function checkOidcClaims(
  claims: Partial<IdTokenClaims>,
  expected: IdTokenExpectations,
): void {
  if (typeof claims.sub !== "string" || claims.sub === "") {
    throw new IdTokenError("the ID token has no subject");
  }
  if (
    Array.isArray(claims.aud) && claims.aud.length > 1 &&
    claims.azp !== undefined && claims.azp !== expected.clientId
  ) {
    throw new IdTokenError(
      `the ID token was issued to another party (azp)`,
    );
  }
  if (expected.nonce !== undefined && claims.nonce !== expected.nonce) {
    throw new IdTokenError(
      "the ID token's nonce is not the one sent; refused (a replayed or injected token)",
    );
  }
}

/**
 * The claims of a JWT, decoded and not verified: for saying who a token
 * names (a workload token, an opaque-looking access token), never for
 * trusting it. Undefined when `token` is no JWT.
 */
export function unverifiedClaims(
  token: string,
): Record<string, unknown> | undefined {
  if (token.split(".").length !== 3) return undefined;
  try {
    return decodeJwt(token);
  } catch {
    return undefined;
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
