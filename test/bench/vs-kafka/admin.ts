/**
 * What the benchmark asks of either broker outside the timed clients: create topics (CreateTopics
 * v4 through Tributary's own client, which both brokers speak), read end offsets (ListOffsets) to
 * check that every record was stored, and measure the partition logs on disk (both brokers keep
 * `<data>/<topic>-<partition>/<20-digit base offset>.log` files of RecordBatch v2). The
 * replication scenario's topics (replication factor 3, min.insync.replicas=2, optionally with
 * their replicas named) are created the same way, and Metadata v8 from each broker tells when
 * every replica is in sync.
 */
import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { KafkaConnection } from '../../../src/client/connection.js';
import { CreateTopicsApi, type CreateTopicsResponse } from '../../../src/protocol/apis/create-topics.js';
import { CONFIG_OPERATION, IncrementalAlterConfigsApi } from '../../../src/protocol/apis/incremental-alter-configs.js';
import { MetadataApi, type MetadataResponse } from '../../../src/protocol/apis/metadata.js';
import { LOOPBACK } from '../../services/network.js';

/** `bootstrap` is one `host:port` or several, comma-separated (a cluster). */
async function withClient<T>(bootstrap: string, use: (client: ClusterClient) => Promise<T>): Promise<T> {
  const client = await ClusterClient.connect({ bootstrap: bootstrap.split(','), allowAutoTopicCreation: false, requestTimeoutMs: 120_000 });
  try {
    return await use(client);
  } finally {
    client.close();
  }
}

/** Creates a topic with `partitions` partitions (replication factor 1) and `configs`, and waits until every partition has a leader. */
export async function createTopic(bootstrap: string, topic: string, partitions: number, configs: Readonly<Record<string, string>> = {}): Promise<void> {
  await withClient(bootstrap, async (client) => {
    const broker = client.knownBrokers()[0];
    if (broker === undefined) throw new Error(`${bootstrap} listed no broker`);
    const connection = await client.connectionTo(broker.nodeId);
    const response = await connection.request(CreateTopicsApi, 4, {
      topics: [{ name: topic, numPartitions: partitions, replicationFactor: 1, assignments: [], configs: Object.entries(configs).map(([name, value]) => ({ name, value })) }],
      timeoutMs: 120_000,
      validateOnly: false,
    });
    const result = response.topics[0];
    if (result === undefined || result.errorCode !== 0) {
      throw new Error(`could not create ${topic} (${partitions} partitions) on ${bootstrap}: error ${String(result?.errorCode)} ${result?.errorMessage ?? ''}`);
    }
    const deadline = Date.now() + 120_000;
    for (;;) {
      await client.refreshMetadata([topic]).catch(() => {});
      const metadata = client.cachedTopic(topic);
      const ready = metadata !== undefined && metadata.partitions.length === partitions && metadata.partitions.every((p) => p.leader >= 0);
      if (ready) break;
      if (Date.now() > deadline) throw new Error(`${topic} on ${bootstrap} has no leader for all ${partitions} partitions after 120 s`);
      await sleep(200);
    }
    // Kafka publishes the leaders before every partition's log is open: wait until each answers.
    await listEnds(client, topic, partitions, deadline);
  });
}

/** ConfigResource.Type TOPIC */
const TOPIC_RESOURCE = 2;

/** Sets topic configs with IncrementalAlterConfigs v0 (both brokers apply them to the live log); throws on any error code. */
export async function alterTopicConfigs(bootstrap: string, topic: string, configs: Readonly<Record<string, string>>): Promise<void> {
  await withClient(bootstrap, async (client) => {
    const broker = client.knownBrokers()[0];
    if (broker === undefined) throw new Error(`${bootstrap} listed no broker`);
    const connection = await client.connectionTo(broker.nodeId);
    const response = await connection.request(IncrementalAlterConfigsApi, 0, {
      resources: [{
        resourceType: TOPIC_RESOURCE,
        resourceName: topic,
        configs: Object.entries(configs).map(([name, value]) => ({ name, configOperation: CONFIG_OPERATION.SET, value })),
      }],
      validateOnly: false,
    });
    const failed = response.responses.find((r) => r.errorCode !== 0);
    if (failed !== undefined) throw new Error(`could not alter ${topic} on ${bootstrap} (${JSON.stringify(configs)}): error ${failed.errorCode} ${failed.errorMessage ?? ''}`);
  });
}

/** Metadata v8 of `topics` (none: brokers only) from the broker on `port`, over a connection of its own. */
export async function metadataOf(port: number, topics: readonly string[] = [], timeoutMs = 5000): Promise<MetadataResponse> {
  const connection = await KafkaConnection.open(LOOPBACK, port, { clientId: 'bench-admin', connectTimeoutMs: timeoutMs, requestTimeoutMs: timeoutMs });
  try {
    return await connection.request(MetadataApi, 8, { topics: topics.map((name) => ({ name })), allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false });
  } finally {
    connection.close();
  }
}

export interface ReplicatedTopicOptions {
  /** Default 1; ignored when `replicas` is given (one partition, on those brokers). */
  readonly partitions?: number;
  /** Partition 0's replicas, preferred leader first (CreateTopics' manual assignment). Default: replication factor 3, placed by the broker. */
  readonly replicas?: readonly number[];
  readonly configs?: Readonly<Record<string, string>>;
}

/** One partition as a broker's Metadata v8 describes it. */
export interface ReplicaState {
  readonly partition: number;
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly isr: readonly number[];
}

/** The partitions of `topic` as the broker on `port` describes them (empty when it does not know the topic). */
export async function replicaStates(port: number, topic: string, timeoutMs = 5000): Promise<ReplicaState[]> {
  const response = await metadataOf(port, [topic], timeoutMs);
  const described = response.topics.find((t) => t.name === topic);
  if (described === undefined || described.errorCode !== 0) return [];
  return [...described.partitions].sort((a, b) => a.partitionIndex - b.partitionIndex)
    .map((p) => ({ partition: p.partitionIndex, leader: p.leaderId, leaderEpoch: p.leaderEpoch, isr: p.isrNodes }));
}

/** INVALID_CONFIG */
const INVALID_CONFIG = 40;

/**
 * Creates a topic with replication factor 3 and the topic config min.insync.replicas=2 (plus
 * `configs`) on a cluster and waits until EVERY broker (`brokerPorts`) describes each partition
 * with a leader — the preferred one when `replicas` named it — and all three replicas in sync,
 * and each partition answers ListOffsets. A broker that refuses the topic config
 * min.insync.replicas (INVALID_CONFIG naming it) gets the topic without it, and the answer says
 * so: the clusters here set min.insync.replicas=2 as the broker default too.
 */
export async function createReplicatedTopic(bootstrap: string, brokerPorts: readonly number[], topic: string, options: ReplicatedTopicOptions = {}): Promise<{ readonly refusedConfig?: string }> {
  const partitions = options.replicas === undefined ? options.partitions ?? 1 : 1;
  const wanted = { 'min.insync.replicas': '2', ...options.configs };
  return withClient(bootstrap, async (client) => {
    const broker = client.knownBrokers()[0];
    if (broker === undefined) throw new Error(`${bootstrap} listed no broker`);
    const connection = await client.connectionTo(broker.nodeId);
    const create = (configs: Readonly<Record<string, string>>): Promise<CreateTopicsResponse> => connection.request(CreateTopicsApi, 4, {
      topics: [{
        name: topic,
        numPartitions: options.replicas === undefined ? partitions : -1,
        replicationFactor: options.replicas === undefined ? 3 : -1,
        assignments: options.replicas === undefined ? [] : [{ partitionIndex: 0, brokerIds: options.replicas }],
        configs: Object.entries(configs).map(([name, value]) => ({ name, value })),
      }],
      timeoutMs: 120_000,
      validateOnly: false,
    });
    let result = (await create(wanted)).topics[0];
    let refusedConfig: string | undefined;
    if (result?.errorCode === INVALID_CONFIG && (result.errorMessage ?? '').includes('min.insync.replicas') && options.configs?.['min.insync.replicas'] === undefined) {
      refusedConfig = `min.insync.replicas refused as a topic config (INVALID_CONFIG: ${result.errorMessage ?? ''})`;
      result = (await create(Object.fromEntries(Object.entries(wanted).filter(([name]) => name !== 'min.insync.replicas')))).topics[0];
    }
    if (result === undefined || result.errorCode !== 0) {
      throw new Error(`could not create ${topic} (replication factor 3) on ${bootstrap}: error ${String(result?.errorCode)} ${result?.errorMessage ?? ''}`);
    }
    const deadline = Date.now() + 120_000;
    const wantedLeader = options.replicas?.[0];
    let last = '';
    for (;;) {
      const views = await Promise.all(brokerPorts.map((port) => replicaStates(port, topic).catch((error: unknown) => (error as Error).message)));
      const ready = views.every((view) => typeof view !== 'string' && view.length === partitions
        && view.every((p) => p.leader >= 0 && p.isr.length === 3 && (wantedLeader === undefined || p.leader === wantedLeader)));
      if (ready) break;
      last = views.map((view, i) => `broker :${String(brokerPorts[i])}: ${typeof view === 'string' ? view : view.map((p) => `p${p.partition} leader ${p.leader} ISR [${p.isr.join(',')}]`).join('; ') || 'no topic'}`).join(' | ');
      if (Date.now() > deadline) throw new Error(`${topic} on ${bootstrap}: not every partition led${wantedLeader === undefined ? '' : ` by broker ${wantedLeader}`} with 3 in-sync replicas after 120 s (${last})`);
      await sleep(200);
    }
    await client.refreshMetadata([topic]).catch(() => {});
    await listEnds(client, topic, partitions, deadline);
    return refusedConfig === undefined ? {} : { refusedConfig };
  });
}

async function listEnds(client: ClusterClient, topic: string, partitions: number, deadline: number): Promise<bigint[]> {
  const consumer = new SimpleConsumer(client);
  const ends: bigint[] = [];
  for (let p = 0; p < partitions; p += 1) {
    for (;;) {
      try {
        ends.push(await consumer.listOffset(topic, p, 'latest'));
        break;
      } catch (error) {
        if ((error as { retriable?: boolean }).retriable !== true || Date.now() > deadline) throw error;
        await sleep(100);
        await client.refreshMetadata([topic]).catch(() => {});
      }
    }
  }
  return ends;
}

/** The sum of the partitions' end offsets (= records stored, for a topic written from offset 0). */
export async function endOffsets(bootstrap: string, topic: string, partitions: number): Promise<bigint[]> {
  return withClient(bootstrap, (client) => listEnds(client, topic, partitions, Date.now() + 60_000));
}

export async function storedRecords(bootstrap: string, topic: string, partitions: number): Promise<number> {
  return Number((await endOffsets(bootstrap, topic, partitions)).reduce((a, b) => a + b, 0n));
}

/** Waits until the topic holds `expected` records in all (the producer's last acks may lead the check). */
export async function expectStored(bootstrap: string, topic: string, partitions: number, expected: number): Promise<void> {
  let stored = 0;
  for (let attempt = 0; attempt < 50; attempt += 1) {
    stored = await storedRecords(bootstrap, topic, partitions);
    if (stored === expected) return;
    await sleep(200);
  }
  throw new Error(`${topic} on ${bootstrap} holds ${stored} records, expected ${expected}`);
}

/** The `.log` segment files of a topic's partitions. */
function segmentFiles(dataDir: string, topic: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dataDir)) {
    const dash = entry.lastIndexOf('-');
    if (dash <= 0 || entry.slice(0, dash) !== topic || !/^\d+$/.test(entry.slice(dash + 1))) continue;
    for (const file of readdirSync(join(dataDir, entry))) if (file.endsWith('.log')) files.push(join(dataDir, entry, file));
  }
  return files;
}

export function logBytes(dataDir: string, topic: string): number {
  return segmentFiles(dataDir, topic).reduce((sum, file) => sum + statSync(file).size, 0);
}

export interface LogScan {
  readonly bytes: number;
  readonly batches: number;
  readonly records: number;
  /** Batches per compression codec (attributes bits 0–2: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd). */
  readonly batchesByCodec: ReadonlyMap<number, number>;
}

const SCAN_CHUNK = 8 * 1024 * 1024;
/** RecordBatch v2: baseOffset(8) batchLength(4) … attributes(2) at byte 21 … recordsCount(4) at byte 57; batchLength counts from byte 12. */
const ATTRIBUTES_AT = 21;
const RECORDS_COUNT_AT = 57;
const BATCH_HEADER = 61;

/** Walks the batch headers of every segment: how many batches, how many records, which codecs. */
export function scanLog(dataDir: string, topic: string): LogScan {
  let bytes = 0;
  let batches = 0;
  let records = 0;
  const batchesByCodec = new Map<number, number>();
  const buffer = Buffer.allocUnsafe(SCAN_CHUNK);
  for (const file of segmentFiles(dataDir, topic)) {
    const size = statSync(file).size;
    bytes += size;
    const fd = openSync(file, 'r');
    try {
      let position = 0;
      while (position + BATCH_HEADER <= size) {
        const read = readSync(fd, buffer, 0, Math.min(SCAN_CHUNK, size - position), position);
        let at = 0;
        while (at + BATCH_HEADER <= read) {
          const length = buffer.readInt32BE(at + 8);
          if (length <= 0) throw new Error(`${file}: bad batch length ${length} at ${position + at}`);
          const end = at + 12 + length;
          if (end > read && position + read < size) break; // the batch goes on in the next chunk: read it from its start
          records += buffer.readInt32BE(at + RECORDS_COUNT_AT);
          batches += 1;
          const codec = buffer.readInt16BE(at + ATTRIBUTES_AT) & 0x07;
          batchesByCodec.set(codec, (batchesByCodec.get(codec) ?? 0) + 1);
          at = end;
        }
        if (at === 0) throw new Error(`${file}: a batch at ${position} is larger than the scan buffer`);
        position += at;
      }
    } finally {
      closeSync(fd);
    }
  }
  return { bytes, batches, records, batchesByCodec };
}
