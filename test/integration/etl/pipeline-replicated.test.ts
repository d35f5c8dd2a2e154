/**
 * The pipeline on a replicated offline cluster (issue: "a load run and the mirror keep going while
 * the leader of their partitions is SIGKILLed; the loader's exactly-once check still holds"):
 *
 *   online cluster (one broker)  ──mirror process──▶  offline cluster (3 brokers, RF=3, min ISR 2)  ──loader──▶  warehouse
 *
 * Page views (PageViewEvent, Avro framed with the registry, as the loader tests make them) are
 * produced into the online cluster in waves the whole time; `tributary mirror start` copies them
 * into the offline cluster (min.insync.replicas 2, a broker setting), whose topic has one
 * preferred leader for all its partitions.
 *
 * 1. The mirror, under traffic, while the leader of every offline partition is SIGKILLed and
 *    later restarted: every online record arrives offline exactly once, in source offset order per
 *    source partition (what the mirror tests assert: its producer is idempotent and the brokers
 *    keep producer state across a failover), and the mirror process never exits.
 * 2. A load run over the offline topic (runLoad, as the loader tests do), with the leader of the
 *    offline partitions SIGKILLed mid-run: one task has read its partition, the others fetch only
 *    after the kill, while the mirror is still writing through the same failover. The run must
 *    commit; after the killed broker is back, a `tributary etl run` process loads the rest; then
 *    the warehouse holds every offline record exactly once (partition, offset, payload hash, hour;
 *    the manifests' per-hour counts agree), and the mirror again delivered everything exactly once.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_TOPIC } from '../../../src/audit/audit-count.js';
import { KafkaConnection } from '../../../src/client/connection.js';
import { parseAddress } from '../../../src/client/cluster-client.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { readLoadFile } from '../../../src/etl/load-file.js';
import { runLoad } from '../../../src/etl/load/run.js';
import { KafkaLoadSource, type LoadSource } from '../../../src/etl/load/source.js';
import { mirrorOriginOf } from '../../../src/mirror/origin-header.js';
import { CreateTopicsApi } from '../../../src/protocol/apis/create-topics.js';
import type { Record as KafkaRecord } from '../../../src/protocol/records.js';
import { parseAvroSchema } from '../../../src/registry/avro-schema.js';
import { RegistryClient } from '../../../src/registry/client.js';
import { AvroDeserializer } from '../../../src/registry/serde/deserializer.js';
import { startRegistryServer, type RunningRegistry } from '../../../src/registry/server.js';
import { openRun } from '../../services/run-dir.js';
import { runTributary } from '../../support/cli.js';
import { ReplicatedCluster, type PartitionState } from '../../support/replicated-cluster.js';
import { readTopic, sleep, startCluster, startMirrorProcess, type MirrorProcess, type TestCluster } from '../mirror/mirror-support.js';
import { services, zookeeperAddress } from '../services.js';
import {
  expectExactlyOnce,
  hashValue,
  hourKeyOf,
  makeWarehouse,
  manifestsPerHour,
  producedPerHour,
  producePageViews,
  readWarehouse,
  registerPageViews,
  runEtl,
  silent,
  type LoaderEnvironment,
  type ProducedRecord,
  type TestWarehouse,
} from './loader-support.js';

const TOPIC = 'page-views';
const PARTITIONS = 3;
const GROUP = 'pipeline-mirror';
const LOAD = 'pipeline-load';
/** Records per wave of online traffic (spread over the partitions), one wave every WAVE_PAUSE_MS. */
const WAVE = 30;
const WAVE_PAUSE_MS = 150;

let online: TestCluster | undefined;
let offline: ReplicatedCluster | undefined;
let registry: RunningRegistry | undefined;
let folder: string | undefined;
let mirror: MirrorProcess | undefined;
let onlineEnv: LoaderEnvironment;
let warehouse: TestWarehouse | undefined;
/** Ids of the page views produced so far (the next wave starts here). */
let producedCount = 0;

beforeAll(async () => {
  const run = openRun(services().runDir);
  folder = await mkdtemp(join(tmpdir(), 'tributary-pipeline-'));
  // Page views carry event times (and timestamps) of fixed hours: no retention may delete them mid-test.
  const noRetention = { 'log.retention.ms': '-1' };
  [online, offline] = await Promise.all([
    startCluster(run, 'pipeline-online', { settings: noRetention }),
    ReplicatedCluster.start({ run, zookeeper: zookeeperAddress().connectString, name: 'pipeline-offline', settings: { ...noRetention, 'shutdown.grace.ms': '1000' } }),
  ]);
  registry = await startRegistryServer({ host: '127.0.0.1', port: 0, dataDir: join(folder, 'registry'), logger: silent });
  const registryClient = new RegistryClient({ url: registry.url });
  onlineEnv = { broker: online.brokers[0]!, registry, registryClient, folder, close: async () => undefined };

  const created = await runTopicsCreate(online.bootstrap, TOPIC, PARTITIONS);
  expect(created, `create ${TOPIC} online`).toBe(0);
  await registerPageViews(registryClient, TOPIC);
  // Offline, broker 1 is every partition's first replica, so it leads them all: killing it fails
  // over every partition the mirror writes and the loader reads at once.
  await createOfflineTopic(offline, TOPIC, Array.from({ length: PARTITIONS }, () => [1, 2, 3]));
  for (let partition = 0; partition < PARTITIONS; partition += 1) await offline.waitForIsr(TOPIC, partition, [1, 2, 3], { timeoutMs: 60_000 });

  mirror = await startMirrorProcess(run, [
    '--source', `online=${online.zookeeper}`, '--target-zookeeper', offline.zookeeperConnect,
    '--whitelist', TOPIC, '--group', GROUP, '--registry', registry.url,
    '--set', 'commitIntervalMs=1000', '--set', 'sessionTimeoutMs=4000',
  ]);
}, 180_000);

afterAll(async () => {
  await mirror?.daemon.stop(10_000).catch(() => undefined);
  await offline?.close();
  await online?.stop();
  await registry?.close();
  await warehouse?.cleanup().catch(() => undefined);
  if (folder !== undefined) await rm(folder, { recursive: true, force: true });
}, 60_000);

/** CreateTopics with explicit replica lists (the first of each list is the preferred leader). */
async function createOfflineTopic(cluster: ReplicatedCluster, topic: string, replicas: readonly (readonly number[])[]): Promise<void> {
  const { host, port } = parseAddress(cluster.bootstrap()[0]!);
  const connection = await KafkaConnection.open(host, port, { clientId: 'pipeline-test' });
  try {
    const response = await connection.request(CreateTopicsApi, 4, {
      topics: [{ name: topic, numPartitions: -1, replicationFactor: -1, assignments: replicas.map((brokerIds, partitionIndex) => ({ partitionIndex, brokerIds })), configs: [] }],
      timeoutMs: 30_000,
      validateOnly: false,
    });
    expect(response.topics[0]?.errorCode, `create ${topic} offline: ${response.topics[0]?.errorMessage ?? ''}`).toBe(0);
  } finally {
    connection.close();
  }
}

async function runTopicsCreate(bootstrap: string, topic: string, partitions: number): Promise<number | null> {
  const result = await runTributary(['topics', 'create', '--bootstrap-server', bootstrap, '--topic', topic, '--partitions', String(partitions)]);
  return result.status;
}

/** Online traffic in waves until `stop()`; resolves with how many page views it produced. */
function startTraffic(): { stop(): Promise<number> } {
  let on = true;
  let sent = 0;
  const loop = (async () => {
    while (on) {
      await producePageViews(onlineEnv, TOPIC, { count: WAVE, partitions: PARTITIONS, hours: 3, firstId: producedCount });
      producedCount += WAVE;
      sent += WAVE;
      await sleep(WAVE_PAUSE_MS);
    }
  })();
  return {
    async stop() {
      on = false;
      await loop;
      return sent;
    },
  };
}

/** A broker of the offline cluster that is running, for reads. */
function liveOffline(): string {
  const cluster = offline!;
  return cluster.broker(cluster.liveBrokerIds()[0]!).bootstrap;
}

async function offlineCount(): Promise<number> {
  let total = 0;
  for (const records of (await readTopic(liveOffline(), TOPIC)).values()) total += records.length;
  return total;
}

async function onlineRecords(): Promise<Map<number, KafkaRecord[]>> {
  return readTopic(online!.bootstrap, TOPIC);
}

/**
 * The mirror's contract, as the mirror tests check it: per source partition, the offline copies'
 * origins are 0, 1, 2, … with no gap or repeat, each the same bytes as the source record, in the
 * same partition; and nothing else is offline.
 */
async function expectMirroredExactlyOnce(): Promise<{ source: number; offline: number }> {
  const source = await onlineRecords();
  const sourceTotal = [...source.values()].reduce((sum, records) => sum + records.length, 0);
  // Anything beyond the source total would be a duplicate: wait for the total, then give a duplicate time to show.
  await expect.poll(offlineCount, { timeout: 90_000, interval: 1_000 }).toBeGreaterThanOrEqual(sourceTotal);
  await sleep(2_000);
  const copies = await readTopic(liveOffline(), TOPIC);
  const next = new Map<number, bigint>();
  let offlineTotal = 0;
  for (const [partition, records] of copies) {
    for (const copy of records) {
      offlineTotal += 1;
      const origin = mirrorOriginOf(copy.headers);
      expect(origin, `offline ${TOPIC}-${partition}@${copy.offset} has a mirror origin`).toBeDefined();
      if (origin === undefined) continue;
      expect(origin.partition, `offline ${TOPIC}-${partition}@${copy.offset}: kept its partition`).toBe(partition);
      expect(origin.offset, `offline ${TOPIC}-${partition}@${copy.offset}: the next record of online/${origin.partition}`).toBe(next.get(origin.partition) ?? 0n);
      next.set(origin.partition, origin.offset + 1n);
      const original = source.get(origin.partition)?.[Number(origin.offset)];
      expect(copy.value?.equals(original?.value ?? Buffer.alloc(0)), `offline ${TOPIC}-${partition}@${copy.offset}: the bytes of online/${origin.partition}@${origin.offset}`).toBe(true);
      expect(copy.timestamp).toBe(original?.timestamp);
    }
  }
  for (const [partition, records] of source) expect(next.get(partition) ?? 0n, `online/${partition} mirrored whole`).toBe(BigInt(records.length));
  expect(offlineTotal, 'offline records (more than the source: duplicates)').toBe(sourceTotal);
  return { source: sourceTotal, offline: offlineTotal };
}

/** Every offline record as the loader check wants it: partition, offset, hash of the value the reader schema reads, event hour. */
async function offlineAsProduced(): Promise<ProducedRecord[]> {
  const reader = parseAvroSchema((await onlineEnv.registryClient.version(`${TOPIC}-value`, 'latest')).schema);
  const deserializer = new AvroDeserializer(onlineEnv.registryClient);
  const produced: ProducedRecord[] = [];
  for (const [partition, records] of await readTopic(liveOffline(), TOPIC)) {
    for (const record of records) {
      const decoded = await deserializer.decode<{ header: { time: number } }>(record.value ?? Buffer.alloc(0), reader);
      produced.push({ partition, offset: Number(record.offset), hash: hashValue(decoded), hour: hourKeyOf(decoded.header.time) });
    }
  }
  return produced;
}

/** The partitions' leader: one broker leads them all (asserted; the offline topic is made so). */
async function commonLeader(cluster: ReplicatedCluster): Promise<PartitionState[]> {
  const states: PartitionState[] = [];
  for (let partition = 0; partition < PARTITIONS; partition += 1) states.push(await cluster.waitForLeader(TOPIC, partition));
  expect(new Set(states.map((state) => state.leader)).size, `one leader for every partition: ${states.map((s) => `${s.partition}→${s.leader}`).join(', ')}`).toBe(1);
  return states;
}

/** Kills the leader of every partition and waits until each has a new one; resolves with the victim. */
async function killLeader(cluster: ReplicatedCluster, states: readonly PartitionState[]): Promise<number> {
  const victim = states[0]!.leader;
  await cluster.kill(victim);
  for (const state of states) {
    const next = await cluster.waitForLeaderChange(state, { timeoutMs: 60_000 });
    expect(next.leader, `${TOPIC}-${state.partition}: a live broker leads`).not.toBe(victim);
  }
  return victim;
}

/**
 * Restarts the killed broker and waits until it is back in the ISR of every partition of the
 * offline cluster: the page views and the audit topic the mirror counts into (with min ISR 2, a
 * second kill before that would leave a partition unwritable, not failed over).
 */
async function restartAndRejoin(cluster: ReplicatedCluster, victim: number): Promise<void> {
  await cluster.restart(victim);
  await cluster.waitForRegistered();
  for (const topic of [TOPIC, AUDIT_TOPIC]) {
    const partitions = await cluster.topicState(topic).catch(() => []);
    // Every replica back in sync (topics auto-created by the mirror have the brokers' default
    // replication factor, 3 here, and are created only once that many brokers are up).
    for (const { partition, replicas } of partitions) await cluster.waitForIsr(topic, partition, replicas, { timeoutMs: 60_000 });
  }
}

describe('the pipeline on a replicated offline cluster', () => {
  it('mirrors every record exactly once, in order, while the leader of the offline partitions is SIGKILLed and restarted', { timeout: 180_000 }, async () => {
    const cluster = offline!;
    const traffic = startTraffic();
    try {
      // The mirror is writing before the kill.
      await expect.poll(offlineCount, { timeout: 60_000, interval: 500 }).toBeGreaterThan(2 * WAVE);
      const victim = await killLeader(cluster, await commonLeader(cluster));
      // Writing again, through the new leader, while the killed broker is down.
      const afterKill = await offlineCount();
      await expect.poll(offlineCount, { timeout: 60_000, interval: 500 }).toBeGreaterThan(afterKill + 2 * WAVE);
      await restartAndRejoin(cluster, victim);
      await sleep(1_000);
    } finally {
      await traffic.stop();
    }
    const counts = await expectMirroredExactlyOnce();
    expect(mirror!.daemon.hasExited(), 'the mirror process is running').toBe(false);
    console.log(`mirror across a leader SIGKILL: ${counts.source} online records, ${counts.offline} offline`);
  });

  it('commits a load run whose partitions lose their leader mid-run, while the mirror writes on; the warehouse holds every record exactly once', { timeout: 180_000 }, async () => {
    const cluster = offline!;
    warehouse = makeWarehouse('local folder', onlineEnv, 'pipeline');
    const loadFile = join(folder!, `${LOAD}.yaml`);
    await writeFile(
      loadFile,
      [
        `name: ${LOAD}`,
        `source: { bootstrap: [${cluster.bootstrap().join(', ')}] }`,
        `topics: [${TOPIC}]`,
        `registry: ${registry!.url}`,
        `warehouse: { url: '${warehouse.url}', root: ${warehouse.root} }`,
        'format: avro',
        'codec: deflate',
        'timeField: header.time',
        'quarantine: { maxRecords: 0 }',
        'latenessHorizon: 2h',
        '',
      ].join('\n'),
    );
    const load = await readLoadFile(loadFile);
    const traffic = startTraffic();
    const source = await KafkaLoadSource.connect(load.source.bootstrap, silent);
    try {
      const states = await commonLeader(cluster);
      // The first fetch goes through (one partition is read while its leader lives); every later
      // one waits until the leader of all partitions is dead, so the other tasks read through the failover.
      // Noted for the log: fetch answers whose high watermark is behind the one the plan read (a
      // new leader whose followers have not fetched from it yet; the loader waits those out).
      const planned = new Map<number, number>();
      let behindPlan = 0;
      let fetches = 0;
      let reachedSecond: () => void = () => {};
      const secondFetch = new Promise<void>((resolve) => (reachedSecond = resolve));
      let releaseFetches: () => void = () => {};
      const killed = new Promise<void>((resolve) => (releaseFetches = resolve));
      const gated: LoadSource = {
        topics: (selector) => source.topics(selector),
        partitions: (topic) => source.partitions(topic),
        bounds: async (topic, partition) => {
          const bounds = await source.bounds(topic, partition);
          planned.set(partition, bounds.highWatermark);
          return bounds;
        },
        fetch: async (topic, partition, offset, maxBytes) => {
          fetches += 1;
          if (fetches > 1) {
            reachedSecond();
            await killed;
          }
          const batch = await source.fetch(topic, partition, offset, maxBytes);
          if (batch.highWatermark < (planned.get(partition) ?? 0)) behindPlan += 1;
          return batch;
        },
        close: () => source.close(),
      };
      const running = runLoad({ load, warehouse: warehouse.warehouse, source: gated, registry: onlineEnv.registryClient, logger: silent, acceptGap: false, store: new MemoryCoordination().session(), numberRuns: false });
      const outcome = running.then(() => 'finished', (error: unknown) => error);
      await Promise.race([secondFetch, outcome]);
      expect(fetches, 'the run reached a second fetch before finishing').toBeGreaterThan(1);
      const victim = states[0]!.leader;
      await cluster.kill(victim);
      releaseFetches();
      const report = await running;
      expect(report.outcome).toBe('committed');
      expect(report.problems).toEqual([]);
      const loadedInRun = report.plan.partitions.reduce((sum, p) => sum + p.end - p.start, 0);
      // The failover happened under the run, and the mirror kept writing through it.
      for (const state of states) expect((await cluster.waitForLeaderChange(state, { timeoutMs: 60_000 })).leader).not.toBe(victim);
      const afterKill = await offlineCount();
      await expect.poll(offlineCount, { timeout: 60_000, interval: 500 }).toBeGreaterThan(afterKill + 2 * WAVE);
      await restartAndRejoin(cluster, victim);
      console.log(`load run across a leader SIGKILL: ${loadedInRun} records committed in ${fetches} fetches (${behindPlan} answered with a high watermark behind the plan)`);
    } finally {
      await traffic.stop();
      source.close();
    }

    const counts = await expectMirroredExactlyOnce();
    expect(mirror!.daemon.hasExited(), 'the mirror process is running').toBe(false);
    // The rest, by the CLI, over the healed cluster.
    const rest = await runEtl(['run', '--load', loadFile]);
    expect(rest.status, rest.stderr.slice(-4_000)).toBe(0);

    const produced = await offlineAsProduced();
    expect(produced).toHaveLength(counts.offline);
    expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, TOPIC), produced);
    expect(await manifestsPerHour(warehouse.warehouse, warehouse.root, LOAD, TOPIC)).toEqual(producedPerHour(produced));
    expect((await readCommitLog(warehouse.warehouse, warehouse.root, LOAD)).pending).toEqual([]);
    console.log(`pipeline: ${counts.source} online records, ${counts.offline} offline, all in the warehouse once`);
  });
});
