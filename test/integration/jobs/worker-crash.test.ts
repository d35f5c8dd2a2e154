/**
 * Acceptance (issue #10): a worker process SIGKILLed in the middle of a run. Worker A dies by
 * SIGKILL right after staging its first file into HDFS (TRIBUTARY_ETL_FAILPOINT=after-stage:1,
 * the loader's crash hook), its tasks unfinished and locked; once their locks lapse, worker B
 * takes them over, and the run commits every record exactly once. A's half-staged files never
 * reach the data folders and are removed with the run's staging.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueRun } from '../../../jobs/src/enqueue.js';
import type { CommitJobResult } from '../../../jobs/src/job-data.js';
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
import { events, finishedCommitOf, openTestQueues, startWorkerProcess, testPrefix, writeScheduledLoadFile, type TributaryProcess } from './jobs-support.js';

let env: LoaderEnvironment;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  env = await startLoaderEnvironment();
}, 120_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await env?.close();
}, 90_000);

describe('a worker killed mid-run', () => {
  it(
    'SIGKILL of one worker in the middle of its tasks: the other worker takes them over and the run commits every record exactly once',
    async () => {
      const name = `crash-${randomBytes(3).toString('hex')}`;
      const topic = `t-${name}`;
      const warehouse = makeWarehouse('HDFS', env, name);
      cleanups.push(() => warehouse.cleanup());
      await createTopic(env.broker.bootstrap, topic, 8);
      await registerPageViews(env.registryClient, topic);
      const produced = await producePageViews(env, topic, { count: 400, partitions: 8, hours: 3 });
      const loadFile = await writeScheduledLoadFile(env, join(env.folder, `loads-${name}`), { name, topic, warehouse });

      const queues = openTestQueues(testPrefix());
      cleanups.push(() => queues.dispose());
      const started: TributaryProcess[] = [];
      cleanups.push(() => Promise.all(started.map((process) => process.daemon.stop())));
      // A takes four ranges at once, B one: A surely gets tasks, and dies at its first staged file.
      const doomed = await startWorkerProcess({ id: 'worker-a', prefix: queues.prefix, concurrency: 4, env: { TRIBUTARY_ETL_FAILPOINT: 'after-stage:1' } });
      const survivor = await startWorkerProcess({ id: 'worker-b', prefix: queues.prefix, concurrency: 1 });
      started.push(doomed, survivor);

      await enqueueRun(queues.queues.runs, loadFile);
      expect(await doomed.daemon.exited).toBe('SIGKILL');
      const startedOnA = events(doomed, 'job-started').filter((line) => line['queue'] === 'tributary-tasks');
      expect(startedOnA.length).toBeGreaterThan(0);

      const commit = await finishedCommitOf(queues, name, 150_000, started);
      const result = commit.returnvalue as CommitJobResult;
      expect(result).toMatchObject({ outcome: 'committed', load: name, seq: 1, records: 400 });
      // A finished no task (every range stages a file before it completes): B did all eight.
      expect(result.tasks.map((task) => task.worker)).toEqual(Array.from({ length: 8 }, () => 'worker-b'));
      // The tasks A held were put back by B's stalled-job check, and ran again on B.
      const takenOver = new Set(events(survivor, 'job-stalled').map((line) => line['job']));
      expect([...takenOver].sort()).toEqual(startedOnA.map((line) => line['job']).sort());

      expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), produced);
      expect(await manifestsPerHour(warehouse.warehouse, warehouse.root, name, topic)).toEqual(producedPerHour(produced));
      expect(await warehouse.warehouse.list(`${warehouse.root}/_etl/${name}/staging`)).toEqual([]);
      expect(await survivor.terminate()).toBe(0);
    },
    240_000,
  );
});
