/**
 * What the benchmark asks of either broker outside the timed clients: create topics (CreateTopics
 * v4 through Tributary's own client, which both brokers speak), read end offsets (ListOffsets) to
 * check that every record was stored, and measure the partition logs on disk (both brokers keep
 * `<data>/<topic>-<partition>/<20-digit base offset>.log` files of RecordBatch v2).
 */
import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { CreateTopicsApi } from '../../../src/protocol/apis/create-topics.js';

async function withClient<T>(bootstrap: string, use: (client: ClusterClient) => Promise<T>): Promise<T> {
  const client = await ClusterClient.connect({ bootstrap: [bootstrap], allowAutoTopicCreation: false, requestTimeoutMs: 120_000 });
  try {
    return await use(client);
  } finally {
    client.close();
  }
}

/** Creates a topic with `partitions` partitions (replication factor 1) and waits until every partition has a leader. */
export async function createTopic(bootstrap: string, topic: string, partitions: number): Promise<void> {
  await withClient(bootstrap, async (client) => {
    const broker = client.knownBrokers()[0];
    if (broker === undefined) throw new Error(`${bootstrap} listed no broker`);
    const connection = await client.connectionTo(broker.nodeId);
    const response = await connection.request(CreateTopicsApi, 4, {
      topics: [{ name: topic, numPartitions: partitions, replicationFactor: 1, assignments: [], configs: [] }],
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
