/**
 * Installs the real agent CLIs pinned in `clis.json` from the npm registry
 * into `.cache/e2e/npm/<key>/`, one npm project per CLI, so that bumping one
 * version reinstalls only that CLI. A CLI whose folder already holds the
 * pinned version is left alone without asking the registry, so a second run
 * is offline and takes milliseconds.
 *
 * Run it directly (CI does, from scripts/test.sh):
 *
 * ```sh
 * deno run --allow-all tests/e2e/install_clis.ts          # all but optional
 * deno run --allow-all tests/e2e/install_clis.ts codex    # only some
 * SHERLOCK_E2E_OPTIONAL=1 deno run --allow-all tests/e2e/install_clis.ts
 * ```
 *
 * or call {@linkcode installClis} from a test. Concurrent installers are
 * safe: each installs into a private folder and renames it into place.
 *
 * `SHERLOCK_E2E_CLIS=<file>` replaces `clis.json` with another file of the
 * same shape (other versions) for the installer and every e2e test; its
 * CLIs are installed in `<file's folder>/npm/<key>/` and Copilot unpacks
 * into `<file's folder>/copilot/`, so the pinned installs stay untouched.
 * `deno task drift` (scripts/drift.ts) runs the e2e tests this way against
 * the newest releases.
 *
 * @module
 */

import { existsSync } from "node:fs";
import {
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  writeFile,
} from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pinned from "./clis.json" with { type: "json" };

/** The names of the pinned CLIs (keys of `clis.json`). */
export type CliKey = keyof typeof pinned.clis;

/** One pinned CLI. */
export interface CliPin {
  /** The npm package, e.g. `@openai/codex`. */
  package: string;
  /** The exact version. */
  version: string;
  /** The executable the package puts in `node_modules/.bin`. */
  bin: string;
  /**
   * Not an agent sherlock ships a profile for: installed and tested only
   * when `SHERLOCK_E2E_OPTIONAL=1` (or when named explicitly).
   */
  optional: boolean;
}

/** The variable that names another `clis.json` (see the module's doc). */
export const CLIS_OVERRIDE_VARIABLE = "SHERLOCK_E2E_CLIS";

const OVERRIDE: string | undefined = Deno.env.get(CLIS_OVERRIDE_VARIABLE) ||
  undefined;

/** Every pinned CLI by key (from `SHERLOCK_E2E_CLIS` when it is set). */
export const CLI_PINS: Readonly<Record<CliKey, CliPin>> = OVERRIDE
  ? (JSON.parse(Deno.readTextFileSync(OVERRIDE)) as typeof pinned).clis
  : pinned.clis;

/** The repository's root folder. */
export const REPO_ROOT: string = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
);

/** `.cache/e2e/`: everything the e2e tests keep between runs. */
export const E2E_CACHE: string = join(REPO_ROOT, ".cache", "e2e");

/**
 * Where the CLIs are installed: `.cache/e2e/`, or the folder of the file
 * `SHERLOCK_E2E_CLIS` names.
 */
export const CLI_ROOT: string = OVERRIDE
  ? dirname(resolve(OVERRIDE))
  : E2E_CACHE;

/** The npm project folder of one CLI. */
export function cliFolder(key: CliKey): string {
  return join(CLI_ROOT, "npm", key);
}

/** The path of one CLI's executable (it may not be installed yet). */
export function cliPath(key: CliKey): string {
  return join(cliFolder(key), "node_modules", ".bin", CLI_PINS[key].bin);
}

const STAMP = ".sherlock-e2e-installed.json";

/** Whether `key` is installed at its pinned version. */
export async function isInstalled(key: CliKey): Promise<boolean> {
  const pin = CLI_PINS[key];
  try {
    const stamp = JSON.parse(
      await readFile(join(cliFolder(key), STAMP), "utf8"),
    );
    return stamp.package === pin.package && stamp.version === pin.version &&
      existsSync(cliPath(key));
  } catch {
    return false;
  }
}

/** Whether the optional CLIs are wanted (`SHERLOCK_E2E_OPTIONAL=1`). */
export function optionalClisWanted(): boolean {
  return Deno.env.get("SHERLOCK_E2E_OPTIONAL") === "1";
}

/** The CLIs installed by default: all but the optional ones, unless wanted. */
export function defaultCliKeys(): CliKey[] {
  return (Object.keys(CLI_PINS) as CliKey[]).filter((key) =>
    optionalClisWanted() || !CLI_PINS[key].optional
  );
}

/**
 * Installs the CLIs in `keys` (by default {@linkcode defaultCliKeys}) that
 * are missing or at another version, and returns the path of each
 * executable by key. Throws when npm fails, with npm's output.
 */
export async function installClis(
  keys: readonly CliKey[] = defaultCliKeys(),
  log: (line: string) => void = (line) => console.error(line),
): Promise<Record<CliKey, string>> {
  const paths = {} as Record<CliKey, string>;
  for (const key of keys) {
    if (!(await isInstalled(key))) await install(key, log);
    paths[key] = cliPath(key);
  }
  if (keys.includes("copilot")) await prepareCopilotCache(log);
  return paths;
}

/**
 * Copilot CLI's package unpacks itself (about 235 MB) on first run into
 * `$COPILOT_PKG_CACHE_HOME/pkg/<platform>/<version>`. The tests point that
 * variable here, so that only the first run after a version bump pays.
 */
export const COPILOT_PKG_CACHE: string = join(CLI_ROOT, "copilot");

/**
 * Removes unpacked Copilot packages of other versions than the pinned one,
 * and unpacks the pinned one (with a throwaway HOME) if it is missing.
 */
async function prepareCopilotCache(log: (line: string) => void) {
  const version = CLI_PINS.copilot.version;
  const pkg = join(COPILOT_PKG_CACHE, "pkg");
  let ready = false;
  for (const platform of await readdirOrEmpty(pkg)) {
    for (const name of await readdirOrEmpty(join(pkg, platform))) {
      const path = join(pkg, platform, name);
      if (name.startsWith(".")) continue; // an unpacking in progress
      if (name === version) ready = existsSync(join(path, "index.js"));
      else await rm(path, { recursive: true, force: true });
    }
  }
  if (ready) return;
  log(`e2e: unpacking copilot ${version} into ${COPILOT_PKG_CACHE}`);
  const home = await Deno.makeTempDir({ prefix: "sherlock-e2e-copilot-" });
  try {
    const result = await new Deno.Command(cliPath("copilot"), {
      args: ["--version"],
      env: {
        HOME: home,
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        COPILOT_PKG_CACHE_HOME: COPILOT_PKG_CACHE,
        COPILOT_AUTO_UPDATE: "false",
      },
      clearEnv: true,
      stdin: "null",
    }).output();
    if (!result.success) {
      throw new Error(
        `copilot --version failed:\n${new TextDecoder().decode(result.stderr)}`,
      );
    }
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

async function readdirOrEmpty(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch {
    return [];
  }
}

async function install(key: CliKey, log: (line: string) => void) {
  const pin = CLI_PINS[key];
  const target = cliFolder(key);
  const staging = `${target}.tmp-${Deno.pid}-${Date.now()}`;
  log(`e2e: installing ${pin.package}@${pin.version} into ${target}`);
  await mkdir(staging, { recursive: true });
  try {
    await writeFile(
      join(staging, "package.json"),
      JSON.stringify(
        {
          private: true,
          description: "sherlock e2e: pinned by tests/e2e/clis.json",
          dependencies: { [pin.package]: pin.version },
        },
        null,
        2,
      ) + "\n",
    );
    const npm = await new Deno.Command("npm", {
      args: [
        "install",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        "--save-exact",
      ],
      cwd: staging,
      stdin: "null",
    }).output();
    if (!npm.success) {
      const text = new TextDecoder().decode(npm.stderr) +
        new TextDecoder().decode(npm.stdout);
      throw new Error(
        `npm install ${pin.package}@${pin.version} failed:\n${text}`,
      );
    }
    await writeFile(
      join(staging, STAMP),
      JSON.stringify({ package: pin.package, version: pin.version }) + "\n",
    );
    // Swap the new folder in. Another installer may have won the race, in
    // which case its folder (same pin) is kept and ours is thrown away.
    if (!(await isInstalled(key))) {
      await rm(target, { recursive: true, force: true });
      try {
        await rename(staging, target);
      } catch (error) {
        if (!(await isInstalled(key))) throw error;
      }
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const wanted = Deno.args.length > 0
    ? Deno.args as CliKey[]
    : defaultCliKeys();
  for (const key of wanted) {
    if (!(key in CLI_PINS)) {
      console.error(
        `install_clis: unknown CLI ${key}; known: ${
          Object.keys(CLI_PINS).join(", ")
        }`,
      );
      Deno.exit(2);
    }
  }
  const paths = await installClis(wanted);
  for (const key of wanted) {
    console.log(`${key}\t${CLI_PINS[key].version}\t${paths[key]}`);
  }
}
