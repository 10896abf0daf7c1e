/**
 * `deno task build`: compiles sherlock (the built-in profiles embedded) for
 * each release target into `dist/`, writes `dist/SHA256SUMS`, then runs the
 * host's binary as a smoke test. Usage, where each target's runtime (denort)
 * comes from, and the exit codes: {@linkcode BUILD_HELP}.
 *
 * A runtime can come from a variable or Deno's cache because dl.deno.land
 * is not always reachable and no npm package ships denort. Each one given
 * by variable is checked for its OS and CPU: Deno would put `DENORT_BIN`
 * into every target, and the full `deno` is no runtime (a program compiled
 * into it behaves as `deno`, which the smoke test catches).
 *
 * @module
 */

import { LAZY_MODULES } from "../lib/cli/commands.ts";
import { LAUNCH_BUNDLE, SOURCE_ENTRY } from "../lib/cli/launch_route.ts";
import { staleBundleProblem } from "./bundle_launch.ts";

/**
 * What `deno compile` must be told of: main.ts's two entries (imported by
 * a URL built at run time) and the modules imported lazily.
 */
const INCLUDED_MODULES: readonly string[] = [
  LAUNCH_BUNDLE,
  SOURCE_ENTRY,
  ...LAZY_MODULES,
];
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/** The targets of a release, in build order. */
export const TARGETS = [
  "x86_64-unknown-linux-gnu",
  "aarch64-unknown-linux-gnu",
  "x86_64-apple-darwin",
  "aarch64-apple-darwin",
  "x86_64-pc-windows-msvc",
] as const;

/** One release target. */
export type Target = typeof TARGETS[number];

/** Exit codes of the build (listed in {@linkcode BUILD_HELP}). */
export const BuildExit = {
  /** Something failed: a stale launch bundle, compile, embedding check or smoke test. */
  Failed: 1,
  /** The command line was wrong. */
  Usage: 2,
  /** A target's runtime (denort) is not available. */
  Unavailable: 69,
  /** A DENORT_BIN* variable is wrong. */
  Config: 78,
} as const;

/** A failure that ends the build with one line and an exit code. */
export class BuildError extends Error {
  readonly exitCode: number;

  /** Creates the error; `message` is the line the operator reads. */
  constructor(message: string, exitCode: number) {
    super(message);
    this.name = "BuildError";
    this.exitCode = exitCode;
  }
}

/** What the command line asks for. */
export interface BuildOptions {
  /** The targets to build, in build order, without duplicates. */
  targets: Target[];
  /** Never let `deno compile` download a runtime. */
  offline: boolean;
  /** Where the binaries go. */
  outDir: string;
  /** Print the help and stop. */
  help: boolean;
  /** Print the `deno compile` commands and outputs; compile nothing. */
  dryRun: boolean;
}

/** The project's root: the folder above this script's. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The help text. */
export const BUILD_HELP =
  `Usage: deno task build [--target TARGET]... [--offline] [--out DIR] [--dry-run]

Compiles sherlock for each target (default: all five) into DIR (default
dist/) as sherlock-<target>[.exe], and writes DIR/SHA256SUMS. --dry-run
prints the --include list, the outputs and the exact deno compile commands
(run from the checkout) and compiles nothing; it needs no runtime.

Targets: ${TARGETS.join(", ")}

The runtime (denort) for each target comes from DENORT_BIN_<TARGET> (e.g.
DENORT_BIN_AARCH64_APPLE_DARWIN), DENORT_BIN (host target only), Deno's
cache ($DENO_DIR/dl/release/v<version>/denort-<target>.zip), or a download
from dl.deno.land (not with --offline).

Exit codes: 0 built, 1 failed, 2 usage, 69 a runtime is not available,
78 a DENORT_BIN* variable is wrong.`;

/** Parses the command line; throws a usage {@linkcode BuildError}. */
export function parseBuildArgs(args: readonly string[]): BuildOptions {
  const options: BuildOptions = {
    targets: [],
    offline: false,
    outDir: join(ROOT, "dist"),
    help: false,
    dryRun: false,
  };
  for (let index = 0; index < args.length; index++) {
    const [flag, inline] = splitFlag(args[index]);
    const value = (): string => {
      const next = inline ?? args[++index];
      if (next === undefined || next === "") {
        throw new BuildError(
          `${flag} needs a value; see --help`,
          BuildExit.Usage,
        );
      }
      return next;
    };
    if (flag === "--help" || flag === "-h") options.help = true;
    else if (flag === "--offline") options.offline = true;
    else if (flag === "--dry-run") options.dryRun = true;
    else if (flag === "--out") options.outDir = value();
    else if (flag === "--target") {
      const target = value();
      if (!isTarget(target)) {
        throw new BuildError(
          `unknown target ${target}; the targets are ${TARGETS.join(", ")}`,
          BuildExit.Usage,
        );
      }
      if (!options.targets.includes(target)) options.targets.push(target);
    } else {
      throw new BuildError(
        `unknown argument ${args[index]}; see --help`,
        BuildExit.Usage,
      );
    }
  }
  if (options.targets.length === 0) options.targets = [...TARGETS];
  return options;
}

function splitFlag(arg: string): [string, string | undefined] {
  const equals = arg.indexOf("=");
  if (!arg.startsWith("--") || equals === -1) return [arg, undefined];
  return [arg.slice(0, equals), arg.slice(equals + 1)];
}

/** True when `name` is one of the release targets. */
export function isTarget(name: string): name is Target {
  return (TARGETS as readonly string[]).includes(name);
}

/** The variable that names a denort binary for `target`. */
export function runtimeVariable(target: Target): string {
  return `DENORT_BIN_${target.toUpperCase().replaceAll("-", "_")}`;
}

/** The output file's name for `target`. */
export function outputName(target: Target): string {
  return `sherlock-${target}${target.includes("windows") ? ".exe" : ""}`;
}

/** The OS and CPU of an executable, read from its header. */
export interface BinaryKind {
  /** `linux` (ELF), `darwin` (Mach-O) or `windows` (PE). */
  os: "linux" | "darwin" | "windows";
  /** `x86_64`, `aarch64`, or the raw machine number. */
  arch: string;
}

/**
 * Reads the OS and CPU from the first bytes of an executable (ELF, 64-bit
 * Mach-O, PE), or undefined when the format is none of these.
 */
export function binaryKind(header: Uint8Array): BinaryKind | undefined {
  const view = new DataView(header.buffer, header.byteOffset, header.length);
  const machine = (value: number, x64: number, arm64: number): string =>
    value === x64
      ? "x86_64"
      : value === arm64
      ? "aarch64"
      : `0x${value.toString(16)}`;
  if (
    header.length >= 20 && header[0] === 0x7f && header[1] === 0x45 &&
    header[2] === 0x4c && header[3] === 0x46
  ) {
    const littleEndian = header[5] === 1;
    return {
      os: "linux",
      arch: machine(view.getUint16(18, littleEndian), 0x3e, 0xb7),
    };
  }
  if (header.length >= 8 && view.getUint32(0, true) === 0xfeedfacf) {
    return {
      os: "darwin",
      arch: machine(view.getUint32(4, true), 0x01000007, 0x0100000c),
    };
  }
  if (header.length >= 64 && header[0] === 0x4d && header[1] === 0x5a) {
    const pe = view.getUint32(0x3c, true);
    if (pe + 6 <= header.length && view.getUint32(pe, true) === 0x00004550) {
      return {
        os: "windows",
        arch: machine(view.getUint16(pe + 4, true), 0x8664, 0xaa64),
      };
    }
  }
  return undefined;
}

/** The OS and CPU that a target's executables have. */
export function targetKind(target: Target): BinaryKind {
  return {
    os: target.includes("linux")
      ? "linux"
      : target.includes("apple")
      ? "darwin"
      : "windows",
    arch: target.startsWith("x86_64") ? "x86_64" : "aarch64",
  };
}

/** Where a target's runtime comes from. */
export type RuntimeSource =
  | { kind: "variable"; variable: string; path: string }
  | { kind: "cache"; path: string }
  | { kind: "download" };

/** What runtime resolution looks at. */
export interface RuntimeContext {
  /** The environment (for the DENORT_BIN variables). */
  env: Readonly<Record<string, string | undefined>>;
  /** The target of the `deno` running this script. */
  hostTarget: string;
  /** Deno's cache folder (`deno info --json`'s denoDir). */
  denoDir: string;
  /** The Deno version, e.g. `2.9.6`. */
  denoVersion: string;
}

/**
 * Finds where `target`'s runtime comes from (in {@linkcode BUILD_HELP}'s
 * order), checking that a runtime given by variable exists and is an
 * executable for the target. Throws a {@linkcode BuildError} (78) for a
 * wrong variable.
 */
export function resolveRuntime(
  target: Target,
  context: RuntimeContext,
): RuntimeSource {
  const own = runtimeVariable(target);
  const candidates: [string, string | undefined][] = [
    [own, context.env[own]],
  ];
  if (target === context.hostTarget) {
    candidates.push(["DENORT_BIN", context.env.DENORT_BIN]);
  }
  for (const [variable, path] of candidates) {
    if (!path) continue;
    checkRuntimeFile({ variable, path, target });
    return { kind: "variable", variable, path };
  }
  const cached = join(
    context.denoDir,
    "dl",
    "release",
    `v${context.denoVersion}`,
    `denort-${target}.zip`,
  );
  if (isFile(cached)) return { kind: "cache", path: cached };
  return { kind: "download" };
}

function checkRuntimeFile(
  options: { variable: string; path: string; target: Target },
): void {
  const { variable, path, target } = options;
  let header: Uint8Array;
  try {
    const file = Deno.openSync(path);
    try {
      header = new Uint8Array(4096);
      const read = file.readSync(header) ?? 0;
      header = header.subarray(0, read);
    } finally {
      file.close();
    }
  } catch (error) {
    throw new BuildError(
      `${variable}=${path} cannot be read (${
        error instanceof Deno.errors.NotFound ? "no such file" : String(error)
      }); point it at denort ${Deno.version.deno} for ${target}`,
      BuildExit.Config,
    );
  }
  const found = binaryKind(header);
  const wanted = targetKind(target);
  if (found?.os !== wanted.os || found.arch !== wanted.arch) {
    throw new BuildError(
      `${variable}=${path} is ${
        found ? `a ${found.os} ${found.arch} executable` : "not an executable"
      }, not one for ${target}; point it at denort ${Deno.version.deno} for ${target}`,
      BuildExit.Config,
    );
  }
}

/** The one line that says how to get a target's runtime. */
export function unavailableMessage(
  target: Target,
  context: RuntimeContext,
): string {
  const host = target === context.hostTarget ? " (or DENORT_BIN)" : "";
  const cache = join(
    context.denoDir,
    "dl",
    "release",
    `v${context.denoVersion}`,
  );
  return `no Deno runtime for ${target}: set ${
    runtimeVariable(target)
  }${host} to denort ${context.denoVersion} for that target, put denort-${target}.zip in ${cache}, or build where dl.deno.land is reachable`;
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** What a finished program returned. */
interface Captured {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `program` with `args` from the checkout, stdin closed, and returns
 * its exit code and output. With `env`, that is its whole environment.
 */
function runCaptured(
  program: string,
  options: { args: string[]; env?: Record<string, string> },
): Captured {
  const output = new Deno.Command(program, {
    args: options.args,
    cwd: ROOT,
    env: options.env,
    clearEnv: options.env !== undefined,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** Runs `deno` with `args`; returns its exit code and output. */
function runDeno(args: string[], env?: Record<string, string>): Captured {
  return runCaptured(Deno.execPath(), { args, env });
}

/** Deno's cache folder, as `deno info` reports it. */
function denoDir(): string {
  const result = runDeno(["info", "--json"]);
  if (result.code !== 0) {
    throw new BuildError(
      `deno info failed: ${firstLine(result.stderr)}`,
      BuildExit.Failed,
    );
  }
  return (JSON.parse(result.stdout) as { denoDir: string }).denoDir;
}

/**
 * Checks that every `profiles/*.toml` is in main.ts's module graph (the
 * text imports of lib/profiles/builtin.ts), i.e. that compile embeds it.
 * Returns the profiles' names.
 */
function checkEmbeddedProfiles(): string[] {
  const result = runDeno(["info", "--json", "main.ts"]);
  if (result.code !== 0) {
    throw new BuildError(
      `deno info main.ts failed: ${firstLine(result.stderr)}`,
      BuildExit.Failed,
    );
  }
  const graph = JSON.parse(result.stdout) as {
    modules: { specifier: string }[];
  };
  const inGraph = new Set(graph.modules.map((module) => module.specifier));
  const names: string[] = [];
  for (const entry of Deno.readDirSync(join(ROOT, "profiles"))) {
    if (!entry.isFile || !entry.name.endsWith(".toml")) continue;
    const url = new URL(`../profiles/${entry.name}`, import.meta.url).href;
    if (!inGraph.has(url)) {
      throw new BuildError(
        `profiles/${entry.name} is not imported by lib/profiles/builtin.ts, so the binary would not embed it; add it there`,
        BuildExit.Failed,
      );
    }
    names.push(entry.name.slice(0, -".toml".length));
  }
  return names.sort();
}

function firstLine(text: string): string {
  // deno's own errors may be coloured; the line must read cleanly.
  // deno-lint-ignore no-control-regex
  const plain = text.replace(/\x1b\[[0-9;]*m/g, "");
  return plain.split("\n").map((line) => line.trim()).find((line) =>
    line !== ""
  ) ?? "(no output)";
}

/**
 * The arguments of `deno compile` for one target (after `deno`), run from
 * the checkout: the same for a build and for `--dry-run`.
 */
export function compileArgs(target: Target, outDir: string): string[] {
  return [
    "compile",
    "--frozen",
    // sherlock starts arbitrary agents, credential helpers and MCP servers,
    // reads and writes its XDG folders and talks to the broker's socket:
    // any narrower set of permissions would be one it cannot keep.
    "--allow-all",
    // Modules imported only when needed are not in main.ts's static graph
    // (see lib/runtime/lazy_import.ts): name each one.
    ...INCLUDED_MODULES.flatMap((module) => ["--include", module]),
    "--target",
    target,
    "--output",
    join(outDir, outputName(target)),
    "main.ts",
  ];
}

/** Quotes `word` for a POSIX shell when it needs it. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word)
    ? word
    : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * What `--dry-run` prints: the `--include` list, the outputs (each binary
 * and SHA256SUMS) and one `deno compile` command per target, exactly as a
 * build runs them from the checkout.
 */
export function dryRunPlan(
  options: { targets: readonly Target[]; outDir: string },
): string {
  const { targets, outDir } = options;
  const lines = [
    "# --include (modules imported lazily, outside main.ts's static graph):",
    ...INCLUDED_MODULES.map((module) => `#   ${module}`),
    "# outputs:",
    ...targets.map((target) => `#   ${join(outDir, outputName(target))}`),
    `#   ${join(outDir, "SHA256SUMS")}`,
    ...targets.map((target) =>
      ["deno", ...compileArgs(target, outDir)].map(shellWord).join(" ")
    ),
  ];
  return lines.join("\n") + "\n";
}

/** Compiles one target; throws a {@linkcode BuildError} on failure. */
function compile(
  target: Target,
  options: { runtime: RuntimeSource; outDir: string; context: RuntimeContext },
): string {
  const output = join(options.outDir, outputName(target));
  try {
    Deno.removeSync(output);
  } catch {
    // Not there yet: a failed build must not leave an old binary behind.
  }
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(Deno.env.toObject())) {
    if (name !== "DENORT_BIN") env[name] = value;
  }
  if (options.runtime.kind === "variable") {
    env.DENORT_BIN = options.runtime.path;
  }
  const result = runDeno(compileArgs(target, options.outDir), env);
  if (result.code === 0) return output;
  const stderr = result.stderr;
  if (
    options.runtime.kind === "download" &&
    /dl\.deno\.land|base binary/i.test(stderr)
  ) {
    throw new BuildError(
      unavailableMessage(target, options.context),
      BuildExit.Unavailable,
    );
  }
  Deno.stderr.writeSync(new TextEncoder().encode(stderr));
  throw new BuildError(
    `deno compile failed for ${target} (its output is above)`,
    BuildExit.Failed,
  );
}

/**
 * Runs the host's binary: `--version` must print sherlock's version, and
 * `agents` in an empty configuration must list every built-in profile.
 */
function smokeTest(
  binary: string,
  options: { version: string; profiles: readonly string[]; runtime: string },
): void {
  const home = Deno.makeTempDirSync({ prefix: "sherlock-build-" });
  try {
    const env = {
      HOME: home,
      PATH: "/usr/bin:/bin",
      XDG_CONFIG_HOME: join(home, "config"),
      XDG_CACHE_HOME: join(home, "cache"),
      XDG_STATE_HOME: join(home, "state"),
      XDG_DATA_HOME: join(home, "data"),
      XDG_RUNTIME_DIR: join(home, "run"),
      NO_COLOR: "1",
    };
    const run = (args: string[]) => runCaptured(binary, { args, env });
    const version = run(["--version"]);
    if (version.stdout.startsWith("deno ")) {
      throw new BuildError(
        `${options.runtime} is the deno CLI, not denort: the binary ignores sherlock and runs as deno; use denort ${Deno.version.deno}`,
        BuildExit.Config,
      );
    }
    if (version.code !== 0 || version.stdout.trim() !== options.version) {
      throw new BuildError(
        `${binary} --version printed "${
          firstLine(version.stdout + version.stderr)
        }" (exit ${version.code}), not "${options.version}"`,
        BuildExit.Failed,
      );
    }
    const agents = run(["agents"]);
    const missing = options.profiles.filter((name) =>
      !new RegExp(`^${name}\\s+built-in\\b`, "m").test(agents.stdout)
    );
    if (agents.code !== 0 || missing.length > 0) {
      throw new BuildError(
        `${binary} agents (exit ${agents.code}) does not list the built-in profile${
          missing.length === 1 ? "" : "s"
        } ${missing.join(", ")}: ${firstLine(agents.stderr || agents.stdout)}`,
        BuildExit.Failed,
      );
    }
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
}

/** The SHA-256 of a file as lowercase hex. */
async function sha256File(path: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    await Deno.readFile(path),
  );
  return Array.from(
    new Uint8Array(digest),
    (byte) => byte.toString(16).padStart(2, "0"),
  ).join("");
}

function runtimeLabel(runtime: RuntimeSource): string {
  switch (runtime.kind) {
    case "variable":
      return `${runtime.variable}=${runtime.path}`;
    case "cache":
      return runtime.path;
    case "download":
      return "download from dl.deno.land";
  }
}

function say(line: string): void {
  Deno.stderr.writeSync(new TextEncoder().encode(`build: ${line}\n`));
}

/** Runs the build; returns the exit code. */
export async function build(args: readonly string[]): Promise<number> {
  const options = parseBuildArgs(args);
  if (options.help) {
    console.log(BUILD_HELP);
    return 0;
  }
  if (options.dryRun) {
    Deno.stdout.writeSync(new TextEncoder().encode(dryRunPlan(options)));
    return 0;
  }
  // Before anything is compiled: a stale bundle would ship the old launch
  // path in a binary whose other commands run the new code.
  const stale = await staleBundleProblem(ROOT);
  if (stale !== undefined) throw new BuildError(stale, BuildExit.Failed);
  const context: RuntimeContext = {
    env: Deno.env.toObject(),
    hostTarget: Deno.build.target,
    denoDir: denoDir(),
    denoVersion: Deno.version.deno,
  };
  const runtimes = new Map<Target, RuntimeSource>();
  for (const target of options.targets) {
    runtimes.set(target, resolveRuntime(target, context));
  }
  const missing = options.targets.filter((target) =>
    runtimes.get(target)?.kind === "download"
  );
  if (options.offline && missing.length > 0) {
    for (const target of missing.slice(0, -1)) {
      say(unavailableMessage(target, context));
    }
    throw new BuildError(
      unavailableMessage(missing[missing.length - 1], context),
      BuildExit.Unavailable,
    );
  }

  const profiles = checkEmbeddedProfiles();
  const { VERSION } = await import("../lib/version.ts");
  Deno.mkdirSync(options.outDir, { recursive: true });
  const built: string[] = [];
  for (const target of options.targets) {
    const runtime = runtimes.get(target)!;
    say(`${target} (runtime: ${runtimeLabel(runtime)})`);
    const binary = compile(target, {
      runtime,
      outDir: options.outDir,
      context,
    });
    if (target === context.hostTarget) {
      try {
        smokeTest(binary, {
          version: `sherlock ${VERSION}`,
          profiles,
          runtime: runtimeLabel(runtime),
        });
      } catch (error) {
        Deno.removeSync(binary);
        throw error;
      }
      say(`${relative(ROOT, binary)}: --version and agents OK`);
    }
    built.push(binary);
  }
  const sums: string[] = [];
  for (const binary of built) {
    sums.push(`${await sha256File(binary)}  ${basename(binary)}`);
  }
  const sumsFile = join(options.outDir, "SHA256SUMS");
  Deno.writeTextFileSync(sumsFile, sums.join("\n") + "\n");
  say(`wrote ${built.length} binaries and ${relative(ROOT, sumsFile)}`);
  return 0;
}

if (import.meta.main) {
  try {
    Deno.exit(await build(Deno.args));
  } catch (error) {
    if (!(error instanceof BuildError)) throw error;
    say(error.message);
    Deno.exit(error.exitCode);
  }
}
