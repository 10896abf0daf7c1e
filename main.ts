/**
 * sherlock: launches AI coding-agent CLIs with a per-session MCP config
 * whose credentials come from a local broker. See README.md.
 *
 * @module
 */

import { main } from "./lib/cli/main.ts";

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
