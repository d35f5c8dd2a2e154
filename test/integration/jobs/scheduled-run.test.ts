/**
 * Acceptance (issue #10): a load scheduled every minute, `tributary scheduler` and two
 * `tributary worker` processes on real Redis, ZooKeeper, a real broker process, a real registry
 * server and real HDFS. The scheduled run fans out one task per partition; the tasks run on both
 * workers; the commit lands every produced record in HDFS exactly once.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommitJobResult, RunJobResult, TaskJobResult } from '../../../jobs/src/job-data.js';
import {
  createTopic,
  expectExactlyOnce,
  makeWarehouse,
  manifestsPerHour,
  producedPerHour,
  producePageViews,
  readWarehouse,
  registerPageViews,
  startLoaderEnvironment,
  type LoaderEnvironment,
} from '../etl/loader-support.js';
import { finishedCommitOf, openTestQueues, startSchedulerProcess, startWorkerProcess, testPrefix, writeScheduledLoadFile, type TestQueues, type TributaryProcess } from './jobs-support.js';

let env: LoaderEnvironment;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  env = await startLoaderEnvironment();
}, 120_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await env?.close();
}, 90_000);

describe('scheduled runs on several workers', () => {
  it(
    'runs a load scheduled every minute on two worker processes: its tasks run on both, and HDFS holds every record exactly once',
    async () => {
      const name = `sched-${randomBytes(3).toString('hex')}`;
      const topic = `t-${name}`;
      const warehouse = makeWarehouse('HDFS', env, name);
      cleanups.push(() => warehouse.cleanup());
      await createTopic(env.broker.bootstrap, topic, 8);
      await registerPageViews(env.registryClient, topic);
      const produced = await producePageViews(env, topic, { count: 400, partitions: 8, hours: 3 });
      const loads = join(env.folder, `loads-${name}`);
      await writeScheduledLoadFile(env, loads, { name, topic, warehouse, schedule: '* * * * *' });

      const queues: TestQueues = openTestQueues(testPrefix());
      cleanups.push(() => queues.dispose());
      const started: TributaryProcess[] = [];
      cleanups.push(() => Promise.all(started.map((process) => process.daemon.stop())));
      const scheduler = await startSchedulerProcess(queues.prefix, loads);
      started.push(scheduler);
      expect(scheduler.log()).toContain('scheduler: 1 load scheduled, 0 removed, 0 files refused');
      expect(await queues.queues.runs.getJobScheduler(name)).toMatchObject({ pattern: '* * * * *', tz: 'UTC' });
      // One task at a time each: neither worker can take every range before the other wakes.
      const workers = await Promise.all(['worker-a', 'worker-b'].map((id) => startWorkerProcess({ id, prefix: queues.prefix, concurrency: 1 })));
      started.push(...workers);

      // The first tick comes at the next whole minute.
      const commit = await finishedCommitOf(queues, name, 180_000, started);
      const result = commit.returnvalue as CommitJobResult;
      expect(result).toMatchObject({ outcome: 'committed', load: name, seq: 1, records: 400, quarantined: 0 });
      expect(result.tasks.map((task) => task.partition).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(new Set(result.tasks.map((task) => task.worker))).toEqual(new Set(['worker-a', 'worker-b']));
      // The workers recorded in the children's own return values, as the commit received them.
      const children = Object.values(await commit.getChildrenValues<TaskJobResult>());
      expect(children).toHaveLength(8);
      expect(new Set(children.map((child) => child.worker))).toEqual(new Set(['worker-a', 'worker-b']));

      // The run came from the job scheduler, not from anything the test enqueued.
      const runs = (await queues.queues.runs.getJobs(['completed'])).filter((job) => job.repeatJobKey === name);
      expect(runs.map((job) => job.returnvalue as RunJobResult)).toContainEqual(expect.objectContaining({ outcome: 'fanned-out', load: name, seq: 1, tasks: 8, commitJob: commit.id }));

      expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), produced);
      expect(await manifestsPerHour(warehouse.warehouse, warehouse.root, name, topic)).toEqual(producedPerHour(produced));
      expect(await warehouse.warehouse.list(`${warehouse.root}/_etl/${name}/staging`)).toEqual([]);

      // SIGTERM: each process stops cleanly.
      expect(await Promise.all(started.map((process) => process.terminate()))).toEqual([0, 0, 0]);
      expect(workers.map((worker) => worker.log())).toEqual([expect.stringContaining('"event":"worker-stopped"'), expect.stringContaining('"event":"worker-stopped"')]);
    },
    300_000,
  );
});
