/**
 * The audit report as text: a table for people, JSON for programs. Both come from one
 * Reconciliation plus what reading the audit topic found.
 */
import type { UndecodableAuditRecord } from './read-audit-topic.js';
import type { Reconciliation, TierCompleteness } from './reconcile.js';

export type ReportFormat = 'table' | 'json';
export const REPORT_FORMATS: readonly ReportFormat[] = ['table', 'json'];

export interface AuditReportInput {
  readonly reconciliation: Reconciliation;
  /** Records of the audit topic read, all topics. */
  readonly recordsRead: number;
  readonly undecodable: readonly UndecodableAuditRecord[];
}

/**
 * A ratio as a percentage with two decimals that never rounds to 100% unless it is: 99.999%
 * prints as 99.99% and 100.001% as 100.01%, so the number agrees with the LOSS/DUPLICATES flag.
 */
export function formatPercent(ratio: number | null): string {
  if (ratio === null) return 'n/a';
  const rounded = Math.round(ratio * 10_000);
  const hundredths = ratio < 1 ? Math.min(rounded, 9_999) : ratio > 1 ? Math.max(rounded, 10_001) : 10_000;
  return `${(hundredths / 100).toFixed(2)}%`;
}

export function formatReport(input: AuditReportInput, format: ReportFormat): string {
  return format === 'json' ? `${JSON.stringify(reportJson(input), null, 2)}\n` : reportTable(input);
}

export function reportJson({ reconciliation: r, recordsRead, undecodable }: AuditReportInput): unknown {
  return {
    topic: r.topic,
    from: iso(r.from),
    to: iso(r.to),
    generatedAt: iso(r.now),
    latenessMs: r.latenessMs,
    compacted: r.compacted,
    windows: r.windows.map((window) => ({
      start: iso(window.windowStart),
      end: iso(window.windowEnd),
      closed: window.closed,
      produced: window.produced,
      tiers: window.tiers.map((tier) => ({
        tier: tier.tier,
        received: tier.received,
        unaudited: tier.unaudited,
        completenessPercent: tier.completeness === null ? null : tier.completeness * 100,
        status: tier.status,
      })),
    })),
    latency: r.latency.map((tier) => ({ tier: tier.tier, samples: tier.samples, p50Ms: tier.p50Ms, p99Ms: tier.p99Ms })),
    auditEvents: { ...r.events, recordsRead, undecodable: undecodable.length },
  };
}

export function reportTable({ reconciliation: r, recordsRead, undecodable }: AuditReportInput): string {
  const lines: string[] = [];
  lines.push(`audit of topic ${r.topic}: windows from ${iso(r.from)} to ${iso(r.to)}; a window is final ${Math.round(r.latenessMs / 1000)} s after its end (report at ${iso(r.now)})`);
  if (r.compacted) {
    lines.push('the topic is compacted: a tier that read after the cleaner removed older values of a key counts fewer records than were produced (COMPACTED); counts cannot tell that from loss');
  }
  lines.push('');
  if (r.windows.length === 0) {
    lines.push('no audit counts for this topic in this range');
  } else {
    const rows: string[][] = [['WINDOW START', 'WINDOW END', 'PRODUCED', 'TIER', 'RECEIVED', 'UNKNOWN ORIGIN', 'COMPLETENESS', 'STATUS']];
    for (const window of r.windows) {
      const tiers: (TierCompleteness | undefined)[] = window.tiers.length === 0 ? [undefined] : [...window.tiers];
      for (const tier of tiers) {
        rows.push([
          iso(window.windowStart),
          iso(window.windowEnd),
          String(window.produced),
          tier?.tier ?? '-',
          tier === undefined ? '-' : String(tier.received),
          tier === undefined ? '-' : String(tier.unaudited),
          tier === undefined ? '-' : formatPercent(tier.completeness),
          tier?.status ?? (window.closed ? 'NO OTHER TIER' : 'OPEN'),
        ]);
      }
    }
    lines.push(...columns(rows));
  }
  if (r.latency.length > 0) {
    lines.push('');
    lines.push('latency from creation to each tier (histogram bucket bounds, ≤ 9% above exact):');
    lines.push(...columns([['TIER', 'SAMPLES', 'P50', 'P99'], ...r.latency.map((tier) => [tier.tier, String(tier.samples), `${tier.p50Ms} ms`, `${tier.p99Ms} ms`])]));
  }
  lines.push('');
  lines.push(
    `_audit: ${recordsRead} records read; ${r.events.read} events of this topic in range, ${r.events.distinct} distinct, ` +
      `${r.events.duplicates} repeated deliveries ignored${r.events.conflicts > 0 ? `, ${r.events.conflicts} CONFLICTING (same key, different counts)` : ''}` +
      `${undecodable.length > 0 ? `; ${undecodable.length} records could not be decoded and were skipped` : ''}`,
  );
  for (const bad of undecodable.slice(0, 5)) lines.push(`  skipped partition ${bad.partition} offset ${bad.offset}: ${bad.reason}`);
  return `${lines.join('\n')}\n`;
}

function columns(rows: readonly string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, index) => (widths[index] = Math.max(widths[index] ?? 0, cell.length)));
  return rows.map((row) => row.map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index] ?? 0))).join('  '));
}

function iso(milliseconds: number): string {
  return new Date(milliseconds).toISOString();
}
