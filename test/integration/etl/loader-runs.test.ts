/**
 * The loader end to end, with real parts: `tributary etl` as a real process, a real broker
 * process, a real registry server, and each warehouse (a local folder, and real HDFS through
 * WebHDFS). Every test gets a topic, a load and a warehouse folder of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { claimPath, publishedPath } from '../../../src/etl/layout.js';
import { readLoadFile } from '../../../src/etl/load-file.js';
import { decodeQuarantine } from '../../../src/etl/load/quarantine.js';
import { runLoad } from '../../../src/etl/load/run.js';
import { KafkaLoadSource, type LoadSource } from '../../../src/etl/load/source.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { frame } from '../../../src/registry/serde/framing.js';
import {
  createTopic,
  expectExactlyOnce,
  makeWarehouse,
  manifestsPerHour,
  messagesOf,
  produceRaw,
  producedPerHour,
  producePageViews,
  publishedManifests,
  readWarehouse,
  registerPageViews,
  removeHdfsBase,
  runEtl,
  silent,
  startLoaderEnvironment,
  writeLoadFile,
  type LoaderEnvironment,
  type TestWarehouse,
  type WarehouseKind,
} from './loader-support.js';

const SLOW = 240_000;
let env: LoaderEnvironment;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  // Retention checked often, so a test can make it delete segments on demand.
  env = await startLoaderEnvironment({ 'log.retention.check.interval.ms': '200' });
}, 120_000);

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  await removeHdfsBase().catch(() => undefined);
  await env?.close();
}, 60_000);

let names = 0;
function fresh(kind: WarehouseKind, what: string): { name: string; topic: string; warehouse: TestWarehouse } {
  names += 1;
  const name = `${what}-${kind === 'HDFS' ? 'hdfs' : 'local'}-${names}`;
  const warehouse = makeWarehouse(kind, env, name);
  cleanups.push(() => warehouse.cleanup());
  return { name, topic: `t-${name}`, warehouse };
}

async function logStartOf(topic: string, partition: number): Promise<number> {
  const cluster = await ClusterClient.connect({ bootstrap: [env.broker.bootstrap], allowAutoTopicCreation: false });
  try {
    return Number(await new SimpleConsumer(cluster).listOffset(topic, partition, 'earliest'));
  } finally {
    cluster.close();
  }
}

describe.each<WarehouseKind>(['local folder', 'HDFS'])('loader into %s', (kind) => {
  it(
    'loads two schema versions over 8 partitions and 3 event hours exactly once; a second run reads only new records',
    async () => {
      const { name, topic, warehouse } = fresh(kind, 'views');
      await createTopic(env.broker.bootstrap, topic, 8);
      await registerPageViews(env.registryClient, topic);
      const first = await producePageViews(env, topic, { count: 800, partitions: 8, hours: 3 });
      const load = await writeLoadFile(env, { name, topic, warehouse });

      const plan = await runEtl(['plan', '--load', load]);
      expect(plan.status, plan.stderr).toBe(0);
      expect(plan.stdout).toContain(`load ${name}: next commit 1`);
      expect(plan.stdout).toContain(`reader schema of ${topic}: ${topic}-value version 2`);
      expect(plan.stdout).toContain('800 records to read from 8 of 8 partitions');

      const run = await runEtl(['run', '--load', load]);
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`load ${name}: commit 1: 800 records in \\d+ files from 8 partitions, 0 quarantined`));
      expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), first);
      expect(Object.keys(producedPerHour(first))).toHaveLength(3);
      expect(await manifestsPerHour(warehouse.warehouse, warehouse.root, name, topic)).toEqual(producedPerHour(first));

      const second = await producePageViews(env, topic, { count: 160, partitions: 8, hours: 3, firstId: 800 });
      const again = await runEtl(['run', '--load', load]);
      expect(again.status, again.stderr).toBe(0);
      expect(again.stdout).toContain(`load ${name}: commit 2: 160 records`);
      const [manifest1, manifest2] = await publishedManifests(warehouse.warehouse, warehouse.root, name);
      expect(manifest2?.ranges.map((range) => [range.partition, range.start])).toEqual(manifest1?.ranges.map((range) => [range.partition, range.end]));
      const all = [...first, ...second];
      expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), all);
      expect(await manifestsPerHour(warehouse.warehouse, warehouse.root, name, topic)).toEqual(producedPerHour(all));

      const status = await runEtl(['status', '--load', load]);
      expect(status.status, status.stderr).toBe(0);
      expect(status.stdout).toContain(`load ${name}: 2 commits`);
      expect(status.stdout).toContain(`${topic}: 0=120 1=120 2=120 3=120 4=120 5=120 6=120 7=120`);
      for (const [hour, count] of Object.entries(producedPerHour(all))) expect(status.stdout).toContain(`${topic} ${hour}  ${count}`);
    },
    SLOW,
  );

  it(
    'fails a partition whose offsets retention deleted, naming it and the range and committing nothing for it; --accept-gap records the gap',
    async () => {
      const { name, topic, warehouse } = fresh(kind, 'gap');
      // Small segments and 4 KiB of retention: a burst of records deletes the older ones.
      await createTopic(env.broker.bootstrap, topic, 2, { 'segment.bytes': '1024', 'retention.bytes': '4096' });
      await registerPageViews(env.registryClient, topic);
      const load = await writeLoadFile(env, { name, topic, warehouse });
      const early = await producePageViews(env, topic, { count: 10, partitions: 2, hours: 3 });
      expect((await runEtl(['run', '--load', load])).status).toBe(0);

      // Partition 0 gets a burst that pushes its older records out; partition 1 a few records that stay.
      const burst = await producePageViews(env, topic, { count: 400, partitions: 2, partition: 0, hours: 3, firstId: 10, perSend: 20 });
      const quiet = await producePageViews(env, topic, { count: 3, partitions: 2, partition: 1, hours: 3, firstId: 1000 });
      await expect.poll(() => logStartOf(topic, 0), { timeout: 30_000, interval: 200 }).toBeGreaterThan(5);
      // Retention may delete more segments while the test runs: each run reports the log start it saw.
      const seen = await logStartOf(topic, 0);

      const failed = await runEtl(['run', '--load', load]);
      expect(failed.status).toBe(1);
      const lostTo = Number(/offsets \[5, (\d+)\)/.exec(messagesOf(failed))?.[1]);
      expect(lostTo).toBeGreaterThanOrEqual(seen);
      expect(messagesOf(failed)).toContain(`partition ${topic}-0 of load ${name}: offsets [5, ${lostTo}) (at most ${lostTo - 5} records) were deleted by retention before they were loaded; nothing was committed for ${topic}-0`);
      expect(messagesOf(failed)).toContain('[ETL_OFFSETS_LOST]');
      const afterFailure = await publishedManifests(warehouse.warehouse, warehouse.root, name);
      for (const manifest of afterFailure) expect(manifest.ranges.filter((range) => range.partition === 0 && range.start >= 5)).toEqual([]);
      expect(afterFailure.at(-1)?.nextOffsets[topic]?.['0']).toBe(5);

      const accepted = await runEtl(['run', '--load', load, '--accept-gap']);
      expect(accepted.status, accepted.stderr).toBe(0);
      const logStart = Number(new RegExp(`gap accepted: ${topic}-0 \\[5, (\\d+)\\) was lost to retention`).exec(accepted.stdout)?.[1]);
      expect(logStart).toBeGreaterThanOrEqual(lostTo);
      const last = (await publishedManifests(warehouse.warehouse, warehouse.root, name)).at(-1);
      expect(last?.ranges.find((range) => range.partition === 0)).toMatchObject({ start: logStart, gap: { from: 5, to: logStart } });
      const kept = [...early, ...burst, ...quiet].filter((record) => record.partition !== 0 || record.offset < 5 || record.offset >= logStart);
      expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), kept);
      const status = await runEtl(['status', '--load', load]);
      expect(status.stdout).toContain(`${topic}-0 [5, ${logStart}) in commit`);
    },
    SLOW,
  );

  it(
    'quarantines undecodable records with their reasons; over the threshold nothing is committed',
    async () => {
      const { name, topic, warehouse } = fresh(kind, 'bad');
      await createTopic(env.broker.bootstrap, topic, 2);
      await registerPageViews(env.registryClient, topic);
      const good = await producePageViews(env, topic, { count: 40, partitions: 2, hours: 3 });
      const raw = [Buffer.from('{"json":"not avro"}'), frame(987_654, Buffer.from([2, 4, 6])), null, Buffer.from([0, 0, 0])];
      const offsets = await produceRaw(env, topic, 1, raw);

      const strict = await writeLoadFile(env, { name, topic, warehouse, quarantineMax: 3 });
      const refused = await runEtl(['run', '--load', strict]);
      expect(refused.status).toBe(1);
      expect(messagesOf(refused)).toContain(`load ${name}: 4 records could not be loaded (`);
      expect(messagesOf(refused)).toContain('more than quarantine.maxRecords = 3');
      expect((await readCommitLog(warehouse.warehouse, warehouse.root, name)).claimed).toEqual([]);

      const tolerant = await writeLoadFile(env, { name, topic, warehouse, quarantineMax: 10 });
      const run = await runEtl(['run', '--load', tolerant]);
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toContain('40 records in');
      expect(run.stdout).toContain('4 quarantined');
      const [manifest] = await publishedManifests(warehouse.warehouse, warehouse.root, name);
      expect(manifest?.quarantine.records).toBe(4);
      expect(manifest?.quarantine.reasons).toEqual({ ETL_NULL_VALUE: 1, REGISTRY_SCHEMA_NOT_FOUND: 1, SERDE_FRAME_TOO_SHORT: 1, SERDE_NOT_FRAMED: 1 });
      expect(manifest?.ranges.find((range) => range.partition === 1)).toMatchObject({ records: 20, quarantined: 4 });
      const file = manifest?.quarantine.files[0];
      expect(file?.path).toBe(`${warehouse.root}/_etl/${name}/quarantine/0000000001/${topic}+1+0+24.jsonl`);
      const lines = decodeQuarantine(await warehouse.warehouse.open(file?.path ?? ''));
      expect(lines.map((line) => [line.offset, line.code])).toEqual([
        [offsets[0], 'SERDE_NOT_FRAMED'],
        [offsets[1], 'REGISTRY_SCHEMA_NOT_FOUND'],
        [offsets[2], 'ETL_NULL_VALUE'],
        [offsets[3], 'SERDE_FRAME_TOO_SHORT'],
      ]);
      expect(lines.map((line) => line.payload?.toString('hex') ?? null)).toEqual(raw.map((value) => value?.toString('hex') ?? null));
      expect(lines[1]?.reason).toContain('schema id 987654');
      expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), good);
    },
    SLOW,
  );

  it(
    'after the loader dies between renames (claim written, files half moved), the next run rolls the commit forward: nothing lost or duplicated',
    async () => {
      const { name, topic, warehouse } = fresh(kind, 'crash');
      await createTopic(env.broker.bootstrap, topic, 4);
      await registerPageViews(env.registryClient, topic);
      const produced = await producePageViews(env, topic, { count: 200, partitions: 4, hours: 3 });
      const load = await writeLoadFile(env, { name, topic, warehouse });

      const crashed = await runEtl(['run', '--load', load], { TRIBUTARY_ETL_FAILPOINT: 'after-rename:2' });
      expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
      expect(await warehouse.warehouse.stat(claimPath(warehouse.root, name, 1))).toBeDefined();
      expect(await warehouse.warehouse.stat(publishedPath(warehouse.root, name, 1))).toBeUndefined();
      expect((await readWarehouse(warehouse.warehouse, warehouse.root, topic)).size).toBeLessThan(produced.length);

      const plan = await runEtl(['plan', '--load', load]);
      expect(plan.stdout).toContain('commit 1 claimed but not published: the next run rolls it forward first');
      expect(plan.stdout).toContain('0 records to read');

      const recovered = await runEtl(['run', '--load', load]);
      expect(recovered.status, recovered.stderr).toBe(0);
      expect(recovered.stdout).toContain('rolled forward commit 1 left by an earlier run');
      expect(recovered.stdout).toContain('nothing new to load');
      expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), produced);
      expect(await manifestsPerHour(warehouse.warehouse, warehouse.root, name, topic)).toEqual(producedPerHour(produced));
      expect(await warehouse.warehouse.list(`${warehouse.root}/_etl/${name}/staging`)).toEqual([]);
    },
    SLOW,
  );

  it(
    'fences a stale run: paused past its lease while another run committed, it cannot commit afterwards',
    async () => {
      const { name, topic, warehouse } = fresh(kind, 'stale');
      await createTopic(env.broker.bootstrap, topic, 4);
      await registerPageViews(env.registryClient, topic);
      const produced = await producePageViews(env, topic, { count: 120, partitions: 4, hours: 3 });
      const loadFile = await writeLoadFile(env, { name, topic, warehouse });
      const load = await readLoadFile(loadFile);

      const source = await KafkaLoadSource.connect(load.source.bootstrap, silent);
      let release: () => void = () => {};
      let entered: () => void = () => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      const reachedFetch = new Promise<void>((resolve) => (entered = resolve));
      const paused: LoadSource = {
        topics: (selector) => source.topics(selector),
        partitions: (t) => source.partitions(t),
        bounds: (t, p) => source.bounds(t, p),
        fetch: async (t, p, offset, maxBytes) => {
          entered();
          await gate;
          return source.fetch(t, p, offset, maxBytes);
        },
        close: () => source.close(),
      };
      try {
        // The stale run has its own (in-process) lease: as far as it knows, it still holds it.
        const stale = runLoad({ load, warehouse: warehouse.warehouse, source: paused, registry: env.registryClient, logger: silent, acceptGap: false, store: new MemoryCoordination().session(), numberRuns: false });
        await reachedFetch;
        const other = await runEtl(['run', '--load', loadFile]);
        expect(other.status, other.stderr).toBe(0);
        expect(other.stdout).toContain(`load ${name}: commit 1: 120 records`);
        const committedClaim = await warehouse.warehouse.open(claimPath(warehouse.root, name, 1));

        release();
        await expect(stale).rejects.toMatchObject({ code: 'ETL_COMMIT_FENCED', message: expect.stringContaining(`commit 1 of load ${name} was claimed by another run`) as unknown });
        expect((await warehouse.warehouse.open(claimPath(warehouse.root, name, 1))).equals(committedClaim)).toBe(true);
        expect((await readCommitLog(warehouse.warehouse, warehouse.root, name)).claimed).toEqual([1]);
        expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), produced);
      } finally {
        source.close();
      }
    },
    SLOW,
  );
});
