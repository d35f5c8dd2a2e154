/**
 * Produce requests pipelined on one connection to a real standalone broker: every acks=−1 answer
 * comes back in request order with the offsets that order gives, and Produce v5+ answers carry
 * the log start offset where Kafka fills it (successes, and failures of a partition led here).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateTopicsApi, ProduceApi, type ProduceRequest, type ProduceResponse } from '../../../src/protocol/apis/index.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { Conversation, decodeResponse, requestFrame } from '../../support/conversation.js';

let broker: InProcessBroker;
let conversation: Conversation;

beforeAll(async () => {
  broker = await startInProcessBroker({ 'auto.create.topics.enable': 'false' });
  conversation = await Conversation.open(broker.broker.port);
  const created = await conversation.request(CreateTopicsApi, 3, {
    topics: ['pipelined', 'two-partitions'].map((name) => ({ name, numPartitions: name === 'pipelined' ? 1 : 2, replicationFactor: 1, assignments: [], configs: [] })),
    timeoutMs: 10_000,
    validateOnly: false,
  });
  expect(created.topics.map((t) => t.errorCode)).toEqual([0, 0]);
});

afterAll(async () => {
  conversation.close();
  await broker.stop();
});

const batch = (prefix: string, count: number): Buffer => encodeRecordBatch(Array.from({ length: count }, (_, i) => ({ value: Buffer.from(`${prefix}-${i}`), timestamp: Date.now() })));

function produce(topic: string, partitions: readonly number[], records: (partition: number) => Buffer | null, acks = -1): ProduceRequest {
  return { transactionalId: null, acks, timeoutMs: 30_000, topicData: [{ name: topic, partitionData: partitions.map((index) => ({ index, records: records(index) })) }] };
}

describe('pipelined Produce', () => {
  it('answers 30 acks=-1 requests sent at once in order, numbered in that order', async () => {
    const ids = Array.from({ length: 30 }, () => conversation.nextCorrelationId());
    conversation.send(Buffer.concat(ids.map((id, i) => requestFrame(ProduceApi, 8, id, produce('pipelined', [0], () => batch(`r${i}`, 3))))));
    const answers = [];
    for (const id of ids) {
      const response: ProduceResponse = decodeResponse(ProduceApi, 8, await conversation.response(), id);
      answers.push(response.responses[0]?.partitionResponses[0]);
    }
    expect(answers.map((a) => [a?.errorCode, a?.baseOffset, a?.logStartOffset])).toEqual(ids.map((_, i) => [0, BigInt(3 * i), 0n]));
    expect(broker.broker.logManager.getLog('pipelined', 0)?.logEndOffset).toBe(90);
  });

  it('numbers each partition of pipelined multi-partition requests in request order', async () => {
    const ids = Array.from({ length: 10 }, () => conversation.nextCorrelationId());
    conversation.send(Buffer.concat(ids.map((id, i) => requestFrame(ProduceApi, 7, id, produce('two-partitions', [1, 0], (p) => batch(`p${p}-r${i}`, 1 + p)), 'pipelining'))));
    for (const [i, id] of ids.entries()) {
      const response: ProduceResponse = decodeResponse(ProduceApi, 7, await conversation.response(), id);
      const byPartition = new Map(response.responses[0]?.partitionResponses.map((p) => [p.index, p]));
      expect(byPartition.get(0)).toMatchObject({ errorCode: 0, baseOffset: BigInt(i) });
      expect(byPartition.get(1)).toMatchObject({ errorCode: 0, baseOffset: BigInt(2 * i) });
    }
  });

  it('fills the log start offset of a failure on a partition led here, and -1 where Kafka does', async () => {
    const response: ProduceResponse = await conversation.request(ProduceApi, 8, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 30_000,
      topicData: [
        { name: 'pipelined', partitionData: [{ index: 0, records: null }] },
        { name: 'pipelined', partitionData: [{ index: 7, records: batch('nowhere', 1) }] },
      ],
    });
    const [empty, unknown] = response.responses.map((t) => t.partitionResponses[0]);
    expect(empty).toMatchObject({ errorCode: KafkaErrorCode.INVALID_RECORD, baseOffset: -1n, logStartOffset: 0n });
    expect(unknown).toMatchObject({ errorCode: KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION, baseOffset: -1n, logStartOffset: -1n });
  });

  it('still closes the connection after a failed acks=0 request, answering nothing', async () => {
    const own = await Conversation.open(broker.broker.port);
    own.send(requestFrame(ProduceApi, 8, own.nextCorrelationId(), produce('pipelined', [9], () => batch('lost', 1), 0)));
    expect(await own.closedWithin(10_000)).toBe(true);
    expect(own.receivedBytes).toBe(0);
  });
});
