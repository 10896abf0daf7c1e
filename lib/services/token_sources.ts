/**
 * The names of the token sources (`[token] source`), kept apart from the
 * daemon's sources so that the service schema can list them without
 * importing daemon code, and the daemon's registry must cover them.
 *
 * @module
 */

/** Every value `[token] source` accepts. */
export const TOKEN_SOURCES = [
  "none",
  "secret",
  "command",
  "oauth",
  "exchange",
] as const;

/** One of {@linkcode TOKEN_SOURCES}. */
export type TokenSourceName = typeof TOKEN_SOURCES[number];

/** The sources the broker fetches a token from: all but `none`. */
export type FetchingSourceName = Exclude<TokenSourceName, "none">;
