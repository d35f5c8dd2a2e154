/**
 * The audit page's data (`/audit` and `/api/audit`): completeness per time window and tier of
 * each topic, as `tributary audit report` computes it, over a range of windows (default: the last
 * 24 hours). The topics are those given with ?topic=, else those the load files name, else those
 * a topic-pattern load has loaded.
 */
import type { TierCompleteness, WindowStatus } from '../audit/reconcile.js';
import { DEFAULT_LATENESS_MS } from '../audit/windows.js';
import { TributaryError } from '../common/errors.js';
import { HOUR_MS } from '../etl/layout.js';
import { readLoadStatus } from '../etl/status/status.js';
import { loadWarehouse } from './loads-view.js';
import { gather, notConfigured, type Panel } from './panel.js';
import type { DashboardSources } from './sources.js';
import { readLoadFiles } from './sources/load-files.js';

export interface AuditQuery {
  readonly topics: readonly string[];
  /** ISO-8601 instants; default: the 24 hours up to the next full hour. */
  readonly from?: string;
  readonly to?: string;
}

export interface WindowView {
  readonly start: string;
  readonly end: string;
  readonly closed: boolean;
  readonly produced: number;
  readonly tiers: readonly (Omit<TierCompleteness, 'completeness'> & { readonly completenessPercent: number | null; readonly status: WindowStatus })[];
}

export interface TopicAuditView {
  readonly topic: string;
  readonly report: Panel<{ readonly windows: readonly WindowView[]; readonly eventsRead: number; readonly duplicateDeliveries: number; readonly undecodable: number }>;
}

export interface AuditView {
  readonly from: string;
  readonly to: string;
  readonly latenessMs: number;
  readonly topics: readonly TopicAuditView[];
}

export async function auditView(sources: DashboardSources, query: AuditQuery): Promise<Panel<AuditView>> {
  const audit = sources.audit;
  if (audit === undefined) return notConfigured('audit counts', 'the dashboard was started without --bootstrap-server and --registry (the cluster whose _audit topic holds the counts, and its schema registry)');
  const now = sources.now();
  const range = parseRange(query, now);
  if (!range.ok) return range;
  const { from, to } = range.data;
  const topics = query.topics.length > 0 ? [...new Set(query.topics)].sort() : await topicsOfLoads(sources);
  const reports = await Promise.all(
    topics.map(async (topic): Promise<TopicAuditView> => ({
      topic,
      report: await gather(audit.describe(), sources.timeoutMs, async () => {
        const { reconciliation, contents } = await audit.reconcile(topic, { from, to, now, latenessMs: DEFAULT_LATENESS_MS });
        return {
          windows: reconciliation.windows.map((window) => ({
            start: new Date(window.windowStart).toISOString(),
            end: new Date(window.windowEnd).toISOString(),
            closed: window.closed,
            produced: window.produced,
            tiers: window.tiers.map(({ completeness, ...tier }) => ({ ...tier, completenessPercent: completeness === null ? null : completeness * 100 })),
          })),
          eventsRead: reconciliation.events.read,
          duplicateDeliveries: reconciliation.events.duplicates,
          undecodable: contents.undecodable.length,
        };
      }),
    })),
  );
  return { ok: true, data: { from: new Date(from).toISOString(), to: new Date(to).toISOString(), latenessMs: DEFAULT_LATENESS_MS, topics: reports } };
}

function parseRange(query: AuditQuery, now: number): Panel<{ from: number; to: number }> {
  try {
    const to = query.to === undefined || query.to === '' ? Math.ceil(now / HOUR_MS) * HOUR_MS : instant('to', query.to);
    const from = query.from === undefined || query.from === '' ? to - 24 * HOUR_MS : instant('from', query.from);
    if (from >= to) throw new TributaryError({ code: 'CONFIG_INVALID', message: `from (${query.from ?? new Date(from).toISOString()}) must be before to (${query.to ?? new Date(to).toISOString()})` });
    return { ok: true, data: { from, to } };
  } catch (error) {
    return { ok: false, error: { source: 'the requested range', code: 'CONFIG_INVALID', message: (error as Error).message } };
  }
}

function instant(name: string, text: string): number {
  // A full date and time with a zone, as `audit report` asks: "2024-05-01" is not silently midnight.
  const value = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(value)) throw new TributaryError({ code: 'CONFIG_INVALID', message: `${name} must be an ISO-8601 date and time with a zone, e.g. 2024-05-01T10:00:00Z, not "${text}"` });
  return value;
}

/** The topics the load files name, and those pattern loads have loaded (a warehouse that fails adds none). */
async function topicsOfLoads(sources: DashboardSources): Promise<string[]> {
  const directory = sources.loadsDirectory;
  if (directory === undefined) return [];
  const files = await gather('load files', sources.timeoutMs, () => readLoadFiles(directory));
  if (!files.ok) return [];
  const topics = new Set<string>();
  for (const load of files.data.loads) {
    if (load.topics.kind === 'list') {
      for (const name of load.topics.names) topics.add(name);
      continue;
    }
    const status = await gather(`the warehouse of load ${load.name}`, sources.timeoutMs, () => readLoadStatus(loadWarehouse(load, sources), load.warehouse.root, load.name));
    if (status.ok) for (const topic of Object.keys(status.data.hours)) topics.add(topic);
  }
  return [...topics].sort();
}
