/**
 * A throwaway HOME for tests that run sherlock (or anything that reads the
 * XDG locations) as a real process, and the environment to start it with.
 *
 * ```ts
 * await using home = await createTestHome();
 * home.writeProfile("fake", profileToml({ name: "fake", executable: "fake" }));
 * const result = await runSherlock(["agents"], { env: home.env });
 * ```
 *
 * @module
 */

import { join } from "node:path";
import { TEST_CLOCK_ENV } from "../../lib/broker/daemon/clock.ts";

/** The folders of a throwaway HOME, and the environment that points at them. */
export interface TestHome {
  /** The temp folder that holds everything below; removed on dispose. */
  root: string;
  /** `$HOME`. */
  home: string;
  /** `$XDG_CONFIG_HOME`. */
  configHome: string;
  /** `$XDG_STATE_HOME`. */
  stateHome: string;
  /** `$XDG_CACHE_HOME`. */
  cacheHome: string;
  /** `$XDG_DATA_HOME`. */
  dataHome: string;
  /** `$XDG_RUNTIME_DIR` (created 0700, as a login session's would be). */
  runtimeHome: string;
  /** A folder first on `$PATH`, for the agents' executables. */
  bin: string;
  /** A scratch folder for the test's own files (records, markers). */
  scratch: string;
  /** A working folder, for a process's cwd. */
  work: string;
  /** `$XDG_CONFIG_HOME/sherlock/agents.d`. */
  agentsDir: string;
  /** `$XDG_CONFIG_HOME/sherlock/services.d`. */
  servicesDir: string;
  /** `$XDG_STATE_HOME/sherlock/sessions`: the session records. */
  sessionsDir: string;
  /** `$XDG_RUNTIME_DIR/sherlock`: where per-session configs are rendered. */
  runtimeDir: string;
  /**
   * Moves the clock of this HOME's broker daemon `ms` ahead (its test
   * clock, `SHERLOCK_TEST_CLOCK_FILE`): tokens expire and poll intervals
   * pass without the test waiting for them.
   */
  advanceClock(ms: number): void;
  /**
   * The whole environment to start a process with (use `clearEnv: true`):
   * HOME, the XDG variables, PATH (`bin` first, then the system's), and
   * what Deno needs to reuse its cache.
   */
  env: Record<string, string>;
  /** Writes `agents.d/<name>.toml`; returns its path. */
  writeProfile(name: string, text: string): string;
  /** Writes `$XDG_CONFIG_HOME/sherlock/config.toml`; returns its path. */
  writeConfig(text: string): string;
  /**
   * Writes `services.d/<name>.toml`; returns its path. A stdio server's
   * bare `command` (no `/`) that is not in `bin` yet is installed there as
   * a script that reads its stdin and exits 0, as the operator's server
   * would be installed:
   * sherlock warns about a command it cannot find. Write the file yourself
   * to test that.
   */
  writeService(name: string, text: string): string;
  /** The names of the session records (`<session>.json`) left behind. */
  sessionRecords(): string[];
  /** The names of the files in the runtime folder. */
  runtimeFiles(): string[];
  /** Removes the whole folder. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The Deno cache that the test process uses, so children reuse it. */
function denoDir(): string | undefined {
  const env = Deno.env.toObject();
  if (env.DENO_DIR) return env.DENO_DIR;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, "deno");
  if (env.HOME) return join(env.HOME, ".cache", "deno");
  return undefined;
}

/** Lists a folder's entries by name; none when it does not exist. */
export function listNames(folder: string): string[] {
  try {
    return [...Deno.readDirSync(folder)].map((entry) => entry.name).sort();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
}

/** Creates a throwaway HOME under a new temp folder. */
export async function createTestHome(): Promise<TestHome> {
  const root = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "sherlock-test-" }),
  );
  const folder = (...parts: string[]) => {
    const path = join(root, ...parts);
    Deno.mkdirSync(path, { recursive: true });
    return path;
  };
  const home = folder("home");
  const configHome = folder("home", ".config");
  const stateHome = folder("home", ".local", "state");
  const cacheHome = folder("home", ".cache");
  const dataHome = folder("home", ".local", "share");
  const runtimeHome = folder("run");
  Deno.chmodSync(runtimeHome, 0o700);
  const bin = folder("bin");
  const scratch = folder("scratch");
  const work = folder("work");
  const agentsDir = join(configHome, "sherlock", "agents.d");
  const servicesDir = join(configHome, "sherlock", "services.d");
  const sessionsDir = join(stateHome, "sherlock", "sessions");
  const runtimeDir = join(runtimeHome, "sherlock");

  const env: Record<string, string> = {
    HOME: home,
    XDG_CONFIG_HOME: configHome,
    XDG_STATE_HOME: stateHome,
    XDG_CACHE_HOME: cacheHome,
    XDG_DATA_HOME: dataHome,
    XDG_RUNTIME_DIR: runtimeHome,
    PATH: `${bin}:/usr/local/bin:/usr/bin:/bin`,
    TMPDIR: folder("tmp"),
    LANG: "C.UTF-8",
    NO_COLOR: "1",
    DENO_NO_UPDATE_CHECK: "1",
    // The daemon's clock: the system's plus what advanceClock added.
    [TEST_CLOCK_ENV]: join(root, "clock"),
  };
  const cache = denoDir();
  if (cache) env.DENO_DIR = cache;

  const writeInto = (dir: string, name: string, text: string) => {
    Deno.mkdirSync(dir, { recursive: true });
    const path = join(dir, `${name}.toml`);
    Deno.writeTextFileSync(path, text);
    return path;
  };

  return {
    root,
    home,
    configHome,
    stateHome,
    cacheHome,
    dataHome,
    runtimeHome,
    bin,
    scratch,
    work,
    agentsDir,
    servicesDir,
    sessionsDir,
    runtimeDir,
    env,
    advanceClock: (ms) => {
      const file = env[TEST_CLOCK_ENV];
      let offset = 0;
      try {
        offset = Number(Deno.readTextFileSync(file));
      } catch {
        // Not moved yet.
      }
      // Renamed into place: the daemon never reads a half-written file.
      Deno.writeTextFileSync(`${file}.new`, String(offset + ms));
      Deno.renameSync(`${file}.new`, file);
    },
    writeProfile: (name, text) => writeInto(agentsDir, name, text),
    writeConfig: (text) =>
      writeInto(join(configHome, "sherlock"), "config", text),
    writeService: (name, text) => {
      installServerStub(bin, text);
      return writeInto(servicesDir, name, text);
    },
    sessionRecords: () => listNames(sessionsDir),
    runtimeFiles: () => listNames(runtimeDir),
    async [Symbol.asyncDispose]() {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}

/**
 * Installs the `[server] command` of a service's TOML text into `bin` when
 * it is a bare name that is not there yet (see `writeService`).
 */
function installServerStub(bin: string, text: string): void {
  const server = /^\[server\]$([\s\S]*?)(?:^\[|(?![\s\S]))/m.exec(text)?.[1];
  const command = server &&
    /^command\s*=\s*"([^"/\s]+)"\s*$/m.exec(server)?.[1];
  if (!command) return;
  const path = join(bin, command);
  try {
    Deno.lstatSync(path);
    return;
  } catch {
    // Not installed yet.
  }
  // Reads its stdin to the end (an agent that writes to it must not meet a
  // closed pipe), answers nothing, exits 0.
  Deno.writeTextFileSync(path, "#!/bin/sh\nexec cat >/dev/null\n", {
    mode: 0o755,
  });
  Deno.chmodSync(path, 0o755);
}
