/**
 * `deno run --allow-all scripts/bench_bridge.ts [--runs N] [--requests N]`:
 * what the bridge's relay costs, on sherlock's own fetch code against the
 * official SDK's `StreamableHTTPClientTransport` (scripts/bench_bridge/),
 * both with a fixed token (no broker), against the remote test server
 * (tests/fixtures/remote_mcp_server.ts) in this process. Per run: the time
 * from spawn to the answer to `initialize` (start-up plus one relayed
 * request; the floor is a Deno process that answers a line itself), then
 * sequential `ping` round trips (against the same requests sent by `fetch`
 * from here), then the peak resident memory (VmHWM). The variants are
 * interleaved. docs/BENCHMARKS.md (The bridge) keeps the figures.
 *
 * @module
 */

import { summarize } from "./bench_stats.ts";
import { startRemoteMcpServer } from "../tests/fixtures/remote_mcp_server.ts";

const ROOT = new URL("../", import.meta.url);
const VARIANTS = {
  floor: "scripts/bench_bridge/floor.ts",
  fetch: "scripts/bench_bridge/fetch_relay.ts",
  sdk: "scripts/bench_bridge/sdk_relay.ts",
} as const;
type Variant = keyof typeof VARIANTS;

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

interface RunResult {
  firstMs: number;
  pingsMs: number[];
  peakKiB: number;
}

async function runOnce(
  variant: Variant,
  options: { url: string; token: string; requests: number },
): Promise<RunResult> {
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--quiet",
      VARIANTS[variant],
      options.url,
      options.token,
    ],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream())
    .getReader();
  let buffered = "";
  const nextLine = async () => {
    while (!buffered.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`${variant} closed stdout`);
      buffered += value;
    }
    const at = buffered.indexOf("\n");
    const line = buffered.slice(0, at);
    buffered = buffered.slice(at + 1);
    return line;
  };
  const send = (message: unknown) =>
    writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n"));
  await send(INITIALIZE);
  await nextLine();
  const firstMs = performance.now() - started;
  const pingsMs: number[] = [];
  if (variant !== "floor") {
    await send({ jsonrpc: "2.0", method: "notifications/initialized" });
    for (let id = 1; id <= options.requests; id++) {
      const sent = performance.now();
      await send({ jsonrpc: "2.0", id, method: "ping" });
      await nextLine();
      pingsMs.push(performance.now() - sent);
    }
  }
  const status = Deno.readTextFileSync(`/proc/${child.pid}/status`);
  const peakKiB = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  await writer.close();
  while (!(await reader.read()).done) { /* drain */ }
  await child.status;
  return { firstMs, pingsMs, peakKiB };
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

function option(name: string, fallback: number): number {
  const at = Deno.args.indexOf(name);
  return at === -1 ? fallback : Number(Deno.args[at + 1]);
}

async function main() {
  const runs = option("--runs", 15);
  const requests = option("--requests", 100);
  const token = crypto.randomUUID();
  await using remote = await startRemoteMcpServer({ token });
  const order: Variant[] = ["floor", "fetch", "sdk"];
  const results = new Map<Variant, RunResult[]>(order.map((v) => [v, []]));
  const direct: number[] = [];
  for (let round = -2; round < runs; round++) {
    const rotated = order.map((_, i) =>
      order[(i + Math.max(round, 0)) % order.length]
    );
    for (const variant of rotated) {
      const result = await runOnce(variant, {
        url: remote.url,
        token,
        requests,
      });
      if (round >= 0) results.get(variant)!.push(result);
    }
    const pings = await directPings(remote.url, token, requests);
    if (round >= 0) direct.push(...pings);
  }
  const fmt = (n: number) => n.toFixed(1);
  console.log(
    `| variant | to initialize answer, median | p90 | ping p50 | ping p99 | peak RSS MiB, median |`,
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const variant of order) {
    const all = results.get(variant)!;
    const first = summarize(all.map((r) => r.firstMs));
    const pings = summarize(all.flatMap((r) => r.pingsMs));
    const peak = summarize(all.map((r) => r.peakKiB / 1024));
    console.log(
      `| ${variant} | ${fmt(first.median)} | ${fmt(first.p90)} | ${
        variant === "floor" ? "" : pings.median.toFixed(2)
      } | ${variant === "floor" ? "" : pings.p99.toFixed(2)} | ${
        fmt(peak.median)
      } |`,
    );
  }
  const directSummary = summarize(direct);
  console.log(
    `| direct fetch (no relay) | | | ${directSummary.median.toFixed(2)} | ${
      directSummary.p99.toFixed(2)
    } | |`,
  );
}

if (import.meta.main) await main();
