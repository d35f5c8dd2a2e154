/**
 * kafkajs 2.2.4 against a standalone Tributary broker: the producer with acks −1, 1 and 0 and with
 * gzip; the admin client's metadata, topic creation/listing/deletion and offset look-ups. kafkajs
 * has no group-less consumer (and groups are not served yet), so what it produced is read back
 * with kcat: every key, value and header byte-identical and in order within its partition.
 */
import { randomBytes } from 'node:crypto';
import { CompressionTypes, Kafka, logLevel, Partitioners, type Admin, type IHeaders, type Message, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBatchHeader } from '../../src/protocol/record-batch.js';
import { waitUntil } from '../services/process.js';
import { startInProcessBroker, type InProcessBroker } from '../support/brokers.js';
import { readPartition, type StoredRecord } from '../support/kcat.js';

let broker: InProcessBroker;
let kafka: Kafka;
let producer: Producer;
let admin: Admin;

beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': '3' });
  // Logging off; every failure still reaches the test as a rejected promise.
  kafka = new Kafka({ clientId: 'tributary-compat', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  admin = kafka.admin();
  await producer.connect();
  await admin.connect();
});
afterAll(async () => {
  await producer?.disconnect();
  await admin?.disconnect();
  await broker?.stop();
  // Nothing the client sent made the broker log an error.
  expect(broker?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
});

/** A message as kcat prints it back (key/value null when the record's are). */
type Stored = StoredRecord;

/** What a sent message must come back as: its bytes, and its headers in kcat's `name=value,…` form. */
interface Expected {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: string;
}

function consume(topic: string, partition: number): Promise<Stored[]> {
  return readPartition(broker.bootstrap, topic, partition);
}

/** Reads the partition until it holds `count` records (produced records become visible after a flush). */
async function consumeCount(topic: string, partition: number, count: number): Promise<Stored[]> {
  let stored: Stored[] = [];
  await waitUntil(
    async () => {
      stored = await consume(topic, partition);
      return stored.length >= count;
    },
    { what: `${count} records in ${topic}/${partition} (have ${stored.length})`, timeoutMs: 30_000 },
  );
  return stored;
}

async function highWatermark(topic: string, partition: number, wanted: number): Promise<void> {
  await waitUntil(async () => broker.broker.logManager.getLog(topic, partition)?.highWatermark === wanted, {
    what: `high watermark ${wanted} in ${topic}/${partition}`,
    timeoutMs: 30_000,
  });
}

/** Messages with binary keys and values, headers, a null key, a null value and an empty value. */
function messages(count: number, tag: string, partition?: number): { sent: Message[]; expected: Expected[] } {
  const sent: Message[] = [];
  const expected: Expected[] = [];
  for (let i = 0; i < count; i += 1) {
    const key = i % 10 === 3 ? null : Buffer.concat([Buffer.from(`${tag}-k${i % 5}-`), randomBytes(6)]);
    const value = i % 10 === 5 ? null : i % 10 === 7 ? Buffer.alloc(0) : Buffer.concat([randomBytes(1 + (i % 40)), Buffer.from('\n\t\0ü')]);
    const headers: IHeaders = i % 4 === 0 ? {} : { trace: `${tag}-${i}`, 'näme': Buffer.from('wért') };
    sent.push({ key, value, headers, ...(partition === undefined ? {} : { partition }) });
    expected.push({ key, value, headers: i % 4 === 0 ? '' : `trace=${tag}-${i},näme=wért` });
  }
  return { sent, expected };
}

function withoutOffsets(stored: Stored[]): Expected[] {
  return stored.map(({ key, value, headers }) => ({ key, value, headers }));
}

describe('kafkajs producer', () => {
  for (const acks of [-1, 1, 0] as const) {
    it(`sends with acks ${acks}: every key, value and header is stored byte-identical and in order`, async () => {
      const topic = `kjs-acks-${acks === -1 ? 'all' : acks}`;
      const byPartition = new Map<number, Expected[]>();
      for (let round = 0; round < 3; round += 1) {
        for (const partition of [0, 1, 2]) {
          const { sent, expected } = messages(20 + partition, `a${acks}r${round}p${partition}`, partition);
          const before = byPartition.get(partition)?.length ?? 0;
          const result = await producer.send({ topic, acks, messages: sent });
          if (acks === 0) {
            // No response comes for acks 0: kafkajs resolves with nothing to report.
            expect(result).toEqual([]);
          } else {
            expect(result).toEqual([expect.objectContaining({ topicName: topic, partition, errorCode: 0, baseOffset: String(before) })]);
          }
          byPartition.set(partition, [...(byPartition.get(partition) ?? []), ...expected]);
        }
      }
      for (const [partition, expected] of byPartition) {
        const stored = await consumeCount(topic, partition, expected.length);
        expect(stored.map((m) => m.offset)).toEqual(expected.map((_, i) => i));
        expect(withoutOffsets(stored)).toEqual(expected);
      }
    });
  }

  it('sends gzip-compressed batches, stored compressed and read back byte-identical', async () => {
    const topic = 'kjs-gzip';
    const first = messages(200, 'gz1', 1);
    const second = messages(150, 'gz2', 1);
    const sent = await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages: first.sent });
    expect(sent).toEqual([expect.objectContaining({ partition: 1, errorCode: 0, baseOffset: '0' })]);
    const again = await producer.send({ topic, acks: 1, compression: CompressionTypes.GZIP, messages: second.sent });
    expect(again).toEqual([expect.objectContaining({ partition: 1, errorCode: 0, baseOffset: '200' })]);

    const expected = [...first.expected, ...second.expected];
    const stored = await consumeCount(topic, 1, expected.length);
    expect(stored.map((m) => m.offset)).toEqual(expected.map((_, i) => i));
    expect(withoutOffsets(stored)).toEqual(expected);

    // kafkajs sends one batch per partition and send: both are stored as gzip (codec 1).
    const log = broker.broker.logManager.getLog(topic, 1);
    const { slice } = await log!.read(0, 1 << 20);
    const bytes = await slice!.readBytes();
    slice!.release();
    const codecs: number[] = [];
    for (let position = 0; position + 12 <= bytes.length; position += bytes.readInt32BE(position + 8) + 12) {
      codecs.push(readBatchHeader(bytes, position).attributes & 0x07);
    }
    expect(codecs).toEqual([1, 1]);
  });

  it('spreads keyed messages over the partitions with the default partitioner, each key in one partition, in order', async () => {
    const topic = 'kjs-keyed';
    const sent = Array.from({ length: 300 }, (_, i) => ({ key: `user-${i % 13}`, value: `event-${i}-${randomBytes(8).toString('hex')}` }));
    await producer.send({ topic, messages: sent.slice(0, 150) });
    await producer.send({ topic, messages: sent.slice(150) });
    await waitUntil(async () => [0, 1, 2].reduce((sum, p) => sum + (broker.broker.logManager.getLog(topic, p)?.highWatermark ?? 0), 0) === sent.length, {
      what: `${sent.length} records visible in ${topic}`,
      timeoutMs: 30_000,
    });
    const stored = await Promise.all([0, 1, 2].map((partition) => consume(topic, partition)));
    expect(stored.flat()).toHaveLength(sent.length);
    for (const received of stored) {
      const keys = new Set(received.map((m) => m.key?.toString('utf8')));
      const expected = sent.filter((m) => keys.has(m.key));
      expect(received.map((m) => m.value?.toString('utf8'))).toEqual(expected.map((m) => m.value));
    }
    // Distinct keys do not all hash to one partition.
    expect(stored.filter((received) => received.length > 0).length).toBeGreaterThan(1);
  });
});

describe('kafkajs admin', () => {
  it('fetches topic metadata: every partition, led by the broker', async () => {
    const topic = 'kjs-meta';
    await producer.send({ topic, messages: [{ value: 'x', partition: 0 }] });
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(metadata.topics).toHaveLength(1);
    const [described] = metadata.topics;
    expect(described?.name).toBe(topic);
    const partitions = [...(described?.partitions ?? [])].sort((a, b) => a.partitionId - b.partitionId);
    expect(partitions.map((p) => p.partitionId)).toEqual([0, 1, 2]);
    for (const partition of partitions) {
      expect(partition).toMatchObject({ partitionErrorCode: 0, leader: 0, replicas: [0], isr: [0] });
    }

    const cluster = await admin.describeCluster();
    const [host, port] = broker.bootstrap.split(':');
    expect(cluster.brokers).toEqual([{ nodeId: 0, host, port: Number(port) }]);
    expect(cluster.controller).toBe(0);
    expect(cluster.clusterId).toEqual(expect.any(String));
  });

  it('creates a topic, lists it, refuses to create it twice and deletes it', async () => {
    const topic = 'kjs-created';
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: 5 }], waitForLeaders: true })).toBe(true);
    expect(await admin.listTopics()).toContain(topic);
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(metadata.topics[0]?.partitions.map((p) => p.partitionId).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4]);
    expect(metadata.topics[0]?.partitions.every((p) => p.leader === 0)).toBe(true);

    // kafkajs answers false when every topic already exists (TOPIC_ALREADY_EXISTS).
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: 5 }] })).toBe(false);

    await admin.deleteTopics({ topics: [topic] });
    await waitUntil(async () => !(await admin.listTopics()).includes(topic), { what: `${topic} to disappear from listTopics`, timeoutMs: 30_000 });
    expect(broker.broker.logManager.getLog(topic, 0)).toBeUndefined();
  });

  it('refuses an invalid topic name with INVALID_TOPIC_EXCEPTION', async () => {
    const refused = await admin.createTopics({ topics: [{ topic: 'not a valid name!' }] }).then(
      () => undefined,
      (error: unknown) => error as { name?: string; errors?: { type?: string }[] },
    );
    expect(refused?.name).toBe('KafkaJSAggregateError');
    expect(refused?.errors?.map((e) => e.type)).toEqual(['INVALID_TOPIC_EXCEPTION']);
  });

  it('fetches low and high offsets: the log start and the high watermark', async () => {
    const topic = 'kjs-offsets';
    const count = 25;
    for (let i = 0; i < count; i += 5) {
      await producer.send({ topic, messages: Array.from({ length: 5 }, (_, j) => ({ value: `v${i + j}`, partition: 0 })) });
    }
    await producer.send({ topic, messages: [{ value: 'only', partition: 2 }] });
    await highWatermark(topic, 0, count);
    await highWatermark(topic, 2, 1);
    const offsets = [...(await admin.fetchTopicOffsets(topic))].sort((a, b) => a.partition - b.partition);
    const log = broker.broker.logManager.getLog(topic, 0)!;
    expect(offsets).toEqual([
      { partition: 0, offset: String(count), high: String(count), low: String(log.logStartOffset) },
      { partition: 1, offset: '0', high: '0', low: '0' },
      { partition: 2, offset: '1', high: '1', low: '0' },
    ]);
    expect(log.logStartOffset).toBe(0);
  });

  it('finds offsets by timestamp: the first record at or after it, else the high watermark', async () => {
    const topic = 'kjs-times';
    const base = Date.now() - 3_600_000;
    // Three uncompressed batches of record timestamps base, base+1000, …
    for (let batch = 0; batch < 3; batch += 1) {
      const sent = Array.from({ length: 10 }, (_, j) => {
        const i = batch * 10 + j;
        return { value: `t${i}`, partition: 0, timestamp: String(base + i * 1000) };
      });
      await producer.send({ topic, messages: sent });
    }
    await highWatermark(topic, 0, 30);
    const at = async (timestamp: number): Promise<Record<number, string>> => {
      const found = await admin.fetchTopicOffsetsByTimestamp(topic, timestamp);
      return Object.fromEntries(found.map((p) => [p.partition, p.offset]));
    };
    expect(await at(base - 1)).toEqual({ 0: '0', 1: '0', 2: '0' });
    expect(await at(base)).toEqual({ 0: '0', 1: '0', 2: '0' });
    expect(await at(base + 5_500)).toEqual({ 0: '6', 1: '0', 2: '0' });
    expect(await at(base + 10_000)).toEqual({ 0: '10', 1: '0', 2: '0' });
    expect(await at(base + 29_000)).toEqual({ 0: '29', 1: '0', 2: '0' });
    // Past the newest record: kafkajs falls back to the high watermark.
    expect(await at(base + 29_001)).toEqual({ 0: '30', 1: '0', 2: '0' });
  });
});
