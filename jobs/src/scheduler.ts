/**
 * Keeps the job schedulers of the runs queue in step with a folder of load files: at start, when
 * the folder changes (fs.watch, debounced), and every `intervalMs` as well (watching is not
 * reliable on every file system). Each scheduler creates a run job at its load's cron times (UTC),
 * carrying the load file's text; any worker picks it up.
 *
 * Run one scheduler per queue prefix: it removes every scheduler of the runs queue that no file
 * of its folder declares.
 */
import { watch, type FSWatcher } from 'node:fs';
import { resolve } from 'node:path';
import { Queue, type ConnectionOptions } from 'bullmq';
import type { Logger } from '../../src/common/logger.js';
import { readLoadDirectory } from './load-directory.js';
import { JOB_NAMES, QUEUE_NAMES, SCHEDULE_TIMEZONE } from './queues.js';
import { MAINTENANCE_SCHEDULES, planSchedulerSync, RUN_SCHEDULES, type ScheduleKind, type SchedulerSyncPlan } from './scheduler-sync.js';

export interface LoadSchedulerOptions {
  readonly connection: ConnectionOptions;
  readonly prefix: string;
  readonly directory: string;
  readonly intervalMs: number;
  readonly logger: Logger;
}

export interface SyncReport extends SchedulerSyncPlan {
  /** Upserts BullMQ refused (a cron pattern it cannot read), with the reason. */
  readonly failed: readonly { readonly id: string; readonly file: string; readonly message: string }[];
  /** The same for the maintenance queue's schedulers (iceberg.maintenance.schedule); refusals are the runs'. */
  readonly maintenance: SchedulerSyncPlan & { readonly failed: SyncReport['failed'] };
}

export interface LoadScheduler {
  readonly directory: string;
  /** What the first pass, at start, did. */
  readonly initial: SyncReport;
  /** Brings the schedulers in step now (after any pass already under way). */
  sync(): Promise<SyncReport>;
  stop(): Promise<void>;
}

const WATCH_DEBOUNCE_MS = 300;

export async function startLoadScheduler(options: LoadSchedulerOptions): Promise<LoadScheduler> {
  const { logger } = options;
  const directory = resolve(options.directory);
  const queue = new Queue(QUEUE_NAMES.runs, { connection: options.connection, prefix: options.prefix });
  const maintenanceQueue = new Queue(QUEUE_NAMES.maintenance, { connection: options.connection, prefix: options.prefix });
  // A refusal is logged when it first appears, not on every pass.
  let reported = new Set<string>();

  const apply = async (target: Queue, kind: ScheduleKind, jobName: string, plan: SchedulerSyncPlan): Promise<SyncReport['failed']> => {
    const failed: { id: string; file: string; message: string }[] = [];
    for (const upsert of plan.upserts) {
      try {
        await target.upsertJobScheduler(upsert.id, { pattern: upsert.pattern, tz: SCHEDULE_TIMEZONE }, { name: jobName, data: upsert.data, opts: kind.options });
        logger.info({ queue: target.name, load: upsert.id, pattern: upsert.pattern, file: upsert.data.loadFile, why: upsert.reason, event: 'scheduler-upserted' }, 'scheduled');
      } catch (error) {
        failed.push({
          id: upsert.id,
          file: upsert.data.loadFile,
          message: `load file ${upsert.data.loadFile}: ${kind.field} '${upsert.pattern}' of load ${upsert.id} cannot be scheduled: ${(error as Error).message}. Fix the schedule (cron: minute hour day-of-month month day-of-week)`,
        });
      }
    }
    for (const removal of plan.removals) {
      await target.removeJobScheduler(removal.id);
      logger.info({ queue: target.name, load: removal.id, why: removal.reason, event: 'scheduler-removed' }, 'scheduler removed');
    }
    return failed;
  };

  const pass = async (): Promise<SyncReport> => {
    const entries = await readLoadDirectory(directory);
    const plan = planSchedulerSync(entries, await queue.getJobSchedulers(), RUN_SCHEDULES);
    const failed = await apply(queue, RUN_SCHEDULES, JOB_NAMES.run, plan);
    const maintenancePlan = planSchedulerSync(entries, await maintenanceQueue.getJobSchedulers(), MAINTENANCE_SCHEDULES);
    const maintenanceFailed = await apply(maintenanceQueue, MAINTENANCE_SCHEDULES, JOB_NAMES.maintain, maintenancePlan);
    const problems = [...plan.refusals, ...failed, ...maintenanceFailed];
    const now = new Set(problems.map((problem) => `${problem.file}\n${problem.message}`));
    for (const problem of problems) {
      if (!reported.has(`${problem.file}\n${problem.message}`)) logger.error({ file: problem.file, reason: problem.message, event: 'load-refused' }, 'load file refused');
    }
    reported = now;
    return { ...plan, failed, maintenance: { ...maintenancePlan, refusals: [], failed: maintenanceFailed } };
  };

  // Passes never overlap: a request during a pass runs once after it.
  let running: Promise<SyncReport> | undefined;
  let queued: Promise<SyncReport> | undefined;
  const sync = (): Promise<SyncReport> => {
    if (running === undefined) {
      running = pass().finally(() => (running = undefined));
      return running;
    }
    queued ??= running.catch(() => undefined).then(() => {
      queued = undefined;
      return sync();
    });
    return queued;
  };
  const syncInBackground = (why: string): void => {
    sync().catch((error: unknown) => logger.error({ err: error, why, event: 'sync-failed' }, 'could not bring the schedulers in step; trying again later'));
  };

  let initial: SyncReport;
  try {
    await Promise.all([queue.waitUntilReady(), maintenanceQueue.waitUntilReady()]);
    initial = await sync();
  } catch (error) {
    await Promise.all([queue.close(), maintenanceQueue.close()]);
    throw error;
  }

  let debounce: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(directory, () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => syncInBackground('folder changed'), WATCH_DEBOUNCE_MS);
    });
    watcher.on('error', (error) => logger.warn({ err: error, directory }, 'watching the load folder failed; reading it every interval only'));
  } catch (error) {
    logger.warn({ err: error, directory }, 'cannot watch the load folder; reading it every interval only');
  }
  const interval = setInterval(() => syncInBackground('interval'), options.intervalMs);

  return {
    directory,
    initial,
    sync,
    async stop() {
      clearInterval(interval);
      clearTimeout(debounce);
      watcher?.close();
      await Promise.allSettled([running, queued]);
      await Promise.all([queue.close(), maintenanceQueue.close()]);
    },
  };
}
