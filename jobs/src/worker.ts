/**
 * A worker process's share of the loads: one BullMQ Worker per queue (runs, tasks, commits), so
 * any number of processes on any number of machines share every run. A job whose worker dies
 * keeps its lock until `lockMs` has passed without renewal; another worker's stalled-job check
 * then puts it back in the queue, and the job runs again there (phases.ts makes that safe).
 */
import { FlowProducer, Queue, UnrecoverableError, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { failureReason } from './failures.js';
import { processCommit, processMaintain, processRun, processTask, type ProcessorContext } from './processors.js';
import { QUEUE_NAMES, type QueuePurpose } from './queues.js';

export interface JobWorkersOptions extends Omit<ProcessorContext, 'flows' | 'commits'> {
  readonly connection: ConnectionOptions;
  readonly prefix: string;
  /** Jobs of each queue this process works on at once. */
  readonly concurrency: number;
  /** How long a job stays locked to a worker that stopped renewing the lock (BullMQ lockDuration). */
  readonly lockMs: number;
}

export interface StopOutcome {
  /** Jobs still running when the grace period ended: their locks lapse and other workers take them over. */
  readonly released: readonly string[];
}

export interface JobWorkers {
  /** Ids of the jobs being worked on now, per queue. */
  inFlight(): Readonly<Record<QueuePurpose, readonly string[]>>;
  /** Takes no new jobs; waits up to `graceMs` for the jobs in flight, then stops waiting. */
  stop(graceMs: number): Promise<StopOutcome>;
}

export async function startJobWorkers(options: JobWorkersOptions): Promise<JobWorkers> {
  const { connection, prefix, logger } = options;
  const flows = new FlowProducer({ connection, prefix });
  const commits = new Queue(QUEUE_NAMES.commits, { connection, prefix });
  const context: ProcessorContext = { ...options, flows, commits };
  const inFlight: Record<QueuePurpose, Set<string>> = { runs: new Set(), tasks: new Set(), commits: new Set(), maintenance: new Set() };
  const processors: Record<QueuePurpose, (job: Job) => Promise<unknown>> = { runs: processRun(context), tasks: processTask(context), commits: processCommit(context), maintenance: processMaintain(context) };

  const workers = (Object.keys(QUEUE_NAMES) as QueuePurpose[]).map((purpose) => {
    const queue = QUEUE_NAMES[purpose];
    const process = processors[purpose];
    const worker = new Worker(
      queue,
      async (job: Job) => {
        const id = job.id ?? '?';
        inFlight[purpose].add(id);
        logger.info({ queue, job: id, name: job.name, attempt: job.attemptsStarted, event: 'job-started' }, 'job started');
        try {
          return await process(job);
        } finally {
          inFlight[purpose].delete(id);
        }
      },
      {
        connection,
        prefix,
        name: options.workerId,
        concurrency: options.concurrency,
        lockDuration: options.lockMs,
        stalledInterval: options.lockMs,
        // A job may lose its worker twice (crash, then a second crash) before it fails for good.
        maxStalledCount: 2,
      },
    );
    worker.on('completed', (job, result) => logger.info({ queue, job: job.id, name: job.name, result: result as unknown, event: 'job-completed' }, 'job completed'));
    worker.on('failed', (job, error) =>
      logger.warn(
        { queue, job: job?.id, name: job?.name, reason: failureReason(error), final: error instanceof UnrecoverableError || job === undefined || job.attemptsMade >= (job.opts.attempts ?? 1), event: 'job-failed' },
        'job failed',
      ),
    );
    worker.on('stalled', (jobId) => logger.warn({ queue, job: jobId, event: 'job-stalled' }, 'a job lost its worker; it runs again'));
    worker.on('error', (error) => logger.warn({ queue, err: error, event: 'worker-error' }, 'worker error'));
    return worker;
  });
  await Promise.all([...workers.map((worker) => worker.waitUntilReady()), flows.waitUntilReady(), commits.waitUntilReady()]);

  const closeConnections = async (): Promise<void> => {
    await Promise.all([flows.close(), commits.close()]).catch((error: unknown) => logger.warn({ err: error }, 'closing the flow producer failed'));
  };
  return {
    inFlight: () => ({ runs: [...inFlight.runs], tasks: [...inFlight.tasks], commits: [...inFlight.commits], maintenance: [...inFlight.maintenance] }),
    async stop(graceMs) {
      const closed = await closeWithinGrace(() => Promise.all(workers.map((worker) => worker.close())).then(() => undefined), graceMs);
      if (closed) {
        await closeConnections();
        return { released: [] };
      }
      return { released: [...inFlight.runs, ...inFlight.tasks, ...inFlight.commits, ...inFlight.maintenance] };
    },
  };
}

/**
 * Whether `close` finished within `graceMs`. BullMQ's close() stops taking jobs at once and waits
 * for the running ones; a forced close cannot overtake a close already waiting, so after the
 * grace period the caller ends the process instead (the running jobs' locks then lapse).
 */
export async function closeWithinGrace(close: () => Promise<void>, graceMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)));
  try {
    return await Promise.race([close().then(() => true as const), expired]);
  } finally {
    clearTimeout(timer);
  }
}
