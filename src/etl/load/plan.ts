/**
 * The plan of a run: per partition, the offset range [start, end) to read. start is where the
 * last committed manifest says the partition stands (a partition never loaded starts at the log
 * start: earliest); end is the high watermark when planning, capped at maxRecordsPerRun when the load sets it.
 *
 * Offsets are not records: a compacted topic has offsets whose records the cleaner removed, so a
 * range holds at most end − start records, and reading it steps over the gaps (extract.ts). Only
 * the log start moves when records are deleted (retention, DeleteRecords); compaction never moves
 * it, so a start at or above the log start is never a loss, whatever the range holds.
 *
 * A start below the log start means retention deleted records nobody loaded. The partition is
 * then marked lost [start, logStart) and nothing of it is committed, unless the run was told
 * --accept-gap: the gap is recorded in the manifest and reading resumes at the log start. A start
 * past the high watermark (topic recreated, log truncated) is marked ahead and not read, once the
 * high watermark stays below it (after a failover a new leader's is behind for a moment).
 */
import type { TributaryError } from '../../common/errors.js';
import type { IcebergSchema } from '../iceberg/table-schema.js';
import { etlError } from '../errors.js';
import type { LoadDefinition } from '../load-file.js';
import type { ReaderSchema } from '../load-types.js';

export type { ReaderSchema } from '../load-types.js';
import { nextOffsetOf, type Manifest, type OffsetGap } from './manifest.js';
import { HIGH_WATERMARK_WAIT_MS, highWatermarkBackoff, type LoadSource, type PartitionBounds } from './source.js';
import { checkTimeField } from '../records/event-time.js';

export type PartitionProblem = 'lost' | 'ahead';

export interface PartitionPlan {
  readonly topic: string;
  readonly partition: number;
  readonly start: number;
  readonly end: number;
  readonly logStart: number;
  readonly highWatermark: number;
  /** The range stops at maxRecordsPerRun before the high watermark. */
  readonly capped: boolean;
  /** An accepted loss [from, to) just before start. */
  readonly gap?: OffsetGap;
  /** Why the partition is not read this run (start and end are then both the committed offset). */
  readonly problem?: PartitionProblem;
}

/** The topic's reader schema: the latest version of subject `<topic>-value` now. */
export type ReaderSchemaLookup = (topic: string) => Promise<ReaderSchema>;

export interface LoadPlan {
  readonly load: string;
  /** The commit this run would make: the last committed seq + 1. */
  readonly seq: number;
  readonly plannedAt: string;
  readonly partitions: readonly PartitionPlan[];
  /** Per topic with records to read. */
  readonly readerSchemas: ReadonlyMap<string, ReaderSchema>;
  /** Format iceberg: per topic, the schema its rows are written with, in its table's ids (iceberg/schema-evolution.ts). */
  readonly tableSchemas?: ReadonlyMap<string, IcebergSchema>;
}

export interface PlanInputs {
  readonly load: LoadDefinition;
  /** The last committed manifest; undefined before the first commit. */
  readonly base: Manifest | undefined;
  readonly source: LoadSource;
  readonly readerSchema: ReaderSchemaLookup;
  readonly acceptGap: boolean;
  readonly now: Date;
  /** How long a high watermark below the committed offset is asked again before the partition is ahead; default HIGH_WATERMARK_WAIT_MS. */
  readonly highWatermarkWaitMs?: number;
}

export async function planRun(inputs: PlanInputs): Promise<LoadPlan> {
  const { load, base, source } = inputs;
  const topics = await source.topics(load.topics);
  const partitions: PartitionPlan[] = [];
  for (const topic of topics) {
    const numbers = await source.partitions(topic);
    const decided = await Promise.all(
      numbers.map(async (partition) => {
        const committed = nextOffsetOf(base?.nextOffsets, topic, partition);
        const bounds = await boundsReaching(source, topic, partition, committed, inputs.highWatermarkWaitMs ?? HIGH_WATERMARK_WAIT_MS);
        return decidePartition(topic, partition, committed, bounds, load.maxRecordsPerRun, inputs.acceptGap);
      }),
    );
    partitions.push(...decided);
  }
  const readerSchemas = new Map<string, ReaderSchema>();
  for (const topic of new Set(partitions.filter((p) => p.end > p.start).map((p) => p.topic))) {
    const reader = await inputs.readerSchema(topic);
    if (load.timeField !== undefined) checkTimeField(reader, topic, load.timeField);
    readerSchemas.set(topic, reader);
  }
  return { load: load.name, seq: (base?.seq ?? 0) + 1, plannedAt: inputs.now.toISOString(), partitions, readerSchemas };
}

/**
 * The partition's bounds; while its high watermark is below the committed offset, asked again for
 * up to `waitMs`. That offset was a high watermark once, so the records below it were committed: a
 * leader elected since (a failover) serves a high watermark behind it only until its followers
 * have fetched from it. One that stays behind is a truncated log or a recreated topic ('ahead').
 */
async function boundsReaching(source: LoadSource, topic: string, partition: number, committed: number | undefined, waitMs: number): Promise<PartitionBounds> {
  let bounds = await source.bounds(topic, partition);
  const since = Date.now();
  for (let looks = 0; committed !== undefined && bounds.highWatermark < committed && Date.now() - since < waitMs; looks += 1) {
    await highWatermarkBackoff(looks);
    bounds = await source.bounds(topic, partition);
  }
  return bounds;
}

/** One partition's range, from its committed offset (undefined: never loaded) and its bounds now. */
export function decidePartition(
  topic: string,
  partition: number,
  committed: number | undefined,
  bounds: { readonly logStart: number; readonly highWatermark: number },
  maxRecordsPerRun: number | undefined,
  acceptGap: boolean,
): PartitionPlan {
  const { logStart, highWatermark } = bounds;
  const here = { topic, partition, logStart, highWatermark };
  let start = committed ?? logStart;
  let gap: OffsetGap | undefined;
  if (start > highWatermark) return { ...here, start, end: start, capped: false, problem: 'ahead' };
  if (start < logStart) {
    if (!acceptGap) return { ...here, start, end: start, capped: false, problem: 'lost' };
    gap = { from: start, to: logStart };
    start = logStart;
  }
  const end = maxRecordsPerRun === undefined ? highWatermark : Math.min(highWatermark, start + maxRecordsPerRun);
  return { ...here, start, end, capped: end < highWatermark, ...(gap === undefined ? {} : { gap }) };
}

/** Whether the partition changes state in this run (records to read, or a gap to record). */
export function partitionMoves(plan: PartitionPlan): boolean {
  return plan.problem === undefined && (plan.end > plan.start || plan.gap !== undefined);
}

/** The failure that a partition's problem means, naming the partition and the range. */
export function partitionProblemError(plan: PartitionPlan, loadName: string): TributaryError | undefined {
  const where = `${plan.topic}-${plan.partition}`;
  if (plan.problem === 'lost') {
    return etlError(
      'ETL_OFFSETS_LOST',
      `partition ${where} of load ${loadName}: offsets [${plan.start}, ${plan.logStart}) (at most ${plan.logStart - plan.start} records) were deleted by retention before they were loaded; ` +
        `nothing was committed for ${where}. Recover them from elsewhere, or run again with --accept-gap to record the loss in the manifest and continue from offset ${plan.logStart}`,
      { details: { topic: plan.topic, partition: plan.partition, from: plan.start, to: plan.logStart } },
    );
  }
  if (plan.problem === 'ahead') {
    return etlError(
      'ETL_OFFSETS_AHEAD',
      `partition ${where} of load ${loadName}: the committed next offset ${plan.start} is past the log end ${plan.highWatermark}; the topic was recreated or its log truncated. ` +
        `Nothing was committed for ${where}; find out what happened to the topic before loading it again`,
      { details: { topic: plan.topic, partition: plan.partition, committed: plan.start, highWatermark: plan.highWatermark } },
    );
  }
  return undefined;
}

/** The plan as text for `tributary etl plan`. */
export function formatPlan(plan: LoadPlan, loadName: string): string {
  const lines = [`load ${loadName}: next commit ${plan.seq}, planned at ${plan.plannedAt}`];
  for (const [topic, reader] of plan.readerSchemas) lines.push(`reader schema of ${topic}: ${reader.ref.subject} version ${reader.ref.version} (id ${reader.ref.id})`);
  const header = ['partition', 'start', 'end', 'records', 'log start', 'high watermark', 'note'];
  const rows = plan.partitions.map((p) => [
    `${p.topic}-${p.partition}`,
    String(p.start),
    String(p.end),
    String(p.end - p.start),
    String(p.logStart),
    String(p.highWatermark),
    p.problem === 'lost'
      ? `LOST [${p.start}, ${p.logStart}): fails without --accept-gap`
      : p.problem === 'ahead'
        ? `AHEAD of the log end: fails`
        : [p.gap === undefined ? '' : `gap [${p.gap.from}, ${p.gap.to}) accepted`, p.capped ? 'capped by maxRecordsPerRun' : ''].filter((note) => note !== '').join('; '),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const format = (row: readonly string[]): string => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd();
  lines.push(format(header), ...rows.map(format));
  const total = plan.partitions.reduce((sum, p) => sum + (p.end - p.start), 0);
  lines.push(`${total} records to read from ${plan.partitions.filter((p) => p.end > p.start).length} of ${plan.partitions.length} partitions`);
  return `${lines.join('\n')}\n`;
}
