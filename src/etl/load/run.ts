/**
 * One run of a load (ARCHITECTURE.md, "The loader's layout in HDFS"):
 *
 *   lease ▸ recover (roll claimed commits forward, remove dead staging) ▸ plan from the last
 *   commit ▸ tasks (per partition: fetch, decode, bucket by hour, stage files) ▸ quarantine
 *   threshold ▸ lease check ▸ commit (claim ▸ renames ▸ publish) ▸ remove own staging ▸ release
 *
 * Nothing is committed unless every task succeeded. Partitions whose offsets were lost to
 * retention (or are ahead of the log) are left out of the commit and reported in `problems`: the
 * other partitions still load, so one partition's gap does not let the others fall behind into
 * retention too. The caller decides what a problem means for its exit status.
 */
import { memoryBudget } from './memory-budget.js';
import { randomBytes } from 'node:crypto';
import type { TributaryError } from '../../common/errors.js';
import { inPool } from '../../common/in-pool.js';
import type { Logger } from '../../common/logger.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { parseAvroSchema } from '../../registry/avro-schema.js';
import type { RegistryClient } from '../../registry/client.js';
import { AvroDeserializer } from '../../registry/serde/deserializer.js';
import { auditAndMark, catchUpAudit, type AuditRunReport } from '../completeness/audit-run.js';
import type { AuditStepReport } from '../completeness/audit-tier.js';
import { tableLocation } from '../iceberg/load-tables.js';
import { buildManifest, type StagedTask } from './build-manifest.js';
import { readClaim, readCommitLog } from './commit-log.js';
import { claimCommit, completeCommit, recoverCommits, removeDeadStaging, type CommitContext, type Recovery } from './commit.js';
import { etlError } from '../errors.js';
import { readRange } from './extract.js';
import { compileTransform } from '../records/transform.js';
import { SliceWriter } from './slice-writer.js';
import { tableRow, tableRowType } from '../iceberg/table-row.js';
import { planTableSchemas, rowSchemaOf } from '../iceberg/load-tables.js';
import type { CatalogEnvironment } from '../iceberg/load-catalog.js';
import { idMapping } from '../iceberg/schema-evolution.js';
import { slicesOf, type Slice } from './slices.js';
import { parseDataFileSchema } from '../files/data-files.js';
import type { FailpointName } from './failpoints.js';
import { stagingDir } from '../layout.js';
import { withdrawMarkers } from '../completeness/hour-completeness.js';
import { acquireLease } from './lease.js';
import { fencedWhenStagingTaken } from './staging-fence.js';
import { checkLayoutUnchanged } from './layout-check.js';
import type { LoadAudit } from '../completeness/load-audit.js';
import type { LoadDefinition } from '../load-file.js';
import type { Manifest } from './manifest.js';
import { partitionMoves, partitionProblemError, planRun, type LoadPlan, type PartitionPlan, type ReaderSchemaLookup } from './plan.js';
import type { LoadProgress } from '../status/progress.js';
import { recoverSwaps } from '../replay/swap.js';
import type { LoadSource } from './source.js';
import type { WarehouseFileSystem } from '../warehouse/warehouse.js';

export interface LoadServices {
  readonly load: LoadDefinition;
  readonly warehouse: WarehouseFileSystem;
  readonly source: LoadSource;
  readonly registry: RegistryClient;
  readonly logger: Logger;
  readonly now?: () => Date;
  /** Told how far the work is (progress bars, progress.ts). */
  readonly progress?: LoadProgress | undefined;
  /** The load's audit connections (load-audit.ts) when it has an `audit` section: LOADER tier and hour markers. */
  readonly audit?: LoadAudit | undefined;
  /** The process environment (only composition roots read it): secrets of an Iceberg REST catalog (iceberg/load-catalog.ts). */
  readonly env?: CatalogEnvironment | undefined;
}

export interface RunOptions extends LoadServices {
  readonly acceptGap: boolean;
  readonly store: CoordinationStore;
  /** Whether the store outlives the process, so run numbers are worth recording (ZooKeeper). */
  readonly numberRuns: boolean;
  /** Tasks (partitions) worked on at once. Default 4. */
  readonly concurrency?: number;
  readonly failpoint?: (point: FailpointName) => void;
  /** Called after a commit is published (and after the audit steps), with its manifest. */
  readonly onCommitted?: (manifest: Manifest) => Promise<void>;
}

export interface RunReport {
  readonly outcome: 'committed' | 'nothing-to-load';
  readonly recovery: Recovery;
  readonly plan: LoadPlan;
  readonly manifest?: Manifest;
  /** Partitions left out of the commit (offsets lost to retention, or ahead of the log). */
  readonly problems: readonly TributaryError[];
  /** The audit steps after the commit (loads with an `audit` section). */
  readonly audit?: AuditRunReport;
  /** Commits of earlier runs counted at the start of this one (their LOADER counts were not recorded). */
  readonly auditCatchUp?: AuditStepReport;
}

/** The topic's reader schema: the latest version of `<topic>-value` in the registry now. */
export function registryReaderSchemas(registry: RegistryClient): ReaderSchemaLookup {
  return async (topic) => {
    const subject = `${topic}-value`;
    let found;
    try {
      found = await registry.version(subject, 'latest');
    } catch (error) {
      if ((error as TributaryError).code !== 'REGISTRY_SUBJECT_NOT_FOUND') throw error;
      throw etlError('ETL_SCHEMA_PROBLEM', `topic ${topic} has no reader schema: subject ${subject} does not exist in registry ${registry.url}. Register the topic's value schema under ${subject}`, {
        cause: error,
        details: { topic, subject },
      });
    }
    const schema = parseAvroSchema(found.schema, found.schemaType);
    return { ref: { subject: found.subject, version: found.version, id: found.id }, schema, fileType: parseDataFileSchema(schema.json) };
  };
}

/** The plan the next run would make, without changing anything (`tributary etl plan`). */
export async function previewPlan(services: LoadServices, acceptGap: boolean): Promise<{ plan: LoadPlan; pending: readonly number[] }> {
  const { load, warehouse } = services;
  const log = await readCommitLog(warehouse, load.warehouse.root, load.name);
  // A claimed commit is as good as published: the next run rolls it forward before planning.
  const base = log.lastClaimed === 0 ? undefined : (await readClaim(warehouse, load.warehouse.root, load.name, log.lastClaimed)).manifest;
  const plan = await planRun({ load, base, source: services.source, readerSchema: registryReaderSchemas(services.registry), acceptGap, now: (services.now ?? (() => new Date()))() });
  return { plan, pending: log.pending };
}

/**
 * How every run starts, under its lease: roll claimed commits forward, remove dead staging, then
 * plan from the last published commit. Also the plan phase of distributed runs (phases.ts).
 */
export async function recoverAndPlan(
  services: LoadServices,
  context: CommitContext,
  acceptGap: boolean,
): Promise<{ recovery: Recovery; base: Manifest | undefined; plan: LoadPlan; auditCatchUp: AuditStepReport | undefined }> {
  const { load, warehouse } = services;
  await checkLayoutUnchanged(warehouse, load);
  const recovery = await recoverCommits(context);
  // Replays and rollbacks left claimed are finished before anything new lands in an hour folder.
  await recoverSwaps({ warehouse, root: load.warehouse.root, load: load.name, attempt: context.attempt, logger: context.logger });
  // Commits whose LOADER counts a crash or an unreachable audit topic left unpublished.
  const auditCatchUp = await catchUpAudit(services, context.logger);
  const base = recovery.log.lastPublished === 0 ? undefined : (await readClaim(warehouse, load.warehouse.root, load.name, recovery.log.lastPublished)).manifest;
  const plan = await planRun({
    load,
    base,
    source: services.source,
    readerSchema: registryReaderSchemas(services.registry),
    acceptGap,
    now: (services.now ?? (() => new Date()))(),
  });
  // Format iceberg: each topic's rows in their table's ids, evolving its schema if the reader schema grew; refused before anything is read.
  if (load.iceberg === undefined) return { recovery, base, plan, auditCatchUp };
  const tableSchemas = await planTableSchemas(load, warehouse, plan.readerSchemas, context.logger, services.env);
  return { recovery, base, plan: { ...plan, tableSchemas }, auditCatchUp };
}

export async function runLoad(options: RunOptions): Promise<RunReport> {
  const { load, warehouse, logger } = options;
  const root = load.warehouse.root;
  const attempt = randomBytes(6).toString('hex');
  const log = logger.child({ load: load.name, attempt });
  const lease = await acquireLease(options.store, load.name, { attempt, numberRuns: options.numberRuns });
  try {
    const context: CommitContext = { warehouse, root, load: load.name, attempt, logger: log, env: options.env, ...(options.failpoint === undefined ? {} : { failpoint: options.failpoint }) };
    const { recovery, base, plan, auditCatchUp } = await recoverAndPlan(options, context, options.acceptGap);
    const caughtUp = auditCatchUp === undefined ? {} : { auditCatchUp };
    const problems = plan.partitions.flatMap((partition) => partitionProblemError(partition, load.name) ?? []);
    const moving = plan.partitions.filter(partitionMoves);
    log.info({ seq: plan.seq, partitions: moving.length, records: moving.reduce((sum, p) => sum + p.end - p.start, 0), event: 'planned' }, 'planned');
    if (moving.length === 0) {
      const audit = await auditAndMark({ ...options, failpoint: options.failpoint }, attempt, log, plan);
      return { outcome: 'nothing-to-load', recovery, plan, problems, ...caughtUp, ...(audit === undefined ? {} : { audit }) };
    }
    options.progress?.planned({ partitions: moving.length, records: moving.reduce((sum, p) => sum + p.end - p.start, 0) });

    const staging = stagingDir(root, load.name, plan.seq, attempt);
    const stagingRun = { warehouse, root, load: load.name, seq: plan.seq };
    const staged = (await fencedWhenStagingTaken(stagingRun, () => inPool(moving, options.concurrency ?? 4, (partition) => runTask(options, plan, partition, staging, log)))).flat();
    checkQuarantine(load, staged);

    const manifest = buildManifest({ load, plan, base, staged, attempt, runNumber: lease.runNumber, tableLocation: (dir) => tableLocation(warehouse, dir, load.iceberg?.fileSystem) });
    options.progress?.finishing('committing');
    await lease.check();
    if (options.audit !== undefined) await withdrawMarkers(warehouse, root, load.layout, manifest, log);
    const claimBytes = await fencedWhenStagingTaken(stagingRun, () => claimCommit(context, manifest));
    await completeCommit(context, manifest, claimBytes);
    await removeDeadStaging(context, await readCommitLog(warehouse, root, load.name));
    const audit = await auditAndMark({ ...options, failpoint: options.failpoint }, attempt, log);
    await options.onCommitted?.(manifest);
    return { outcome: 'committed', recovery, plan, manifest, problems, ...caughtUp, ...(audit === undefined ? {} : { audit }) };
  } finally {
    await lease.release();
  }
}

/** What one task needs: the load's services, and the failpoint hook of crash tests. */
export type TaskServices = LoadServices & Pick<RunOptions, 'failpoint'>;

/**
 * One task: read the partition's planned range (or the given slices of it), decode, and stream
 * each record into the open file of its event hour (slice-writer.ts), staged into `staging`.
 * Answers one StagedTask per slice.
 */
export async function runTask(options: TaskServices, plan: LoadPlan, partition: PartitionPlan, staging: string, log: Logger, only?: readonly Slice[]): Promise<StagedTask[]> {
  const { topic } = partition;
  if (partition.end === partition.start) return [{ topic, partition: partition.partition, start: partition.start, end: partition.end, files: [], quarantine: undefined, reasons: {} }];
  const reader = plan.readerSchemas.get(topic)!;
  const { load } = options;
  const deserializer = deserializerFor(options.registry);
  const staged: StagedTask[] = [];
  for (const slice of only ?? slicesOf(partition, load.maxRecordsPerTask)) {
    log.info({ topic, partition: partition.partition, start: slice.start, end: slice.end, event: 'fetching' }, 'task started');
    const inputs = {
      topic,
      partition: partition.partition,
      start: slice.start,
      end: slice.end,
      reader,
      timeField: load.timeField,
      source: options.source,
      deserializer,
      transform: load.transform,
      onFetched: options.progress === undefined ? undefined : (records: number, bytes: number) => options.progress?.fetched(records, bytes, { topic, partition: partition.partition, start: slice.start, end: slice.end }),
    };
    // The output type is known before the first record: the transformation's, else the reader's.
    const recordType = load.transform === undefined ? reader.fileType : compileTransform(load.transform, reader, topic).outputType;
    // An Iceberg table's rows are the records plus the loader's columns (iceberg/table-row.ts).
    const outputType = load.iceberg === undefined ? recordType : tableRowType(recordType);
    const tableSchema = plan.tableSchemas?.get(topic);
    const fieldIds = tableSchema === undefined ? undefined : idMapping(rowSchemaOf(recordType), tableSchema);
    const writer = new SliceWriter(
      {
        warehouse: options.warehouse,
        root: load.warehouse.root,
        layout: load.layout,
        load: load.name,
        seq: plan.seq,
        stagingDir: staging,
        format: load.format,
        codec: load.codec,
        maxFileBytes: load.maxFileBytes,
        budget: memoryBudget(load.memoryBudget),
        rowGroupBytes: load.rowGroupBytes,
        encoderThread: load.parquetEncoderThread,
        tableMetrics: load.iceberg !== undefined,
        afterStagedFile: () => {
          log.debug({ topic, partition: partition.partition, event: 'staged-file' }, 'staged a file');
          options.failpoint?.('after-stage');
        },
      },
      { topic, partition: partition.partition, start: slice.start, end: slice.end, reader, outputType, fieldIds },
    );
    const reasons: Record<string, number> = {};
    try {
      const summary = await readRange(inputs, {
        record:
          load.iceberg === undefined
            ? (hour, value, offset) => writer.append(hour, value, offset)
            : (hour, value, offset, eventTimeMs, timestamp) => writer.append(hour, tableRow(value, { topic, partition: partition.partition, offset, timestamp, eventTimeMs }), offset),
        quarantined: (record) => {
          writer.quarantine(record);
          reasons[record.code] = (reasons[record.code] ?? 0) + 1;
          // More than the whole run may set aside: fail now rather than hold them all.
          if (writer.quarantinedCount > load.quarantine.maxRecords) throw quarantineThreshold(load, writer.quarantinedCount, reasons, [`${topic}-${partition.partition}: ${writer.quarantinedCount} or more`]);
        },
        afterBatch: () => writer.drain(),
      });
      const result = await writer.finish();
      staged.push({ topic, partition: partition.partition, start: slice.start, end: slice.end, files: result.files, quarantine: result.quarantine, reasons, ...(summary.maxEventTime === undefined ? {} : { maxEventTime: summary.maxEventTime }) });
      options.progress?.taskDone?.({ topic, partition: partition.partition, start: slice.start, end: slice.end });
    } finally {
      await writer.abandon();
    }
  }
  options.progress?.partitionDone();
  return staged;
}

/** One deserializer per registry client, so each writer schema is fetched once per run. */
const deserializers = new WeakMap<RegistryClient, AvroDeserializer>();
function deserializerFor(registry: RegistryClient): AvroDeserializer {
  let deserializer = deserializers.get(registry);
  if (deserializer === undefined) deserializers.set(registry, (deserializer = new AvroDeserializer(registry)));
  return deserializer;
}

/** Throws ETL_QUARANTINE_THRESHOLD when the tasks set aside more records than the load allows. */
export function checkQuarantine(load: LoadDefinition, staged: readonly StagedTask[]): void {
  const total = staged.reduce((sum, task) => sum + (task.quarantine?.records ?? 0), 0);
  if (total <= load.quarantine.maxRecords) return;
  const reasons: Record<string, number> = {};
  for (const task of staged) for (const [code, count] of Object.entries(task.reasons)) reasons[code] = (reasons[code] ?? 0) + count;
  const where = staged.filter((task) => task.quarantine !== undefined).map((task) => `${task.topic}-${task.partition}: ${task.quarantine?.records}`);
  throw quarantineThreshold(load, total, reasons, where);
}

function quarantineThreshold(load: LoadDefinition, total: number, reasons: Readonly<Record<string, number>>, where: readonly string[]): TributaryError {
  return etlError(
    'ETL_QUARANTINE_THRESHOLD',
    `load ${load.name}: ${total} records could not be loaded (${Object.entries(reasons).map(([code, count]) => `${count} ${code}`).join(', ')}; by partition ${where.join(', ')}), ` +
      `more than quarantine.maxRecords = ${load.quarantine.maxRecords} in ${load.file}. Nothing was committed. Fix the producers or the schemas, or raise the threshold to set them aside`,
    { details: { load: load.name, quarantined: total, threshold: load.quarantine.maxRecords, reasons } },
  );
}
