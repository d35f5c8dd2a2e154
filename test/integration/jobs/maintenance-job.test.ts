/**
 * Iceberg table maintenance as a scheduled job (issue #33): a `format: iceberg` load whose file
 * has `iceberg.maintenance` gets a job scheduler on the maintenance queue from `tributary
 * scheduler`, and a `tributary worker` runs its job on real Redis and ZooKeeper: compaction of the
 * small files (a `replace` snapshot), then snapshot expiry (the history before it dropped, with the
 * files only it reached), then orphan removal. The Apache Iceberg Java API reads every record
 * exactly once afterwards. Removing the section from the file removes the scheduler.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MaintainJobResult } from '../../../jobs/src/job-data.js';
import { readIcebergTable } from '../../support/iceberg-java.js';
import { positionOf } from '../etl/iceberg-checks.js';
import { services } from '../services.js';
import { createTopic, loadFileText, makeWarehouse, messagesOf, producePageViews, registerPageViews, runEtl, startLoaderEnvironment, type LoaderEnvironment, type ProducedRecord } from '../etl/loader-support.js';
import { openTestQueues, startSchedulerProcess, startWorkerProcess, testPrefix, type TestQueues, type TributaryProcess } from './jobs-support.js';

let env: LoaderEnvironment;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  env = await startLoaderEnvironment();
}, 120_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await env?.close();
}, 90_000);

/** Polls the maintenance queue until a job of `load` completed that compacted (the schedule makes one a second); fails on a failed one. */
async function completedMaintenance(queues: TestQueues, load: string, watching: readonly TributaryProcess[]): Promise<Job> {
  const deadline = Date.now() + 240_000;
  const ofLoad = (job: Job): boolean => (job.data as { loadFile?: string }).loadFile?.endsWith(`${load}.yaml`) === true;
  for (;;) {
    const failed = (await queues.queues.maintenance.getJobs(['failed'])).find(ofLoad);
    expect(failed?.failedReason, `maintenance job ${failed?.id ?? ''} failed`).toBeUndefined();
    const completed = (await queues.queues.maintenance.getJobs(['completed'])).find((job) => ofLoad(job) && (job.returnvalue as MaintainJobResult).compaction?.[0]?.snapshot !== undefined);
    if (completed !== undefined) return completed;
    if (Date.now() > deadline) throw new Error(`no maintenance job of load ${load} completed.\n${watching.map((process) => process.log().slice(-4000)).join('\n---\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

describe('Iceberg maintenance as a scheduled job', () => {
  it(
    'compacts, expires and removes orphans on the load\'s maintenance schedule, run by a worker; every record still read once',
    async () => {
      const name = `maint-${randomBytes(3).toString('hex')}`;
      const topic = `t-${name}`;
      const warehouse = makeWarehouse('local folder', env, name);
      cleanups.push(() => warehouse.cleanup());
      await createTopic(env.broker.bootstrap, topic, 2);
      await registerPageViews(env.registryClient, topic);
      const loads = join(env.folder, `loads-${name}`);
      await mkdir(loads, { recursive: true });
      const loadFile = join(loads, `${name}.yaml`);
      const base = loadFileText({ name, topic, warehouse, format: 'iceberg', codec: 'snappy', bootstrap: [env.broker.bootstrap], registryUrl: env.registry.url });
      await writeFile(loadFile, base);
      const produced: ProducedRecord[] = [];
      for (let batch = 0; batch < 3; batch += 1) {
        produced.push(...(await producePageViews(env, topic, { count: 30, partitions: 2, hours: 1, firstId: produced.length })));
        const result = await runEtl(['run', '--load', loadFile, '--no-progress']);
        expect(result.status, messagesOf(result)).toBe(0);
      }
      const location = warehouse.warehouse.describe(`${warehouse.root}/${topic}`);
      const before = await readIcebergTable(location, { runDir: services().runDir });
      expect(before.files).toHaveLength(6);

      const queues = openTestQueues(testPrefix());
      cleanups.push(() => queues.dispose());
      const started: TributaryProcess[] = [];
      cleanups.push(() => Promise.all(started.map((process) => process.daemon.stop())));
      // Every second; expiry of everything but the newest snapshot.
      await writeFile(loadFile, `${base}iceberg:\n  maintenance:\n    schedule: '* * * * * *'\n    compaction: { minInputFiles: 2 }\n    expiry: { olderThan: 0ms, retainLast: 1 }\n    orphans: { olderThan: 1h }\n`);
      const scheduler = await startSchedulerProcess(queues.prefix, loads);
      started.push(scheduler);
      expect(scheduler.log()).toContain('1 Iceberg maintenance schedule on queue tributary-maintenance');
      expect(await queues.queues.maintenance.getJobScheduler(name)).toMatchObject({ pattern: '* * * * * *', tz: 'UTC' });
      started.push(await startWorkerProcess({ id: 'maint-worker', prefix: queues.prefix, concurrency: 1 }));

      const job = await completedMaintenance(queues, name, started);
      const result = job.returnvalue as MaintainJobResult;
      expect(result.compaction).toEqual([{ topic, snapshot: expect.stringMatching(/^\d+$/) as unknown, inputFiles: 6, outputFiles: 1 }]);
      expect(result.expiry).toEqual([{ topic, expired: 3, deletedFiles: expect.any(Number) as unknown }]);
      expect(result.orphans).toEqual([{ topic, deleted: 0 }]);

      const after = await readIcebergTable(location, { runDir: services().runDir });
      expect(after.currentSnapshotId).toBe(result.compaction?.[0]?.snapshot);
      expect(after.snapshots.map((snapshot) => snapshot.operation)).toEqual(['replace']);
      expect(after.files).toHaveLength(1);
      expect(after.records.map(positionOf).sort()).toEqual(produced.map((record) => `${record.partition}/${record.offset}`).sort());

      // Without the section, the next pass of the scheduler removes the maintenance scheduler.
      await writeFile(loadFile, base);
      const deadline = Date.now() + 60_000;
      while ((await queues.queues.maintenance.getJobScheduler(name)) !== undefined && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await queues.queues.maintenance.getJobScheduler(name)).toBeUndefined();
    },
    600_000,
  );
});
