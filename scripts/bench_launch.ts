/**
 * `deno task bench`: the wall and CPU time of `sherlock run trivial` (from
 * source, agent `/bin/true`, 0, 1, 5 and 10 services, warm and cold validation
 * cache) against the floor, a Deno script that only spawns the same agent,
 * and one Tab of the shell completion (`completions --complete`).
 * Throwaway HOME, XDG folders and DENO_DIR; the variants interleaved so that
 * a shared machine's noise spreads over all of them. docs/BENCHMARKS.md
 * details the cases and keeps the figures; `--help` the options.
 *
 * @module
 */

import { childrenCpuMs, summarize } from "./bench_stats.ts";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The benchmark's settings, from the command line. */
export interface BenchOptions {
  /** Measured rounds (each round runs every variant once). */
  runs: number;
  /** Unmeasured rounds first (they fill Deno's caches). */
  warmup: number;
  /** The project to measure (default: this script's repository). */
  root: string;
  /** A `deno compile`d sherlock to measure as well. */
  bin?: string;
  /** Another checkout (e.g. an older commit) measured in the same rounds. */
  baseline?: string;
  /** A `deno compile`d floor to compare `bin` against. */
  floorBin?: string;
  /** The service counts of the cases (default 0, 1, 5 and 10). */
  services: number[];
  /**
   * Fail (exit 3) when the mean CPU time of a warm launch exceeds the
   * baseline's times this ratio beyond the noise, for any service count.
   */
  maxRatio?: number;
}

/** One measured variant: how to start it, and what to do before each run. */
interface Variant {
  name: string;
  /** The argv, the executable first. */
  argv: string[];
  /** The environment (complete: nothing else is inherited). */
  env: Record<string, string>;
  /** Called before each run, outside the timed span. */
  prepare?: () => void;
}

/** The service counts of the cases by default (5 is the figure). */
const SERVICE_COUNTS: readonly number[] = [0, 1, 5, 10];

/** The exit code of a regression beyond `--max-ratio`. */
export const REGRESSION_EXIT_CODE = 3;

const USAGE =
  `Usage: deno task bench [--runs N] [--warmup N] [--root DIR] [--services N,N…] [--bin PATH] [--floor-bin PATH] [--baseline DIR [--max-ratio R]]

  --runs N         measured rounds (default 30); each runs every variant once
  --warmup N       unmeasured rounds first (default 3)
  --root DIR       the sherlock checkout to measure (default: this one)
  --bin PATH       also measure a deno compile'd sherlock binary
  --floor-bin PATH the floor for --bin: a compiled spawn-and-exit program
  --baseline DIR   another checkout (e.g. a worktree of an older commit) whose
                   warm launches run in the same interleaved rounds, for a
                   before/after ratio that the machine's drift cannot skew
                   (default: the deno run floor)
  --services N,N…  the service counts of the cases (default 0,1,5,10)
  --max-ratio R    with --baseline: exit ${REGRESSION_EXIT_CODE} when, for any service count, the
                   mean CPU time of this checkout's warm launch exceeds the
                   baseline's times R (e.g. 1.05) by more than two standard
                   errors of the per-round differences; 2 on bad arguments`;

/** Parses the command line; throws a one-line message on a mistake. */
export function parseBenchArgs(args: readonly string[]): BenchOptions {
  const options: BenchOptions = {
    runs: 30,
    warmup: 3,
    root: join(dirname(fileURLToPath(import.meta.url)), ".."),
    services: [...SERVICE_COUNTS],
  };
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    const value = (): string => {
      const next = args[++index];
      if (next === undefined) throw new Error(`${arg} needs a value`);
      return next;
    };
    const count = (): number => {
      const text = value();
      const number = Number(text);
      if (!Number.isInteger(number) || number < 0) {
        throw new Error(`${arg} needs a whole number, not ${text}`);
      }
      return number;
    };
    if (arg === "--runs") options.runs = Math.max(1, count());
    else if (arg === "--warmup") options.warmup = count();
    else if (arg === "--root") options.root = value();
    else if (arg === "--bin") options.bin = value();
    else if (arg === "--floor-bin") options.floorBin = value();
    else if (arg === "--baseline") options.baseline = value();
    else if (arg === "--services") {
      const text = value();
      const counts = text.split(",").map(Number);
      if (
        counts.some((number) => !Number.isInteger(number) || number < 0)
      ) {
        throw new Error(
          `--services needs whole numbers, e.g. 0,5, not ${text}`,
        );
      }
      options.services = [...new Set(counts)];
    } else if (arg === "--max-ratio") {
      const text = value();
      const number = Number(text);
      if (!Number.isFinite(number) || number < 1) {
        throw new Error(
          `--max-ratio needs a number ≥ 1, e.g. 1.05, not ${text}`,
        );
      }
      options.maxRatio = number;
    } else throw new Error(`unknown argument ${arg}`);
  }
  if (options.maxRatio !== undefined && options.baseline === undefined) {
    throw new Error("--max-ratio needs --baseline DIR to compare against");
  }
  return options;
}

const TRIVIAL_PROFILE = `[agent]
name = "trivial"
executable = "/bin/true"
description = "exits at once (benchmark)"

[mcp]
mode = "cli-flag"
flag = "--mcp-config"
`;

/** The name of the `index`th service (from 1). */
function serviceName(index: number): string {
  return `service${String(index).padStart(2, "0")}`;
}

/** A stdio service that needs no token: rendered, never started. */
function serviceFile(name: string): string {
  return `[service]
name = "${name}"
description = "benchmark service"

[server]
command = "${name}-mcp-server"
args = ["stdio"]
env = { LOG_LEVEL = "warn" }

[token]
source = "none"
`;
}

/** The floor: spawn the agent with inherited stdio, exit with its code. */
const FLOOR_SCRIPT = `const child = new Deno.Command(Deno.args[0], {
  args: Deno.args.slice(1),
  stdin: "inherit",
  stdout: "inherit",
  stderr: "inherit",
}).spawn();
Deno.exit((await child.status).code);
`;

/** The throwaway folders, one configuration per case. */
interface Sandbox {
  /** The root of everything the benchmark writes (but the runtime folder). */
  dir: string;
  /** The folder that holds the runtime folder (tmpfs when available). */
  runtime: string;
  /** The floor script. */
  floor: string;
  /** The environment of each case: `<services>` or `<services>-cold`. */
  envs: Map<string, Record<string, string>>;
  /** The trivial profile's file in each case, keyed as `envs`. */
  profiles: Map<string, string>;
}

/**
 * A throwaway folder on tmpfs for XDG_RUNTIME_DIR when there is one, as
 * /run/user/<uid> is on most Linux systems; else beside the rest.
 */
function runtimeBase(fallback: string): string {
  try {
    if (Deno.statSync("/dev/shm").isDirectory) {
      return Deno.makeTempDirSync({
        dir: "/dev/shm",
        prefix: "sherlock-bench-",
      });
    }
  } catch {
    // No /dev/shm (macOS): the runtime folder stays with the others.
  }
  return fallback;
}

function makeSandbox(counts: readonly number[]): Sandbox {
  const dir = Deno.makeTempDirSync({ prefix: "sherlock-bench-" });
  const runtime = runtimeBase(dir);
  const floor = join(dir, "floor.ts");
  Deno.writeTextFileSync(floor, FLOOR_SCRIPT);
  const shared = {
    HOME: join(dir, "home"),
    XDG_STATE_HOME: join(dir, "state"),
    XDG_DATA_HOME: join(dir, "data"),
    XDG_RUNTIME_DIR: join(runtime, "run"),
    DENO_DIR: join(dir, "deno"),
    // The services' commands exist, as they do for an operator (a missing
    // one is a warning on every launch, not the case measured), in the
    // last folder: each lookup first misses in all the others.
    PATH: `${Deno.env.get("PATH") ?? "/usr/bin:/bin"}:${join(dir, "bin")}`,
    NO_COLOR: "1",
  };
  Deno.mkdirSync(join(dir, "bin"));
  for (let index = 1; index <= Math.max(0, ...counts); index++) {
    const command = join(dir, "bin", `${serviceName(index)}-mcp-server`);
    Deno.writeTextFileSync(command, "#!/bin/sh\nexit 0\n");
    Deno.chmodSync(command, 0o755);
  }
  Deno.mkdirSync(shared.HOME);
  Deno.mkdirSync(shared.XDG_RUNTIME_DIR, { mode: 0o700 });
  const envs = new Map<string, Record<string, string>>();
  const profiles = new Map<string, string>();
  for (const count of new Set([0, ...counts])) {
    // Warm and cold runs of a case have their own configuration and cache:
    // the cold runs' profile edits must never reach a warm run.
    for (const key of [`${count}`, `${count}-cold`]) {
      const config = join(dir, `config-${key}`);
      const agents = join(config, "sherlock", "agents.d");
      const services = join(config, "sherlock", "services.d");
      Deno.mkdirSync(agents, { recursive: true });
      Deno.mkdirSync(services, { recursive: true });
      const profile = join(agents, "trivial.toml");
      Deno.writeTextFileSync(profile, TRIVIAL_PROFILE);
      for (let index = 1; index <= count; index++) {
        const name = serviceName(index);
        Deno.writeTextFileSync(
          join(services, `${name}.toml`),
          serviceFile(name),
        );
      }
      envs.set(key, {
        ...shared,
        XDG_CONFIG_HOME: config,
        XDG_CACHE_HOME: join(dir, `cache-${key}`),
      });
      profiles.set(key, profile);
    }
  }
  return { dir, runtime, floor, envs, profiles };
}

/** One run's wall time and, where known, CPU time, in ms. */
interface Sample {
  wall: number;
  /** CPU time (user + system) of the child, or undefined. */
  cpu?: number;
}

/** Runs one variant once. */
function timeOnce(variant: Variant, cwd: string): Sample {
  variant.prepare?.();
  const [command, ...args] = variant.argv;
  const cpuBefore = childrenCpuMs();
  const start = performance.now();
  const output = new Deno.Command(command, {
    args,
    cwd,
    env: variant.env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).outputSync();
  const wall = performance.now() - start;
  const cpuAfter = childrenCpuMs();
  if (!output.success) {
    const stderr = new TextDecoder().decode(output.stderr).trim();
    throw new Error(
      `${variant.name} exited ${output.code}: ${stderr.split("\n")[0]}`,
    );
  }
  const cpu = cpuBefore === undefined || cpuAfter === undefined
    ? undefined
    : cpuAfter - cpuBefore;
  return { wall, cpu };
}

function variants(options: BenchOptions, sandbox: Sandbox): Variant[] {
  const deno = Deno.execPath();
  const main = join(options.root, "main.ts");
  const result: Variant[] = [];
  const floorEnv = sandbox.envs.get("0")!;
  result.push({
    name: "floor",
    argv: [deno, "run", "--allow-all", sandbox.floor, "/bin/true"],
    env: floorEnv,
  });
  // The same script inside the checkout: Deno then reads deno.json, the lock
  // file and node_modules/ for it as it does for main.ts. The difference to
  // the floor above is Deno's project set-up, which a compiled binary does
  // not pay at run time; what is left over this one is sherlock's own work.
  const projectFloor = join(options.root, ".cache", "bench_floor.ts");
  Deno.mkdirSync(join(options.root, ".cache"), { recursive: true });
  Deno.writeTextFileSync(projectFloor, FLOOR_SCRIPT);
  result.push({
    name: "project floor",
    argv: [deno, "run", "--allow-all", projectFloor, "/bin/true"],
    env: floorEnv,
  });
  for (const count of options.services) {
    result.push({
      name: `sherlock ${count} warm`,
      argv: [deno, "run", "--allow-all", main, "run", "trivial"],
      env: sandbox.envs.get(`${count}`)!,
    });
    const profile = sandbox.profiles.get(`${count}-cold`)!;
    let edits = 0;
    result.push({
      name: `sherlock ${count} cold`,
      argv: [deno, "run", "--allow-all", main, "run", "trivial"],
      env: sandbox.envs.get(`${count}-cold`)!,
      // A new comment changes the profile's bytes: its cache entry misses.
      prepare: () =>
        Deno.writeTextFileSync(
          profile,
          `${TRIVIAL_PROFILE}# edit ${++edits}\n`,
        ),
    });
  }
  // A Tab after `sherlock --service ` runs this once: it reads services.d.
  const complete = ["completions", "--complete", "--", "--service", ""];
  const most = Math.max(...options.services);
  result.push({
    name: "complete --service",
    argv: [deno, "run", "--allow-all", main, ...complete],
    env: sandbox.envs.get(`${most}`)!,
  });
  if (options.baseline) {
    const baselineMain = join(options.baseline, "main.ts");
    for (const count of options.services) {
      const env = sandbox.envs.get(`${count}`)!;
      result.push({
        name: `baseline ${count} warm`,
        argv: [deno, "run", "--allow-all", baselineMain, "run", "trivial"],
        // Its own validation cache: the two checkouts may differ in it.
        env: { ...env, XDG_CACHE_HOME: `${env.XDG_CACHE_HOME}-baseline` },
      });
    }
  }
  if (options.bin) {
    result.push({
      name: "compiled floor",
      argv: options.floorBin
        ? [options.floorBin, "/bin/true"]
        : [deno, "run", "--allow-all", sandbox.floor, "/bin/true"],
      env: floorEnv,
    });
    for (const count of options.services) {
      result.push({
        name: `compiled ${count} warm`,
        argv: [options.bin, "run", "trivial"],
        env: sandbox.envs.get(`${count}`)!,
      });
    }
    result.push({
      name: "compiled complete --service",
      argv: [options.bin, ...complete],
      env: sandbox.envs.get(`${most}`)!,
    });
  }
  return result;
}

/** Everything measured, by variant name. */
export type Measurements = Map<string, Sample[]>;

/** Runs the rounds; `onRound` is told the progress. */
function measure(
  options: BenchOptions,
  list: readonly Variant[],
  onRound: (round: number, total: number) => void,
): Measurements {
  const times: Measurements = new Map(list.map((v) => [v.name, []]));
  const total = options.warmup + options.runs;
  for (let round = 0; round < total; round++) {
    onRound(round, total);
    for (let offset = 0; offset < list.length; offset++) {
      const variant = list[(round + offset) % list.length];
      const sample = timeOnce(variant, options.root);
      if (round >= options.warmup) times.get(variant.name)!.push(sample);
    }
  }
  return times;
}

function ms(value: number): string {
  return value.toFixed(1);
}

function ratio(value: number, floor: number): string {
  return `${(value / floor).toFixed(2)} (+${
    Math.round((value / floor - 1) * 100)
  }%)`;
}

/**
 * The mean CPU time of a variant's runs, or undefined where the CPU time is
 * unknown. A mean, not a median: the unit is a 10 ms tick, so a median jumps
 * by whole ticks while the mean of 40 runs resolves 0.25 ms.
 */
export function meanCpu(times: Measurements, name: string): number | undefined {
  const samples = times.get(name) ?? [];
  if (samples.length === 0) return undefined;
  let total = 0;
  for (const sample of samples) {
    if (sample.cpu === undefined) return undefined;
    total += sample.cpu;
  }
  return total / samples.length;
}

/** The settings `regressions` needs. */
export interface RegressionOptions {
  /** The service counts measured. */
  services: readonly number[];
  /** The largest CPU ratio (this / baseline) that passes. */
  maxRatio: number;
}

/**
 * One line per service count whose warm launch took more CPU time than the
 * baseline's times `maxRatio` beyond the noise, or whose CPU time is unknown
 * (no /proc: the gate cannot pass blind). Empty: no regression.
 *
 * Noise-aware: the two checkouts run next to each other in every round, so
 * each round gives one difference (this − baseline) in which the machine's
 * drift cancels. A regression is a mean difference above the allowed one,
 * (`maxRatio` − 1) × the baseline's mean, by more than two standard errors
 * of that mean: a ratio past `maxRatio` that the rounds' spread can explain
 * passes, and is shown in the report for a human to judge.
 */
export function regressions(
  times: Measurements,
  options: RegressionOptions,
): string[] {
  const found: string[] = [];
  for (const count of options.services) {
    const own = times.get(`sherlock ${count} warm`) ?? [];
    const base = times.get(`baseline ${count} warm`) ?? [];
    const ownMean = meanCpu(times, `sherlock ${count} warm`);
    const baseMean = meanCpu(times, `baseline ${count} warm`);
    if (ownMean === undefined || baseMean === undefined) {
      found.push(`${count} services: no CPU time measured (Linux only)`);
      continue;
    }
    const rounds = Math.min(own.length, base.length);
    const differences = Array.from(
      { length: rounds },
      (_, index) => own[index].cpu! - base[index].cpu!,
    );
    const mean = differences.reduce((sum, value) => sum + value, 0) / rounds;
    const variance = rounds < 2 ? 0 : differences.reduce(
      (sum, value) => sum + (value - mean) ** 2,
      0,
    ) / (rounds - 1);
    const margin = 2 * Math.sqrt(variance / rounds);
    const allowed = (options.maxRatio - 1) * baseMean;
    if (mean - margin > allowed) {
      found.push(
        `${count} services: CPU ${ms(ownMean)} ms against the baseline's ${
          ms(baseMean)
        } ms, ratio ${(ownMean / baseMean).toFixed(3)} > ${options.maxRatio}` +
          ` (per round +${ms(mean)} ± ${ms(margin)} ms, allowed +${
            ms(allowed)
          })`,
      );
    }
  }
  return found;
}

/** The Markdown report of a benchmark. */
export function report(
  times: Measurements,
  options: {
    runs: number;
    compiled: boolean;
    baseline?: string;
    services: readonly number[];
  },
): string {
  const wall = (name: string) =>
    summarize((times.get(name) ?? []).map((sample) => sample.wall));
  const cpu = (name: string): number | undefined => meanCpu(times, name);
  const row = (label: string, name: string, floorName: string): string => {
    const own = wall(name);
    const floor = wall(floorName);
    const ownCpu = cpu(name);
    const floorCpu = cpu(floorName);
    return `| ${label} | ${ms(own.median)} | ${ms(own.p90)} | ${
      ratio(own.median, floor.median)
    } | ${ownCpu === undefined ? "n/a" : ms(ownCpu)} | ${
      ownCpu === undefined || floorCpu === undefined
        ? "n/a"
        : ratio(ownCpu, floorCpu)
    } |`;
  };
  const header = [
    "| case | wall median | wall p90 | median / floor | CPU mean | CPU / floor |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
  ];
  const lines = [
    `Times in ms over ${options.runs} interleaved runs per row; CPU is the`,
    "child's user + system time (Linux, 10 ms ticks, so a mean).",
    "",
    ...header,
    row("floor (deno run, spawn /bin/true)", "floor", "floor"),
  ];
  for (const count of options.services) {
    lines.push(
      row(
        `sherlock run, ${count} service${count === 1 ? "" : "s"}, warm cache`,
        `sherlock ${count} warm`,
        "floor",
      ),
    );
  }
  lines.push(
    "",
    "Against the same floor script placed inside the checkout, so that Deno",
    "sets up the project (deno.json, deno.lock, node_modules/) for both:",
    "",
    ...header,
    row("floor, a script of this project", "project floor", "project floor"),
  );
  for (const count of options.services) {
    lines.push(
      row(
        `sherlock run, ${count} service${count === 1 ? "" : "s"}, warm cache`,
        `sherlock ${count} warm`,
        "project floor",
      ),
    );
  }
  lines.push(
    row(
      "one Tab: completions --complete -- --service ''",
      "complete --service",
      "project floor",
    ),
  );
  lines.push(
    "",
    "Cold validation cache (the profile changed since the last run, so it is",
    "revalidated and zod is imported) against warm:",
    "",
    "| services | warm median | cold median | cold p90 | cold − warm |",
    "| --- | ---: | ---: | ---: | ---: |",
  );
  for (const count of options.services) {
    const warm = wall(`sherlock ${count} warm`);
    const cold = wall(`sherlock ${count} cold`);
    lines.push(
      `| ${count} | ${ms(warm.median)} | ${ms(cold.median)} | ${
        ms(cold.p90)
      } | +${ms(cold.median - warm.median)} |`,
    );
  }
  if (options.baseline) {
    lines.push(
      "",
      `This checkout against the baseline ${options.baseline}, warm cache,`,
      "in the same rounds:",
      "",
      "| services | baseline median | this median | this / baseline | baseline CPU | this CPU | CPU ratio |",
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    );
    for (const count of options.services) {
      const base = wall(`baseline ${count} warm`);
      const own = wall(`sherlock ${count} warm`);
      const baseCpu = cpu(`baseline ${count} warm`);
      const ownCpu = cpu(`sherlock ${count} warm`);
      lines.push(
        `| ${count} | ${ms(base.median)} | ${ms(own.median)} | ${
          (own.median / base.median).toFixed(3)
        } | ${baseCpu === undefined ? "n/a" : ms(baseCpu)} | ${
          ownCpu === undefined ? "n/a" : ms(ownCpu)
        } | ${
          baseCpu === undefined || ownCpu === undefined
            ? "n/a"
            : (ownCpu / baseCpu).toFixed(3)
        } |`,
      );
    }
  }
  if (options.compiled) {
    lines.push("", "Compiled binary:", "", ...header);
    lines.push(row("floor", "compiled floor", "compiled floor"));
    for (const count of options.services) {
      lines.push(
        row(
          `compiled sherlock, ${count} services, warm`,
          `compiled ${count} warm`,
          "compiled floor",
        ),
      );
    }
    lines.push(
      row(
        "compiled, one Tab of completion",
        "compiled complete --service",
        "compiled floor",
      ),
    );
  }
  return lines.join("\n");
}

/** The machine, for the report's header. */
function machine(): string {
  let model = cpus()[0]?.model ?? "unknown CPU";
  try {
    const cpuinfo = Deno.readTextFileSync("/proc/cpuinfo");
    model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? model;
  } catch {
    // Not Linux: node:os's model will do.
  }
  return `${navigator.hardwareConcurrency} CPUs (${model}), ${Deno.build.target}, Deno ${Deno.version.deno}`;
}

async function main(args: readonly string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USAGE);
    return 0;
  }
  let options: BenchOptions;
  try {
    options = parseBenchArgs(args);
  } catch (error) {
    console.error(`bench: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const sandbox = makeSandbox(options.services);
  try {
    const list = variants(options, sandbox);
    const encoder = new TextEncoder();
    const progress = Deno.stderr.isTerminal();
    const times = measure(options, list, (round, total) => {
      if (!progress) return;
      Deno.stderr.writeSync(
        encoder.encode(`\rbench: round ${round + 1}/${total}`),
      );
    });
    if (progress) Deno.stderr.writeSync(encoder.encode("\n"));
    console.log(`${new Date().toISOString().slice(0, 10)}, ${machine()}\n`);
    console.log(report(times, {
      runs: options.runs,
      compiled: !!options.bin,
      baseline: options.baseline,
      services: options.services,
    }));
    if (options.maxRatio === undefined) return 0;
    const found = regressions(times, {
      services: options.services,
      maxRatio: options.maxRatio,
    });
    if (found.length === 0) {
      console.log(
        `\nNo regression: every CPU ratio is within ${options.maxRatio}.`,
      );
      return 0;
    }
    for (const line of found) console.error(`bench: regression: ${line}`);
    return REGRESSION_EXIT_CODE;
  } catch (error) {
    console.error(`\nbench: ${(error as Error).message}`);
    return 1;
  } finally {
    await Deno.remove(sandbox.dir, { recursive: true });
    if (sandbox.runtime !== sandbox.dir) {
      await Deno.remove(sandbox.runtime, { recursive: true });
    }
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
