/**
 * What the benchmark scripts share: summaries of times (median and nearest-
 * rank percentiles) and the CPU time of reaped children.
 *
 * @module
 */

/** Median and percentiles of a set of times. */
export interface Summary {
  median: number;
  /** The 90th percentile (nearest rank). */
  p90: number;
  /** The 99th percentile (nearest rank). */
  p99: number;
  /** How many samples. */
  count: number;
}

/** The value at quantile `q` (nearest rank) of sorted `values`. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** Summarizes a set of times. */
export function summarize(times: readonly number[]): Summary {
  const sorted = [...times].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  const median = sorted.length % 2 === 1
    ? sorted[Math.floor(mid)]
    : (sorted[mid - 1] + sorted[mid]) / 2;
  return {
    median,
    p90: quantile(sorted, 0.9),
    p99: quantile(sorted, 0.99),
    count: sorted.length,
  };
}

/**
 * The CPU time (user + system) of this process's reaped children so far, in
 * ms, from /proc/self/stat (Linux; USER_HZ is 100), else undefined. It moves
 * far less than wall time with the other load of a shared machine.
 */
export function childrenCpuMs(): number | undefined {
  try {
    const stat = Deno.readTextFileSync("/proc/self/stat");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return undefined;
  }
}
