import { describe, expect, it } from 'vitest';
import type { AuditCountEvent, AuditTier } from '../../../src/audit/audit-count.js';
import { dedupeEvents, reconcile, type ReconcileOptions } from '../../../src/audit/reconcile.js';

const WINDOW = 600_000;
const T0 = 1_700_000_400_000;
const options: ReconcileOptions = { topic: 'page-views', from: T0, to: T0 + 3 * WINDOW, now: T0 + 10 * WINDOW, latenessMs: 300_000 };

let sequence = 0;
function event(tier: AuditTier, window: number, count: number, more: Partial<AuditCountEvent> = {}): AuditCountEvent {
  return {
    topic: 'page-views',
    tier,
    cluster: null,
    server: `${tier.toLowerCase()}-1`,
    windowStart: T0 + window * WINDOW,
    windowEnd: T0 + (window + 1) * WINDOW,
    count,
    publishedAt: T0 + 9 * WINDOW,
    origin: 'web-1',
    counterId: `${tier}-counter`,
    sequence: sequence++,
    latency: [],
    ...more,
  };
}

describe('dedupeEvents', () => {
  it('keeps one event per (counterId, sequence), the latest published, and counts the repeats', () => {
    const original = event('MIRROR', 0, 5, { counterId: 'c', sequence: 7, publishedAt: 1 });
    const again = { ...original, publishedAt: 2 };
    const other = event('MIRROR', 0, 5, { counterId: 'c', sequence: 8 });
    const result = dedupeEvents([original, again, other, original]);
    expect(result.events).toEqual([again, other]);
    expect(result.duplicates).toBe(2);
    expect(result.conflicts).toBe(0);
  });

  it('flags a key delivered with a different count as a conflict', () => {
    const result = dedupeEvents([event('MIRROR', 0, 5, { counterId: 'c', sequence: 1 }), event('MIRROR', 0, 6, { counterId: 'c', sequence: 1 })]);
    expect(result.conflicts).toBe(1);
  });

  it('keys events of writers without counterId/sequence by their whole content', () => {
    const old = event('PRODUCER', 0, 5, { counterId: null, sequence: null });
    expect(dedupeEvents([old, { ...old }, { ...old, count: 6 }]).events).toHaveLength(2);
  });
});

describe('reconcile', () => {
  it('sums distinct deltas per window and tier, and flags 100% OK, below LOSS and above DUPLICATES', () => {
    const events = [
      event('PRODUCER', 0, 60),
      event('PRODUCER', 0, 40),
      event('PRODUCER', 1, 100),
      event('PRODUCER', 2, 100),
      event('MIRROR', 0, 100),
      event('MIRROR', 1, 97),
      event('MIRROR', 2, 100),
      event('MIRROR', 2, 3),
    ];
    const result = reconcile([...events, ...events.slice(4)], options);
    expect(result.windows.map((w) => [w.windowStart - T0, w.produced, w.tiers.map((t) => [t.tier, t.received, t.completeness, t.status])])).toEqual([
      [0, 100, [['MIRROR', 100, 1, 'OK']]],
      [WINDOW, 100, [['MIRROR', 97, 0.97, 'LOSS']]],
      [2 * WINDOW, 100, [['MIRROR', 103, 1.03, 'DUPLICATES']]],
    ]);
    expect(result.events).toEqual({ read: 12, distinct: 8, duplicates: 4, conflicts: 0 });
  });

  it('on a compacted topic reports a tier short of what was produced COMPACTED, not LOSS, and still flags DUPLICATES', () => {
    const events = [event('PRODUCER', 0, 100), event('PRODUCER', 1, 100), event('PRODUCER', 2, 100), event('MIRROR', 0, 100), event('MIRROR', 1, 40), event('MIRROR', 2, 101)];
    const statuses = (compacted: boolean) => reconcile(events, { ...options, compacted }).windows.map((w) => w.tiers[0]?.status);
    expect(statuses(true)).toEqual(['OK', 'COMPACTED', 'DUPLICATES']);
    expect(statuses(false)).toEqual(['OK', 'LOSS', 'DUPLICATES']);
    expect(reconcile(events, { ...options, now: T0 + 2 * WINDOW, compacted: true }).windows[1]?.tiers[0]?.status).toBe('OPEN');
  });

  it('reports a window a tier never counted as 0% LOSS', () => {
    const result = reconcile([event('PRODUCER', 0, 10), event('PRODUCER', 1, 10), event('MIRROR', 0, 10)], options);
    expect(result.windows[1]?.tiers).toEqual([{ tier: 'MIRROR', received: 0, unaudited: 0, completeness: 0, status: 'LOSS' }]);
  });

  it('shows each tier that counted, in tier order', () => {
    const result = reconcile([event('LOADER', 0, 10), event('PRODUCER', 0, 10), event('MIRROR', 0, 10)], options);
    expect(result.windows[0]?.tiers.map((t) => t.tier)).toEqual(['MIRROR', 'LOADER']);
  });

  it('leaves unknown-origin records out of completeness (no producer counted them) and reports them as unaudited', () => {
    const result = reconcile([event('PRODUCER', 0, 10), event('MIRROR', 0, 10), event('MIRROR', 0, 2, { origin: 'unknown' })], options);
    expect(result.windows[0]?.tiers[0]).toEqual({ tier: 'MIRROR', received: 10, unaudited: 2, completeness: 1, status: 'OK' });
  });

  it('compares the unknown origin too when the producer tier counted it', () => {
    const result = reconcile([event('PRODUCER', 0, 10, { origin: 'unknown' }), event('MIRROR', 0, 9, { origin: 'unknown' })], options);
    expect(result.windows[0]?.tiers[0]).toMatchObject({ received: 9, unaudited: 0, status: 'LOSS' });
  });

  it('with nothing produced, counted records are DUPLICATES (never loss) and only-unknown ones UNAUDITED', () => {
    const counted = reconcile([event('MIRROR', 0, 4)], options);
    expect(counted.windows[0]?.tiers[0]).toEqual({ tier: 'MIRROR', received: 4, unaudited: 0, completeness: null, status: 'DUPLICATES' });
    const unknown = reconcile([event('MIRROR', 0, 4, { origin: 'unknown' })], options);
    expect(unknown.windows[0]?.tiers[0]?.status).toBe('UNAUDITED');
  });

  it('marks windows not yet closed (now < end + lateness) OPEN instead of flagging them', () => {
    const now = T0 + 2 * WINDOW + 300_000 - 1;
    const result = reconcile([event('PRODUCER', 1, 10), event('MIRROR', 1, 5)], { ...options, now });
    expect(result.windows[0]).toMatchObject({ closed: false, tiers: [{ received: 5, status: 'OPEN' }] });
    const later = reconcile([event('PRODUCER', 1, 10), event('MIRROR', 1, 5)], { ...options, now: now + 1 });
    expect(later.windows[0]).toMatchObject({ closed: true, tiers: [{ status: 'LOSS' }] });
  });

  it('reports only windows inside [from, to) and only the topic asked for', () => {
    const events = [event('PRODUCER', -1, 1), event('PRODUCER', 0, 1), event('PRODUCER', 3, 1), event('PRODUCER', 0, 1, { topic: 'clicks' })];
    const result = reconcile(events, options);
    expect(result.windows.map((w) => w.windowStart)).toEqual([T0]);
    expect(result.events.read).toBe(1);
  });

  it('merges the latency histograms of a tier over the range into p50/p99', () => {
    const latency = [
      { upperBoundMs: 10, count: 98 },
      { upperBoundMs: 500, count: 2 },
    ];
    const result = reconcile([event('MIRROR', 0, 50, { latency: latency.map((b) => ({ ...b, count: b.count / 2 })) }), event('MIRROR', 1, 50, { latency: latency.map((b) => ({ ...b, count: b.count / 2 })) })], options);
    expect(result.latency).toEqual([{ tier: 'MIRROR', samples: 100, p50Ms: 10, p99Ms: 500 }]);
  });
});
