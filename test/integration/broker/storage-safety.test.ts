/**
 * Issue 16, reproduction 4, against a real in-process broker over TCP: on three connections at
 * once, Produce to `race-i`, DeleteTopics `race-i`, CreateTopics `race-n-i`; 300 times. Deleting
 * used to close descriptors under queued appends, whose write then landed in a new topic's
 * segment (the descriptor number reused) or failed with EBADF (KAFKA_STORAGE_ERROR). Now: the
 * racing produce is answered 0 or UNKNOWN_TOPIC_OR_PARTITION, no segment holds a byte it was not
 * given, and after a restart every topic reads back exactly.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KafkaConnection } from '../../../src/client/connection.js';
import { CreateTopicsApi } from '../../../src/protocol/apis/create-topics.js';
import { DeleteTopicsApi } from '../../../src/protocol/apis/delete-topics.js';
import { FetchApi } from '../../../src/protocol/apis/fetch.js';
import { ListOffsetsApi } from '../../../src/protocol/apis/list-offsets.js';
import { MetadataApi } from '../../../src/protocol/apis/metadata.js';
import { ProduceApi } from '../../../src/protocol/apis/produce.js';
import { computeBatchCrc, readBatchHeader } from '../../../src/protocol/record-batch.js';
import { decodeRecords, encodeRecordBatch } from '../../../src/protocol/records.js';
import { segmentFileName } from '../../../src/storage/segment.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';

const ROUNDS = 300;
const UNKNOWN_TOPIC_OR_PARTITION = 3;

function records(topic: string, kind: string, padding = 0): Buffer {
  return encodeRecordBatch([{ value: Buffer.from(`${topic}:${kind}:${'x'.repeat(padding)}`), timestamp: Date.now() }]);
}

async function connect(broker: InProcessBroker): Promise<KafkaConnection> {
  return KafkaConnection.open('127.0.0.1', broker.broker.port, { requestTimeoutMs: 30_000 });
}

function createTopic(connection: KafkaConnection, name: string, numPartitions = 1) {
  return connection.request(CreateTopicsApi, 4, { topics: [{ name, numPartitions, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 10_000, validateOnly: false });
}

async function produce(connection: KafkaConnection, topic: string, batch: Buffer): Promise<number> {
  const response = await connection.request(ProduceApi, 3, { transactionalId: null, acks: 1, timeoutMs: 10_000, topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }] });
  return response.responses[0]?.partitionResponses[0]?.errorCode ?? -100;
}

/** Produces until accepted (a topic just created may not be in the broker's view for a moment). */
async function produceSurely(connection: KafkaConnection, topic: string, batch: () => Buffer): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const code = await produce(connection, topic, batch());
    if (code === 0) return;
    if (code !== UNKNOWN_TOPIC_OR_PARTITION) throw new Error(`produce to ${topic} failed with ${code}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`produce to ${topic} never succeeded`);
}

/** Every stored batch, per partition folder: whether its CRC holds, and its record values. */
function storedBatches(dataDir: string): Map<string, { crcOk: boolean; values: string[] }[]> {
  const stored = new Map<string, { crcOk: boolean; values: string[] }[]>();
  for (const folder of readdirSync(dataDir, { withFileTypes: true })) {
    if (!folder.isDirectory() || folder.name.endsWith('.deleted')) continue;
    const batches: { crcOk: boolean; values: string[] }[] = [];
    for (const file of readdirSync(join(dataDir, folder.name)).filter((name) => name.endsWith('.log')).sort()) {
      const bytes = readFileSync(join(dataDir, folder.name, file));
      let position = 0;
      while (position + 61 <= bytes.length) {
        const header = readBatchHeader(bytes, position);
        const crcOk = computeBatchCrc(bytes, position, header.sizeInBytes) === header.crc;
        batches.push({ crcOk, values: crcOk ? decodeRecords(bytes, position).map((r) => r.value?.toString() ?? '') : [] });
        position += header.sizeInBytes;
      }
      if (position !== bytes.length) batches.push({ crcOk: false, values: [`${bytes.length - position} stray bytes`] });
    }
    stored.set(folder.name, batches);
  }
  return stored;
}

describe('storage safety under topic deletion', () => {
  let broker: InProcessBroker | undefined;
  afterAll(async () => {
    await broker?.stop();
  });

  it(`Produce / DeleteTopics / CreateTopics raced ${ROUNDS} times: no foreign bytes, no storage errors, clean after restart`, async () => {
    broker = await startInProcessBroker();
    const dataDir = broker.dataDir;
    const [producer, deleter, creator] = await Promise.all([connect(broker), connect(broker), connect(broker)]);
    const racedCodes = new Map<number, number>();
    for (let i = 0; i < ROUNDS; i += 1) {
      const doomed = `race-${i}`;
      const fresh = `race-n-${i}`;
      expect((await createTopic(creator, doomed)).topics[0]?.errorCode).toBe(0);
      await produceSurely(producer, doomed, () => records(doomed, 'first'));
      const [raced, deleted, created] = await Promise.all([
        produce(producer, doomed, records(doomed, 'raced', 3_000)),
        deleter.request(DeleteTopicsApi, 3, { topicNames: [doomed], timeoutMs: 10_000 }),
        createTopic(creator, fresh),
      ]);
      racedCodes.set(raced, (racedCodes.get(raced) ?? 0) + 1);
      expect(deleted.responses[0]?.errorCode).toBe(0);
      expect(created.topics[0]?.errorCode).toBe(0);
      await produceSurely(producer, fresh, () => records(fresh, 'own'));
    }
    // The racing produce either won (0) or found the topic gone (3): never a storage error.
    expect([...racedCodes.keys()].filter((code) => code !== 0 && code !== UNKNOWN_TOPIC_OR_PARTITION)).toEqual([]);

    // Deletions finish in the background (the broker syncs its logs on the topic change).
    await expect.poll(() => readdirSync(dataDir).filter((name) => /^race-\d+-0$/.test(name)), { timeout: 30_000 }).toEqual([]);
    const expectOnlyOwnBytes = (): void => {
      const stored = storedBatches(dataDir);
      const problems: string[] = [];
      for (let i = 0; i < ROUNDS; i += 1) {
        const folder = `race-n-${i}-0`;
        const batches = stored.get(folder) ?? [];
        const values = batches.flatMap((b) => b.values);
        if (batches.some((b) => !b.crcOk) || values.length !== 1 || values[0] !== `race-n-${i}:own:`) problems.push(`${folder}: ${JSON.stringify(values).slice(0, 200)}`);
      }
      expect(problems).toEqual([]);
    };
    expectOnlyOwnBytes();
    for (const connection of [producer, deleter, creator]) connection.close();
    broker.logLines.length = 0;

    // After a restart every topic reads back cleanly: recovery found nothing to cut.
    await broker.stop();
    broker = await startInProcessBroker({}, dataDir);
    expect(broker.broker.logManager.offlineLogs()).toEqual([]);
    expectOnlyOwnBytes();
    const reader = await connect(broker);
    const fetched = await reader.request(FetchApi, 11, {
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 64 << 20,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: Array.from({ length: ROUNDS }, (_, i) => ({
        topic: `race-n-${i}`,
        partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: 0n, logStartOffset: -1n, partitionMaxBytes: 1 << 20 }],
      })),
      forgottenTopicsData: [],
      rackId: '',
    });
    const problems: string[] = [];
    for (const topic of fetched.responses) {
      const partition = topic.partitions[0];
      const bytes = partition?.records;
      if (partition?.errorCode !== 0 || !Buffer.isBuffer(bytes)) {
        problems.push(`${topic.topic}: error ${partition?.errorCode}`);
        continue;
      }
      const header = readBatchHeader(bytes, 0);
      const values = decodeRecords(bytes, 0).map((r) => r.value?.toString());
      if (header.sizeInBytes !== bytes.length || computeBatchCrc(bytes, 0, bytes.length) !== header.crc || values.join() !== `${topic.topic}:own:`) {
        problems.push(`${topic.topic}: ${JSON.stringify(values)}`);
      }
    }
    expect(problems).toEqual([]);
    reader.close();
  });
});

function fetchOne(connection: KafkaConnection, topic: string) {
  return connection.request(FetchApi, 11, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [{ topic, partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: 0n, logStartOffset: -1n, partitionMaxBytes: 1 << 20 }] }],
    forgottenTopicsData: [],
    rackId: '',
  });
}

describe('an offline partition and a wide topic', () => {
  let broker: InProcessBroker | undefined;
  afterAll(async () => {
    await broker?.stop();
  });

  it('serves every other partition, answers the offline one KAFKA_STORAGE_ERROR naming why, and still deletes its topic', async () => {
    broker = await startInProcessBroker();
    const dataDir = broker.dataDir;
    const connection = await connect(broker);
    for (const topic of ['healthy', 'broken']) {
      expect((await createTopic(connection, topic)).topics[0]?.errorCode).toBe(0);
      await produceSurely(connection, topic, () => records(topic, 'first'));
    }
    connection.close();
    await broker.stop();
    // A folder where a segment file should be: the log cannot be opened, whatever recovery does.
    mkdirSync(join(dataDir, 'broken-0', segmentFileName(1, '.log')));
    broker = await startInProcessBroker({}, dataDir);
    const logged = broker.logLines.find((line) => line.level === 50 && line.topic === 'broken');
    expect(String(logged?.reason)).toMatch(/EISDIR/);

    const client = await connect(broker);
    expect(await produce(client, 'healthy', records('healthy', 'second'))).toBe(0);
    const produced = await client.request(ProduceApi, 8, { transactionalId: null, acks: 1, timeoutMs: 10_000, topicData: [{ name: 'broken', partitionData: [{ index: 0, records: records('broken', 'refused') }] }] });
    const answer = produced.responses[0]?.partitionResponses[0];
    expect(answer?.errorCode).toBe(56);
    expect(answer?.errorMessage).toMatch(/broken-0 is offline: .*EISDIR/);
    expect((await fetchOne(client, 'broken')).responses[0]?.partitions[0]?.errorCode).toBe(56);
    expect((await fetchOne(client, 'healthy')).responses[0]?.partitions[0]?.errorCode).toBe(0);
    const listed = await client.request(ListOffsetsApi, 1, { replicaId: -1, isolationLevel: 0, topics: [{ name: 'broken', partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }] }] });
    expect(listed.topics[0]?.partitions[0]?.errorCode).toBe(56);
    // Metadata says the partition is offline, so clients do not keep sending to it.
    const metadata = await client.request(MetadataApi, 8, { topics: [{ name: 'broken' }, { name: 'healthy' }], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false });
    expect(metadata.topics.map((topic) => [topic.name, topic.partitions[0]?.errorCode, topic.partitions[0]?.leaderId])).toEqual([['broken', 56, -1], ['healthy', 0, 0]]);

    expect((await client.request(DeleteTopicsApi, 3, { topicNames: ['broken'], timeoutMs: 10_000 })).responses[0]?.errorCode).toBe(0);
    await expect.poll(() => readdirSync(dataDir).includes('broken-0'), { timeout: 10_000 }).toBe(false);
    expect(broker.broker.logManager.offlineLogs()).toEqual([]);
    client.close();
  });

  it('creates a topic of 4096 partitions without a descriptor or segment file per partition, answering others meanwhile', async () => {
    const dataDir = broker!.dataDir;
    const client = await connect(broker!);
    const descriptorsBefore = readdirSync('/proc/self/fd').length;
    const created = createTopic(client, 'wide', 4096);
    // Answered while the broker brings up the new logs (they are created in slices of the event loop).
    const other = await connect(broker!);
    const metadata = await other.request(MetadataApi, 1, { topics: [{ name: 'healthy' }], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false });
    expect(metadata.topics[0]?.errorCode).toBe(0);
    expect((await created).topics[0]?.errorCode).toBe(0);
    await expect.poll(() => broker!.broker.logManager.allLogs().filter((log) => log.topic === 'wide').length, { timeout: 30_000 }).toBe(4096);
    expect(readdirSync('/proc/self/fd').length - descriptorsBefore).toBeLessThan(100);
    expect(readdirSync(join(dataDir, 'wide-4095'))).toEqual([]);
    await produceSurely(client, 'wide', () => records('wide', 'one'));
    expect(readdirSync(join(dataDir, 'wide-0')).filter((name) => name.endsWith('.log'))).toHaveLength(1);
    client.close();
    other.close();
  });
});
