/**
 * What a worker does with each kind of job; each calls one phase of src/etl/load/phases.ts.
 *
 *   run     plan under the lease; unless a run of the load is still unfinished, queue the flow
 *   task    stage one partition range; return the staged files and this worker's id
 *   commit  commit the run from its children's results
 *   maintain  the maintenance of an Iceberg load's tables its load file asks for (table-maintenance.ts)
 *
 * Failures pass through asJobFailure: retriable ones are retried with backoff, the others fail
 * the job at once with the reason.
 */
import { TributaryError } from '../../src/common/errors.js';
import type { Logger } from '../../src/common/logger.js';
import type { CoordinationStore } from '../../src/coordination/store.js';
import type { FailpointName } from '../../src/etl/load/failpoints.js';
import { commitPhase, planPhase, taskPhase } from '../../src/etl/load/phases.js';
import { maintainLoad } from '../../src/etl/maintenance/table-maintenance.js';
import type { FlowProducer, Job, Queue } from 'bullmq';
import { failingAsJob } from './failures.js';
import { parseCommitJobData, parseMaintainJobData, parseRunJobData, parseTaskJobData, parseTaskJobResult, type CommitJobResult, type MaintainJobResult, type RunJobResult, type TaskJobResult } from './job-data.js';
import { loadOf, maintenanceServices, withLoadServices } from './load-services.js';
import { commitJobId, runFlow, unfinishedRunOf } from './run-flow.js';

export interface ProcessorContext {
  /** Names this worker process in task results and logs. */
  readonly workerId: string;
  /** Holds the run leases (ZooKeeper, or in-process without --zookeeper). */
  readonly store: CoordinationStore;
  readonly numberRuns: boolean;
  readonly logger: Logger;
  readonly flows: FlowProducer;
  /** The commits queue, to see whether a run of a load is still unfinished. */
  readonly commits: Queue;
  /** Crash tests only. */
  readonly failpoint?: (point: FailpointName) => void;
}

const describeJob = (job: Job): string => `job ${job.id ?? '?'} (${job.name}) of queue ${job.queueName}`;

export function processRun(context: ProcessorContext): (job: Job) => Promise<RunJobResult> {
  return (job) =>
    failingAsJob(async () => {
      const data = parseRunJobData(job.data, describeJob(job));
      const load = loadOf(data);
      const log = context.logger.child({ job: job.id });
      const { result, problems } = await withLoadServices(load, log, (services) =>
        planPhase({ ...services, store: context.store, numberRuns: context.numberRuns }, data.acceptGap, async (planned) => {
          if (planned.tasks.length === 0) return { result: { outcome: 'nothing-to-load', load: load.name, seq: planned.plan.seq } as const, problems: planned.problems };
          // Checked under the lease: two planners of one load cannot both find no run and queue one.
          const unfinished = await unfinishedRunOf(context.commits, load.name);
          if (unfinished !== undefined) {
            log.info({ commitJob: unfinished.id, event: 'run-in-flight' }, 'the previous run of this load is not finished; not starting another');
            return { result: { outcome: 'run-in-flight', load: load.name, commitJob: unfinished.id ?? '' } as const, problems: [] };
          }
          await context.flows.add(runFlow(planned, data));
          log.info({ seq: planned.plan.seq, run: planned.plan.run, tasks: planned.tasks.length, commitJob: commitJobId(planned), event: 'fanned-out' }, 'run queued as a flow');
          const fannedOut = { outcome: 'fanned-out', load: load.name, seq: planned.plan.seq, run: planned.plan.run, tasks: planned.tasks.length, commitJob: commitJobId(planned) } as const;
          return { result: fannedOut, problems: planned.problems };
        }),
      );
      if (problems.length > 0) {
        // As `etl run` does: the healthy partitions load; the run still reports the others, for good.
        const started = result.outcome === 'fanned-out' ? `The other partitions are being loaded by commit job ${result.commitJob}.` : 'Nothing else was to be loaded.';
        throw new TributaryError({
          code: problems[0]?.code ?? 'ETL_OFFSETS_LOST',
          message: `${problems.map((problem) => problem.message).join('\n')}\n${started}`,
          details: { problems: problems.map((problem) => ({ code: problem.code, ...problem.details })) },
        });
      }
      return result;
    });
}

export function processTask(context: ProcessorContext): (job: Job) => Promise<TaskJobResult> {
  return (job) =>
    failingAsJob(async () => {
      const data = parseTaskJobData(job.data, describeJob(job));
      const load = loadOf(data);
      const log = context.logger.child({ job: job.id });
      const result = await withLoadServices(load, log, (services) => taskPhase({ ...services, ...(context.failpoint === undefined ? {} : { failpoint: context.failpoint }) }, data.task));
      return { worker: context.workerId, result };
    });
}

export function processCommit(context: ProcessorContext): (job: Job) => Promise<CommitJobResult> {
  return (job) =>
    failingAsJob(async () => {
      const data = parseCommitJobData(job.data, describeJob(job));
      const values = await job.getChildrenValues<unknown>();
      const children = Object.entries(values).map(([key, value]) => parseTaskJobResult(value, `the result of task ${key}`));
      const load = loadOf(data);
      const log = context.logger.child({ job: job.id });
      const report = await withLoadServices(load, log, (services) =>
        commitPhase(
          { ...services, store: context.store, numberRuns: context.numberRuns, ...(context.failpoint === undefined ? {} : { failpoint: context.failpoint }) },
          data.plan,
          children.map((child) => child.result),
        ),
      );
      const { manifest } = report;
      return {
        outcome: report.outcome,
        load: load.name,
        seq: manifest.seq,
        run: data.plan.run,
        records: manifest.ranges.reduce((sum, range) => sum + range.records, 0),
        quarantined: manifest.quarantine.records,
        files: manifest.files.length,
        tasks: children.map(({ worker, result }) => ({ topic: result.topic, partition: result.partition, start: result.start, end: result.end, worker })),
        ...(report.audit === undefined
          ? {}
          : {
              audit: {
                audited: report.audit.tier.audited.map((counted) => counted.seq),
                unaudited: report.audit.tier.unaudited,
                markersWritten: report.audit.markers?.written ?? [],
                markersRemoved: report.audit.markers?.removed ?? [],
                warnings: [report.audit.tier.failed?.error.message, report.audit.markersFailed?.message].filter((warning): warning is string => warning !== undefined),
              },
            }),
      };
    });
}

export function processMaintain(context: ProcessorContext): (job: Job) => Promise<MaintainJobResult> {
  return (job) =>
    failingAsJob(async () => {
      const data = parseMaintainJobData(job.data, describeJob(job));
      const load = loadOf(data);
      if (load.iceberg?.maintenance === undefined) {
        throw new TributaryError({ code: 'CONFIG_INVALID', message: `load file ${data.loadFile} (load ${load.name}) has no iceberg.maintenance section: nothing to maintain. Its scheduler is removed at the scheduler's next pass`, details: { load: load.name } });
      }
      const log = context.logger.child({ job: job.id, load: load.name });
      const report = await maintainLoad({ load, ...maintenanceServices(load, log), logger: log, store: context.store, numberRuns: context.numberRuns });
      return {
        load: load.name,
        ...(report.compaction === undefined
          ? {}
          : {
              compaction: report.compaction.map((table) => ({
                topic: table.topic,
                ...(table.snapshotId === undefined ? {} : { snapshot: table.snapshotId }),
                inputFiles: table.hours.reduce((sum, hour) => sum + hour.inputFiles, 0),
                outputFiles: table.hours.reduce((sum, hour) => sum + hour.outputFiles, 0),
              })),
            }),
        ...(report.expiry === undefined ? {} : { expiry: report.expiry.map((table) => ({ topic: table.topic, expired: table.expired.length, deletedFiles: table.deletedFiles })) }),
        ...(report.orphans === undefined ? {} : { orphans: report.orphans.map((table) => ({ topic: table.topic, deleted: table.deleted })) }),
      };
    });
}
