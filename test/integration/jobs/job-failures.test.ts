/**
 * How `tributary worker` treats failures and stops, on real parts (broker process, registry
 * server, HDFS, ZooKeeper, Redis): a permanent failure fails the job at once with the reason as
 * its failedReason; a retriable one is retried with backoff until it succeeds; SIGTERM waits for a
 * job in flight no longer than --grace-ms, and the job then goes to another worker.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { acquireLease } from '../../../src/etl/load/lease.js';
import { enqueueRun } from '../../../jobs/src/enqueue.js';
import type { CommitJobResult } from '../../../jobs/src/job-data.js';
import {
  createTopic,
  expectExactlyOnce,
  makeWarehouse,
  producePageViews,
  produceRaw,
  readWarehouse,
  registerPageViews,
  silent,
  startLoaderEnvironment,
  type LoaderEnvironment,
} from '../etl/loader-support.js';
import { events, finishedCommitOf, openTestQueues, startWorkerProcess, testPrefix, writeScheduledLoadFile, zookeeperForJobs, type TestQueues, type TributaryProcess } from './jobs-support.js';

let env: LoaderEnvironment;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  env = await startLoaderEnvironment();
}, 120_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await env?.close();
}, 90_000);

async function setUp(what: string, schema: boolean): Promise<{ name: string; topic: string; loadFile: string; queues: TestQueues; started: TributaryProcess[]; warehouse: ReturnType<typeof makeWarehouse> }> {
  const name = `${what}-${randomBytes(3).toString('hex')}`;
  const topic = `t-${name}`;
  const warehouse = makeWarehouse('HDFS', env, name);
  cleanups.push(() => warehouse.cleanup());
  await createTopic(env.broker.bootstrap, topic, 2);
  if (schema) await registerPageViews(env.registryClient, topic);
  const loadFile = await writeScheduledLoadFile(env, join(env.folder, `loads-${name}`), { name, topic, warehouse });
  const queues = openTestQueues(testPrefix());
  cleanups.push(() => queues.dispose());
  const started: TributaryProcess[] = [];
  cleanups.push(() => Promise.all(started.map((process) => process.daemon.stop())));
  return { name, topic, loadFile, queues, started, warehouse };
}

async function until<T>(read: () => Promise<T | undefined>, what: string, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('worker failures and stops', () => {
  it(
    'fails a run at once, without retrying, when the topic has no reader schema; the reason is the failedReason',
    async () => {
      const { topic, loadFile, queues, started } = await setUp('noschema', false);
      await produceRaw(env, topic, 0, [Buffer.from('a record nobody registered a schema for')]);
      started.push(await startWorkerProcess({ id: 'worker-f', prefix: queues.prefix, concurrency: 1 }));
      const job = await enqueueRun(queues.queues.runs, loadFile);
      const failed = await until(async () => ((await job.getState()) === 'failed' ? await queues.queues.runs.getJob(job.id ?? '') : undefined), 'the run job to fail');
      expect(failed.failedReason).toBe(
        `topic ${topic} has no reader schema: subject ${topic}-value does not exist in registry ${env.registry.url}. Register the topic's value schema under ${topic}-value [ETL_SCHEMA_PROBLEM]`,
      );
      expect(failed.attemptsMade).toBe(1);
      expect(failed.opts.attempts).toBeGreaterThan(1);
      expect(events(started[0]!, 'job-failed')).toEqual([expect.objectContaining({ queue: 'tributary-runs', final: true })]);
      expect(await queues.queues.commits.getJobCounts('waiting', 'waiting-children', 'completed')).toEqual({ waiting: 0, 'waiting-children': 0, completed: 0 });
    },
    120_000,
  );

  it(
    'retries a run with backoff while another run holds the load\'s lease, and loads once the lease is free',
    async () => {
      const { name, topic, loadFile, queues, started, warehouse } = await setUp('busy', true);
      const produced = await producePageViews(env, topic, { count: 40, partitions: 2, hours: 2 });
      const store = await ZooKeeperStore.connect(zookeeperForJobs(), { logger: silent });
      cleanups.push(() => store.close());
      const holder = await acquireLease(store, name, { attempt: 'holder', numberRuns: false });
      started.push(await startWorkerProcess({ id: 'worker-r', prefix: queues.prefix, concurrency: 1 }));

      const job: Job = await enqueueRun(queues.queues.runs, loadFile);
      const retried = await until(async () => {
        const current = await queues.queues.runs.getJob(job.id ?? '');
        return current !== undefined && current.attemptsMade >= 1 ? current : undefined;
      }, 'the run job to fail once');
      expect(retried.failedReason).toContain(`load ${name} is being run by run holder`);
      expect(retried.failedReason).toContain('[ETL_LOAD_BUSY]');
      expect(await retried.getState()).not.toBe('failed');

      await holder.release();
      const commit = await finishedCommitOf(queues, name, 90_000, started);
      expect(commit.returnvalue as CommitJobResult).toMatchObject({ outcome: 'committed', records: 40 });
      expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), produced);
    },
    150_000,
  );

  it(
    'on SIGTERM waits for a job in flight only --grace-ms, exits 0, and the job then runs on another worker',
    async () => {
      const { name, topic, loadFile, queues, started, warehouse } = await setUp('grace', true);
      const produced = await producePageViews(env, topic, { count: 40, partitions: 2, hours: 2 });
      const first = await startWorkerProcess({ id: 'worker-g1', prefix: queues.prefix, concurrency: 1, graceMs: 2_000 });
      started.push(first);
      // A stopped broker keeps the run's planning waiting: the job stays in flight.
      env.broker.daemon.signal('SIGSTOP');
      try {
        await enqueueRun(queues.queues.runs, loadFile);
        await until(async () => (events(first, 'job-started').length > 0 ? true : undefined), 'the run job to start');
        const exited = first.terminate();
        expect(await exited).toBe(0);
        const [stopping] = events(first, 'worker-stopping');
        expect(stopping).toMatchObject({ graceMs: 2_000, inFlight: { runs: [expect.any(String) as unknown], tasks: [], commits: [] } });
        expect(events(first, 'worker-released')).toEqual([expect.objectContaining({ released: [expect.any(String) as unknown] })]);
      } finally {
        env.broker.daemon.signal('SIGCONT');
      }
      started.push(await startWorkerProcess({ id: 'worker-g2', prefix: queues.prefix, concurrency: 1 }));
      const commit = await finishedCommitOf(queues, name, 120_000, started);
      expect(commit.returnvalue as CommitJobResult).toMatchObject({ outcome: 'committed', records: 40 });
      expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), produced);
    },
    180_000,
  );
});
