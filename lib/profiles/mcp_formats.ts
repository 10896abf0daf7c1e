/**
 * The names of the MCP config documents sherlock can render, kept apart from
 * the renderers so that the schemas can list them without importing more.
 *
 * @module
 */

/** Every value `[mcp] format` accepts. */
export const MCP_FORMATS = [
  "mcp-json",
  "servers-map",
  "opencode",
  "gemini",
  "codex-overrides",
  "continue",
] as const;

/** One of {@linkcode MCP_FORMATS}. */
export type McpFormat = typeof MCP_FORMATS[number];

/**
 * The formats that are not a file but flag values in the agent's argv
 * (one per server). argv is visible to every local user, so these always
 * deliver tokens through the shim.
 */
export const ARGV_FORMATS: readonly McpFormat[] = ["codex-overrides"];

/** True when `format` renders into argv rather than a file. */
export function isArgvFormat(format: McpFormat): boolean {
  return ARGV_FORMATS.includes(format);
}
