import { describe, expect, it } from 'vitest';
import { LATENCY_BUCKET_BOUNDS, LatencyHistogram, latencyBucketBound, percentile } from '../../../src/audit/latency.js';

describe('percentile', () => {
  it('is the nearest-rank quantile', () => {
    const samples = Array.from({ length: 100 }, (_, index) => 100 - index);
    expect(percentile(samples, 0.5)).toBe(50);
    expect(percentile(samples, 0.99)).toBe(99);
    expect(percentile([7], 0.99)).toBe(7);
    expect(percentile([], 0.5)).toBeUndefined();
  });
});

describe('latency buckets', () => {
  it('have ascending whole-millisecond bounds, each at most ~9% above the previous beyond 12 ms', () => {
    for (let index = 1; index < LATENCY_BUCKET_BOUNDS.length; index++) {
      const previous = LATENCY_BUCKET_BOUNDS[index - 1] ?? 0;
      const bound = LATENCY_BUCKET_BOUNDS[index] ?? 0;
      expect(bound).toBeGreaterThan(previous);
      expect(Number.isInteger(bound)).toBe(true);
      if (previous >= 12) expect(bound / previous).toBeLessThanOrEqual(1.095);
    }
  });

  it('put a latency in the first bucket whose bound is at or above it; none or negative (clock skew) in the 0 bucket', () => {
    expect(latencyBucketBound(0)).toBe(0);
    expect(latencyBucketBound(-40)).toBe(0);
    expect(latencyBucketBound(1)).toBe(1);
    expect(latencyBucketBound(3)).toBe(3);
    expect(latencyBucketBound(2.5)).toBe(3);
    const bound = latencyBucketBound(1_000);
    expect(bound).toBeGreaterThanOrEqual(1_000);
    expect(LATENCY_BUCKET_BOUNDS[LATENCY_BUCKET_BOUNDS.indexOf(bound) - 1]).toBeLessThan(1_000);
    expect(latencyBucketBound(Number.MAX_SAFE_INTEGER)).toBe(LATENCY_BUCKET_BOUNDS.at(-1));
  });
});

describe('LatencyHistogram', () => {
  it('gives p50/p99 no lower than the exact ones and at most ~9% above', () => {
    const samples = Array.from({ length: 10_000 }, (_, index) => 5 + ((index * 7919) % 2_000));
    const histogram = new LatencyHistogram();
    for (const sample of samples) histogram.record(sample);
    for (const q of [0.5, 0.99]) {
      const exact = percentile(samples, q) ?? 0;
      const estimate = histogram.percentile(q) ?? 0;
      expect(estimate).toBeGreaterThanOrEqual(exact);
      expect(estimate / exact).toBeLessThanOrEqual(1.095);
    }
    expect(histogram.total).toBe(10_000);
  });

  it('merges published buckets, and is empty without samples', () => {
    const histogram = new LatencyHistogram();
    expect(histogram.percentile(0.5)).toBeUndefined();
    histogram.addBuckets([{ upperBoundMs: 4, count: 3 }]);
    histogram.record(4);
    histogram.addBuckets([{ upperBoundMs: 900, count: 1 }]);
    expect(histogram.buckets()).toEqual([
      { upperBoundMs: 4, count: 4 },
      { upperBoundMs: 900, count: 1 },
    ]);
    expect(histogram.percentile(0.5)).toBe(4);
    expect(histogram.percentile(0.99)).toBe(900);
  });
});
