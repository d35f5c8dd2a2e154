/**
 * Reconciliation: from the AuditCount events of a topic to per-window completeness per tier.
 *
 * 1. De-duplicate: events with the same (counterId, sequence) are one event delivered more than
 *    once (a retried publish, the mirror copying `_audit` again after a restart); the latest
 *    published is kept. Events of writers older than those fields are keyed by their content.
 * 2. Sum the distinct deltas per (window, tier, origin).
 * 3. Per window: produced = the PRODUCER tier's count. A tier's received count leaves out the
 *    `unknown` origin (records from clients that set no origin header: no producer counted them),
 *    unless the PRODUCER tier itself counted `unknown` records in that window; those left out are
 *    reported as `unaudited`. completeness = received ÷ produced.
 * 4. Status: OPEN while the window is not closed (now < end + lateness), else OK at exactly
 *    100%, LOSS below, DUPLICATES above (including counts with nothing produced: a producer that
 *    died before publishing its count shows as duplicates, never as loss), UNAUDITED when a tier
 *    saw only unknown-origin records and nothing was produced.
 * 5. A compacted topic (cleanup.policy includes compact) keeps only each key's latest record: a
 *    tier that read after the cleaner removed older ones counts fewer than were produced, and
 *    that is what the topic promises, not loss. Its short windows are COMPACTED. Counts cannot
 *    tell loss from compaction there (the cleaner's removals are not counted per window), so a
 *    COMPACTED window is no proof of completeness; more than produced is still DUPLICATES.
 */
import { AUDIT_TIERS, type AuditCountEvent, type AuditTier } from './audit-count.js';
import { LatencyHistogram } from './latency.js';
import { UNKNOWN_ORIGIN } from './origin.js';
import { isWindowClosed } from './windows.js';

export type WindowStatus = 'OK' | 'LOSS' | 'DUPLICATES' | 'OPEN' | 'UNAUDITED' | 'COMPACTED';

export interface TierCompleteness {
  readonly tier: AuditTier;
  /** Records of audited origins this tier counted in the window. */
  readonly received: number;
  /** Records of the unknown origin left out of `received`. */
  readonly unaudited: number;
  /** received ÷ produced; null when nothing was produced. */
  readonly completeness: number | null;
  readonly status: WindowStatus;
}

export interface WindowReport {
  readonly windowStart: number;
  readonly windowEnd: number;
  readonly closed: boolean;
  readonly produced: number;
  /** Every tier other than PRODUCER that counted the topic in the report's range, in tier order. */
  readonly tiers: readonly TierCompleteness[];
}

export interface TierLatency {
  readonly tier: AuditTier;
  readonly samples: number;
  /** Upper bounds of the histogram buckets holding the 50th and 99th percentiles, in ms. */
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface EventTally {
  /** Events of the topic whose window lies in the range, as read (duplicates included). */
  readonly read: number;
  readonly distinct: number;
  /** Deliveries beyond the first of the same key (ignored). */
  readonly duplicates: number;
  /** Keys delivered with different counts or windows: a counter bug or a reused counter id. */
  readonly conflicts: number;
}

export interface Reconciliation {
  readonly topic: string;
  readonly from: number;
  readonly to: number;
  readonly now: number;
  readonly latenessMs: number;
  /** The topic is compacted: windows short of what was produced are COMPACTED, not LOSS. */
  readonly compacted: boolean;
  readonly windows: readonly WindowReport[];
  readonly latency: readonly TierLatency[];
  readonly events: EventTally;
}

export interface ReconcileOptions {
  readonly topic: string;
  /** Windows that start at or after `from` and end at or before `to` are reported. */
  readonly from: number;
  readonly to: number;
  readonly now: number;
  readonly latenessMs: number;
  /** The topic's cleanup.policy includes compact (see step 5). */
  readonly compacted?: boolean;
}

/** The identity of an event for de-duplication. */
export function eventKey(event: AuditCountEvent): string {
  if (event.counterId !== null && event.sequence !== null) return `${event.counterId}#${event.sequence}`;
  return JSON.stringify([event.topic, event.tier, event.cluster, event.server, event.windowStart, event.windowEnd, event.origin, event.count, event.publishedAt]);
}

/** One event per key, the latest published; counts how many deliveries were dropped and how many disagreed. */
export function dedupeEvents(events: readonly AuditCountEvent[]): { events: AuditCountEvent[]; duplicates: number; conflicts: number } {
  const byKey = new Map<string, AuditCountEvent>();
  let duplicates = 0;
  let conflicts = 0;
  for (const event of events) {
    const key = eventKey(event);
    const kept = byKey.get(key);
    if (kept === undefined) {
      byKey.set(key, event);
      continue;
    }
    duplicates += 1;
    if (kept.count !== event.count || kept.windowStart !== event.windowStart || kept.topic !== event.topic || kept.origin !== event.origin || kept.tier !== event.tier) conflicts += 1;
    if (event.publishedAt >= kept.publishedAt) byKey.set(key, event);
  }
  return { events: [...byKey.values()], duplicates, conflicts };
}

/** Completeness per window and tier of `options.topic`, and latency per tier, over the events given. */
export function reconcile(allEvents: readonly AuditCountEvent[], options: ReconcileOptions): Reconciliation {
  const inRange = allEvents.filter((event) => event.topic === options.topic && event.windowStart >= options.from && event.windowEnd <= options.to);
  const { events, duplicates, conflicts } = dedupeEvents(inRange);

  /** "start/end" → tier → origin → count */
  const windows = new Map<string, { start: number; end: number; counts: Map<AuditTier, Map<string, number>> }>();
  const latency = new Map<AuditTier, LatencyHistogram>();
  const tiersSeen = new Set<AuditTier>();
  for (const event of events) {
    const id = `${event.windowStart}/${event.windowEnd}`;
    let window = windows.get(id);
    if (window === undefined) windows.set(id, (window = { start: event.windowStart, end: event.windowEnd, counts: new Map() }));
    let byOrigin = window.counts.get(event.tier);
    if (byOrigin === undefined) window.counts.set(event.tier, (byOrigin = new Map<string, number>()));
    const origin = event.origin ?? UNKNOWN_ORIGIN;
    byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + event.count);
    if (event.tier !== 'PRODUCER') tiersSeen.add(event.tier);
    if (event.latency.length > 0) {
      let histogram = latency.get(event.tier);
      if (histogram === undefined) latency.set(event.tier, (histogram = new LatencyHistogram()));
      histogram.addBuckets(event.latency);
    }
  }
  const tiers = AUDIT_TIERS.filter((tier) => tiersSeen.has(tier));
  const compacted = options.compacted ?? false;

  const reports = [...windows.values()]
    .sort((a, b) => a.start - b.start || a.end - b.end)
    .map(({ start, end, counts }): WindowReport => {
      const producedByOrigin = counts.get('PRODUCER') ?? new Map<string, number>();
      const produced = sum(producedByOrigin.values());
      const closed = isWindowClosed(end, options.latenessMs, options.now);
      const unknownAudited = producedByOrigin.has(UNKNOWN_ORIGIN);
      return {
        windowStart: start,
        windowEnd: end,
        closed,
        produced,
        tiers: tiers.map((tier) => {
          const byOrigin = counts.get(tier) ?? new Map<string, number>();
          const unaudited = unknownAudited ? 0 : (byOrigin.get(UNKNOWN_ORIGIN) ?? 0);
          const received = sum(byOrigin.values()) - unaudited;
          return { tier, received, unaudited, completeness: produced === 0 ? null : received / produced, status: statusOf(closed, produced, received, unaudited, compacted) };
        }),
      };
    });

  return {
    topic: options.topic,
    from: options.from,
    to: options.to,
    now: options.now,
    latenessMs: options.latenessMs,
    compacted,
    windows: reports,
    latency: AUDIT_TIERS.flatMap((tier) => {
      const histogram = latency.get(tier);
      const p50Ms = histogram?.percentile(0.5);
      const p99Ms = histogram?.percentile(0.99);
      return histogram === undefined || p50Ms === undefined || p99Ms === undefined ? [] : [{ tier, samples: histogram.total, p50Ms, p99Ms }];
    }),
    events: { read: inRange.length, distinct: events.length, duplicates, conflicts },
  };
}

export function statusOf(closed: boolean, produced: number, received: number, unaudited: number, compacted = false): WindowStatus {
  if (!closed) return 'OPEN';
  if (produced === 0) return received > 0 ? 'DUPLICATES' : unaudited > 0 ? 'UNAUDITED' : 'OK';
  if (received < produced) return compacted ? 'COMPACTED' : 'LOSS';
  return received > produced ? 'DUPLICATES' : 'OK';
}

function sum(values: Iterable<number>): number {
  let total = 0;
  for (const value of values) total += value;
  return total;
}
