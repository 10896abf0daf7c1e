/**
 * `deno task bench:shim`: what the token shim costs each MCP server it
 * starts. `sherlock shim … -- <server>` from source against a real, logged-in
 * broker in a throwaway HOME (the token cached, so no helper runs), the
 * server a shell script that prints one byte and then becomes `cat` (an
 * echoing stdio server of about 1 MiB). For each start:
 *
 * - start time: from spawning the shim to the server's first byte on stdout;
 * - resident memory: the RSS summed over the process tree of that one
 *   shimmed server (the shim's pid and its descendants) once the byte is
 *   there — what stays running for the server's whole life.
 *
 * Variants, interleaved so that a shared machine's noise spreads over all:
 * `exec` (the shim becomes the server), `spawn` (the fallback, which is the
 * shim as it was before exec: `SHERLOCK_SHIM_SPAWN=1`), the same server
 * started directly (the floor), and with `--baseline DIR` another
 * checkout's shim. Reports medians and ratios; docs/BENCHMARKS.md ("The
 * token shim") keeps the figures.
 *
 * @module
 */

import { registerSession } from "../lib/broker/client.ts";
import { CAPABILITY_ENV } from "../lib/render/servers.ts";
import { childrenCpuMs, summarize } from "./bench_stats.ts";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { descendantsInGroup } from "../lib/os/processes.ts";

/** The benchmark's settings, from the command line. */
export interface ShimBenchOptions {
  /** Measured rounds (each runs every variant once). */
  runs: number;
  /** Unmeasured rounds first. */
  warmup: number;
  /** The checkout to measure (default: this one). */
  root: string;
  /** Another checkout whose shim runs in the same rounds. */
  baseline?: string;
}

const PASSPHRASE = "benchmark passphrase, not a secret";
const SESSION = "0123456789ab";

const USAGE =
  `Usage: deno task bench:shim [--runs N] [--warmup N] [--baseline DIR]

  --runs N        measured rounds (default 20); each starts every variant once
  --warmup N      unmeasured rounds first (default 3)
  --root DIR      the sherlock checkout to measure (default: this one)
  --baseline DIR  another checkout (e.g. a worktree of the commit before the
                  exec) whose shim runs in the same rounds`;

/** Parses the command line; throws a one-line message on a mistake. */
export function parseShimBenchArgs(
  args: readonly string[],
): ShimBenchOptions {
  const options: ShimBenchOptions = {
    runs: 20,
    warmup: 3,
    root: join(dirname(fileURLToPath(import.meta.url)), ".."),
  };
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    const text = args[++index];
    if (text === undefined) throw new Error(`${arg} needs a value`);
    if (arg === "--root") options.root = text;
    else if (arg === "--baseline") options.baseline = text;
    else if (arg === "--runs" || arg === "--warmup") {
      const number = Number(text);
      if (!Number.isInteger(number) || number < 0) {
        throw new Error(`${arg} needs a whole number, not ${text}`);
      }
      if (arg === "--runs") options.runs = Math.max(1, number);
      else options.warmup = number;
    } else throw new Error(`unknown argument ${arg}`);
  }
  return options;
}

/** The throwaway HOME with a broker, a service and the server. */
interface Sandbox {
  dir: string;
  env: Record<string, string>;
  socket: string;
  server: string;
}

function makeSandbox(): Sandbox {
  const dir = Deno.makeTempDirSync({ prefix: "sherlock-bench-shim-" });
  const runtimeDir = join(dir, "run");
  Deno.mkdirSync(runtimeDir, { mode: 0o700 });
  const bin = join(dir, "bin");
  Deno.mkdirSync(bin);
  const config = join(dir, "config");
  const services = join(config, "sherlock", "services.d");
  Deno.mkdirSync(services, { recursive: true });
  const helper = join(bin, "api-helper");
  Deno.writeTextFileSync(helper, "#!/bin/sh\necho tok_bench_shim\n", {
    mode: 0o755,
  });
  // ttl: the daemon caches the token, so a shim's start is one round trip.
  Deno.writeTextFileSync(
    join(services, "api.toml"),
    `[service]\nname = "api"\n\n[server]\ncommand = "api-mcp-server"\n\n` +
      `[token]\nsource = "command"\ncommand = ["${helper}"]\nenv = "TOKEN"\nttl = 3600\n`,
  );
  const server = join(bin, "api-mcp-server");
  Deno.writeTextFileSync(server, "#!/bin/sh\nprintf R\nexec cat\n", {
    mode: 0o755,
  });
  const env = {
    HOME: join(dir, "home"),
    XDG_CONFIG_HOME: config,
    XDG_STATE_HOME: join(dir, "state"),
    XDG_DATA_HOME: join(dir, "data"),
    XDG_CACHE_HOME: join(dir, "cache"),
    XDG_RUNTIME_DIR: runtimeDir,
    DENO_DIR: join(dir, "deno"),
    PATH: `${bin}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
    NO_COLOR: "1",
  };
  Deno.mkdirSync(env.HOME);
  return {
    dir,
    env,
    socket: join(runtimeDir, "sherlock", "broker.sock"),
    server,
  };
}

/** Runs `sherlock <args>` from `root` to the end; throws when it fails. */
async function sherlock(
  root: string,
  { args, env }: { args: string[]; env: Record<string, string> },
): Promise<void> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", join(root, "main.ts"), ...args],
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!output.success) {
    throw new Error(
      `sherlock ${args[0]} exited ${output.code}: ${
        new TextDecoder().decode(output.stderr).trim()
      }`,
    );
  }
}

/**
 * One start: ms to the first byte, the tree's RSS then in KiB, and the CPU
 * time of the whole run (shim and server, to their exit) in ms.
 */
interface Sample {
  ms: number;
  rssKiB: number;
  processes: number;
  cpuMs: number;
}

/** The RSS of `pid` in KiB (0 when it is gone). */
function rssKiB(pid: number): number {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/**
 * Starts `argv`, waits for its first byte on stdout, sums the RSS of its
 * tree, then closes its stdin (cat ends, and with it the shim) and waits.
 */
async function start(
  argv: string[],
  env: Record<string, string>,
): Promise<Sample> {
  const cpuBefore = childrenCpuMs() ?? NaN;
  const began = performance.now();
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.getReader();
  const first = await reader.read();
  const ms = performance.now() - began;
  const tree = [child.pid, ...descendantsInGroup(child.pid)];
  const rss = tree.map(rssKiB).reduce((sum, kib) => sum + kib, 0);
  await child.stdin.close();
  while (!(await reader.read()).done) {
    // Drain: cat echoes nothing, the stream ends when it exits.
  }
  const [status, stderr] = await Promise.all([
    child.status,
    new Response(child.stderr).text(),
  ]);
  if (first.done || first.value[0] !== "R".charCodeAt(0) || !status.success) {
    throw new Error(
      `${argv.slice(-3).join(" ")} failed (exit ${status.code}): ${stderr}`,
    );
  }
  return {
    ms,
    rssKiB: rss,
    processes: tree.length,
    cpuMs: (childrenCpuMs() ?? NaN) - cpuBefore,
  };
}

function signed(value: number): string {
  return `${value >= 0 ? "+" : "−"}${Math.abs(value).toFixed(1)}`;
}

async function main(): Promise<number> {
  let options: ShimBenchOptions;
  try {
    options = parseShimBenchArgs(Deno.args);
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (Deno.build.os !== "linux") {
    console.error("bench:shim reads /proc: Linux only");
    return 2;
  }
  const sandbox = makeSandbox();
  const log = (line: string) => console.error(`bench:shim: ${line}`);
  const root = options.root;
  try {
    log(`sandbox ${sandbox.dir}`);
    const passphraseFile = join(sandbox.dir, "passphrase");
    Deno.writeTextFileSync(passphraseFile, `${PASSPHRASE}\n`);
    await sherlock(root, { args: ["broker", "start"], env: sandbox.env });
    await sherlock(root, {
      args: ["login", "--passphrase-file", passphraseFile],
      env: sandbox.env,
    });
    // As `sherlock run` does: a registered session, whose capability every
    // shim presents from its environment (this process stands in for its
    // sherlock). A baseline checkout older than sessions cannot run here.
    const { capability } = await registerSession({
      socket: sandbox.socket,
      session: SESSION,
      agent: "bench",
      services: ["api"],
      pid: Deno.pid,
    });
    const shimEnv = { ...sandbox.env, [CAPABILITY_ENV]: capability };
    const shimOf = (checkout: string) => [
      Deno.execPath(),
      "run",
      "--allow-all",
      "--quiet",
      join(checkout, "main.ts"),
      "shim",
      "--socket",
      sandbox.socket,
      "--session",
      SESSION,
      "--agent",
      "bench",
      "--token-env",
      "TOKEN",
      "api",
      "--",
      "api-mcp-server",
    ];
    const variants: {
      name: string;
      argv: string[];
      env: Record<string, string>;
    }[] = [
      { name: "exec", argv: shimOf(root), env: shimEnv },
      {
        name: "spawn",
        argv: shimOf(root),
        env: { ...shimEnv, SHERLOCK_SHIM_SPAWN: "1" },
      },
      {
        name: "direct",
        argv: [sandbox.server],
        env: { ...sandbox.env, TOKEN: "tok_bench_shim" },
      },
      ...(options.baseline
        ? [{
          name: "baseline",
          argv: shimOf(options.baseline),
          env: shimEnv,
        }]
        : []),
    ];
    const samples = new Map(variants.map((v) => [v.name, [] as Sample[]]));
    const rounds = options.warmup + options.runs;
    for (let round = 0; round < rounds; round++) {
      log(`round ${round + 1}/${rounds}`);
      for (let offset = 0; offset < variants.length; offset++) {
        const variant = variants[(round + offset) % variants.length];
        const sample = await start(variant.argv, variant.env);
        if (round >= options.warmup) samples.get(variant.name)!.push(sample);
      }
    }

    const ms = (name: string) =>
      summarize(samples.get(name)!.map((sample) => sample.ms));
    const mib = (name: string) =>
      summarize(samples.get(name)!.map((sample) => sample.rssKiB / 1024));
    const cpuMean = (name: string) => {
      const list = samples.get(name)!;
      return list.reduce((sum, sample) => sum + sample.cpuMs, 0) / list.length;
    };
    const processes = (name: string) =>
      Math.max(...samples.get(name)!.map((sample) => sample.processes));
    const exec = { ms: ms("exec"), mib: mib("exec") };
    const spawn = { ms: ms("spawn"), mib: mib("spawn") };
    const direct = { ms: ms("direct"), mib: mib("direct") };
    const baseline = options.baseline
      ? { ms: ms("baseline"), mib: mib("baseline") }
      : undefined;
    const cpu = cpus()[0]?.model ?? "unknown CPU";
    const row = (
      label: string,
      name: string,
      figures: { ms: { median: number; p90: number }; mib: { median: number } },
    ) =>
      `| ${label} | ${processes(name)} | ${figures.mib.median.toFixed(1)} | ${
        figures.ms.median.toFixed(1)
      } | ${figures.ms.p90.toFixed(1)} | ${cpuMean(name).toFixed(1)} |`;
    const out = [
      `Measured ${
        new Date().toISOString().slice(0, 10)
      } on ${cpus().length} × ${cpu}, ${Deno.build.os} ${Deno.build.arch}, ` +
      `Deno ${Deno.version.deno}; ${options.runs} rounds after ${options.warmup} warm-up.`,
      "",
      "| one shimmed server | processes | RSS of its tree, median MiB | start to first byte, median ms | p90 ms | CPU per start, mean ms |",
      "| --- | ---: | ---: | ---: | ---: | ---: |",
      row("the server started directly (floor)", "direct", direct),
      row("shim, exec (now)", "exec", exec),
      row(
        "shim, spawn fallback (`SHERLOCK_SHIM_SPAWN=1`, as before)",
        "spawn",
        spawn,
      ),
      ...(baseline
        ? [row(`shim of ${options.baseline}`, "baseline", baseline)]
        : []),
      "",
      `- resident memory, exec / spawn: ${
        (exec.mib.median / spawn.mib.median).toFixed(2)
      } (${
        (spawn.mib.median - exec.mib.median).toFixed(1)
      } MiB less per shimmed server; ten servers: ${
        (10 * (spawn.mib.median - exec.mib.median)).toFixed(0)
      } MiB)`,
      `- start to first byte, exec / spawn: ${
        (exec.ms.median / spawn.ms.median).toFixed(2)
      } (exec − spawn: ${signed(exec.ms.median - spawn.ms.median)} ms)`,
      `- CPU per start, exec / spawn: ${
        (cpuMean("exec") / cpuMean("spawn")).toFixed(2)
      } (exec − spawn: ${signed(cpuMean("exec") - cpuMean("spawn"))} ms)`,
      `- the shim's own start (exec − direct): ${
        (exec.ms.median - direct.ms.median).toFixed(1)
      } ms`,
      ...(baseline
        ? [
          `- exec / baseline: memory ${
            (exec.mib.median / baseline.mib.median).toFixed(2)
          }, start ${(exec.ms.median / baseline.ms.median).toFixed(2)}`,
        ]
        : []),
    ];
    console.log(out.join("\n"));
    return 0;
  } finally {
    try {
      await sherlock(root, { args: ["broker", "stop"], env: sandbox.env });
    } catch (error) {
      log(`could not stop the broker: ${(error as Error).message}`);
    }
    Deno.removeSync(sandbox.dir, { recursive: true });
  }
}

if (import.meta.main) Deno.exit(await main());
