/** Records per event hour against producer counts: the statuses the loads page colours its bars by. */
import { describe, expect, it } from 'vitest';
import type { Reconciliation } from '../../../src/audit/reconcile.js';
import { hourRows, MAX_HOURS, producedPerHour } from '../../../src/dashboard/hours.js';

const HOUR = 3_600_000;
const T10 = Date.parse('2026-11-29T10:00:00Z');
const LATENESS = 2 * HOUR;
/** 10:00–12:00 are closed (end + 2 h ≤ now); 13:00 is not (it closes at 16:00). */
const NOW = Date.parse('2026-11-29T15:30:00Z');

describe('hourRows', () => {
  it('says OK, LOSS or DUPLICATES for closed hours by comparing loaded with produced', () => {
    const rows = hourRows({ '2026-11-29T10': 100, '2026-11-29T11': 90, '2026-11-29T12': 101 }, { '2026-11-29T10': 100, '2026-11-29T11': 100, '2026-11-29T12': 100 }, NOW, LATENESS);
    expect(rows).toEqual([
      { hour: '2026-11-29T10', loaded: 100, produced: 100, completenessPercent: 100, status: 'OK' },
      { hour: '2026-11-29T11', loaded: 90, produced: 100, completenessPercent: 90, status: 'LOSS' },
      { hour: '2026-11-29T12', loaded: 101, produced: 100, completenessPercent: 101, status: 'DUPLICATES' },
    ]);
  });

  it('keeps an hour OPEN until the lateness horizon after its end has passed', () => {
    const [open] = hourRows({ '2026-11-29T13': 10 }, { '2026-11-29T13': 20 }, NOW, LATENESS);
    expect(open?.status).toBe('OPEN');
    expect(open?.completenessPercent).toBe(50);
    const [closed] = hourRows({ '2026-11-29T13': 10 }, { '2026-11-29T13': 20 }, T10 + 6 * HOUR, LATENESS);
    expect(closed?.status).toBe('LOSS');
  });

  it('shows an hour producers counted but the load has nothing of', () => {
    expect(hourRows({}, { '2026-11-29T10': 5 }, NOW, LATENESS)).toEqual([{ hour: '2026-11-29T10', loaded: 0, produced: 5, completenessPercent: 0, status: 'LOSS' }]);
  });

  it('says NO AUDIT when the audit is not read, and NOT COUNTED for an hour no producer counted', () => {
    expect(hourRows({ '2026-11-29T10': 5 }, undefined, NOW, LATENESS)[0]).toEqual({ hour: '2026-11-29T10', loaded: 5, produced: null, completenessPercent: null, status: 'NO AUDIT' });
    expect(hourRows({ '2026-11-29T10': 5 }, {}, NOW, LATENESS)[0]?.status).toBe('NOT COUNTED');
  });

  it(`keeps the latest ${MAX_HOURS} hours, ascending`, () => {
    const loaded: Record<string, number> = {};
    for (let hour = 0; hour < MAX_HOURS + 5; hour += 1) loaded[new Date(T10 - hour * HOUR).toISOString().slice(0, 13)] = hour;
    const rows = hourRows(loaded, undefined, NOW, LATENESS);
    expect(rows).toHaveLength(MAX_HOURS);
    expect(rows.at(-1)?.hour).toBe('2026-11-29T10');
    expect(rows[0]?.hour).toBe(new Date(T10 - (MAX_HOURS - 1) * HOUR).toISOString().slice(0, 13));
  });
});

describe('producedPerHour', () => {
  it('sums the PRODUCER counts of the windows starting in each hour and skips empty windows', () => {
    const window = (start: number, produced: number) => ({ windowStart: start, windowEnd: start + 600_000, closed: true, produced, tiers: [] });
    const reconciliation = {
      windows: [window(T10, 3), window(T10 + 600_000, 4), window(T10 + 3_000_000, 5), window(T10 + HOUR, 7), window(T10 + 2 * HOUR, 0)],
    } as unknown as Reconciliation;
    expect(producedPerHour(reconciliation)).toEqual({ '2026-11-29T10': 12, '2026-11-29T11': 7 });
  });
});
