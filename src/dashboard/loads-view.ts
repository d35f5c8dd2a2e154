/**
 * The loads page's data (`/` and `/api/loads`): every load file, and per load its last runs (the
 * committed manifests in its warehouse) and its records per event hour with their completeness
 * against the audit's producer counts. Each load's warehouse is its own panel: one HDFS that is
 * down empties only the loads that use it.
 */
import { DEFAULT_LATENESS_MS } from '../audit/windows.js';
import type { LoadDefinition } from '../etl/load-file.js';
import { HOUR_MS } from '../etl/layout.js';
import type { NextOffsets } from '../etl/load/manifest.js';
import { readLoadStatus, type CommitSummary, type LoadStatus } from '../etl/status/status.js';
import { openWarehouse } from '../etl/warehouse/open-warehouse.js';
import type { WarehouseFileSystem } from '../etl/warehouse/warehouse.js';
import { hourRows, producedPerHour, type HourRow } from './hours.js';
import { gather, notConfigured, type Panel, type PanelError } from './panel.js';
import type { DashboardSources } from './sources.js';
import { readLoadFiles } from './sources/load-files.js';

/** The latest commits shown per load. */
export const LATEST_RUNS = 10;
/** Reads of the dashboard give up sooner than a loader's: the page should not wait half a minute. */
const WAREHOUSE_RETRY = { attempts: 2, initialDelayMs: 200, maxDelayMs: 1_000 };

export interface RunsView {
  readonly commits: number;
  readonly pending: number;
  readonly records: number;
  /** Newest first, at most LATEST_RUNS. */
  readonly latest: readonly CommitSummary[];
  readonly nextOffsets: NextOffsets;
}

export interface TopicHoursView {
  readonly topic: string;
  /** Whether producer counts were read: off (no --bootstrap-server/--registry), ok, or the error. */
  readonly audit: { readonly state: 'off' } | { readonly state: 'ok' } | { readonly state: 'error'; readonly error: PanelError };
  readonly rows: readonly HourRow[];
}

export interface LoadView {
  readonly name: string;
  readonly file: string;
  readonly schedule: string | null;
  readonly warehouse: string;
  readonly topics: string;
  readonly format: string;
  readonly codec: string;
  readonly runs: Panel<RunsView>;
  readonly hours: Panel<readonly TopicHoursView[]>;
}

export interface LoadsView {
  readonly directory: string;
  readonly loads: readonly LoadView[];
  readonly problems: readonly (PanelError & { readonly file: string })[];
}

export async function loadsView(sources: DashboardSources): Promise<Panel<LoadsView>> {
  if (sources.loadsDirectory === undefined) return notConfigured('load files', 'the dashboard was started without --loads DIR (the folder of the load YAML files, e.g. jobs/)');
  const directory = sources.loadsDirectory;
  const files = await gather('load files', sources.timeoutMs, () => readLoadFiles(directory));
  if (!files.ok) return files;
  const produced = new ProducedCounts(sources);
  const loads = await Promise.all(files.data.loads.map((load) => loadView(load, sources, produced)));
  return { ok: true, data: { directory: files.data.directory, loads, problems: files.data.problems } };
}

/** The warehouse of a load, opened to read only, with short retries. */
export function loadWarehouse(load: LoadDefinition, sources: DashboardSources): WarehouseFileSystem {
  // Its retries are not worth a warning each: a failure that remains shows on the load's panel.
  const logger = sources.logger.child({ load: load.name }, { level: 'error' });
  return openWarehouse(load.warehouse.url, { baseDirectory: load.warehouse.baseDirectory, logger, retry: WAREHOUSE_RETRY, requestTimeoutMs: sources.timeoutMs });
}

async function loadView(load: LoadDefinition, sources: DashboardSources, produced: ProducedCounts): Promise<LoadView> {
  let warehouse: WarehouseFileSystem | undefined;
  let where = load.warehouse.url;
  const source = `the warehouse of load ${load.name}`;
  const status = await gather(source, sources.timeoutMs, async () => {
    warehouse = loadWarehouse(load, sources);
    where = warehouse.describe(load.warehouse.root);
    return readLoadStatus(warehouse, load.warehouse.root, load.name);
  });
  const runs: Panel<RunsView> = status.ok ? { ok: true, data: runsOf(status.data) } : status;
  const hours: Panel<readonly TopicHoursView[]> = status.ok ? { ok: true, data: await hoursOf(load, status.data, produced, sources) } : status;
  return {
    name: load.name,
    file: load.file,
    schedule: load.schedule ?? null,
    warehouse: where,
    topics: load.topics.kind === 'list' ? load.topics.names.join(', ') : `/${load.topics.source}/`,
    format: load.format,
    codec: load.codec,
    runs,
    hours,
  };
}

function runsOf(status: LoadStatus): RunsView {
  return {
    commits: status.commits.length,
    pending: status.commits.filter((commit) => commit.state === 'pending').length,
    records: status.commits.filter((commit) => commit.state === 'published').reduce((sum, commit) => sum + commit.records, 0),
    latest: status.commits.slice(-LATEST_RUNS).reverse(),
    nextOffsets: status.nextOffsets,
  };
}

async function hoursOf(load: LoadDefinition, status: LoadStatus, produced: ProducedCounts, sources: DashboardSources): Promise<TopicHoursView[]> {
  const topics = [...new Set([...(load.topics.kind === 'list' ? load.topics.names : []), ...Object.keys(status.hours)])].sort();
  const now = sources.now();
  return Promise.all(
    topics.map(async (topic): Promise<TopicHoursView> => {
      const loaded = status.hours[topic] ?? {};
      const counts = await produced.of(topic);
      if (counts === undefined) return { topic, audit: { state: 'off' }, rows: hourRows(loaded, undefined, now, load.latenessHorizonMs) };
      if (!counts.ok) return { topic, audit: { state: 'error', error: counts.error }, rows: hourRows(loaded, undefined, now, load.latenessHorizonMs) };
      // Hours produced before the load's first loaded hour are not its business (it may have
      // started later, or after retention); before anything is loaded, the last day is.
      const loadedHours = Object.keys(loaded).sort();
      const since = loadedHours[0] ?? new Date(now - 24 * HOUR_MS).toISOString().slice(0, 13);
      const relevant = Object.fromEntries(Object.entries(counts.data).filter(([hour]) => hour >= since));
      return { topic, audit: { state: 'ok' }, rows: hourRows(loaded, relevant, now, load.latenessHorizonMs) };
    }),
  );
}

/** Producer counts per hour of each topic, read once per page even when several loads read a topic. */
class ProducedCounts {
  private readonly read = new Map<string, Promise<Panel<Record<string, number>>>>();

  constructor(private readonly sources: DashboardSources) {}

  /** undefined when the audit is not configured. Every window up to now: the callers pick hours. */
  of(topic: string): Promise<Panel<Record<string, number>>> | undefined {
    const audit = this.sources.audit;
    if (audit === undefined) return undefined;
    let found = this.read.get(topic);
    if (found === undefined) {
      const now = this.sources.now();
      const range = { from: 0, to: Math.ceil(now / HOUR_MS) * HOUR_MS, now, latenessMs: DEFAULT_LATENESS_MS };
      found = gather(audit.describe(), this.sources.timeoutMs, async () => producedPerHour((await audit.reconcile(topic, range)).reconciliation));
      this.read.set(topic, found);
    }
    return found;
  }
}
