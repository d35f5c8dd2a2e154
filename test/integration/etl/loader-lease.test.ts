/**
 * The run lease on real ZooKeeper (`tributary etl run --zookeeper`): runs are numbered, the lock
 * is gone after a run, and a second run of the same load is refused while one holds it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { readLoadFile } from '../../../src/etl/load-file.js';
import { runLoad } from '../../../src/etl/load/run.js';
import { KafkaLoadSource, type LoadSource } from '../../../src/etl/load/source.js';
import { zookeeperAddress } from '../services.js';
import {
  createTopic,
  makeWarehouse,
  messagesOf,
  producePageViews,
  publishedManifests,
  registerPageViews,
  runEtl,
  silent,
  startLoaderEnvironment,
  writeLoadFile,
  type LoaderEnvironment,
} from './loader-support.js';

let env: LoaderEnvironment;
let zookeeper: string;
const chroot = `/tributary-loader-lease-${randomBytes(3).toString('hex')}`;

beforeAll(async () => {
  env = await startLoaderEnvironment();
  zookeeper = `${zookeeperAddress().connectString}${chroot}`;
}, 120_000);

afterAll(async () => {
  await env?.close();
  const root = await ZooKeeperStore.connect(zookeeperAddress().connectString);
  await root.deleteRecursive(chroot).finally(() => root.close());
}, 60_000);

describe('loader lease in ZooKeeper', () => {
  it(
    'numbers the runs, records the number in the manifest, and releases the lock',
    async () => {
      const name = 'lease-numbers';
      const topic = `t-${name}`;
      const warehouse = makeWarehouse('local folder', env, name);
      await createTopic(env.broker.bootstrap, topic, 2);
      await registerPageViews(env.registryClient, topic);
      const load = await writeLoadFile(env, { name, topic, warehouse });
      await producePageViews(env, topic, { count: 20, partitions: 2, hours: 1 });
      expect((await runEtl(['run', '--load', load, '--zookeeper', zookeeper])).status).toBe(0);
      await producePageViews(env, topic, { count: 20, partitions: 2, hours: 1, firstId: 20 });
      expect((await runEtl(['run', '--load', load, '--zookeeper', zookeeper])).status).toBe(0);
      expect((await publishedManifests(warehouse.warehouse, warehouse.root, name)).map((manifest) => manifest.runNumber)).toEqual([1, 2]);
      const store = await ZooKeeperStore.connect(zookeeper);
      try {
        expect(await store.get(`/etl/locks/${name}`)).toBeUndefined();
      } finally {
        await store.close();
      }
    },
    120_000,
  );

  it(
    'refuses a second run while one holds the lease, naming the holder',
    async () => {
      const name = 'lease-busy';
      const topic = `t-${name}`;
      const warehouse = makeWarehouse('local folder', env, name);
      await createTopic(env.broker.bootstrap, topic, 2);
      await registerPageViews(env.registryClient, topic);
      const loadFile = await writeLoadFile(env, { name, topic, warehouse });
      await producePageViews(env, topic, { count: 20, partitions: 2, hours: 1 });
      const load = await readLoadFile(loadFile);

      const store = await ZooKeeperStore.connect(zookeeper);
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
        const holder = runLoad({ load, warehouse: warehouse.warehouse, source: paused, registry: env.registryClient, logger: silent, acceptGap: false, store, numberRuns: true });
        await reachedFetch;
        const refused = await runEtl(['run', '--load', loadFile, '--zookeeper', zookeeper]);
        expect(refused.status).toBe(1);
        expect(messagesOf(refused)).toMatch(new RegExp(`load ${name} is being run by run \\d+ \\(pid ${process.pid} on .+, since .+\\) \\(lock /etl/locks/${name}\\)`));
        expect(messagesOf(refused)).toContain('[ETL_LOAD_BUSY]');
        release();
        await expect(holder).resolves.toMatchObject({ outcome: 'committed' });
      } finally {
        release();
        source.close();
        await store.close();
      }
    },
    120_000,
  );
});
