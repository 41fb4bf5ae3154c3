/** One benchmark result (SPEC §12): `value` measured, `baseline` measured in the same run, `ratio` = value/baseline. */
export interface BenchRow {
  name: string;
  value: number;
  unit: string;
  baseline: number | null;
  ratio: number | null;
  /** Human-readable target, e.g. ">= 0.8" or "< 1 ms". */
  target: string;
  /** Whether the target is met; null when the row has no target. */
  ok: boolean | null;
}

export interface BenchOptions {
  quick: boolean;
  /** A scratch directory for this run, removed afterwards. */
  tmp: string;
  log: (line: string) => void;
}

export interface BenchSuite {
  name: string;
  run(options: BenchOptions): Promise<BenchRow[]>;
}

export function defineSuite(suite: BenchSuite): BenchSuite {
  return suite;
}

/** Time `fn` over `iterations` runs; returns per-run durations in milliseconds. */
export function timeEach(iterations: number, fn: (i: number) => void): number[] {
  const out = new Array<number>(iterations);
  for (let i = 0; i < iterations; i += 1) {
    const start = process.hrtime.bigint();
    fn(i);
    out[i] = Number(process.hrtime.bigint() - start) / 1e6;
  }
  return out;
}

export async function timeEachAsync(iterations: number, fn: (i: number) => Promise<void>): Promise<number[]> {
  const out = new Array<number>(iterations);
  for (let i = 0; i < iterations; i += 1) {
    const start = process.hrtime.bigint();
    await fn(i);
    out[i] = Number(process.hrtime.bigint() - start) / 1e6;
  }
  return out;
}

export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}

/** Median of `rounds` repetitions of a whole measurement, to damp noise on shared machines. */
export function medianOf(values: readonly number[]): number {
  return percentile(values, 50);
}

/**
 * A growth row: the p50 added latency (ms) of the last 1,000 of `calls` calls against the first 1,000's, as µs
 * with their ratio; the target holds a call's cost independent of the history before it.
 */
export function growthRow(name: string, calls: number, firstMs: number, lastMs: number): BenchRow {
  const ratio = lastMs / firstMs;
  return {
    name,
    value: Math.round(lastMs * 1000),
    unit: `µs p50, calls ${(calls - 999).toLocaleString('en')}–${calls.toLocaleString('en')} vs 1–1,000`,
    baseline: Math.round(firstMs * 1000),
    ratio,
    target: '<= 1.2',
    ok: ratio <= 1.2,
  };
}
