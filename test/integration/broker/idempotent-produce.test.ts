/**
 * Issue 17, acceptance (storage part): idempotent produce through a real broker process, raw
 * protocol. Producer ids are made up — no InitProducerId — because an unknown producer's first
 * batch is accepted at any sequence (kafka-clients.md §2.2 rule 5).
 *
 *   - each bad batch is answered with Kafka's code and nothing is appended: the next good batch
 *     (acks=-1) gets exactly the offset after the last accepted record, and ListOffsets agrees;
 *   - a duplicate is answered with error 0 and the original's base offset, and not appended;
 *   - duplicates are still detected after a clean restart and after SIGKILL.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateTopicsApi, ListOffsetsApi, ProduceApi, type CreateTopicsResponse, type ListOffsetsResponse, type ProducePartitionResponse, type ProduceRequest, type ProduceResponse } from '../../../src/protocol/apis/index.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { TRANSACTIONAL_FLAG } from '../../../src/protocol/record-batch.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { openRun } from '../../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../../support/brokers.js';
import { Conversation, decodeResponse, requestFrame } from '../../support/conversation.js';
import { encodeRawBatch } from '../../support/raw-batches.js';
import { services } from '../services.js';

const TOPIC = 'idempotent';

let broker: BrokerProcess;
let conversation: Conversation;
/** Records accepted so far: the partition's log end offset. */
let end = 0n;

beforeAll(async () => {
  broker = await startBrokerProcess({ run: openRun(services().runDir), id: 17 });
  conversation = await Conversation.open(broker.port);
  const response: CreateTopicsResponse = await conversation.request(CreateTopicsApi, 3, {
    topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [{ name: 'segment.bytes', value: '2048' }] }],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  expect(response.topics[0], JSON.stringify(response)).toMatchObject({ name: TOPIC, errorCode: 0 });
});

afterAll(async () => {
  conversation?.close();
  await broker?.stop().catch(() => undefined);
});

function batch(producerId: bigint, epoch: number, baseSequence: number, count = 2): Buffer {
  return encodeRecordBatch(
    Array.from({ length: count }, (_, i) => ({ value: Buffer.from(`p${producerId}-e${epoch}-s${baseSequence + i}`), timestamp: Date.now() })),
    { producerId, producerEpoch: epoch, baseSequence },
  );
}

/** Produces a new batch (acks=-1) and expects it appended at the log end. */
async function expectAppended(records: Buffer): Promise<ProducePartitionResponse> {
  const answer = await conversation.produce(TOPIC, 0, records);
  expect(answer, answer.errorMessage ?? '').toMatchObject({ errorCode: 0, baseOffset: end });
  end += BigInt(records.readInt32BE(57));
  return answer;
}

async function expectRefused(records: Buffer, code: number, message: RegExp): Promise<void> {
  const answer = await conversation.produce(TOPIC, 0, records);
  expect(answer.errorCode, answer.errorMessage ?? '').toBe(code);
  expect(answer.errorMessage ?? '').toMatch(message);
  expect(answer.baseOffset).toBe(-1n);
  await expectNothingAppended();
}

async function expectDuplicate(records: Buffer, originalBaseOffset: bigint, acks = -1): Promise<void> {
  const answer = await conversation.produce(TOPIC, 0, records, { acks });
  expect(answer, answer.errorMessage ?? '').toMatchObject({ errorCode: 0, baseOffset: originalBaseOffset });
  await expectNothingAppended();
}

/** The log end is where the accepted records put it: a plain batch lands there, and ListOffsets agrees. */
async function expectNothingAppended(): Promise<void> {
  await expectAppended(encodeRecordBatch([{ value: Buffer.from(`plain-${end}`), timestamp: Date.now() }]));
  const response: ListOffsetsResponse = await conversation.request(ListOffsetsApi, 1, {
    replicaId: -1,
    isolationLevel: 0,
    topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }] }],
  });
  expect(response.topics[0]?.partitions[0]).toMatchObject({ errorCode: 0, offset: end });
}

describe('idempotent produce through a broker', () => {
  const first = batch(1000n, 0, 0);
  const second = batch(1000n, 0, 2, 3);
  let firstOffset = -1n;
  let secondOffset = -1n;

  it('accepts a made-up producer id at any first sequence, then only the next one', async () => {
    firstOffset = (await expectAppended(first)).baseOffset;
    secondOffset = (await expectAppended(second)).baseOffset;
    await expectAppended(batch(3000n, 5, 123_456));
    await expectAppended(batch(3000n, 5, 123_458));
  });

  it('answers a duplicate with the original base offset and appends nothing (acks=1 and acks=-1)', async () => {
    await expectDuplicate(first, firstOffset);
    await expectDuplicate(second, secondOffset, 1);
  });

  it('refuses a sequence gap with OUT_OF_ORDER_SEQUENCE_NUMBER', async () => {
    await expectRefused(batch(1000n, 0, 6), KafkaErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, /expected sequence 5/);
  });

  it('refuses a stale epoch with INVALID_PRODUCER_EPOCH', async () => {
    await expectAppended(batch(2000n, 3, 0));
    await expectRefused(batch(2000n, 2, 2), KafkaErrorCode.INVALID_PRODUCER_EPOCH, /epoch 2.*current epoch for it is 3/);
  });

  it('refuses a new epoch that does not start at sequence 0, and accepts a bump to epoch+1 at 0', async () => {
    await expectRefused(batch(2000n, 4, 2), KafkaErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, /must start at sequence 0/);
    await expectAppended(batch(2000n, 4, 0));
    // The old epoch's batch is no duplicate any more: fenced.
    await expectRefused(batch(2000n, 3, 0), KafkaErrorCode.INVALID_PRODUCER_EPOCH, /current epoch for it is 4/);
  });

  it('refuses a batch with a producer id but no sequence (INVALID_RECORD) and a transactional one (INVALID_TXN_STATE)', async () => {
    await expectRefused(batch(4000n, 0, -1), KafkaErrorCode.INVALID_RECORD, /sequence/i);
    const transactional = encodeRawBatch({
      records: [{ timestampDelta: 0n, offsetDelta: 0, key: null, value: Buffer.from('txn'), headers: [] }],
      baseTimestamp: BigInt(Date.now()),
      flags: TRANSACTIONAL_FLAG,
      producerId: 4001n,
      producerEpoch: 0,
      baseSequence: 0,
    });
    await expectRefused(transactional, KafkaErrorCode.INVALID_TXN_STATE, /transaction/i);
    // Neither left producer state behind: both producers still start anywhere.
    await expectAppended(batch(4000n, 0, 70));
    await expectAppended(batch(4001n, 0, 80));
  });

  it('checks pipelined requests in order: appended, appended, duplicate of the first, gap refused', async () => {
    const a = batch(5000n, 0, 0);
    const b = batch(5000n, 0, 2);
    const frames = [a, b, Buffer.from(a), batch(5000n, 0, 9)].map((records) => {
      const request: ProduceRequest = { transactionalId: null, acks: -1, timeoutMs: 30_000, topicData: [{ name: TOPIC, partitionData: [{ index: 0, records }] }] };
      return requestFrame(ProduceApi, 8, conversation.nextCorrelationId(), request);
    });
    for (const frame of frames) conversation.send(frame);
    const answers: ProducePartitionResponse[] = [];
    for (const frame of frames) {
      const response: ProduceResponse = decodeResponse(ProduceApi, 8, await conversation.response(), frame.readInt32BE(8));
      answers.push(response.responses[0]!.partitionResponses[0]!);
    }
    expect(answers.map((answer) => [answer.errorCode, answer.baseOffset])).toEqual([
      [0, end],
      [0, end + 2n],
      [0, end],
      [KafkaErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1n],
    ]);
    end += 4n;
    await expectNothingAppended();
  });

  it('still detects duplicates after a clean restart', async () => {
    conversation.close();
    expect(await broker.stop()).toBe(0);
    await broker.restart();
    conversation = await Conversation.open(broker.port);
    await expectDuplicate(second, secondOffset);
    await expectRefused(batch(1000n, 0, 6), KafkaErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, /expected sequence 5/);
    await expectAppended(batch(1000n, 0, 5));
  });

  it('still detects duplicates after SIGKILL, for batches written before and after the last snapshot', async () => {
    const beforeKill = batch(1000n, 0, 7);
    const beforeKillOffset = (await expectAppended(beforeKill)).baseOffset;
    // Enough data to roll segments (snapshots on roll), and more after the last roll.
    for (let sequence = 0; sequence < 60; sequence += 2) await expectAppended(batch(6000n, 1, sequence));
    const lastBatch = batch(6000n, 1, 60);
    const lastOffset = (await expectAppended(lastBatch)).baseOffset;
    // Roll snapshots are fsynced and renamed in the background, just after the roll.
    await expect.poll(() => readdirSync(join(broker.dataDir, `${TOPIC}-0`)).filter((file) => file.endsWith('.snapshot')).length).toBeGreaterThan(1);
    conversation.close();
    await broker.kill();
    await broker.restart();
    conversation = await Conversation.open(broker.port);
    // Answered once the broker is ready (the listener opens before recovery ends).
    await expectDuplicate(lastBatch, lastOffset);
    await expectDuplicate(beforeKill, beforeKillOffset);
    // The restart loaded a roll snapshot and replayed the batches after it (the log line may
    // reach the file a moment after the broker is serving).
    await expect.poll(() => readFileSync(broker.logFile, 'utf8')).toContain('rebuilt producer state from the log');
    await expectRefused(batch(6000n, 1, 64), KafkaErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, /expected sequence 62/);
    await expectAppended(batch(6000n, 1, 62));
  }, 240_000);
});
