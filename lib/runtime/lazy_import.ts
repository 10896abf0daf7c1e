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
 * Imports a module when called: `path` from the repository's root (e.g.
 * `"lib/broker/client.ts"`), or a `node:` URL. Give the module's type, e.g.
 * `importLazily<typeof import("../broker/client.ts")>("lib/broker/client.ts")`
 * (a type-only reference, which Deno does not load at start-up). A module
 * that the launch bundle holds (`registerBundledModule`) is returned from it,
 * never loaded a second time from source.
 */
export function importLazily<T>(path: string | URL): Promise<T> {
  const url = typeof path === "string" ? new URL(path, SOURCE_ROOT) : path;
  const bundled = BUNDLED_MODULES.get(url.href);
  if (bundled !== undefined) return Promise.resolve(bundled as T);
  return import(url.href);
}

/**
 * Records that the launch bundle (`lib/cli/launch_bundle.js`, see
 * `lib/cli/launch_entry.ts`) holds the module at `path` (from the
 * repository's root), so `importLazily` returns it instead of loading the
 * source: a second copy would cost the start-up the bundle saves, and its
 * classes would be others than the bundle's (`instanceof` would fail).
 */
export function registerBundledModule(path: string, module: unknown): void {
  BUNDLED_MODULES.set(new URL(path, SOURCE_ROOT).href, module);
}

/**
 * The repository's root (of the source sherlock runs from). From this
 * module two folders up; the launch bundle sits at the same depth
 * (`lib/cli/`), so the root is the same from it. A module elsewhere that
 * needs a path from the root takes it from here: its own `import.meta.url`
 * is the bundle's when it runs bundled.
 */
export const SOURCE_ROOT: URL = new URL("../../", import.meta.url);

const BUNDLED_MODULES = new Map<string, unknown>();
