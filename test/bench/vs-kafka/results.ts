/**
 * The results file (JSON) and its summary: every measured value per round and system, then per
 * figure min / median / max for each system and the ratio Tributary ÷ Kafka (of the medians, and
 * per round). The markdown page and the charts are generated from this file alone.
 */
import type { BenchOptions, ScenarioName } from './options.js';
import type { SystemName } from './systems.js';

export interface Sample {
  readonly round: number;
  readonly system: SystemName;
  readonly value: number;
  /** Other numbers measured with it (MB/s, latency percentiles, records per batch, log size…). */
  readonly detail?: Readonly<Record<string, number | string>>;
}

export interface Figure {
  readonly id: string;
  readonly scenario: ScenarioName;
  /** What was measured and with which client, e.g. "produce, batch 50 (Java ProducerPerformance)". */
  readonly label: string;
  readonly unit: string;
  readonly better: 'higher' | 'lower';
  /** Chart grouping. */
  readonly chart: string;
  readonly samples: Sample[];
}

export interface MachineDescription {
  readonly cpuModel: string;
  readonly cpus: number;
  readonly cpuMHz: number;
  readonly memoryGiB: number;
  readonly os: string;
  readonly disk: string;
  readonly node: string;
  readonly java: string;
  readonly kcat: string;
  readonly loadAtStart: readonly number[];
  loadAtEnd?: readonly number[];
}

/** The Tributary checkout whose broker ran (BENCH_TRIBUTARY_DIR or the benchmark's own). */
export interface CheckoutDescription {
  readonly dir: string;
  readonly commit: string;
  /** The commit's subject line. */
  readonly subject: string;
  /** Tracked files differ from the commit (uncommitted changes ran). */
  readonly modified: boolean;
}

export interface ProfileSummary {
  readonly files: readonly string[];
  readonly sampledSeconds: number;
  readonly topFunctions: readonly { readonly name: string; readonly where: string; readonly selfPercent: number; readonly calledFrom?: string }[];
  readonly topFiles: readonly { readonly file: string; readonly selfPercent: number }[];
}

export interface Results {
  readonly version: 1;
  readonly startedAt: string;
  finishedAt?: string;
  readonly kafkaVersion: string;
  readonly machine: MachineDescription;
  readonly options: BenchOptions;
  /** Why this is not the full run; empty for a full run. */
  readonly reduced: readonly string[];
  readonly settings: Readonly<Record<SystemName, Readonly<Record<string, string>>>>;
  /** Settings of every broker of the replication scenario's 3-broker clusters (when it ran). */
  readonly replicationSettings?: Readonly<Record<SystemName, Readonly<Record<string, string>>>>;
  /** Settings of the security scenario's brokers beyond `settings` (when it ran; no secret in them). */
  readonly securitySettings?: Readonly<Record<SystemName, Readonly<Record<string, string>>>>;
  /** Settings of the compaction scenario's brokers beyond `settings` (when it ran). */
  readonly compactionSettings?: Readonly<Record<SystemName, Readonly<Record<string, string>>>>;
  /** Where the Tributary broker's code came from (absent in results written before it was recorded). */
  readonly tributaryCheckout?: CheckoutDescription;
  readonly figures: Figure[];
  readonly notes: string[];
  profile?: ProfileSummary;
  /** Seconds each broker took to start, per session. */
  readonly startSeconds: { system: SystemName; round: number; seconds: number; setup?: '3 brokers' | 'SASL_SSL' | 'compaction' }[];
}

export interface SideSummary {
  readonly n: number;
  readonly min: number;
  readonly median: number;
  readonly max: number;
}

export interface FigureSummary {
  readonly figure: Figure;
  readonly kafka: SideSummary | undefined;
  readonly tributary: SideSummary | undefined;
  /** median(Tributary) ÷ median(Kafka); undefined when either is missing or Kafka's is 0. */
  readonly ratio: number | undefined;
  /** Tributary ÷ Kafka of each round that has both. */
  readonly roundRatios: readonly number[];
  /** Whether Tributary's median is at least as good as Kafka's (by the figure's direction). */
  readonly tributaryAsGood: boolean | undefined;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] ?? NaN) : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
}

function side(samples: readonly Sample[], system: SystemName): SideSummary | undefined {
  const values = samples.filter((s) => s.system === system).map((s) => s.value);
  if (values.length === 0) return undefined;
  return { n: values.length, min: Math.min(...values), median: median(values), max: Math.max(...values) };
}

export function summarize(figure: Figure): FigureSummary {
  const kafka = side(figure.samples, 'kafka');
  const tributary = side(figure.samples, 'tributary');
  const ratio = kafka !== undefined && tributary !== undefined && kafka.median !== 0 ? tributary.median / kafka.median : undefined;
  const rounds = [...new Set(figure.samples.map((s) => s.round))].sort((a, b) => a - b);
  const roundRatios: number[] = [];
  for (const round of rounds) {
    const k = figure.samples.find((s) => s.round === round && s.system === 'kafka')?.value;
    const t = figure.samples.find((s) => s.round === round && s.system === 'tributary')?.value;
    if (k !== undefined && t !== undefined && k !== 0) roundRatios.push(t / k);
  }
  const tributaryAsGood = kafka === undefined || tributary === undefined ? undefined
    : figure.better === 'higher' ? tributary.median >= kafka.median : tributary.median <= kafka.median;
  return { figure, kafka, tributary, ratio, roundRatios, tributaryAsGood };
}

// ---- formatting ------------------------------------------------------------------------------

export function formatValue(value: number, unit: string): string {
  if (!Number.isFinite(value)) return String(value);
  if (unit === 'ms') return value < 10 ? value.toFixed(2) : value.toFixed(1);
  if (unit === 'B/msg') return value.toFixed(1);
  const abs = Math.abs(value);
  if (abs >= 100) return Math.round(value).toLocaleString('en-US');
  if (abs >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

export function formatRatio(ratio: number | undefined): string {
  return ratio === undefined || !Number.isFinite(ratio) ? 'n/a' : `${ratio.toFixed(2)}×`;
}

export function formatSide(s: SideSummary | undefined, unit: string): string {
  if (s === undefined) return '—';
  if (s.n === 1) return formatValue(s.median, unit);
  return `${formatValue(s.min, unit)} / **${formatValue(s.median, unit)}** / ${formatValue(s.max, unit)}`;
}

/** A plain-text table (columns padded, ` | ` between them). */
export function textTable(rows: readonly (readonly string[])[], leftColumns = 1): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((r) => (r[column] ?? '').length))) ?? [];
  const line = (r: readonly string[]): string =>
    r.map((cell, column) => (column < leftColumns ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join(' | ');
  const [header, ...body] = rows;
  return [line(header ?? []), widths.map((w) => '-'.repeat(w)).join('-|-'), ...body.map(line)];
}

/** The console table: one row per figure; the last column is the ratio of the medians. */
export function consoleTable(results: Results): string[] {
  const rows: string[][] = [['scenario', 'figure', 'unit', 'better', 'Kafka min / median / max', 'Tributary min / median / max', 'per-round T÷K', 'T ÷ K']];
  for (const figure of results.figures) {
    const s = summarize(figure);
    const plain = (x: SideSummary | undefined): string => formatSide(x, figure.unit).replace(/\*\*/g, '');
    rows.push([figure.scenario, figure.label, figure.unit, figure.better, plain(s.kafka), plain(s.tributary),
      s.roundRatios.map((r) => r.toFixed(2)).join(' ') || '—', formatRatio(s.ratio)]);
  }
  return textTable(rows, 4);
}
