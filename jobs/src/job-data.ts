/**
 * What the jobs carry, checked when a worker reads it: job data and children's results come from
 * Redis, where another version of Tributary (or a person) may have put them. A job whose data does
 * not fit fails at once (JOBS_DATA_INVALID), naming the job and each offending field.
 *
 * Every job of a run carries the load file's text as the run read it, so all its tasks and its
 * commit work from the same definition even if the file changes or differs between machines.
 */
import { z } from 'zod';
import { TributaryError } from '../../src/common/errors.js';
import type { RangeResult, RangeTask, RunPlan } from '../../src/etl/load/phases.js';
import type { PartitionPlan } from '../../src/etl/load/plan.js';

/** The load file a run was started from: where it was read, and its text at that moment. */
export interface LoadFileData {
  readonly loadFile: string;
  readonly loadText: string;
}

export interface RunJobData extends LoadFileData {
  readonly acceptGap: boolean;
  /** Who asked for the run. */
  readonly trigger: 'schedule' | 'manual';
}

/** A maintenance job of an Iceberg load: its steps and their settings are the load file's `iceberg.maintenance`. */
export type MaintainJobData = LoadFileData;

export interface TaskJobData extends LoadFileData {
  readonly task: RangeTask;
}

export interface CommitJobData extends LoadFileData {
  readonly plan: RunPlan;
}

export interface MaintainJobResult {
  readonly load: string;
  /** Per table: the replace snapshot made (absent: nothing to compact), files rewritten and written. */
  readonly compaction?: readonly { readonly topic: string; readonly snapshot?: string; readonly inputFiles: number; readonly outputFiles: number }[];
  readonly expiry?: readonly { readonly topic: string; readonly expired: number; readonly deletedFiles: number }[];
  readonly orphans?: readonly { readonly topic: string; readonly deleted: number }[];
}

export interface TaskJobResult {
  /** The worker process that staged the range. */
  readonly worker: string;
  readonly result: RangeResult;
}

export type RunJobResult =
  | { readonly outcome: 'nothing-to-load'; readonly load: string; readonly seq: number }
  | { readonly outcome: 'run-in-flight'; readonly load: string; readonly commitJob: string }
  | { readonly outcome: 'fanned-out'; readonly load: string; readonly seq: number; readonly run: string; readonly tasks: number; readonly commitJob: string };

export interface CommitJobResult {
  readonly outcome: 'committed' | 'already-committed';
  readonly load: string;
  readonly seq: number;
  readonly run: string;
  readonly records: number;
  readonly quarantined: number;
  readonly files: number;
  /** Which worker staged each range the commit used. */
  readonly tasks: readonly { readonly topic: string; readonly partition: number; readonly start: number; readonly end: number; readonly worker: string }[];
  /** Loads with an audit section: commits counted at the LOADER tier, hours marked or unmarked, and warnings (the commit stands). */
  readonly audit?: { readonly audited: readonly number[]; readonly unaudited: readonly number[]; readonly markersWritten: readonly string[]; readonly markersRemoved: readonly string[]; readonly warnings: readonly string[] };
}

const offset = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const count = z.number().int().nonnegative();
const text = z.string().min(1);

const loadFileShape = { loadFile: text, loadText: z.string() };

const readerRef = z.strictObject({ subject: text, version: count, id: count });
const gap = z.strictObject({ from: offset, to: offset });

const partitionPlan = z.strictObject({
  topic: text,
  partition: count,
  start: offset,
  end: offset,
  logStart: offset,
  highWatermark: offset,
  capped: z.boolean(),
  gap: gap.optional(),
  problem: z.enum(['lost', 'ahead']).optional(),
});

const runPlan = z.strictObject({
  load: text,
  seq: z.number().int().positive(),
  run: z.string().regex(/^[0-9a-f]+$/),
  plannedAt: z.string(),
  partitions: z.array(partitionPlan),
  readerSchemas: z.record(z.string(), readerRef),
  maxRecordsPerTask: z.number().int().positive().optional(),
});

const rangeTask = z.strictObject({
  load: text,
  seq: z.number().int().positive(),
  run: z.string().regex(/^[0-9a-f]+$/),
  plannedAt: z.string(),
  partition: partitionPlan,
  slice: z.strictObject({ start: offset, end: offset }).optional(),
  reader: readerRef.optional(),
});

const fileShape = {
  topic: text,
  partition: count,
  start: offset,
  end: offset,
  records: count,
  bytes: count,
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  staged: text,
  path: text,
};

const rangeResult = z.strictObject({
  seq: z.number().int().positive(),
  run: text,
  topic: text,
  partition: count,
  start: offset,
  end: offset,
  staged: z.strictObject({
    topic: text,
    partition: count,
    start: offset.optional(),
    end: offset.optional(),
    files: z.array(z.strictObject({ ...fileShape, hour: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}$/) })),
    // JSON has no undefined: a range without quarantined records comes back without the key.
    quarantine: z.strictObject(fileShape).optional(),
    reasons: z.record(z.string(), count),
    maxEventTime: offset.optional(),
  }),
});

const runJobData = z.strictObject({ ...loadFileShape, acceptGap: z.boolean().default(false), trigger: z.enum(['schedule', 'manual']).default('schedule') });
const taskJobData = z.strictObject({ ...loadFileShape, task: rangeTask });
const maintainJobData = z.strictObject(loadFileShape);
const commitJobData = z.strictObject({ ...loadFileShape, plan: runPlan });
const taskJobResult = z.strictObject({ worker: text, result: rangeResult });

function check<Schema extends z.ZodType>(schema: Schema, input: unknown, what: string): z.output<Schema> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(top level)'}: ${issue.message}`);
  throw new TributaryError({
    code: 'JOBS_DATA_INVALID',
    message: `${what} is not what this version of Tributary writes: ${problems.slice(0, 5).join('; ')}. ` +
      'Run workers of the same version as the scheduler, and enqueue runs only through tributary',
    cause: parsed.error,
    details: { what, problems },
  });
}

// The shapes above mirror the interfaces of src/etl (as manifest.ts does for manifests); zod
// leaves absent optional keys absent, which is what those interfaces mean by them.
export function parseRunJobData(input: unknown, what: string): RunJobData {
  return check(runJobData, input, what);
}

export function parseMaintainJobData(input: unknown, what: string): MaintainJobData {
  return check(maintainJobData, input, what);
}

export function parseTaskJobData(input: unknown, what: string): TaskJobData {
  const data = check(taskJobData, input, what);
  return { ...data, task: data.task as RangeTask };
}

export function parseCommitJobData(input: unknown, what: string): CommitJobData {
  const data = check(commitJobData, input, what);
  return { ...data, plan: { ...data.plan, partitions: data.plan.partitions as PartitionPlan[] } };
}

export function parseTaskJobResult(input: unknown, what: string): TaskJobResult {
  const { worker, result } = check(taskJobResult, input, what);
  const { quarantine, maxEventTime, ...staged } = result.staged;
  return {
    worker,
    result: {
      ...result,
      staged: { ...staged, quarantine, ...(maxEventTime === undefined ? {} : { maxEventTime }) },
    },
  };
}
