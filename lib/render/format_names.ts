/**
 * The names of the MCP config documents sherlock can render, kept apart from
 * the renderers so that the schemas can list them without importing more.
 *
 * @module
 */

/** Every value `[mcp] format` accepts. */
export const MCP_FORMATS = ["mcp-json"] as const;

/** One of {@linkcode MCP_FORMATS}. */
export type McpFormat = typeof MCP_FORMATS[number];
