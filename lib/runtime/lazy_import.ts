/**
 * Importing a module only when it is needed.
 *
 * Deno loads every module that a literal `import("../x.ts")` names while the
 * program starts, whether or not the import ever runs; for sherlock that
 * put every command, the broker daemon and zod on the launch path. An import
 * of a URL built at run time is not followed at start-up, so lazy modules
 * are imported through {@linkcode importLazily}. A compiled binary holds
 * only what `deno compile --include` named: `LAZY_MODULES` in
 * `lib/cli/commands.ts`, the commands' modules and the list below, which a
 * test checks against every `importLazily` call.
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
];

/**
 * Imports `url` when called. Give the module's type, e.g.
 * `importLazily<typeof import("../run.ts")>(new URL("../run.ts", import.meta.url))`
 * (a type-only reference, which Deno does not load at start-up).
 */
export function importLazily<T>(url: URL): Promise<T> {
  return import(url.href);
}
