/**
 * Importing a module only when it is needed. Not a literal
 * `import("../x.ts")`: Deno loads what one names at start-up, whether or not
 * it runs; a URL built at run time is not followed. A compiled binary holds
 * only what `scripts/build.ts` passes to `deno compile --include`:
 * `LAZY_MODULES` in `lib/cli/commands.ts`, the commands' modules and the
 * list below; a test checks each `importLazily` call names one.
 *
 * @module
 */

/**
 * The modules other than commands that sherlock imports lazily (from the
 * repository's root). Their own static imports come with them.
 */
export const LAZY_LIBRARY_MODULES: readonly string[] = [
  "lib/broker/client.ts",
  "lib/broker/daemon/serve.ts",
  "lib/profiles/loader.ts",
  "lib/profiles/schema.ts",
  "lib/config/schema_problems.ts",
  "lib/services/schema.ts",
  "lib/config/settings_schema.ts",
  "lib/config/toml_parser.ts",
  "lib/mcp/probe.ts",
  "lib/mcp/demo.ts",
  "lib/config/suggestion.ts",
];

/**
 * Imports `url` when called. Give the module's type, e.g.
 * `importLazily<typeof import("../run.ts")>(new URL("../run.ts", import.meta.url))`
 * (a type-only reference, which Deno does not load at start-up).
 */
export function importLazily<T>(url: URL): Promise<T> {
  return import(url.href);
}
