/**
 * `tributary worker --redis URL`: works on load runs from the BullMQ queues (plans, partition
 * range tasks, commits) until SIGTERM or SIGINT. Then it takes no new jobs, lets the jobs in
 * flight finish within --grace-ms, and ends; jobs still running after that are left to lapse
 * (their locks expire after --lock-ms and other workers take them over).
 *
 * TRIBUTARY_ETL_FAILPOINT=<name>[:<n>] (src/etl/load/failpoints.ts) makes the worker kill itself with
 * SIGKILL at that moment of a task or commit: for crash tests only.
 */
import { hostname } from 'node:os';
import { z } from 'zod';
import { logLevelSchema, parseConfig, zookeeperConnectSchema } from '../../common/config.js';
import { createLogger } from '../../common/logger.js';
import { MemoryCoordination } from '../../coordination/memory-store.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { ZooKeeperStore } from '../../coordination/zookeeper-store.js';
import { failpointHook, parseFailpoint, type FailpointName } from '../../etl/load/failpoints.js';
import { DEFAULT_QUEUE_PREFIX, QUEUE_NAMES, redisConnection } from '../../../jobs/src/queues.js';
import { startJobWorkers } from '../../../jobs/src/worker.js';
import type { CommandIo } from '../not-implemented.js';
import { redisCredentialsFrom } from '../service-credentials.js';
import { FAILPOINT_VARIABLE } from '../command-constants.js';

export interface WorkerCommandOptions {
  readonly redis: string;
  readonly concurrency?: string;
  readonly zookeeper?: string;
  readonly graceMs?: string;
  readonly lockMs?: string;
  readonly prefix?: string;
  readonly id?: string;
  readonly logLevel?: string;
}

const flagsSchema = z.object({
  concurrency: z.coerce.number().int().min(1).max(1_000).default(4),
  zookeeper: zookeeperConnectSchema.optional(),
  graceMs: z.coerce.number().int().min(0).default(30_000),
  lockMs: z.coerce.number().int().min(1_000, 'a lock shorter than 1000 ms would lapse under a busy event loop').default(30_000),
  prefix: z.string().regex(/^[^:\s]+$/, 'a key prefix without ":" or spaces, e.g. bull').default(DEFAULT_QUEUE_PREFIX),
  id: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, 'a worker id of A–Z, a–z, 0–9, ".", "_" and "-"').optional(),
  logLevel: logLevelSchema.default('info'),
});

export async function runWorker(io: CommandIo, options: WorkerCommandOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const connection = redisConnection(options.redis, '--redis', redisCredentialsFrom(env));
  const flags = parseConfig(flagsSchema, options, 'the command line');
  const workerId = flags.id ?? `${hostname()}-${process.pid}`;
  const logger = createLogger({ name: 'worker', level: flags.logLevel }).child({ worker: workerId });
  const failpointSpec = env[FAILPOINT_VARIABLE];
  let failpoint: ((point: FailpointName) => void) | undefined;
  if (failpointSpec !== undefined && failpointSpec !== '') {
    failpoint = failpointHook(parseFailpoint(failpointSpec), () => process.kill(process.pid, 'SIGKILL'));
  }
  let store: CoordinationStore;
  if (flags.zookeeper !== undefined) {
    store = await ZooKeeperStore.connect(flags.zookeeper, { logger });
  } else {
    // Leases then hold within this process only; the commit claim still fences across processes.
    logger.warn('no --zookeeper: run leases hold within this process only; give every worker the same ZooKeeper when several run');
    store = new MemoryCoordination({ logger }).session();
  }
  try {
    const workers = await startJobWorkers({
      connection,
      prefix: flags.prefix,
      concurrency: flags.concurrency,
      lockMs: flags.lockMs,
      workerId,
      store,
      numberRuns: flags.zookeeper !== undefined,
      logger,
      ...(failpoint === undefined ? {} : { failpoint }),
    });
    logger.info({ queues: Object.values(QUEUE_NAMES), prefix: flags.prefix, concurrency: flags.concurrency, event: 'worker-ready' }, 'worker ready');
    io.writeOut(`worker ${workerId}: working on ${Object.values(QUEUE_NAMES).join(', ')} (prefix ${flags.prefix}), ${flags.concurrency} jobs of each at once\n`);
    const signal = await new Promise<string>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
    });
    logger.info({ signal, inFlight: workers.inFlight(), graceMs: flags.graceMs, event: 'worker-stopping' }, 'stopping: finishing the jobs in flight');
    const { released } = await workers.stop(flags.graceMs);
    if (released.length > 0) {
      logger.warn({ released, event: 'worker-released' }, `the grace period of ${flags.graceMs} ms ended with jobs in flight; other workers take them over once their locks lapse`);
      await store.close().catch(() => undefined);
      logger.flush();
      // The unfinished jobs still hold sockets open; ending the process is what releases them.
      process.exit(0);
    }
    logger.info({ event: 'worker-stopped' }, 'worker stopped');
  } finally {
    await store.close();
  }
}
