/**
 * Records per event hour and how complete each hour is: what the loader committed (manifest
 * counts) against what producers counted at the audit's PRODUCER tier in that hour's windows.
 * Pure, so the rules are tested without any service.
 *
 * The loader buckets by event time (the load's timeField, else the record timestamp) and the
 * audit by record timestamp; they agree when producers stamp records with the event time, as
 * Tributary's audited producer does.
 */
import type { Reconciliation } from '../audit/reconcile.js';
import { HOUR_MS, hourKey } from '../etl/layout.js';

export type HourStatus = 'OK' | 'LOSS' | 'DUPLICATES' | 'OPEN' | 'NO AUDIT' | 'NOT COUNTED';

export interface HourRow {
  /** `2026-11-29T15` (UTC). */
  readonly hour: string;
  readonly loaded: number;
  /** Records producers counted in the hour; null when the audit is not read or counted nothing there. */
  readonly produced: number | null;
  /** loaded ÷ produced × 100, or null. */
  readonly completenessPercent: number | null;
  readonly status: HourStatus;
}

/** The chart shows at most this many hours, the latest. */
export const MAX_HOURS = 48;

/** PRODUCER-tier records per hour key, from a reconciliation's windows (a window counts in the hour it starts in). */
export function producedPerHour(reconciliation: Reconciliation): Record<string, number> {
  const hours: Record<string, number> = {};
  for (const window of reconciliation.windows) {
    if (window.produced === 0) continue;
    const key = hourKey(Math.floor(window.windowStart / HOUR_MS));
    hours[key] = (hours[key] ?? 0) + window.produced;
  }
  return hours;
}

/**
 * One row per hour that was loaded or produced, ascending, the latest MAX_HOURS. `produced`
 * undefined means the audit is not read at all. An hour is OPEN until `latenessMs` after its end
 * (the load's lateness horizon): records may still arrive and the next run may still load them.
 */
export function hourRows(loaded: Readonly<Record<string, number>>, produced: Readonly<Record<string, number>> | undefined, now: number, latenessMs: number): HourRow[] {
  const keys = [...new Set([...Object.keys(loaded), ...Object.keys(produced ?? {})])].sort().slice(-MAX_HOURS);
  return keys.map((hour) => {
    const loadedCount = loaded[hour] ?? 0;
    const producedCount = produced?.[hour];
    const closed = now >= Date.parse(`${hour}:00:00Z`) + HOUR_MS + latenessMs;
    let status: HourStatus;
    if (produced === undefined) status = 'NO AUDIT';
    else if (producedCount === undefined) status = 'NOT COUNTED';
    else if (!closed) status = 'OPEN';
    else status = loadedCount === producedCount ? 'OK' : loadedCount < producedCount ? 'LOSS' : 'DUPLICATES';
    return {
      hour,
      loaded: loadedCount,
      produced: producedCount ?? null,
      completenessPercent: producedCount === undefined || producedCount === 0 ? null : (loadedCount / producedCount) * 100,
      status,
    };
  });
}
