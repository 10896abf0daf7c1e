/**
 * Which entry `main.ts` loads for a command line: the launch bundle
 * (`sherlock run`, an alias, a run option first) or the source of
 * `lib/cli/main.ts` (every other command). Pure and import-free, because it
 * runs before either is loaded.
 *
 * @module
 */

/** The launch bundle (`deno task bundle`), from the repository's root. */
export const LAUNCH_BUNDLE = "lib/cli/launch_bundle.js";

/** The entry of every other command line, from the repository's root. */
export const SOURCE_ENTRY = "lib/cli/main.ts";

/**
 * Every command but `run`: these load from source. A test keeps the list
 * equal to the command table's names (`lib/cli/commands.ts`).
 */
export const SOURCE_COMMANDS: readonly string[] = [
  "agents",
  "auth",
  "bridge",
  "broker",
  "completions",
  "credential",
  "demo",
  "doctor",
  "help",
  "import",
  "login",
  "logout",
  "secret",
  "services",
  "shim",
  "version",
  "whoami",
];

/** The options that print help or the version, not a launch. */
const SOURCE_OPTIONS: readonly string[] = ["--help", "-h", "--version", "-V"];

/**
 * True when `args` (without the program name) start a session: `run`, a
 * profile's name, or one of `run`'s options first. An unknown word counts
 * as a launch too; the bundle's `main` answers it as the source would.
 */
export function launchesSession(args: readonly string[]): boolean {
  const [first] = args;
  if (first === undefined) return false;
  if (first.startsWith("-")) return !SOURCE_OPTIONS.includes(first);
  return !SOURCE_COMMANDS.includes(first);
}
