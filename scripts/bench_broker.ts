/**
 * `deno task bench:broker`: what the credential broker costs a session.
 * Socket round trips against a real daemon; `sherlock run` with ten
 * helper-backed services on a cold and a warm token cache, against the same
 * services without tokens (the control that tells the broker's share from
 * the services'); and bursts of 20 sessions, which show single flight. All
 * from source in a throwaway HOME, the variants interleaved so that a shared
 * machine's noise spreads over all of them. docs/BENCHMARKS.md (Broker)
 * details the cases and keeps the figures; `--help` the options.
 *
 * @module
 */

import { childrenCpuMs, summarize } from "./bench_stats.ts";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { unixHttpRequest } from "../lib/runtime/unix_http.ts";

/** The benchmark's settings, from the command line. */
export interface BrokerBenchOptions {
  /** Measured rounds of the session variants. */
  runs: number;
  /** Unmeasured rounds first. */
  warmup: number;
  /** Requests per round-trip series. */
  requests: number;
  /** Bursts of 20 simultaneous sessions. */
  bursts: number;
  /** The sherlock checkout to measure (default: this one). */
  root: string;
}

/** The services of the session benchmark, and how long each helper takes. */
const SERVICES = 10;
const HELPER_SECONDS = 0.2;
const BURST = 20;
const PASSPHRASE = "benchmark passphrase, not a secret";

const USAGE =
  `Usage: deno task bench:broker [--runs N] [--warmup N] [--requests N] [--bursts N]

  --runs N      measured rounds of the session variants (default 20)
  --warmup N    unmeasured rounds first (default 3)
  --requests N  requests per round-trip series (default 1000)
  --bursts N    bursts of ${BURST} simultaneous sessions (default 5)
  --root DIR    the sherlock checkout to measure (default: this one), e.g.
                an older commit from "git archive" to compare against`;

/** Parses the command line; throws a one-line message on a mistake. */
export function parseBrokerBenchArgs(
  args: readonly string[],
): BrokerBenchOptions {
  const options: BrokerBenchOptions = {
    runs: 20,
    warmup: 3,
    requests: 1000,
    bursts: 5,
    root: join(dirname(fileURLToPath(import.meta.url)), ".."),
  };
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    const text = args[++index];
    if (arg === "--root" && text !== undefined) {
      options.root = text;
      continue;
    }
    const number = Number(text);
    if (text === undefined || !Number.isInteger(number) || number < 0) {
      throw new Error(`${arg} needs a whole number`);
    }
    if (arg === "--runs") options.runs = Math.max(1, number);
    else if (arg === "--warmup") options.warmup = number;
    else if (arg === "--requests") options.requests = Math.max(1, number);
    else if (arg === "--bursts") options.bursts = Math.max(1, number);
    else throw new Error(`unknown argument ${arg}`);
  }
  return options;
}

/** The throwaway folders and the environments of the variants. */
interface Sandbox {
  dir: string;
  runtime: string;
  /** With the 10 services. */
  env: Record<string, string>;
  /** With no services (same HOME, runtime folder and broker). */
  envNone: Record<string, string>;
  /** With 10 services that need no token: loaded and rendered, no broker. */
  envNoToken: Record<string, string>;
  socket: string;
  /** Each helper's run counter. */
  counters: string[];
}

/** The checkout being measured; set from `--root` before anything runs. */
let root = "";

const TRIVIAL_PROFILE = `[agent]
name = "trivial"
executable = "/bin/true"

[mcp]
mode = "cli-flag"
flag = "--mcp-config"
`;

function makeSandbox(): Sandbox {
  const dir = Deno.makeTempDirSync({ prefix: "sherlock-bench-broker-" });
  let runtime = dir;
  try {
    if (Deno.statSync("/dev/shm").isDirectory) {
      runtime = Deno.makeTempDirSync({ dir: "/dev/shm", prefix: "sb-" });
    }
  } catch {
    // No tmpfs: the runtime folder stays with the rest.
  }
  const runtimeDir = join(runtime, "run");
  Deno.mkdirSync(runtimeDir, { mode: 0o700 });
  const bin = join(dir, "bin");
  Deno.mkdirSync(bin);
  const shared = {
    HOME: join(dir, "home"),
    XDG_STATE_HOME: join(dir, "state"),
    XDG_DATA_HOME: join(dir, "data"),
    XDG_CACHE_HOME: join(dir, "cache"),
    XDG_RUNTIME_DIR: runtimeDir,
    DENO_DIR: join(dir, "deno"),
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    NO_COLOR: "1",
  };
  Deno.mkdirSync(shared.HOME);
  const counters: string[] = [];
  const envFor = (name: string, services: number, tokens = true) => {
    const config = join(dir, `config-${name}`);
    const agents = join(config, "sherlock", "agents.d");
    const servicesDir = join(config, "sherlock", "services.d");
    Deno.mkdirSync(agents, { recursive: true });
    Deno.mkdirSync(servicesDir, { recursive: true });
    Deno.writeTextFileSync(join(agents, "trivial.toml"), TRIVIAL_PROFILE);
    for (let index = 1; index <= services; index++) {
      const service = `svc${String(index).padStart(2, "0")}`;
      if (!tokens) {
        Deno.writeTextFileSync(
          join(servicesDir, `${service}.toml`),
          `[service]\nname = "${service}"\n\n[server]\ncommand = "${service}-mcp-server"\n`,
        );
        continue;
      }
      const counter = join(dir, `${service}.runs`);
      counters.push(counter);
      const helper = join(bin, `${service}-helper`);
      Deno.writeTextFileSync(
        helper,
        `#!/bin/sh\necho run >> '${counter}'\nsleep ${HELPER_SECONDS}\necho tok_${service}\n`,
        { mode: 0o755 },
      );
      Deno.writeTextFileSync(
        join(servicesDir, `${service}.toml`),
        `[service]\nname = "${service}"\n\n[server]\ncommand = "${service}-mcp-server"\n\n` +
          `[token]\nsource = "command"\ncommand = ["${helper}"]\nenv = "TOKEN"\nttl = 3600\n`,
      );
    }
    return { ...shared, XDG_CONFIG_HOME: config };
  };
  return {
    dir,
    runtime,
    env: envFor("services", SERVICES),
    envNone: envFor("none", 0),
    envNoToken: envFor("notoken", SERVICES, false),
    socket: join(runtimeDir, "sherlock", "broker.sock"),
    counters,
  };
}

/** One session's wall time and (run alone) CPU time, in ms. */
interface Sample {
  wall: number;
  cpu: number;
}

/** Runs one sherlock alone to the end; its wall and CPU time. */
async function timedSession(
  args: string[],
  env: Record<string, string>,
): Promise<Sample> {
  const before = childrenCpuMs();
  const wall = await runSherlock(args, env);
  return { wall, cpu: (childrenCpuMs() ?? NaN) - (before ?? NaN) };
}

/** Runs sherlock to the end; resolves to its wall time; rejects when it fails. */
async function runSherlock(
  args: string[],
  env: Record<string, string>,
): Promise<number> {
  const start = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", join(root, "main.ts"), ...args],
    cwd: root,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  const wall = performance.now() - start;
  if (!output.success) {
    throw new Error(
      `sherlock ${args.join(" ")} exited ${output.code}: ${
        new TextDecoder().decode(output.stderr).trim()
      }`,
    );
  }
  return wall;
}

async function call(
  socket: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<unknown> {
  const response = await unixHttpRequest({
    socket,
    method,
    path,
    body,
    timeoutMs: 120_000,
  });
  if (response.status !== 200) {
    throw new Error(
      `${method} ${path}: HTTP ${response.status} ${
        JSON.stringify(response.body)
      }`,
    );
  }
  return response.body;
}

/** Locks and unlocks the store: every cached token is dropped. */
async function coldCache(socket: string): Promise<void> {
  await call(socket, "POST", "/v1/logout");
  await call(socket, "POST", "/v1/login", { passphrase: PASSPHRASE });
}

function countRuns(counter: string): number {
  try {
    return Deno.readTextFileSync(counter).split("\n").filter((l) => l).length;
  } catch {
    return 0;
  }
}

/** Times `count` sequential requests; returns each one's ms. */
/** One kind of request of the round-trip series. */
interface Probe {
  method: string;
  path: string;
  body?: unknown;
}

/**
 * Times `count` sequential requests of each kind, interleaved (one of each
 * per round, the order rotating) so that the machine's load spreads over
 * every kind alike; returns each kind's times in ms.
 */
async function roundTrips(
  socket: string,
  probes: readonly Probe[],
  count: number,
): Promise<number[][]> {
  const times = probes.map(() => [] as number[]);
  for (let round = 0; round < count; round++) {
    for (let offset = 0; offset < probes.length; offset++) {
      const index = (round + offset) % probes.length;
      const probe = probes[index];
      const start = performance.now();
      await call(socket, probe.method, probe.path, probe.body);
      times[index].push(performance.now() - start);
    }
  }
  return times;
}

function ms(value: number, digits = 1): string {
  return value.toFixed(digits);
}

/** `+d ms (+p%)` of `value` against `base`. */
function percent(value: number, base: number): string {
  const sign = value >= base ? "+" : "−";
  return `${sign}${ms(Math.abs(value - base))} ms (${sign}${
    Math.abs((value / base - 1) * 100).toFixed(1)
  }%)`;
}

async function main(): Promise<number> {
  let options: BrokerBenchOptions;
  try {
    options = parseBrokerBenchArgs(Deno.args);
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  root = options.root;
  const sandbox = makeSandbox();
  const log = (line: string) => console.error(`bench:broker: ${line}`);
  try {
    log(`sandbox ${sandbox.dir}, runtime ${sandbox.runtime}`);
    await runSherlock(["broker", "start"], sandbox.env);
    const passphraseFile = join(sandbox.dir, "passphrase");
    Deno.writeTextFileSync(passphraseFile, `${PASSPHRASE}\n`);
    await runSherlock(
      ["login", "--passphrase-file", passphraseFile],
      sandbox.env,
    );
    const health = await call(sandbox.socket, "GET", "/v1/health") as {
      pid: number;
    };

    // 1. Round trips.
    log(`${options.requests} round trips of each kind`);
    const services = sandbox.counters.map((_, index) =>
      `svc${String(index + 1).padStart(2, "0")}`
    );
    // The daemon serves registered sessions only; this process stands in
    // for the session's sherlock. (A daemon without sessions ignores the
    // capability and reads the session and agent instead.)
    const registered = await unixHttpRequest({
      socket: sandbox.socket,
      method: "POST",
      path: "/v1/sessions",
      body: { session: "bench", agent: "trivial", services, pid: Deno.pid },
      timeoutMs: 120_000,
    });
    const claims = {
      session: "bench",
      agent: "trivial",
      ...(registered.status === 200
        ? { capability: (registered.body as { capability: string }).capability }
        : {}),
    };
    const token = {
      method: "POST",
      path: "/v1/token",
      body: { service: "svc01", ...claims },
    };
    const batch = {
      method: "POST",
      path: "/v1/tokens",
      body: { services, ...claims },
    };
    const hasBatch = (await unixHttpRequest({
      socket: sandbox.socket,
      method: "POST",
      path: "/v1/tokens",
      body: batch.body,
      timeoutMs: 120_000,
    })).status === 200;
    const probes = [
      token,
      { method: "GET", path: "/v1/health" },
      ...(hasBatch ? [batch] : []),
    ];
    await roundTrips(sandbox.socket, probes, 50); // fills the cache, warms up
    const [tokenTimes, healthTimes, batchTimes = []] = await roundTrips(
      sandbox.socket,
      probes,
      options.requests,
    );

    // 2. Sessions: cold, warm, none, interleaved.
    const variants: { name: string; run: () => Promise<Sample> }[] = [
      {
        name: "cold",
        run: async () => {
          await coldCache(sandbox.socket);
          return await timedSession(["run", "trivial"], sandbox.env);
        },
      },
      {
        name: "warm",
        run: () => timedSession(["run", "trivial"], sandbox.env),
      },
      {
        name: "none",
        run: () => timedSession(["run", "trivial"], sandbox.envNone),
      },
      {
        name: "notoken",
        run: () => timedSession(["run", "trivial"], sandbox.envNoToken),
      },
    ];
    const samples = new Map(variants.map((v) => [v.name, [] as Sample[]]));
    const rounds = options.warmup + options.runs;
    for (let round = 0; round < rounds; round++) {
      log(`session round ${round + 1}/${rounds}`);
      // Rotate the order, but a warm run needs the cache filled: the first
      // round starts with cold.
      for (let offset = 0; offset < variants.length; offset++) {
        const variant = variants[(round + offset) % variants.length];
        const sample = await variant.run();
        if (round >= options.warmup) samples.get(variant.name)!.push(sample);
      }
    }

    // 3. Bursts of 20 on a cold cache.
    const burstWalls: number[] = [];
    const burstRuns: number[] = [];
    const helperRuns: number[][] = [];
    for (let burst = 0; burst < options.bursts; burst++) {
      log(`burst ${burst + 1}/${options.bursts} of ${BURST} sessions`);
      await coldCache(sandbox.socket);
      const before = sandbox.counters.map(countRuns);
      const start = performance.now();
      const walls = await Promise.all(
        Array.from(
          { length: BURST },
          () => runSherlock(["run", "trivial"], sandbox.env),
        ),
      );
      burstWalls.push(performance.now() - start);
      burstRuns.push(...walls);
      helperRuns.push(
        sandbox.counters.map((counter, index) =>
          countRuns(counter) - before[index]
        ),
      );
    }
    const after = await call(sandbox.socket, "GET", "/v1/health") as {
      pid: number;
    };
    if (after.pid !== health.pid) throw new Error("the daemon was replaced");

    // Report.
    const token1 = summarize(tokenTimes);
    const health1 = summarize(healthTimes);
    const batch1 = hasBatch ? summarize(batchTimes) : undefined;
    const wallOf = (name: string) =>
      summarize(samples.get(name)!.map((sample) => sample.wall));
    const cpuOf = (name: string) => {
      const list = samples.get(name)!;
      return list.reduce((sum, sample) => sum + sample.cpu, 0) / list.length;
    };
    const cold = wallOf("cold");
    const warm = wallOf("warm");
    const none = wallOf("none");
    const noToken = wallOf("notoken");
    const [coldCpu, warmCpu, noneCpu, noTokenCpu] = [
      "cold",
      "warm",
      "none",
      "notoken",
    ].map(cpuOf);
    const bursts = summarize(burstWalls);
    const perRun = summarize(burstRuns);
    const allOnce = helperRuns.every((runs) => runs.every((n) => n === 1));
    const cpu = cpus()[0]?.model ?? "unknown CPU";
    const out: string[] = [];
    out.push(
      `Measured ${
        new Date().toISOString().slice(0, 10)
      } on ${cpus().length} × ${cpu}, ${Deno.build.os} ${Deno.build.arch}, ` +
        `Deno ${Deno.version.deno}; ${options.runs} rounds after ${options.warmup} warm-up, ` +
        `${options.requests} requests per series, ${options.bursts} bursts.`,
      "",
      "| round trip over the socket (one connection each) | median ms | p90 ms | p99 ms | requests/s (1 / mean) |",
      "| --- | ---: | ---: | ---: | ---: |",
    );
    const mean = (times: number[]) =>
      times.reduce((a, b) => a + b, 0) / times.length;
    out.push(
      `| \`POST /v1/token\`, cached token | ${ms(token1.median, 2)} | ${
        ms(token1.p90, 2)
      } | ${ms(token1.p99, 2)} | ${Math.round(1000 / mean(tokenTimes))} |`,
      ...(batch1
        ? [
          `| \`POST /v1/tokens\`, ${SERVICES} cached tokens | ${
            ms(batch1.median, 2)
          } | ${ms(batch1.p90, 2)} | ${ms(batch1.p99, 2)} | ${
            Math.round(1000 / mean(batchTimes))
          } |`,
        ]
        : []),
      `| \`GET /v1/health\` | ${ms(health1.median, 2)} | ${
        ms(health1.p90, 2)
      } | ${ms(health1.p99, 2)} | ${Math.round(1000 / mean(healthTimes))} |`,
      "",
      `| \`sherlock run\` (agent /bin/true) | wall median ms | wall p90 ms | median / none | CPU mean ms | CPU / none |`,
      "| --- | ---: | ---: | ---: | ---: | ---: |",
      ...([
        ["no services (no broker)", none, noneCpu],
        [
          `${SERVICES} services without a token (no broker)`,
          noToken,
          noTokenCpu,
        ],
        [`${SERVICES} command services, warm cache`, warm, warmCpu],
        [
          `${SERVICES} command services, cold cache (helpers ${
            HELPER_SECONDS * 1000
          } ms each)`,
          cold,
          coldCpu,
        ],
      ] as const).map(([label, wall, cpu]) =>
        `| ${label} | ${ms(wall.median)} | ${ms(wall.p90)} | ${
          (wall.median / none.median).toFixed(2)
        } | ${ms(cpu)} | ${(cpu / noneCpu).toFixed(2)} |`
      ),
      "",
      `- cold − warm (the broker's time to run ${SERVICES} helpers), wall: ${
        ms(cold.median - warm.median)
      } ms (one helper: ${HELPER_SECONDS * 1000} ms; ${SERVICES} in a row: ${
        SERVICES * HELPER_SECONDS * 1000
      } ms)`,
      `- warm against none: wall ${percent(warm.median, none.median)}, CPU ${
        percent(warmCpu, noneCpu)
      }`,
      `- warm against ${SERVICES} services without a token (the broker's own share): wall ${
        percent(warm.median, noToken.median)
      }, CPU ${percent(warmCpu, noTokenCpu)}`,
      "",
      `| ${BURST} simultaneous \`sherlock run\`, cold cache | median ms | p90 ms |`,
      "| --- | ---: | ---: |",
      `| whole burst (first start to last exit) | ${ms(bursts.median)} | ${
        ms(bursts.p90)
      } |`,
      `| each session | ${ms(perRun.median)} | ${ms(perRun.p90)} |`,
      "",
      `- helper runs per service per burst: ${
        helperRuns.map((runs) => `[${runs.join(",")}]`).join(" ")
      } → ${
        allOnce ? "each helper ran exactly once per burst" : "NOT once each"
      }`,
    );
    console.log(out.join("\n"));
    return allOnce ? 0 : 1;
  } finally {
    try {
      await runSherlock(["broker", "stop"], sandbox.env);
    } catch (error) {
      log(`could not stop the broker: ${(error as Error).message}`);
    }
    Deno.removeSync(sandbox.dir, { recursive: true });
    if (sandbox.runtime !== sandbox.dir) {
      Deno.removeSync(sandbox.runtime, { recursive: true });
    }
  }
}

if (import.meta.main) Deno.exit(await main());
