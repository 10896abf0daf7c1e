/**
 * `deno task bench:bridge [--runs N] [--warmup N] [--requests N] [--variants
 * LIST]`: what the bridge's relay costs, side by side with its peer. Every
 * variant relays stdio JSON-RPC to the same remote test server
 * (tests/fixtures/remote_mcp_server.ts, in this process, on 127.0.0.1) with
 * the same fixed bearer token (no broker; the token is read from a file,
 * never passed in argv):
 *
 * - **floor**: a Deno process that answers the first line on stdin itself;
 * - **sherlock**: sherlock's relay (`lib/bridge/relay.ts`) from source;
 * - **bridge**: the real `sherlock bridge` command from source (main.ts),
 *   its token from a broker in a throwaway HOME (tests/helpers/
 *   broker_home.ts: a credential helper with a 1-hour expiry, so the bridge
 *   asks the broker once), under a session registered as `sherlock run`
 *   would;
 * - **sdk**: the same relay on the official SDK's
 *   `StreamableHTTPClientTransport` (scripts/bench_bridge/);
 * - **mcp-remote**: the npm package `mcp-remote` (its pinned version below,
 *   installed into `.cache/bench/` on first use) under `node`, with the
 *   token in a `--header-file`, `--transport http-only`, `--silent`, and a
 *   throwaway `HOME` (it writes `~/.mcp-auth`).
 *
 * Per run: the time from spawn to the answer to `initialize` on stdout
 * (start-up plus one relayed request), then sequential `ping` round trips
 * over the same connection, then the peak resident memory of the relay's
 * process tree (the summed `VmHWM`, scripts/bench_bridge/process_tree.ts).
 * The variants are interleaved, one of each per round in a rotating order.
 * Also: the same pings sent by `fetch` from this process (no relay).
 * docs/BENCHMARKS.md (The bridge) keeps the figures.
 *
 * @module
 */

import { summarize } from "./bench_stats.ts";
import { treePeakKiB } from "./bench_bridge/process_tree.ts";
import { startRemoteMcpServer } from "../tests/fixtures/remote_mcp_server.ts";
import { createBrokerHome } from "../tests/helpers/broker_home.ts";
import { tokenServiceToml } from "../tests/helpers/profiles.ts";
import { registerSession } from "../lib/broker/client.ts";
import { CAPABILITY_ENV } from "../lib/render/servers.ts";

/** The version of `mcp-remote` that the benchmark installs and runs. */
export const MCP_REMOTE_VERSION = "0.15.1";

/** The variants, in the order they are reported. */
export const VARIANTS = [
  "floor",
  "sherlock",
  "bridge",
  "sdk",
  "mcp-remote",
] as const;

/** One relay the benchmark measures. */
export type VariantName = typeof VARIANTS[number];

/** What the command line asks for. */
export interface BridgeBenchOptions {
  /** Measured rounds; each runs every variant once. */
  runs: number;
  /** Unmeasured rounds first (caches, JIT). */
  warmup: number;
  /** Sequential pings per run. */
  requests: number;
  /** Which variants run, in report order. */
  variants: VariantName[];
}

const ROOT = new URL("../", import.meta.url);
const BENCH_CACHE = new URL(".cache/bench/", ROOT);
const DENO_SCRIPTS: Partial<Record<VariantName, string>> = {
  floor: "scripts/bench_bridge/floor.ts",
  sherlock: "scripts/bench_bridge/fetch_relay.ts",
  sdk: "scripts/bench_bridge/sdk_relay.ts",
};

const USAGE =
  `Usage: deno task bench:bridge [--runs N] [--warmup N] [--requests N] [--variants LIST]

  --runs N          measured rounds (default 15); each runs every variant once
  --warmup N        unmeasured rounds first (default 2)
  --requests N      sequential pings per run (default 100)
  --variants LIST   comma-separated, of ${VARIANTS.join(", ")} (default: all)

mcp-remote@${MCP_REMOTE_VERSION} is installed with npm into .cache/bench/ on
first use and runs under node (both must be on PATH).`;

/** Parses the command line; throws a one-line message on a mistake. */
export function parseBridgeBenchArgs(
  args: readonly string[],
): BridgeBenchOptions {
  const options: BridgeBenchOptions = {
    runs: 15,
    warmup: 2,
    requests: 100,
    variants: [...VARIANTS],
  };
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    const value = (): string => {
      const next = args[++index];
      if (next === undefined) throw new Error(`${arg} needs a value`);
      return next;
    };
    const count = (minimum: number): number => {
      const text = value();
      const number = Number(text);
      if (!Number.isInteger(number) || number < minimum) {
        throw new Error(
          `${arg} needs a whole number of at least ${minimum}, not ${text}`,
        );
      }
      return number;
    };
    if (arg === "--runs") options.runs = count(1);
    else if (arg === "--warmup") options.warmup = count(0);
    else if (arg === "--requests") options.requests = count(1);
    else if (arg === "--variants") {
      const names = value().split(",").map((name) => name.trim());
      for (const name of names) {
        if (!(VARIANTS as readonly string[]).includes(name)) {
          throw new Error(
            `--variants: unknown variant ${name} (known: ${
              VARIANTS.join(", ")
            })`,
          );
        }
      }
      // Report order, not the order given, and each once.
      options.variants = VARIANTS.filter((name) => names.includes(name));
    } else throw new Error(`unknown argument ${arg}`);
  }
  return options;
}

/** The order of the variants in round `round`: rotated, so none is always first. */
export function roundOrder<T>(variants: readonly T[], round: number): T[] {
  const shift = variants.length === 0 ? 0 : round % variants.length;
  return [...variants.slice(shift), ...variants.slice(0, shift)];
}

/** One run of one variant. */
interface RunResult {
  firstMs: number;
  pingsMs: number[];
  peakKiB: number;
  processes: number;
}

/** The figures of one variant over all its runs. */
export interface VariantFigures {
  /** Spawn → initialize answer, median, ms. */
  firstMedian: number;
  /** Spawn → initialize answer, p90, ms. */
  firstP90: number;
  /** Ping round trip, p50 over all pings of all runs, ms (NaN: no pings). */
  pingP50: number;
  /** Ping round trip, p99 over all pings of all runs, ms (NaN: no pings). */
  pingP99: number;
  /** Peak RSS of the relay's process tree, median, MiB (NaN: not measured). */
  peakMiB: number;
}

/** Summarizes the runs of one variant. */
export function figuresOf(
  runs: readonly {
    firstMs: number;
    pingsMs: readonly number[];
    peakKiB: number;
  }[],
): VariantFigures {
  const first = summarize(runs.map((run) => run.firstMs));
  const pings = summarize(runs.flatMap((run) => run.pingsMs));
  const peak = summarize(runs.map((run) => run.peakKiB / 1024));
  return {
    firstMedian: first.median,
    firstP90: first.p90,
    pingP50: pings.count === 0 ? NaN : pings.median,
    pingP99: pings.count === 0 ? NaN : pings.p99,
    peakMiB: peak.median,
  };
}

/**
 * `peer` over `base`, column by column: above 1 where the base is ahead
 * (every column is a cost: less is better).
 */
export function ratios(
  base: VariantFigures,
  peer: VariantFigures,
): VariantFigures {
  return {
    firstMedian: peer.firstMedian / base.firstMedian,
    firstP90: peer.firstP90 / base.firstP90,
    pingP50: peer.pingP50 / base.pingP50,
    pingP99: peer.pingP99 / base.pingP99,
    peakMiB: peer.peakMiB / base.peakMiB,
  };
}

/**
 * The ratio rows, [peer, base]: the peer's figures over the base's. The
 * relay alone and the whole `sherlock bridge` command, each against the
 * SDK's transport and against mcp-remote.
 */
const RATIO_ROWS: readonly [VariantName, VariantName][] = [
  ["bridge", "sherlock"],
  ["sdk", "sherlock"],
  ["mcp-remote", "sherlock"],
  ["mcp-remote", "bridge"],
];

/** The Markdown table of the figures, and the ratio rows (peer / base). */
export function formatTable(
  figures: ReadonlyMap<string, VariantFigures>,
): string {
  const cell = (n: number, digits: number) =>
    Number.isFinite(n) ? n.toFixed(digits) : "";
  const row = (label: string, f: VariantFigures, digits: number[]) =>
    `| ${label} | ${cell(f.firstMedian, digits[0])} | ${
      cell(f.firstP90, digits[0])
    } | ${cell(f.pingP50, digits[1])} | ${cell(f.pingP99, digits[1])} | ${
      cell(f.peakMiB, digits[2])
    } |`;
  const lines = [
    "| variant | spawn → initialize answer, median ms | p90 ms | ping p50 ms | ping p99 ms | peak RSS MiB, median |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const [name, f] of figures) lines.push(row(name, f, [1, 2, 1]));
  for (const [peer, base] of RATIO_ROWS) {
    const over = figures.get(base);
    const other = figures.get(peer);
    if (!over || !other) continue;
    lines.push(row(`${peer} / ${base}`, ratios(over, other), [2, 2, 2]));
  }
  return lines.join("\n");
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "bench", version: "1" },
  },
};

/** How to start one variant. */
interface Launch {
  argv: string[];
  /** Replaces the environment when set; else it is inherited. */
  env?: Record<string, string>;
}

/** Where things live for one benchmark: the token file, mcp-remote's HOME. */
interface Sandbox {
  dir: string;
  tokenFile: string;
  headerFile: string;
  home: string;
}

function launchOf(
  variant: VariantName,
  options: {
    url: string;
    sandbox: Sandbox;
    mcpRemote?: string;
    bridge?: Launch;
  },
): Launch {
  if (variant === "bridge") return options.bridge!;
  const script = DENO_SCRIPTS[variant];
  if (script) {
    return {
      argv: [
        Deno.execPath(),
        "run",
        "--allow-all",
        "--quiet",
        script,
        options.url,
        options.sandbox.tokenFile,
      ],
    };
  }
  return {
    argv: [
      "node",
      options.mcpRemote!,
      options.url,
      "--header-file",
      options.sandbox.headerFile,
      "--transport",
      "http-only",
      "--silent",
    ],
    // A throwaway HOME: mcp-remote keeps its state in ~/.mcp-auth.
    env: { HOME: options.sandbox.home, PATH: Deno.env.get("PATH") ?? "" },
  };
}

/**
 * `sherlock bridge` as a session of `sherlock run` starts it: a logged-in
 * broker in `home` whose service `remote` gets `token` from a credential
 * helper (valid for an hour: the bridge asks the broker once per run), and
 * the session's capability in the environment (this process stands in for
 * `sherlock run`, as tests/integration/bridge_test.ts does).
 */
async function bridgeLaunch(
  home: Awaited<ReturnType<typeof createBrokerHome>>,
  options: { url: string; token: string },
): Promise<Launch> {
  const service = "remote";
  const session = "s-bench-bridge";
  const agent = "bench";
  const helper = home.tokenHelper(service, {
    token: options.token,
    expiresIn: 3600,
  });
  home.writeService(
    service,
    tokenServiceToml({
      name: service,
      url: options.url,
      command: [helper.path],
    }),
  );
  await home.login();
  const { capability } = await registerSession({
    socket: home.socket,
    session,
    agent,
    services: [service],
    pid: Deno.pid,
  });
  return {
    argv: [
      Deno.execPath(),
      "run",
      "--allow-all",
      "--quiet",
      "main.ts",
      "bridge",
      "--socket",
      home.socket,
      "--session",
      session,
      "--agent",
      agent,
      "--url",
      options.url,
      service,
    ],
    env: { ...home.env, [CAPABILITY_ENV]: capability },
  };
}

/** A run that takes longer than this hangs: it is killed and the bench stops. */
const HANG_MS = 60_000;

async function runOnce(
  variant: VariantName,
  launch: Launch,
  requests: number,
): Promise<RunResult> {
  const started = performance.now();
  const child = new Deno.Command(launch.argv[0], {
    args: launch.argv.slice(1),
    cwd: ROOT,
    env: launch.env,
    clearEnv: launch.env !== undefined,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const guard = setTimeout(() => child.kill("SIGKILL"), HANG_MS);
  let stderr = "";
  const stderrDone = child.stderr.pipeThrough(new TextDecoderStream())
    .pipeTo(
      new WritableStream({
        write(chunk) {
          stderr = (stderr + chunk).slice(-2000);
        },
      }),
    ).catch(() => {});
  const writer = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream())
    .getReader();
  let buffered = "";
  const nextLine = async () => {
    while (!buffered.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) {
        await stderrDone;
        throw new Error(
          `${variant} closed stdout: ${stderr.trim().split("\n").at(-1)}`,
        );
      }
      buffered += value;
    }
    const at = buffered.indexOf("\n");
    const line = buffered.slice(0, at);
    buffered = buffered.slice(at + 1);
    return line;
  };
  const send = (message: unknown) =>
    writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n"));
  try {
    await send(INITIALIZE);
    await nextLine();
    const firstMs = performance.now() - started;
    const pingsMs: number[] = [];
    if (variant !== "floor") {
      await send({ jsonrpc: "2.0", method: "notifications/initialized" });
      for (let id = 1; id <= requests; id++) {
        const sent = performance.now();
        await send({ jsonrpc: "2.0", id, method: "ping" });
        const answer = await nextLine();
        pingsMs.push(performance.now() - sent);
        if (!answer.includes(`"id":${id}`)) {
          throw new Error(`${variant} answered ping ${id} with ${answer}`);
        }
      }
    }
    const { peakKiB, processes } = treePeakKiB(child.pid);
    return { firstMs, pingsMs, peakKiB, processes };
  } finally {
    await writer.close().catch(() => {});
    while (!(await reader.read().catch(() => ({ done: true }))).done) {
      // drain
    }
    await child.status;
    await stderrDone;
    clearTimeout(guard);
  }
}

/** Sequential pings sent by fetch from this process: the floor of a request. */
async function directPings(
  url: string,
  token: string,
  requests: number,
): Promise<number[]> {
  const headers: Record<string, string> = {
    Authorization: `Bearer ${token}`,
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
  };
  const post = async (message: unknown) => {
    const response = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify(message),
    });
    await response.text();
    return response;
  };
  const first = await post(INITIALIZE);
  headers["Mcp-Session-Id"] = first.headers.get("mcp-session-id") ?? "";
  headers["MCP-Protocol-Version"] = "2025-11-25";
  await post({ jsonrpc: "2.0", method: "notifications/initialized" });
  const times: number[] = [];
  for (let id = 1; id <= requests; id++) {
    const sent = performance.now();
    await post({ jsonrpc: "2.0", id, method: "ping" });
    times.push(performance.now() - sent);
  }
  await fetch(url, { method: "DELETE", headers }).then((r) => r.text());
  return times;
}

/** Runs a command to its end; throws one line if it fails or is missing. */
async function runTool(argv: string[], what: string): Promise<string> {
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command(argv[0], {
      args: argv.slice(1),
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Error(`${what} needs ${argv[0]} on PATH`);
    }
    throw error;
  }
  if (!output.success) {
    const stderr = new TextDecoder().decode(output.stderr).trim();
    throw new Error(`${what} failed: ${stderr.split("\n").at(-1)}`);
  }
  return new TextDecoder().decode(output.stdout).trim();
}

/**
 * The path of mcp-remote's proxy, installed at the pinned version into
 * `.cache/bench/` if it is not there yet (bench-only: never in the tests).
 */
async function ensureMcpRemote(): Promise<string> {
  const packageDir = new URL("node_modules/mcp-remote/", BENCH_CACHE);
  let installed: string | undefined;
  try {
    installed = JSON.parse(
      Deno.readTextFileSync(new URL("package.json", packageDir)),
    ).version;
  } catch {
    // Not installed yet.
  }
  if (installed !== MCP_REMOTE_VERSION) {
    console.error(
      `bench: installing mcp-remote@${MCP_REMOTE_VERSION} into .cache/bench/`,
    );
    await runTool([
      "npm",
      "install",
      "--prefix",
      BENCH_CACHE.pathname,
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      `mcp-remote@${MCP_REMOTE_VERSION}`,
    ], "installing mcp-remote");
  }
  return new URL("dist/proxy.js", packageDir).pathname;
}

function loadAverage(): string {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3)
      .join(" ");
  } catch {
    return "unknown";
  }
}

function machine(): string {
  let model = "unknown CPU";
  try {
    const cpuinfo = Deno.readTextFileSync("/proc/cpuinfo");
    model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? model;
  } catch {
    // Not Linux.
  }
  return `${navigator.hardwareConcurrency} CPUs (${model}), ${Deno.build.target}, Deno ${Deno.version.deno}`;
}

async function bench(options: BridgeBenchOptions): Promise<void> {
  const token = crypto.randomUUID();
  const dir = Deno.makeTempDirSync({ prefix: "sherlock-bench-bridge-" });
  const sandbox: Sandbox = {
    dir,
    tokenFile: `${dir}/token`,
    headerFile: `${dir}/headers`,
    home: `${dir}/home`,
  };
  try {
    Deno.writeTextFileSync(sandbox.tokenFile, token, { mode: 0o600 });
    Deno.writeTextFileSync(
      sandbox.headerFile,
      `Authorization: Bearer ${token}\n`,
      { mode: 0o600 },
    );
    Deno.mkdirSync(sandbox.home, { mode: 0o700 });
    let peerVersions = "";
    let mcpRemote: string | undefined;
    if (options.variants.includes("mcp-remote")) {
      mcpRemote = await ensureMcpRemote();
      peerVersions =
        `, mcp-remote ${MCP_REMOTE_VERSION} on node ${await runTool(
          ["node", "--version"],
          "mcp-remote",
        )}`;
    }
    await using remote = await startRemoteMcpServer({ token });
    await using home = options.variants.includes("bridge")
      ? await createBrokerHome()
      : undefined;
    let bridge: Launch | undefined;
    if (home) bridge = await bridgeLaunch(home, { url: remote.url, token });
    const results = new Map<VariantName, RunResult[]>(
      options.variants.map((v) => [v, []]),
    );
    const processes = new Map<VariantName, number>();
    const direct: number[] = [];
    const loadBefore = loadAverage();
    const startedAt = new Date();
    for (let round = -options.warmup; round < options.runs; round++) {
      const measured = round >= 0;
      if (Deno.stderr.isTerminal()) {
        Deno.stderr.writeSync(
          new TextEncoder().encode(
            `\rbench: ${measured ? "round" : "warm-up"} ${
              measured ? round + 1 : round + options.warmup + 1
            }/${measured ? options.runs : options.warmup}   `,
          ),
        );
      }
      for (const variant of roundOrder(options.variants, Math.max(round, 0))) {
        const launch = launchOf(variant, {
          url: remote.url,
          sandbox,
          mcpRemote,
          bridge,
        });
        const result = await runOnce(variant, launch, options.requests);
        if (measured) results.get(variant)!.push(result);
        processes.set(
          variant,
          Math.max(processes.get(variant) ?? 0, result.processes),
        );
      }
      const pings = await directPings(remote.url, token, options.requests);
      if (measured) direct.push(...pings);
    }
    if (Deno.stderr.isTerminal()) {
      Deno.stderr.writeSync(new TextEncoder().encode("\n"));
    }
    const figures = new Map<string, VariantFigures>();
    for (const variant of options.variants) {
      figures.set(variant, figuresOf(results.get(variant)!));
    }
    const directSummary = summarize(direct);
    figures.set("direct fetch, no relay", {
      firstMedian: NaN,
      firstP90: NaN,
      pingP50: directSummary.median,
      pingP99: directSummary.p99,
      peakMiB: NaN,
    });
    console.log(
      `${startedAt.toISOString()}, ${machine()}${peerVersions}; ${options.runs} rounds (+${options.warmup} warm-up) of ${options.requests} pings; load average ${loadBefore} before, ${loadAverage()} after`,
    );
    console.log(
      `processes per relay tree (most seen): ${
        [...processes].map(([name, count]) => `${name} ${count}`).join(", ")
      }\n`,
    );
    console.log(formatTable(figures));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

async function main(args: readonly string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USAGE);
    return 0;
  }
  let options: BridgeBenchOptions;
  try {
    options = parseBridgeBenchArgs(args);
  } catch (error) {
    console.error(`bench:bridge: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  try {
    await bench(options);
    return 0;
  } catch (error) {
    console.error(`\nbench:bridge: ${(error as Error).message}`);
    return 1;
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
