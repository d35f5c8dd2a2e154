/**
 * DeleteRecords on an in-process broker (one replica per partition, so the low watermark is the
 * leader's own log start): Kafka's codes for each partition, −1 = the high watermark, a move at or
 * below the start succeeding without moving, what Fetch and ListOffsets see afterwards, and the
 * start kept across a restart. The ACL check is in the ACL matrix, replication in
 * test/integration/broker/delete-records.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Producer } from '../../../src/client/producer.js';
import { createLogger } from '../../../src/common/logger.js';
import { CreateTopicsApi, DeleteRecordsApi, FetchApi, ListOffsetsApi, type DeleteRecordsRequestTopic } from '../../../src/protocol/apis/index.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { Conversation } from '../../support/conversation.js';

const SETTINGS = { 'num.partitions': '2', 'log.flush.interval.messages': '1', 'log.segment.bytes': '1024' };

let broker: InProcessBroker;
let conversation: Conversation;

async function produce(topic: string, partition: number, count: number): Promise<void> {
  const producer = await Producer.connect({ bootstrap: [broker.bootstrap], logger: createLogger({ name: 'test', level: 'silent' }) });
  try {
    for (let i = 0; i < count; i += 1) await producer.send(topic, [{ partition, key: null, value: Buffer.from(`${topic}-${partition}-${i}-${'x'.repeat(200)}`) }]);
  } finally {
    await producer.close();
  }
}

/** Keyed records (a compacted topic refuses keyless ones). */
async function produceKeyed(topic: string, count: number): Promise<void> {
  const producer = await Producer.connect({ bootstrap: [broker.bootstrap], logger: createLogger({ name: 'test', level: 'silent' }) });
  try {
    for (let i = 0; i < count; i += 1) await producer.send(topic, [{ partition: 0, key: Buffer.from(`key-${i}`), value: Buffer.from(`value-${i}`) }]);
  } finally {
    await producer.close();
  }
}

beforeAll(async () => {
  broker = await startInProcessBroker(SETTINGS);
  await produce('trim', 0, 10);
  await produce('trim', 1, 3);
  conversation = await Conversation.open(broker.broker.port);
});

afterAll(async () => {
  conversation?.close();
  await broker?.stop();
});

async function deleteRecords(topics: DeleteRecordsRequestTopic[], version = 1, timeoutMs = 5_000): Promise<[string, number, number, bigint][]> {
  const response = await conversation.request(DeleteRecordsApi, version, { topics, timeoutMs });
  return response.topics.flatMap((topic) => topic.partitions.map((p): [string, number, number, bigint] => [topic.name, p.partitionIndex, p.errorCode, p.lowWatermark]));
}

async function earliest(topic: string, partition: number): Promise<bigint> {
  const response = await conversation.request(ListOffsetsApi, 5, { replicaId: -1, isolationLevel: 0, topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp: -2n }] }] });
  return response.topics[0]!.partitions[0]!.offset;
}

async function fetchAt(topic: string, partition: number, offset: bigint): Promise<{ errorCode: number; logStartOffset: bigint }> {
  const response = await conversation.request(FetchApi, 11, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [{ topic, partitions: [{ partition, currentLeaderEpoch: -1, fetchOffset: offset, logStartOffset: -1n, partitionMaxBytes: 1 << 20 }] }],
    forgottenTopicsData: [],
    rackId: '',
  });
  const answer = response.responses[0]!.partitions[0]!;
  return { errorCode: answer.errorCode, logStartOffset: answer.logStartOffset };
}

const { NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, POLICY_VIOLATION } = KafkaErrorCode;

describe('DeleteRecords', () => {
  it('moves the log start: Fetch below it is OFFSET_OUT_OF_RANGE, ListOffsets EARLIEST answers it, covered segments are gone', async () => {
    const log = broker.broker.logManager.getLog('trim', 0)!;
    const segments = log.segmentBaseOffsets.length;
    expect(segments).toBeGreaterThan(2);
    expect(await deleteRecords([{ name: 'trim', partitions: [{ partitionIndex: 0, offset: 4n }] }], 0)).toEqual([['trim', 0, NONE, 4n]]);
    expect(await earliest('trim', 0)).toBe(4n);
    expect(await fetchAt('trim', 0, 3n)).toEqual({ errorCode: OFFSET_OUT_OF_RANGE, logStartOffset: 4n });
    expect(await fetchAt('trim', 0, 4n)).toEqual({ errorCode: NONE, logStartOffset: 4n });
    expect(log.segmentBaseOffsets[0]).toBeLessThanOrEqual(4);
    expect(log.segmentBaseOffsets.length).toBeLessThan(segments);
  });

  it('succeeds without moving at or below the start, and takes −1 as the high watermark', async () => {
    expect(await deleteRecords([{ name: 'trim', partitions: [{ partitionIndex: 0, offset: 2n }] }])).toEqual([['trim', 0, NONE, 4n]]);
    expect(await deleteRecords([{ name: 'trim', partitions: [{ partitionIndex: 0, offset: 4n }] }])).toEqual([['trim', 0, NONE, 4n]]);
    expect(await deleteRecords([{ name: 'trim', partitions: [{ partitionIndex: 1, offset: -1n }] }])).toEqual([['trim', 1, NONE, 3n]]);
    expect(await earliest('trim', 1)).toBe(3n);
    expect(await fetchAt('trim', 1, 3n)).toEqual({ errorCode: NONE, logStartOffset: 3n });
  });

  it('answers each partition with its own code: past the high watermark or negative OFFSET_OUT_OF_RANGE, unknown ones UNKNOWN_TOPIC_OR_PARTITION', async () => {
    const answers = await deleteRecords([
      {
        name: 'trim',
        partitions: [
          { partitionIndex: 0, offset: 11n },
          { partitionIndex: 0, offset: -2n },
          { partitionIndex: 7, offset: 1n },
          { partitionIndex: 0, offset: 6n },
        ],
      },
      { name: 'no-such-topic', partitions: [{ partitionIndex: 0, offset: 0n }] },
    ]);
    expect(answers).toEqual([
      ['trim', 0, OFFSET_OUT_OF_RANGE, -1n],
      ['trim', 0, OFFSET_OUT_OF_RANGE, -1n],
      ['trim', 7, UNKNOWN_TOPIC_OR_PARTITION, -1n],
      ['trim', 0, NONE, 6n],
      ['no-such-topic', 0, UNKNOWN_TOPIC_OR_PARTITION, -1n],
    ]);
    expect(await earliest('trim', 0)).toBe(6n);
  });

  it('refuses a topic whose cleanup.policy lacks delete with POLICY_VIOLATION; compact,delete is allowed', async () => {
    const created = await conversation.request(CreateTopicsApi, 4, {
      topics: ['compact', 'compact,delete'].map((policy) => ({ name: `policy-${policy.replace(',', '-')}`, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [{ name: 'cleanup.policy', value: policy }] })),
      timeoutMs: 10_000,
      validateOnly: false,
    });
    expect(created.topics.map((topic) => topic.errorCode)).toEqual([NONE, NONE]);
    await produceKeyed('policy-compact', 3);
    await produceKeyed('policy-compact-delete', 3);
    expect(await deleteRecords([{ name: 'policy-compact', partitions: [{ partitionIndex: 0, offset: 1n }] }])).toEqual([['policy-compact', 0, POLICY_VIOLATION, -1n]]);
    expect(await earliest('policy-compact', 0)).toBe(0n);
    expect(await deleteRecords([{ name: 'policy-compact-delete', partitions: [{ partitionIndex: 0, offset: 1n }] }])).toEqual([['policy-compact-delete', 0, NONE, 1n]]);
  });

  it('keeps the log start across a restart', async () => {
    conversation.close();
    await broker.stop();
    broker = await startInProcessBroker(SETTINGS, broker.dataDir);
    conversation = await Conversation.open(broker.broker.port);
    expect(await earliest('trim', 0)).toBe(6n);
    expect(await earliest('trim', 1)).toBe(3n);
    expect(await fetchAt('trim', 0, 5n)).toEqual({ errorCode: OFFSET_OUT_OF_RANGE, logStartOffset: 6n });
  });
});
