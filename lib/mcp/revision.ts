/**
 * Which MCP revision a server answered with, and how to say it: the words
 * `sherlock services test` and `sherlock doctor` print. Pure and light
 * (no SDK), so the doctor's verdicts and the commands read it without
 * loading `probe.ts`.
 *
 * @module
 */

/**
 * The revision a server answered with. `modern` is the 2026-07-28 era and
 * later (stateless: `server/discover`, no `initialize` and no session);
 * `legacy` is the 2025 era (the `initialize` handshake).
 */
export interface ServerRevision {
  /** The era the connection settled on. */
  era: "modern" | "legacy";
  /** The protocol version both sides settled on, e.g. `2026-07-28`. */
  version: string;
  /**
   * How it was reached: the entry's stdio (the server itself, or
   * sherlock's shim or bridge in front of it), Streamable HTTP, or the
   * legacy HTTP+SSE transport (deprecated since 2025-03-26; the 2026-07-28
   * revision has none).
   */
  transport: "stdio" | "http" | "sse";
}

/**
 * What asking a remote server for its revision with no token found (what
 * `sherlock doctor` asks, as it never fetches a token).
 */
export type RevisionProbe =
  | {
    kind: "answered";
    /** The revision it answered with. */
    revision: ServerRevision;
    /** Its `serverInfo` (`?` where a modern server names none). */
    server: { name: string; version: string };
  }
  /** HTTP 401 or 403: the server says nothing without a token. */
  | { kind: "refused"; status: number }
  /** No MCP answer: why, in a few words. */
  | { kind: "failed"; reason: string };

/**
 * The revision in a few words, e.g. `MCP 2026-07-28 (stateless:
 * server/discover)` or `MCP 2025-11-25 (2025 era: initialize handshake)`;
 * over HTTP+SSE it says that transport is deprecated.
 */
export function describeRevision(revision: ServerRevision): string {
  const era = revision.era === "modern"
    ? "stateless: server/discover"
    : "2025 era: initialize handshake";
  const sse = revision.transport === "sse"
    ? ", over the legacy HTTP+SSE transport, which is deprecated"
    : "";
  return `MCP ${revision.version} (${era}${sse})`;
}

/**
 * What to do about a deprecated transport, or undefined when there is
 * nothing to do.
 */
export function revisionAdvice(
  revision: ServerRevision,
  service: string,
): string | undefined {
  return revision.transport === "sse"
    ? `if the server has a Streamable HTTP endpoint, set [server] url to it and drop transport = "sse" in services.d/${service}.toml`
    : undefined;
}
