import { describe, expect, it } from 'vitest';
import type { Reconciliation } from '../../../src/audit/reconcile.js';
import { formatPercent, formatReport } from '../../../src/audit/report.js';

const T0 = Date.parse('2024-05-01T10:00:00Z');
const WINDOW = 600_000;

const reconciliation: Reconciliation = {
  topic: 'page-views',
  from: T0,
  to: T0 + 2 * WINDOW,
  now: T0 + 10 * WINDOW,
  latenessMs: 300_000,
  compacted: false,
  windows: [
    { windowStart: T0, windowEnd: T0 + WINDOW, closed: true, produced: 3, tiers: [{ tier: 'MIRROR', received: 2, unaudited: 1, completeness: 2 / 3, status: 'LOSS' }] },
    { windowStart: T0 + WINDOW, windowEnd: T0 + 2 * WINDOW, closed: true, produced: 4, tiers: [{ tier: 'MIRROR', received: 4, unaudited: 0, completeness: 1, status: 'OK' }] },
  ],
  latency: [{ tier: 'MIRROR', samples: 6, p50Ms: 12, p99Ms: 340 }],
  events: { read: 5, distinct: 4, duplicates: 1, conflicts: 0 },
};

describe('formatPercent', () => {
  it('prints two decimals and never rounds a gap to 100.00%', () => {
    expect(formatPercent(1)).toBe('100.00%');
    expect(formatPercent(0.29)).toBe('29.00%');
    expect(formatPercent(2 / 3)).toBe('66.67%');
    expect(formatPercent(0.999_999)).toBe('99.99%');
    expect(formatPercent(1.000_001)).toBe('100.01%');
    expect(formatPercent(0)).toBe('0.00%');
    expect(formatPercent(null)).toBe('n/a');
  });
});

describe('formatReport', () => {
  it('table: one row per window and tier with produced, received, unknown origin, completeness and status; then latency and the event tally', () => {
    const lines = formatReport({ reconciliation, recordsRead: 9, undecodable: [{ partition: 0, offset: 4n, reason: 'not framed' }] }, 'table').split('\n');
    expect(lines[0]).toContain('page-views');
    expect(lines[2]?.split(/\s{2,}/)).toEqual(['WINDOW START', 'WINDOW END', 'PRODUCED', 'TIER', 'RECEIVED', 'UNKNOWN ORIGIN', 'COMPLETENESS', 'STATUS']);
    expect(lines[3]?.split(/\s+/)).toEqual(['2024-05-01T10:00:00.000Z', '2024-05-01T10:10:00.000Z', '3', 'MIRROR', '2', '1', '66.67%', 'LOSS']);
    expect(lines[4]?.split(/\s+/)).toEqual(['2024-05-01T10:10:00.000Z', '2024-05-01T10:20:00.000Z', '4', 'MIRROR', '4', '0', '100.00%', 'OK']);
    const text = lines.join('\n');
    expect(text).toMatch(/MIRROR\s+6\s+12 ms\s+340 ms/);
    expect(text).toContain('9 records read; 5 events of this topic in range, 4 distinct, 1 repeated deliveries ignored; 1 records could not be decoded');
    expect(text).toContain('skipped partition 0 offset 4: not framed');
  });

  it('json: the same facts for programs, times as ISO-8601', () => {
    const json = JSON.parse(formatReport({ reconciliation, recordsRead: 9, undecodable: [] }, 'json')) as Record<string, unknown>;
    expect(json).toEqual({
      topic: 'page-views',
      from: '2024-05-01T10:00:00.000Z',
      to: '2024-05-01T10:20:00.000Z',
      generatedAt: '2024-05-01T11:40:00.000Z',
      latenessMs: 300_000,
      compacted: false,
      windows: [
        { start: '2024-05-01T10:00:00.000Z', end: '2024-05-01T10:10:00.000Z', closed: true, produced: 3, tiers: [{ tier: 'MIRROR', received: 2, unaudited: 1, completenessPercent: (2 / 3) * 100, status: 'LOSS' }] },
        { start: '2024-05-01T10:10:00.000Z', end: '2024-05-01T10:20:00.000Z', closed: true, produced: 4, tiers: [{ tier: 'MIRROR', received: 4, unaudited: 0, completenessPercent: 100, status: 'OK' }] },
      ],
      latency: [{ tier: 'MIRROR', samples: 6, p50Ms: 12, p99Ms: 340 }],
      auditEvents: { read: 5, distinct: 4, duplicates: 1, conflicts: 0, recordsRead: 9, undecodable: 0 },
    });
  });
});
