/**
 * The token sources by `[token] source` name. Adding a source `x` takes:
 *
 * 1. `sources/x.ts`, exporting a {@linkcode TokenSource} (errors are
 *    `BrokerRequestError`s; a new error code goes into `ErrorCode` in
 *    `lib/broker/protocol.ts`);
 * 2. its line in `SOURCES` below;
 * 3. `"x"` in `TOKEN_SOURCES` (`lib/services/token_sources.ts`), and the
 *    `[token]` keys of its own in `lib/services/schema.ts`: in `tokenSchema`,
 *    in `TokenSpec`, and a rule in the schema's `superRefine` that they
 *    apply only to `source = "x"`, as `command` does;
 * 4. its entry in `SOURCE_READINESS` (`lib/mcp/readiness.ts`): how
 *    `sherlock services` and `doctor` judge whether its token is available;
 * 5. its entry in the manual's list of token sources (docs/manual/broker.md).
 *
 * Steps 2, 3 and 4 cannot drift apart: `SOURCES` must name every source but
 * `none` (which needs no token) and nothing else, and `SOURCE_READINESS`
 * every source, or the build fails.
 *
 * @module
 */

import type { FetchingSourceName } from "../../../services/token_sources.ts";
import { commandSource } from "./command.ts";
import { exchangeSource } from "./exchange.ts";
import { oauthSource } from "./oauth.ts";
import { secretSource } from "./secret.ts";
import type { TokenSource } from "./token_source.ts";

/** The source registered under `name`. */
export function tokenSource(name: FetchingSourceName): TokenSource {
  return SOURCES[name];
}

/** The names of every registered source, sorted. */
export function registeredSources(): FetchingSourceName[] {
  return (Object.keys(SOURCES) as FetchingSourceName[]).sort();
}

const SOURCES: Readonly<Record<FetchingSourceName, TokenSource>> = {
  command: commandSource,
  exchange: exchangeSource,
  oauth: oauthSource,
  secret: secretSource,
};
