/**
 * Everything the dashboard shows, made with the real components, for its integration test and
 * for `tsx test/support/dashboard-screenshot.ts`:
 *
 * - the offline side: `tributary demo`'s pipeline (runDemo: standalone broker, registry with its
 *   file store, page views over 3 past hours with PRODUCER counts, one load into a local folder
 *   counted at the LOADER tier), then more page views and a second run of the same load through
 *   runLoad, and a second load (Parquet) of the same topic: two loads, three commits;
 * - an online cluster for consumer-group lag: a broker in this process registered in a chroot of
 *   the real ZooKeeper, a topic with records, and two groups whose offsets `groups
 *   reset-offsets` would write (GroupAdmin), one behind and one caught up;
 * - BullMQ queues in the real Redis under a key prefix of their own (so the dashboard finds only
 *   these), with completed, failed and waiting jobs.
 *
 * No vitest imports: the screenshot script runs it outside the test runner.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { AuditedProducer } from '../../src/audit/audited-producer.js';
import { readAuditTopic } from '../../src/audit/read-audit-topic.js';
import { AvroDeserializer } from '../../src/registry/serde/deserializer.js';
import { ORIGIN_HEADER } from '../../src/audit/origin.js';
import { Broker } from '../../src/broker/broker.js';
import { parseBrokerConfig } from '../../src/broker/config.js';
import { ClusterClient } from '../../src/client/cluster-client.js';
import { GroupAdmin } from '../../src/client/group-admin.js';
import { Producer } from '../../src/client/producer.js';
import type { Logger } from '../../src/common/logger.js';
import { ZooKeeperStore } from '../../src/coordination/zookeeper-store.js';
import { runDemo, DEMO_TOPIC, type DemoResult } from '../../src/demo/demo.js';
import { samplePageViews } from '../../src/demo/sample-events.js';
import type { LoadAudit } from '../../src/etl/completeness/load-audit.js';
import { readLoadFile } from '../../src/etl/load-file.js';
import type { Manifest } from '../../src/etl/load/manifest.js';
import { runLoad } from '../../src/etl/load/run.js';
import { KafkaLoadSource } from '../../src/etl/load/source.js';
import { openWarehouse } from '../../src/etl/warehouse/open-warehouse.js';
import { CreateTopicsApi } from '../../src/protocol/apis/create-topics.js';
import { RegistryClient } from '../../src/registry/client.js';
import { AvroSerializer } from '../../src/registry/serde/serializer.js';

/** The queue names of jobs/ (the loader's BullMQ queues). */
export const WORLD_QUEUES = { runs: 'tributary-runs', tasks: 'tributary-tasks' } as const;
export const AVRO_LOAD = 'page-views';
export const PARQUET_LOAD = 'page-views-parquet';
export const LAGGING_GROUP = 'page-view-counter';
export const CAUGHT_UP_GROUP = 'sessionizer';
export const ONLINE_PARTITIONS = 2;
export const ONLINE_RECORDS_PER_PARTITION = 100;
/** Where LAGGING_GROUP's offsets are put in every partition. */
export const LAGGING_OFFSET = 60;

export interface WorldOptions {
  /** ZooKeeper connect string (no chroot: the world makes its own). */
  readonly zookeeper: string;
  readonly redisUrl: string;
  readonly logger: Logger;
  /** Page views of the demo's run; more are produced for the second run. */
  readonly events?: number;
}

export interface DashboardWorld {
  readonly dir: string;
  /** Holds the two load files. */
  readonly loadsDir: string;
  /** The offline cluster (its `_audit` topic holds PRODUCER and LOADER counts). */
  readonly bootstrap: string;
  readonly registryUrl: string;
  /** The online cluster's ZooKeeper, chroot included. */
  readonly zookeeper: string;
  readonly redisUrl: string;
  readonly queuePrefix: string;
  /** The event hours of the demo: [from, to). */
  readonly hours: { readonly from: number; readonly to: number };
  /** What the dashboard must show. */
  readonly expected: {
    /** Records per hour key of DEMO_TOPIC in each load (the same for both). */
    readonly perHour: Readonly<Record<string, number>>;
    readonly avroCommits: readonly { readonly seq: number; readonly records: number }[];
    readonly parquetRecords: number;
    /** Job counts of WORLD_QUEUES.runs. */
    readonly runsQueue: { readonly completed: number; readonly failed: number; readonly waiting: number };
    readonly tasksWaiting: number;
  };
  close(): Promise<void>;
}

export async function buildDashboardWorld(options: WorldOptions): Promise<DashboardWorld> {
  const { logger } = options;
  const dir = await mkdtemp(join(tmpdir(), 'tributary-dashboard-'));
  const closers: (() => Promise<unknown>)[] = [() => rm(dir, { recursive: true, force: true })];
  const close = async (): Promise<void> => {
    for (const closer of closers.splice(0).reverse()) await closer().catch((error: unknown) => logger.warn({ err: error }, 'dashboard world: a clean-up failed'));
  };
  try {
    const demoDir = join(dir, 'demo');
    await mkdir(demoDir);
    const demo = await runDemo({ dir: demoDir, events: options.events ?? 3_000, logger, progress: () => undefined });
    closers.push(() => demo.stack.stop());
    const loadsDir = join(dir, 'loads');
    await mkdir(loadsDir);
    const avroFile = await writeLoad(loadsDir, demo, AVRO_LOAD, 'avro', 'deflate', join(demoDir, 'warehouse'), '5 * * * *');
    const parquetFile = await writeLoad(loadsDir, demo, PARQUET_LOAD, 'parquet', 'snappy', join(dir, 'warehouse-parquet'), '20 * * * *');

    await produceMore(demo, Math.round((options.events ?? 3_000) / 4), logger);
    const second = await runOnce(demo, avroFile, true, logger);
    const parquet = await runOnce(demo, parquetFile, false, logger);

    const perHour: Record<string, number> = {};
    for (const manifest of [demo.manifest, second]) {
      for (const [hour, count] of Object.entries(manifest.hours[DEMO_TOPIC] ?? {})) perHour[hour] = (perHour[hour] ?? 0) + count;
    }
    const zookeeper = `${options.zookeeper}/dashboard-${process.pid}-${randomBytes(3).toString('hex')}`;
    closers.push(await startOnlineCluster(zookeeper, dir, logger));
    const queuePrefix = `dashboard-${process.pid}-${randomBytes(3).toString('hex')}`;
    const queues = await fillQueues(options.redisUrl, queuePrefix);
    closers.push(queues.close);

    return {
      dir,
      loadsDir,
      bootstrap: demo.stack.bootstrap,
      registryUrl: demo.stack.registryUrl,
      zookeeper,
      redisUrl: options.redisUrl,
      queuePrefix,
      hours: demo.hours,
      expected: {
        perHour: Object.fromEntries(Object.entries(perHour).sort(([a], [b]) => (a < b ? -1 : 1))),
        avroCommits: [demo.manifest, second].map((manifest) => ({ seq: manifest.seq, records: manifest.ranges.reduce((sum, range) => sum + range.records, 0) })),
        parquetRecords: parquet.ranges.reduce((sum, range) => sum + range.records, 0),
        runsQueue: queues.runs,
        tasksWaiting: queues.tasksWaiting,
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

async function writeLoad(folder: string, demo: DemoResult, name: string, format: string, codec: string, warehouse: string, schedule: string): Promise<string> {
  const file = join(folder, `${name}.yaml`);
  const text = [
    `name: ${name}`,
    `source: { bootstrap: [${demo.stack.bootstrap}] }`,
    `topics: [${DEMO_TOPIC}]`,
    `registry: ${demo.stack.registryUrl}`,
    `warehouse: { url: '${warehouse}', root: '' }`,
    `format: ${format}`,
    `codec: ${codec}`,
    'timeField: header.time',
    // The demo's hours end at least 6 minutes ago: with 5 minutes of lateness they are closed.
    'latenessHorizon: 5m',
    `schedule: '${schedule}'`,
    '',
  ].join('\n');
  await writeFile(file, text, 'utf8');
  return file;
}

/** More page views over the demo's hours, with fresh ids, origin headers and PRODUCER counts. */
async function produceMore(demo: DemoResult, count: number, logger: Logger): Promise<void> {
  const registry = new RegistryClient({ url: demo.stack.registryUrl, logger });
  const schema = await readFile(new URL('../../schemas/PageViewEvent.avsc', import.meta.url), 'utf8');
  const serializer = new AvroSerializer(registry, { autoRegister: false });
  const producer = await AuditedProducer.connect({ bootstrap: [demo.stack.bootstrap], registry, acks: -1, clientId: 'dashboard-world', logger, audit: { publishIntervalMs: 0 } });
  try {
    const records = [];
    for (const sample of samplePageViews(count, demo.hours)) {
      const event = { ...sample, header: { ...sample.header, eventId: randomUUID() } };
      records.push({ value: await serializer.encode(`${DEMO_TOPIC}-value`, event, schema), timestamp: event.header.time, headers: [{ key: ORIGIN_HEADER, value: Buffer.from(event.header.server) }] });
    }
    await producer.send(DEMO_TOPIC, records);
    await producer.flush();
  } finally {
    await producer.close();
  }
}

/** One run of a load; `audited` counts its commit at the LOADER tier (only one load may, or the tier doubles). */
async function runOnce(demo: DemoResult, file: string, audited: boolean, logger: Logger): Promise<Manifest> {
  const load = await readLoadFile(file);
  const warehouse = openWarehouse(load.warehouse.url, { baseDirectory: load.warehouse.baseDirectory, logger });
  const registry = new RegistryClient({ url: load.registry, logger });
  const cluster = await ClusterClient.connect({ bootstrap: [demo.stack.bootstrap], clientId: 'dashboard-world', logger });
  const publisher = new Producer(cluster, { acks: -1, logger });
  const deserializer = new AvroDeserializer(registry);
  // The LOADER tier as a load's audit section wires it (etl/load-audit.ts), on this world's cluster.
  const audit: LoadAudit = {
    sink: { publisher, encoder: new AvroSerializer(registry), cluster: 'demo' },
    readEvents: async (topic) => (await readAuditTopic({ cluster, deserializer, topic })).events,
    close: () => Promise.resolve(),
  };
  const source = await KafkaLoadSource.connect(load.source.bootstrap, logger);
  try {
    const report = await runLoad({
      load,
      warehouse,
      source,
      registry,
      logger,
      acceptGap: false,
      store: demo.stack.coordinationSession(),
      numberRuns: true,
      ...(audited ? { audit } : {}),
    });
    if (report.manifest === undefined || report.problems.length > 0) throw new Error(`load ${load.name} did not commit: ${report.problems.map((problem) => problem.message).join('; ') || 'nothing to load'}`);
    return report.manifest;
  } finally {
    source.close();
    await publisher.close();
    cluster.close();
  }
}

/** A broker in this process on ZooKeeper, a topic, and two groups' offsets. Returns its stop. */
async function startOnlineCluster(zookeeper: string, dir: string, logger: Logger): Promise<() => Promise<void>> {
  const dataDir = join(dir, 'online-broker');
  await mkdir(dataDir);
  const broker = await Broker.start({
    id: 1,
    listen: { host: '127.0.0.1', port: 0 },
    dataDir,
    config: parseBrokerConfig({}, 'dashboard world'),
    store: await ZooKeeperStore.connect(zookeeper, { logger }),
    logger: logger.child({ name: 'online-broker' }),
  });
  try {
    const bootstrap = `127.0.0.1:${broker.port}`;
    const cluster = await ClusterClient.connect({ bootstrap: [bootstrap], clientId: 'dashboard-world', logger });
    try {
      const node = cluster.knownBrokers()[0];
      if (node === undefined) throw new Error('the online broker named no brokers');
      const connection = await cluster.connectionTo(node.nodeId);
      const created = await connection.request(CreateTopicsApi, 4, {
        topics: [{ name: DEMO_TOPIC, numPartitions: ONLINE_PARTITIONS, replicationFactor: -1, assignments: [], configs: [] }],
        timeoutMs: 30_000,
        validateOnly: false,
      });
      if (created.topics[0]?.errorCode !== 0) throw new Error(`creating ${DEMO_TOPIC} on the online broker failed with error ${created.topics[0]?.errorCode}`);
      const producer = new Producer(cluster, { acks: -1, logger });
      for (let partition = 0; partition < ONLINE_PARTITIONS; partition += 1) {
        await producer.send(DEMO_TOPIC, Array.from({ length: ONLINE_RECORDS_PER_PARTITION }, (_, index) => ({ partition, value: Buffer.from(`view ${partition}-${index}`) })));
      }
      await producer.close();
    } finally {
      cluster.close();
    }
    const admin = await ZooKeeperStore.connect(zookeeper, { logger });
    try {
      await new GroupAdmin(admin).resetOffsets(LAGGING_GROUP, DEMO_TOPIC, { kind: 'offset', offset: BigInt(LAGGING_OFFSET) });
      await new GroupAdmin(admin).resetOffsets(CAUGHT_UP_GROUP, DEMO_TOPIC, { kind: 'latest' });
    } finally {
      await admin.close();
    }
  } catch (error) {
    await broker.stop();
    throw error;
  }
  return () => broker.stop();
}

/** Two queues with jobs in every interesting state; returns the counts and how to remove them. */
async function fillQueues(
  redisUrl: string,
  prefix: string,
): Promise<{ runs: { completed: number; failed: number; waiting: number }; tasksWaiting: number; close: () => Promise<void> }> {
  const connection = { url: redisUrl, maxRetriesPerRequest: null };
  const runs = new Queue(WORLD_QUEUES.runs, { connection, prefix });
  const tasks = new Queue(WORLD_QUEUES.tasks, { connection, prefix });
  const events = new QueueEvents(WORLD_QUEUES.runs, { connection, prefix });
  try {
    await events.waitUntilReady();
    const finished = [
      await runs.add('run', { load: AVRO_LOAD, reason: 'schedule' }),
      await runs.add('run', { load: PARQUET_LOAD, reason: 'schedule' }),
      await runs.add('run', { load: 'page-views-broken', reason: 'by hand' }, { attempts: 1 }),
    ];
    const worker = new Worker(
      WORLD_QUEUES.runs,
      async (job) => {
        if ((job.data as { load: string }).load === 'page-views-broken') throw new Error('load file page-views-broken.yaml: warehouse.url is empty');
        return { committed: true };
      },
      { connection, prefix, concurrency: 1 },
    );
    try {
      for (const job of finished) await job.waitUntilFinished(events, 60_000).catch(() => undefined);
    } finally {
      await worker.close();
    }
    // Added after the worker stopped: these wait.
    await runs.add('run', { load: AVRO_LOAD, reason: 'schedule' });
    for (let partition = 0; partition < 4; partition += 1) await tasks.add('task', { load: AVRO_LOAD, topic: DEMO_TOPIC, partition });
  } finally {
    await events.close();
  }
  return {
    runs: { completed: 2, failed: 1, waiting: 1 },
    tasksWaiting: 4,
    close: async () => {
      for (const queue of [runs, tasks]) {
        await queue.obliterate({ force: true });
        await queue.close();
      }
    },
  };
}
