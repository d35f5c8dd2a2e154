/**
 * The phases of a run, callable one at a time, so a run can be spread over processes (jobs/):
 *
 *   plan    lease ▸ recover ▸ plan; the caller queues the tasks while the lease is still held
 *   task    one slice of a partition range (slices.ts): fetch ▸ decode ▸ stage, under a staging folder of its own
 *   commit  lease ▸ recover ▸ manifest from the tasks' results ▸ claim ▸ renames ▸ publish
 *
 * Built from run.ts's blocks, so a distributed run writes the files and manifest runLoad would.
 * Plans, tasks and results are plain JSON: they travel through job queues.
 *
 * Why it stays exactly once when processes crash, stall or run twice:
 * - A task never writes a name twice: each execution stages under `<seq>-<run>t<random>`, so a
 *   retried or duplicated task leaves at most dead staging, removed once the seq is published.
 *   Any one complete result of a range is as good as another; the commit uses one per range.
 * - The commit claims `<seq>.pending` (commit.ts): whoever planned from an older commit, or a
 *   second execution of the same commit, finds the seq taken. A commit whose claim is its own
 *   run's (attempt `<run>c…`, e.g. from before a crash) rolls it forward and reports it done.
 * - Between plan and commit no lease is held: a run started meanwhile by hand may commit the same
 *   seq first; this run is then fenced and commits nothing.
 */
import { randomBytes } from 'node:crypto';
import { TributaryError } from '../../common/errors.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { parseAvroSchema } from '../../registry/avro-schema.js';
import type { RegistryClient } from '../../registry/client.js';
import { auditAndMark, catchUpAudit, type AuditRunReport } from '../completeness/audit-run.js';
import { tableLocation } from '../iceberg/load-tables.js';
import { buildManifest, type StagedTask } from './build-manifest.js';
import { readClaim, readCommitLog } from './commit-log.js';
import { claimCommit, completeCommit, recoverCommits, removeDeadStaging, type CommitContext, type Recovery } from './commit.js';
import { recoverSwaps } from '../replay/swap.js';
import { etlError } from '../errors.js';
import type { FailpointName } from './failpoints.js';
import { parseDataFileSchema } from '../files/data-files.js';
import { withdrawMarkers } from '../completeness/hour-completeness.js';
import { stagingDir } from '../layout.js';
import { acquireLease } from './lease.js';
import { checkLayoutUnchanged } from './layout-check.js';
import { fencedWhenStagingTaken } from './staging-fence.js';
import type { Manifest, ReaderSchemaRef } from './manifest.js';
import type { IcebergSchema } from '../iceberg/table-schema.js';
import { partitionMoves, partitionProblemError, type LoadPlan, type PartitionPlan, type ReaderSchema } from './plan.js';
import { slicesOf, type Slice } from './slices.js';
import { checkQuarantine, recoverAndPlan, runTask, type LoadServices, type TaskServices } from './run.js';

/** A run's plan as it travels to its tasks and its commit. */
export interface RunPlan {
  readonly load: string;
  /** The commit this run makes. */
  readonly seq: number;
  /** The run's id (hex): prefix of every attempt name of this run's tasks and commit. */
  readonly run: string;
  readonly plannedAt: string;
  /** Every partition of the load as planned, problems included (they are not read). */
  readonly partitions: readonly PartitionPlan[];
  /** Per topic with records to read: the reader schema chosen at plan time. */
  readonly readerSchemas: Readonly<Record<string, ReaderSchemaRef>>;
  /** The slice size the tasks were cut with (slices.ts); absent in plans of older versions: one task per partition. */
  readonly maxRecordsPerTask?: number | undefined;
  /** Format iceberg: per topic, the rows' schema in its table's ids (LoadPlan.tableSchemas). */
  readonly tableSchemas?: Readonly<Record<string, IcebergSchema>> | undefined;
}

/** One partition range to read: a task of the run. */
export interface RangeTask {
  readonly load: string;
  readonly seq: number;
  readonly run: string;
  readonly plannedAt: string;
  readonly partition: PartitionPlan;
  /** The slice of the partition's range this task reads; absent: the whole range. */
  readonly slice?: Slice;
  /** Undefined when the range is empty (an accepted gap and nothing after it). */
  readonly reader: ReaderSchemaRef | undefined;
  /** Format iceberg: the rows' schema in the table's ids, as planned. */
  readonly tableSchema?: IcebergSchema | undefined;
}

/** What a task staged for its range. */
export interface RangeResult {
  readonly seq: number;
  readonly run: string;
  readonly topic: string;
  readonly partition: number;
  readonly start: number;
  readonly end: number;
  readonly staged: StagedTask;
}

export interface PhaseServices extends LoadServices {
  readonly store: CoordinationStore;
  /** Whether the store outlives the process, so run numbers are worth recording (ZooKeeper). */
  readonly numberRuns: boolean;
  /** Crash tests: called at each failpoint of the task and commit code. */
  readonly failpoint?: (point: FailpointName) => void;
}

export interface PlannedRun {
  readonly plan: RunPlan;
  /** One per partition that moves this run; empty when there is nothing to load. */
  readonly tasks: readonly RangeTask[];
  readonly recovery: Recovery;
  /** Partitions left out (offsets lost to retention, or ahead of the log). */
  readonly problems: readonly TributaryError[];
}

export interface CommitReport {
  /** `already-committed`: this run's commit was made by an earlier execution of the same commit. */
  readonly outcome: 'committed' | 'already-committed';
  readonly manifest: Manifest;
  readonly recovery: Recovery;
  /** The audit steps after the commit (loads with an `audit` section). */
  readonly audit?: AuditRunReport;
}

const attemptSuffix = (): string => randomBytes(4).toString('hex');

/**
 * lease ▸ recover ▸ plan ▸ `fanOut` (still under the lease, so no other planner of the load
 * decides between this plan and its tasks being queued) ▸ release. Resolves with fanOut's answer.
 */
export async function planPhase<T>(services: PhaseServices, acceptGap: boolean, fanOut: (planned: PlannedRun) => Promise<T>): Promise<T> {
  const { load, warehouse, logger } = services;
  const run = randomBytes(6).toString('hex');
  const log = logger.child({ load: load.name, run });
  const lease = await acquireLease(services.store, load.name, { attempt: run, numberRuns: services.numberRuns });
  try {
    const context: CommitContext = { warehouse, root: load.warehouse.root, load: load.name, attempt: run, logger: log, env: services.env };
    const { recovery, plan } = await recoverAndPlan(services, context, acceptGap);
    const runPlan: RunPlan = {
      load: load.name,
      seq: plan.seq,
      run,
      plannedAt: plan.plannedAt,
      partitions: plan.partitions,
      readerSchemas: Object.fromEntries([...plan.readerSchemas].map(([topic, reader]) => [topic, reader.ref])),
      maxRecordsPerTask: load.maxRecordsPerTask,
      ...(plan.tableSchemas === undefined ? {} : { tableSchemas: Object.fromEntries(plan.tableSchemas) }),
    };
    const tasks = plan.partitions.filter(partitionMoves).flatMap((partition) =>
      slicesOf(partition, load.maxRecordsPerTask).map((slice): RangeTask => ({
        load: load.name,
        seq: plan.seq,
        run,
        plannedAt: plan.plannedAt,
        partition,
        slice,
        reader: partition.end > partition.start ? runPlan.readerSchemas[partition.topic] : undefined,
        ...(plan.tableSchemas?.get(partition.topic) === undefined ? {} : { tableSchema: plan.tableSchemas.get(partition.topic) }),
      })),
    );
    const problems = plan.partitions.flatMap((partition) => partitionProblemError(partition, load.name) ?? []);
    // Nothing to commit: caught-up partitions still advance the loaded event time, so hours may close.
    if (tasks.length === 0) await auditAndMark(services, run, log, plan);
    log.info({ seq: plan.seq, partitions: tasks.length, records: tasks.reduce((sum, task) => sum + task.partition.end - task.partition.start, 0), event: 'planned' }, 'planned');
    return await fanOut({ plan: runPlan, tasks, recovery, problems });
  } finally {
    await lease.release();
  }
}

/** One task: stages its range under a staging folder no other execution uses. */
export async function taskPhase(services: TaskServices, task: RangeTask): Promise<RangeResult> {
  const { load } = services;
  const { partition } = task;
  if (task.load !== load.name) throw new TributaryError({ code: 'CONFIG_INVALID', message: `task of load ${task.load} handed to load ${load.name}; the job's data does not belong together` });
  const attempt = `${task.run}t${attemptSuffix()}`;
  const log = services.logger.child({ load: load.name, run: task.run, attempt });
  const readerSchemas = new Map<string, ReaderSchema>();
  if (task.reader !== undefined) readerSchemas.set(partition.topic, await readerSchemaById(services.registry, task.reader));
  const tableSchemas = task.tableSchema === undefined ? {} : { tableSchemas: new Map([[partition.topic, task.tableSchema]]) };
  const plan: LoadPlan = { load: load.name, seq: task.seq, plannedAt: task.plannedAt, partitions: [partition], readerSchemas, ...tableSchemas };
  const slice = task.slice ?? { start: partition.start, end: partition.end };
  const stagingRun = { warehouse: services.warehouse, root: load.warehouse.root, load: load.name, seq: task.seq };
  const [staged] = await fencedWhenStagingTaken(stagingRun, () => runTask(services, plan, partition, stagingDir(load.warehouse.root, load.name, task.seq, attempt), log, [slice]));
  return { seq: task.seq, run: task.run, topic: partition.topic, partition: partition.partition, start: slice.start, end: slice.end, staged: staged! };
}

/**
 * The commit of a run from its tasks' results: exactly one result per moving range of the plan
 * (see `oneResultPerRange`). Throws ETL_COMMIT_FENCED when another run made this commit.
 */
export async function commitPhase(services: PhaseServices & { readonly onCommitted?: (manifest: Manifest) => Promise<void> }, plan: RunPlan, results: readonly RangeResult[]): Promise<CommitReport> {
  const { load, warehouse, logger } = services;
  const root = load.warehouse.root;
  if (plan.load !== load.name) throw new TributaryError({ code: 'CONFIG_INVALID', message: `plan of load ${plan.load} handed to load ${load.name}; the job's data does not belong together` });
  const attempt = `${plan.run}c${attemptSuffix()}`;
  const log = logger.child({ load: load.name, run: plan.run, attempt });
  const staged = oneResultPerRange(plan, results);
  const lease = await acquireLease(services.store, load.name, { attempt, numberRuns: services.numberRuns });
  try {
    const context: CommitContext = { warehouse, root, load: load.name, attempt, logger: log, env: services.env, ...(services.failpoint === undefined ? {} : { failpoint: services.failpoint }) };
    await checkLayoutUnchanged(warehouse, load);
    const recovery = await recoverCommits(context);
    // A replay that crashed mid-swap is finished first, as runLoad's recovery does.
    await recoverSwaps({ warehouse, root, load: load.name, attempt, logger: log });
    // So are LOADER counts a crash or an unreachable audit topic left unpublished.
    await catchUpAudit(services, log);
    if (recovery.log.lastClaimed >= plan.seq) return { ...(await claimedAlready(services, plan)), recovery };
    checkQuarantine(load, staged);
    const base = plan.seq === 1 ? undefined : (await readClaim(warehouse, root, load.name, plan.seq - 1)).manifest;
    const readerSchemas = new Map<string, ReaderSchema>();
    for (const [topic, ref] of Object.entries(plan.readerSchemas)) readerSchemas.set(topic, await readerSchemaById(services.registry, ref));
    const tableSchemas = plan.tableSchemas === undefined ? {} : { tableSchemas: new Map(Object.entries(plan.tableSchemas)) };
    const loadPlan: LoadPlan = { load: plan.load, seq: plan.seq, plannedAt: plan.plannedAt, partitions: plan.partitions, readerSchemas, ...tableSchemas };
    const manifest = buildManifest({ load, plan: loadPlan, base, staged, attempt, runNumber: lease.runNumber, tableLocation: (dir) => tableLocation(warehouse, dir, load.iceberg?.fileSystem) });
    await lease.check();
    if (services.audit !== undefined) await withdrawMarkers(warehouse, root, load.layout, manifest, log);
    let claimBytes: Buffer;
    try {
      claimBytes = await fencedWhenStagingTaken({ warehouse, root, load: load.name, seq: plan.seq }, () => claimCommit(context, manifest));
    } catch (error) {
      if (!(error instanceof TributaryError) || error.code !== 'ETL_COMMIT_FENCED') throw error;
      // Perhaps a second execution of this very commit (a stalled job run again): if the claim is
      // this run's, finish it; otherwise this run is stale.
      await recoverCommits(context);
      return { ...(await claimedAlready(services, plan)), recovery };
    }
    await completeCommit(context, manifest, claimBytes);
    await removeDeadStaging(context, await readCommitLog(warehouse, root, load.name));
    const audit = await auditAndMark(services, attempt, log);
    await services.onCommitted?.(manifest);
    return { outcome: 'committed', manifest, recovery, ...(audit === undefined ? {} : { audit }) };
  } finally {
    await lease.release();
  }
}

/** Commit `plan.seq` is claimed (and, after recovery, published): this run's, or a stale run's end. */
async function claimedAlready(services: PhaseServices, plan: RunPlan): Promise<{ outcome: 'already-committed'; manifest: Manifest }> {
  const { load, warehouse } = services;
  const { manifest } = await readClaim(warehouse, load.warehouse.root, load.name, plan.seq);
  if (manifest.attempt.startsWith(`${plan.run}c`)) return { outcome: 'already-committed', manifest };
  throw etlError(
    'ETL_COMMIT_FENCED',
    `commit ${plan.seq} of load ${load.name} was made by another run (attempt ${manifest.attempt}) after run ${plan.run} planned it, so this run's plan is stale; ` +
      'nothing of this run was committed. The next run continues from what the other run committed',
    { details: { load: load.name, seq: plan.seq, run: plan.run, committedBy: manifest.attempt } },
  );
}

/**
 * The staged tasks the commit uses: one result for each slice of each range the plan moves
 * (slices.ts, cut with the plan's maxRecordsPerTask). Duplicates (the same slice staged twice by
 * a task that ran twice) are equally complete; the first is kept. A result of another run, range
 * or slice, or a slice without a result, is refused.
 */
export function oneResultPerRange(plan: RunPlan, results: readonly RangeResult[]): StagedTask[] {
  const key = (topic: string, partition: number, start: number, end: number): string => `${topic}-${partition} [${start}, ${end})`;
  const expected = new Map<string, PartitionPlan>();
  for (const partition of plan.partitions.filter(partitionMoves)) {
    for (const slice of slicesOf(partition, plan.maxRecordsPerTask)) expected.set(key(partition.topic, partition.partition, slice.start, slice.end), partition);
  }
  const chosen = new Map<string, RangeResult>();
  for (const result of results) {
    const where = key(result.topic, result.partition, result.start, result.end);
    if (result.seq !== plan.seq || result.run !== plan.run || !expected.has(where)) {
      const planned = plan.partitions.find((partition) => partition.topic === result.topic && partition.partition === result.partition);
      throw new TributaryError({
        code: 'ETL_TASK_RESULT_FOREIGN',
        message: `a task result for ${where} of run ${result.run} (commit ${result.seq}) does not belong to run ${plan.run} of load ${plan.load}, ` +
          `which planned ${planned === undefined ? 'no such partition' : `[${planned.start}, ${planned.end})`} for commit ${plan.seq}; nothing was committed. The run's job data is mixed up: run the load again`,
        details: { load: plan.load, seq: plan.seq, run: plan.run, result: { topic: result.topic, partition: result.partition, start: result.start, end: result.end, run: result.run, seq: result.seq } },
      });
    }
    if (!chosen.has(where)) chosen.set(where, result);
  }
  const missing = [...expected.keys()].filter((where) => !chosen.has(where));
  if (missing.length > 0) {
    throw new TributaryError({
      code: 'ETL_TASK_RESULT_MISSING',
      message: `run ${plan.run} of load ${plan.load} has no task result for ${missing.join(', ')}; ` +
        'nothing was committed. Run the load again: the next run plans these ranges anew',
      details: { load: plan.load, seq: plan.seq, run: plan.run, missing },
    });
  }
  return [...chosen.values()].map((result) => result.staged);
}

/** The reader schema the plan chose, by its global id (ids are immutable, so every task reads the same). */
export async function readerSchemaById(registry: RegistryClient, ref: ReaderSchemaRef): Promise<ReaderSchema> {
  const found = await registry.schemaById(ref.id);
  const schema = parseAvroSchema(found.schema, found.schemaType);
  return { ref, schema, fileType: parseDataFileSchema(schema.json) };
}
