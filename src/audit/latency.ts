/**
 * Latency from a record's creation (its timestamp) to the moment a tier saw it, as a histogram
 * that merges across counters, windows and processes: buckets have fixed upper bounds growing by
 * at most 2^(1/8) (about 9%), so a percentile read from it is at most ~9% above the exact one
 * (exact below 12 ms, where every millisecond has its own bucket).
 */
import type { LatencyBucket } from './audit-count.js';

const STEPS_PER_DOUBLING = 8;
/** Beyond 2^40 ms (≈ 35 years) everything shares the last bucket. */
const MAX_EXPONENT = 40;

/** Upper bounds in ms, ascending: 0 (no or negative latency, e.g. clock skew), 1, 2, … each at most 2^(1/8) times the previous. */
export const LATENCY_BUCKET_BOUNDS: readonly number[] = (() => {
  const growth = 2 ** (1 / STEPS_PER_DOUBLING);
  const bounds = [0, 1];
  for (let bound = 1; bound < 2 ** MAX_EXPONENT; ) {
    // Whole milliseconds: every millisecond its own bucket until growth exceeds one.
    bound = Math.max(bound + 1, Math.floor(bound * growth));
    bounds.push(bound);
  }
  return bounds;
})();

/** The upper bound of the bucket holding `latencyMs`. */
export function latencyBucketBound(latencyMs: number): number {
  if (!(latencyMs > 0)) return 0;
  let low = 0;
  let high = LATENCY_BUCKET_BOUNDS.length - 1;
  if (latencyMs > (LATENCY_BUCKET_BOUNDS[high] ?? 0)) return LATENCY_BUCKET_BOUNDS[high] ?? 0;
  // First bound ≥ latencyMs.
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((LATENCY_BUCKET_BOUNDS[middle] ?? 0) >= latencyMs) high = middle;
    else low = middle + 1;
  }
  return LATENCY_BUCKET_BOUNDS[low] ?? 0;
}

export class LatencyHistogram {
  /** upper bound → count */
  private readonly counts = new Map<number, number>();
  private samples = 0;

  /** Samples recorded or merged so far. */
  get total(): number {
    return this.samples;
  }

  record(latencyMs: number, times = 1): void {
    const bound = latencyBucketBound(latencyMs);
    this.counts.set(bound, (this.counts.get(bound) ?? 0) + times);
    this.samples += times;
  }

  /** Adds published buckets (any bounds: they are kept as given). */
  addBuckets(buckets: readonly LatencyBucket[]): void {
    for (const { upperBoundMs, count } of buckets) {
      this.counts.set(upperBoundMs, (this.counts.get(upperBoundMs) ?? 0) + count);
      this.samples += count;
    }
  }

  /** Non-empty buckets, ascending. */
  buckets(): LatencyBucket[] {
    return [...this.counts]
      .filter(([, count]) => count > 0)
      .sort(([a], [b]) => a - b)
      .map(([upperBoundMs, count]) => ({ upperBoundMs, count }));
  }

  /** The nearest-rank quantile `q` (0 < q ≤ 1) as its bucket's upper bound; undefined when empty. */
  percentile(q: number): number | undefined {
    if (this.samples === 0) return undefined;
    const rank = Math.max(1, Math.ceil(q * this.samples));
    let seen = 0;
    for (const { upperBoundMs, count } of this.buckets()) {
      seen += count;
      if (seen >= rank) return upperBoundMs;
    }
    return this.buckets().at(-1)?.upperBoundMs;
  }
}

/** The exact nearest-rank quantile `q` (0 < q ≤ 1) of samples; undefined when there are none. */
export function percentile(samples: readonly number[], q: number): number | undefined {
  if (samples.length === 0) return undefined;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length))) - 1];
}
