/**
 * The manifest of a run, from its plan and what its tasks staged. Everything is sorted, so equal
 * inputs give equal bytes.
 */
import type { LoadDefinition } from '../load-file.js';
import { MANIFEST_FORMAT, type Manifest, type NextOffsets, type ManifestDataFile, type ManifestFile, type ManifestRange, type ReaderSchemaRef } from './manifest.js';
import { partitionMoves, type LoadPlan } from './plan.js';
import { tableEntries } from '../iceberg/load-tables.js';
import { deadLetterEntry } from '../iceberg/dead-letters.js';
import { catalogRefOf } from '../iceberg/load-catalog.js';
import { compileTransform } from '../records/transform.js';
import type { Type } from 'avsc';

/** The type of the records each topic's files hold: the transformation's output, else the reader's. */
function recordTypesOf(load: LoadDefinition, plan: LoadPlan): Map<string, Type> {
  return new Map([...plan.readerSchemas].map(([topic, reader]) => [topic, load.transform === undefined ? reader.fileType : compileTransform(load.transform, reader, topic).outputType]));
}

/** What one task staged: a partition's whole range, or one slice of it (load/slices.ts). */
export interface StagedTask {
  readonly topic: string;
  readonly partition: number;
  /** The slice staged; absent in results of older versions (the whole planned range). */
  readonly start?: number | undefined;
  readonly end?: number | undefined;
  readonly files: readonly ManifestDataFile[];
  readonly quarantine: ManifestFile | undefined;
  /** Quarantined records per failure code. */
  readonly reasons: Readonly<Record<string, number>>;
  /** The largest event time among the records staged (absent when none). */
  readonly maxEventTime?: number;
}

export interface ManifestInputs {
  readonly load: LoadDefinition;
  readonly plan: LoadPlan;
  readonly base: Manifest | undefined;
  readonly staged: readonly StagedTask[];
  readonly attempt: string;
  readonly runNumber: number | null;
  /** Format iceberg: the URI a table folder is named by (load-tables.ts tableLocation). */
  readonly tableLocation?: ((dir: string) => string) | undefined;
}

const byTopicPartition = <T extends { topic: string; partition: number }>(a: T, b: T): number =>
  a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition;

export function buildManifest(inputs: ManifestInputs): Manifest {
  const { plan, base } = inputs;
  const tasks = byPartition(inputs.staged);
  const ranges: ManifestRange[] = [];
  const next: Record<string, Record<string, number>> = {};
  for (const [topic, partitions] of Object.entries(base?.nextOffsets ?? {})) next[topic] = { ...partitions };
  for (const partition of [...plan.partitions].sort(byTopicPartition)) {
    if (!partitionMoves(partition)) continue;
    const task = tasks.get(`${partition.topic}\u0000${partition.partition}`);
    ranges.push({
      topic: partition.topic,
      partition: partition.partition,
      start: partition.start,
      end: partition.end,
      records: task?.records ?? 0,
      quarantined: task?.quarantined ?? 0,
      ...(partition.gap === undefined ? {} : { gap: partition.gap }),
    });
    (next[partition.topic] ??= {})[String(partition.partition)] = partition.end;
  }
  const eventTimes = buildManifestEventTimes(base, plan, tasks);
  const files = inputs.staged.flatMap((task) => task.files).sort((a, b) => byTopicPartition(a, b) || (a.hour < b.hour ? -1 : a.hour > b.hour ? 1 : 0) || a.start - b.start || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const quarantineFiles = inputs.staged.flatMap((task) => (task.quarantine === undefined ? [] : [task.quarantine])).sort((a, b) => byTopicPartition(a, b) || a.start - b.start);
  const reasons: Record<string, number> = {};
  for (const task of inputs.staged) for (const [code, count] of Object.entries(task.reasons)) reasons[code] = (reasons[code] ?? 0) + count;
  const hours: Record<string, Record<string, number>> = {};
  for (const file of files) {
    const topicHours = (hours[file.topic] ??= {});
    topicHours[file.hour] = (topicHours[file.hour] ?? 0) + file.records;
  }
  const readerSchemas: Record<string, ReaderSchemaRef> = {};
  for (const topic of [...plan.readerSchemas.keys()].sort()) readerSchemas[topic] = plan.readerSchemas.get(topic)!.ref;
  return {
    format: MANIFEST_FORMAT,
    load: inputs.load.name,
    seq: plan.seq,
    attempt: inputs.attempt,
    runNumber: inputs.runNumber,
    plannedAt: plan.plannedAt,
    output: { format: inputs.load.format, codec: inputs.load.codec, timeField: inputs.load.timeField ?? null, layout: inputs.load.layout },
    readerSchemas,
    ranges,
    nextOffsets: sortNested(next),
    files,
    quarantine: { records: quarantineFiles.reduce((sum, file) => sum + file.records, 0), reasons: sortKeys(reasons), files: quarantineFiles },
    hours: sortNested(hours),
    eventTimes,
    ...(inputs.load.iceberg === undefined || quarantineFiles.length === 0
      ? {}
      : { deadLetters: deadLetterEntry(inputs.load.warehouse.root, inputs.load.name, inputs.tableLocation ?? ((dir) => dir), catalogRefOf(inputs.load, { deadLetters: true })) }),
    ...(inputs.load.iceberg === undefined
      ? {}
      : { iceberg: tableEntries(inputs.load.warehouse.root, files, recordTypesOf(inputs.load, plan), inputs.tableLocation ?? ((dir) => dir), plan.tableSchemas, (topic) => catalogRefOf(inputs.load, { topic })) }),
  };
}

/**
 * manifest.eventTimes after this commit (manifest.ts): per partition ever loaded, the largest
 * event time loaded so far, raised to plannedAt when the plan read it to its high watermark. The
 * plan time stands for "nothing older is waiting": a record produced after it is late data, which
 * still lands (as a new file) and makes hour-completeness.ts rewrite or withdraw the hour's marker.
 */
export function buildManifestEventTimes(base: { readonly nextOffsets: NextOffsets; readonly eventTimes?: NextOffsets | undefined } | undefined, plan: Pick<LoadPlan, 'plannedAt' | 'partitions'>, tasks: ReadonlyMap<string, Pick<PartitionStaged, 'maxEventTime'>>): Record<string, Record<string, number>> {
  const times: Record<string, Record<string, number>> = {};
  for (const [topic, partitions] of Object.entries(base?.eventTimes ?? {})) times[topic] = { ...partitions };
  const plannedAt = Date.parse(plan.plannedAt);
  for (const partition of plan.partitions) {
    if (partition.problem !== undefined) continue;
    const loadedBefore = base?.nextOffsets[partition.topic]?.[String(partition.partition)] !== undefined;
    // A partition never loaded and empty now has no hours to hold open: it stays out, as in nextOffsets.
    if (!loadedBefore && !partitionMoves(partition)) continue;
    const key = String(partition.partition);
    const before = times[partition.topic]?.[key];
    const staged = tasks.get(`${partition.topic}\u0000${partition.partition}`)?.maxEventTime;
    const caughtUp = !partition.capped && partition.end === partition.highWatermark;
    const candidates = [before, staged, caughtUp ? plannedAt : undefined].filter((time): time is number => time !== undefined && Number.isSafeInteger(time));
    if (candidates.length === 0) continue;
    (times[partition.topic] ??= {})[key] = Math.max(...candidates);
  }
  return sortNested(times);
}

/** What the tasks of one partition staged, summed over its slices. */
export interface PartitionStaged {
  readonly records: number;
  readonly quarantined: number;
  readonly maxEventTime?: number;
}

/** Slices of a partition summed, keyed by `topic NUL partition`. */
export function byPartition(staged: readonly StagedTask[]): Map<string, PartitionStaged> {
  const sums = new Map<string, { records: number; quarantined: number; maxEventTime?: number }>();
  for (const task of staged) {
    const key = `${task.topic}\u0000${task.partition}`;
    let sum = sums.get(key);
    if (sum === undefined) sums.set(key, (sum = { records: 0, quarantined: 0 }));
    sum.records += task.files.reduce((total, file) => total + file.records, 0);
    sum.quarantined += task.quarantine?.records ?? 0;
    if (task.maxEventTime !== undefined && (sum.maxEventTime === undefined || task.maxEventTime > sum.maxEventTime)) sum.maxEventTime = task.maxEventTime;
  }
  return sums;
}

function sortKeys<T>(record: Readonly<Record<string, T>>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function sortNested<T>(record: Readonly<Record<string, Readonly<Record<string, T>>>>): Record<string, Record<string, T>> {
  return Object.fromEntries(Object.entries(sortKeys(record)).map(([key, inner]) => [key, sortKeys(inner)]));
}
