/**
 * Issue 16, acceptance: the log refuses what Kafka refuses. Each reproduction of the issue (its hex
 * frames, size prefix included, sent on one connection in order) and each rule of the record
 * validator, against a real broker process:
 *
 *   - the request is refused with Kafka's code, or accepted only as Kafka accepts it;
 *   - nothing invalid is stored: the partition's segment files hold exactly the acknowledged
 *     batches, byte for byte beyond the base offset (and the MaxTimestamp/CRC Kafka rewrites);
 *   - the partition keeps serving: a normal produce afterwards succeeds and is read back;
 *   - after a clean restart and after SIGKILL, every acknowledged batch is read back by kcat with
 *     `check.crcs=true`, and no stored batch is one the validator refuses.
 *
 * Issue cases 4 (DeleteTopics racing Produce) and 5 (4096 partitions) are the storage tests'.
 *
 * Note on case 1: the issue's frame carries MaxTimestamp 2^63−1 in the batch header, but its one
 * record's timestamp is BaseTimestamp + 0 = 1,700,000,000,000. Kafka validates record timestamps
 * and rewrites a header MaxTimestamp that disagrees with them, so that exact frame is accepted with
 * MaxTimestamp corrected. A record whose own timestamp is 2^63−1 is a separate test: refused with
 * INVALID_TIMESTAMP under the default one-hour after-bound, kept exactly when the topic sets
 * message.timestamp.after.max.ms=9223372036854775807.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateTopicsApi, ListOffsetsApi, ProduceApi, type CreateTopicsResponse, type ListOffsetsResponse, type ProducePartitionResponse, type ProduceResponse } from '../../../src/protocol/apis/index.js';
import { compress } from '../../../src/protocol/compression.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import {
  ATTRIBUTES_OFFSET,
  BASE_SEQUENCE_OFFSET,
  BATCH_LENGTH_OFFSET,
  PARTITION_LEADER_EPOCH_OFFSET,
  Compression,
  CONTROL_FLAG,
  LOG_OVERHEAD,
  MAX_TIMESTAMP_OFFSET,
  PRODUCER_ID_OFFSET,
  RECORD_BATCH_OVERHEAD,
  TIMESTAMP_TYPE_FLAG,
  writeBatchCrc,
  type CompressionName,
} from '../../../src/protocol/record-batch.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { openRun } from '../../services/run-dir.js';
import { loadBatchValidation, type LoadedValidation } from '../../support/batch-rules.js';
import { startBrokerProcess, type BrokerProcess } from '../../support/brokers.js';
import { Conversation } from '../../support/conversation.js';
import { kcatRaw } from '../../support/kcat.js';
import { decompressionBomb } from '../../support/raw-batches.js';
import { services } from '../services.js';

const INT64_MAX = 9_223_372_036_854_775_807n;
const ISSUE_TIMESTAMP = 1_700_000_000_000n;

// The issue's frames, verbatim.
const CASE_1 = {
  createTopic: '0000004800130000000000010005726570726f000000010008726570726f2d747300000001000100000000000000010014696e6465782e696e74657276616c2e627974657300013000001388',
  maxTimestampProduce:
    '0000007600000003000000020005726570726fffff000100001388000000010008726570726f2d7473000000010000000000000045000000000000000000000039ffffffff02d9f0cdeb0000000000000000018bcfe568007fffffffffffffffffffffffffffffffffffffffffff000000010e00000001027800',
  normalProduce:
    '0000007a00000003000000030005726570726fffff000100001388000000010008726570726f2d747300000001000000000000004900000000000000000000003dffffffff025c8dd24b0000000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff0000000116000000010a616674657200',
};
const CASE_2 = {
  createTopic: '0000004900130000000000010005726570726f000000010009726570726f2d69647800000001000100000000000000010014696e6465782e696e74657276616c2e627974657300013000001388',
  lyingCount:
    '0000007700000003000000020005726570726fffff000100001388000000010009726570726f2d696478000000010000000000000045000000000000000000000039ffffffff027b3a10b900007ffffffe0000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff7fffffff0e00000001027800',
};
const CASE_3 = {
  createTopic: '0000003000130000000000010005726570726f000000010009726570726f2d626164000000010001000000000000000000001388',
  countFiveHoldsOne:
    '0000007900000003000000020005726570726fffff000100001388000000010009726570726f2d62616400000001000000000000004700000000000000000000003bffffffff02cdfcc45d0000000000040000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff000000051200000001066f6e6500',
  snappyBitsOnPlain:
    '0000007b00000003000000030005726570726fffff000100001388000000010009726570726f2d62616400000001000000000000004900000000000000000000003dffffffff02b173cbe50002000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff0000000116000000010a706c61696e00',
  gzipBitsNotGzip:
    '0000007e00000003000000040005726570726fffff000100001388000000010009726570726f2d62616400000001000000000000004c000000000000000000000040ffffffff029bc28f1b0001000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff000000016e6f7420677a697020617420616c6c',
  recordLengthTooLong:
    '0000007900000003000000050005726570726fffff000100001388000000010009726570726f2d62616400000001000000000000004700000000000000000000003bffffffff0269235ccb0000000000000000018bcfe568000000018bcfe56800ffffffffffffffffffffffffffff0000000114000000010661626300',
};

const frame = (hex: string): Buffer => Buffer.from(hex, 'hex');
/** The batch inside one of the issue's single-batch Produce v3 frames (it ends the frame). */
function batchOfFrame(hex: string): Buffer {
  const bytes = frame(hex);
  // The records bytes are the frame's last field (int32 length + one batch), so the batch is the
  // tail whose BatchLength + 12 equals its own size.
  for (let at = 4; at + RECORD_BATCH_OVERHEAD <= bytes.length; at += 1) {
    const size = bytes.length - at;
    if (bytes.readInt32BE(at - 4) === size && bytes.readInt32BE(at + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD === size) return Buffer.from(bytes.subarray(at));
  }
  throw new Error('no batch found in the frame');
}

/** A batch the validator must refuse with one of `codes`, the partition and what it stores unchanged. */
const REFUSED_RECORD = [KafkaErrorCode.INVALID_RECORD, KafkaErrorCode.CORRUPT_MESSAGE];

interface Acknowledged {
  readonly topic: string;
  readonly partition: number;
  readonly baseOffset: bigint;
  /** What the segment must hold from BatchLength on (the producer's bytes, or Kafka's rewrite of them). */
  readonly stored: Buffer;
  readonly values: readonly (string | null)[];
  /** Record timestamps, when the test pins them (exact int64). */
  readonly timestamps?: readonly bigint[];
}

let broker: BrokerProcess;
let conversation: Conversation;
let validation: LoadedValidation;
const acknowledged: Acknowledged[] = [];
const topicsMade = new Set<string>();

beforeAll(async () => {
  validation = await loadBatchValidation();
  broker = await startBrokerProcess({ run: openRun(services().runDir), id: 16 });
  conversation = await Conversation.open(broker.port);
});

afterAll(async () => {
  conversation?.close();
  await broker?.stop().catch(() => undefined);
});

// ---------------------------------------------------------------------------------------------
// helpers

function now(): bigint {
  return BigInt(Date.now());
}

function values(count: number, prefix: string): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
}

async function createTopic(name: string, configs: Record<string, string> = {}): Promise<void> {
  const response: CreateTopicsResponse = await conversation.request(CreateTopicsApi, 3, {
    topics: [{ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: Object.entries(configs).map(([key, value]) => ({ name: key, value })) }],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  expect(response.topics[0], JSON.stringify(response)).toMatchObject({ name, errorCode: 0 });
  topicsMade.add(name);
}

/** Records acknowledged so far in a partition (= its log end offset, when nothing invalid was stored). */
function endOf(topic: string): bigint {
  return BigInt(acknowledged.filter((batch) => batch.topic === topic).reduce((sum, batch) => sum + batch.values.length, 0));
}

function expectAccepted(answer: ProducePartitionResponse, topic: string, stored: Buffer, recordValues: readonly (string | null)[], timestamps?: readonly bigint[]): void {
  expect(answer, answer.errorMessage ?? '').toMatchObject({ errorCode: 0, baseOffset: endOf(topic) });
  acknowledged.push({ topic, partition: 0, baseOffset: answer.baseOffset, stored: Buffer.from(stored.subarray(BATCH_LENGTH_OFFSET)), values: recordValues, ...(timestamps === undefined ? {} : { timestamps }) });
}

function expectRefused(answer: ProducePartitionResponse, codes: readonly number[]): void {
  expect(codes, `error ${answer.errorCode}: ${answer.errorMessage ?? ''}`).toContain(answer.errorCode);
  expect(answer.baseOffset).toBe(-1n);
}

/** A normal batch produced after refusals: accepted at the next offset (the partition keeps serving). */
async function expectServing(topic: string, tag: string): Promise<void> {
  await expectAppendAccepted(topic, tag);
  await expectReadable(topic);
}

/** Two normal records produced to `topic`, acknowledged at the next offset. */
async function expectAppendAccepted(topic: string, tag: string): Promise<void> {
  const recordValues = values(2, `${topic}-${tag}`);
  const batch = encodeRecordBatch(recordValues.map((value) => ({ value: Buffer.from(value), timestamp: Date.now() })));
  const answer = await conversation.produce(topic, 0, Buffer.from(batch));
  expectAccepted(answer, topic, batch, recordValues);
}

async function latestOffset(topic: string, timestamp: bigint, version = 1): Promise<{ offset: bigint; timestamp: bigint; errorCode: number }> {
  const response: ListOffsetsResponse = await conversation.request(ListOffsetsApi, version, {
    replicaId: -1,
    isolationLevel: 0,
    topics: [{ name: topic, partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp }] }],
  });
  const partition = response.topics[0]?.partitions[0];
  if (partition === undefined) throw new Error('ListOffsets without a partition');
  return partition;
}

interface KcatRecord {
  readonly offset: bigint;
  readonly timestamp: bigint;
  readonly value: string | null;
}

/** The whole partition as kcat reads it with CRC checks on; throws when kcat fails. */
async function kcatRead(bootstrap: string, topic: string): Promise<KcatRecord[]> {
  const result = await kcatRaw(['-b', bootstrap, '-X', 'check.crcs=true', '-C', '-t', topic, '-p', '0', '-o', 'beginning', '-e', '-f', '%o %T %S\n%s\n']);
  if (result.status !== 0 || /error|fail/i.test(result.stderr)) throw new Error(`kcat could not read ${topic}-0 (status ${result.status}): ${result.stderr}`);
  const lines = result.stdout.toString('utf8').split('\n');
  const records: KcatRecord[] = [];
  for (let i = 0; i + 1 < lines.length; i += 2) {
    const [offset, timestamp, length] = (lines[i] ?? '').split(' ');
    records.push({ offset: BigInt(offset ?? '-1'), timestamp: BigInt(timestamp ?? '-1'), value: Number(length) < 0 ? null : (lines[i + 1] ?? '') });
  }
  return records;
}

/** Waits until the partition's high watermark reaches what was acknowledged, then reads it all with kcat. */
async function expectReadable(topic: string): Promise<void> {
  await expectHighWatermarkAtAcknowledged(topic);
  await expectKcatReadsAcknowledged(topic);
}

async function expectHighWatermarkAtAcknowledged(topic: string): Promise<void> {
  expectStoredAsAcknowledged(topic);
  const end = endOf(topic);
  await expect.poll(async () => (await latestOffset(topic, -1n)).offset, { timeout: 10_000, interval: 50 }).toBe(end);
}

async function expectKcatReadsAcknowledged(topic: string): Promise<void> {
  const read = await kcatRead(broker.bootstrap, topic);
  const expected: KcatRecord[] = [];
  for (const batch of acknowledged.filter((b) => b.topic === topic)) {
    batch.values.forEach((value, i) => expected.push({ offset: batch.baseOffset + BigInt(i), timestamp: batch.timestamps?.[i] ?? -2n, value }));
  }
  expect(read.map((r) => [r.offset, r.value]), `${topic} as kcat reads it`).toEqual(expected.map((r) => [r.offset, r.value]));
  expected.forEach((record, i) => {
    if (record.timestamp !== -2n) expect(read[i]?.timestamp, `${topic} offset ${record.offset} timestamp`).toBe(record.timestamp);
  });
}

/** The batches in a partition's segment files, in order. */
function storedBatches(topic: string): { baseOffset: bigint; bytes: Buffer }[] {
  const directory = join(broker.dataDir, `${topic}-0`);
  const batches: { baseOffset: bigint; bytes: Buffer }[] = [];
  for (const file of readdirSync(directory).filter((name) => /^\d{20}\.log$/.test(name)).sort()) {
    const content = readFileSync(join(directory, file));
    let at = 0;
    while (at < content.length) {
      if (at + LOG_OVERHEAD > content.length) throw new Error(`${topic}/${file}: ${content.length - at} stray bytes at ${at}`);
      const size = content.readInt32BE(at + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
      if (size < RECORD_BATCH_OVERHEAD || at + size > content.length) throw new Error(`${topic}/${file}: batch at byte ${at} declares ${size} bytes`);
      batches.push({ baseOffset: content.readBigInt64BE(at), bytes: content.subarray(at, at + size) });
      at += size;
    }
  }
  return batches;
}

/**
 * Bytes from BatchLength on, with PartitionLeaderEpoch (bytes 12–15 of the batch, outside the CRC)
 * set to `epoch`: the leader stamps its epoch there, as Kafka does; every other byte is the producer's.
 */
function withLeaderEpoch(fromBatchLength: Buffer, epoch: number): string {
  const copy = Buffer.from(fromBatchLength);
  copy.writeInt32BE(epoch, PARTITION_LEADER_EPOCH_OFFSET - BATCH_LENGTH_OFFSET);
  return copy.toString('hex');
}

/** The leader epoch a stored batch carries (a new partition's first leader has epoch 0; a restart elects anew). */
function storedEpoch(batch: Buffer): number {
  return batch.readInt32BE(PARTITION_LEADER_EPOCH_OFFSET);
}

/** The partition's segment files hold exactly its acknowledged batches, byte for byte, each one the validator accepts as stored. */
function expectStoredAsAcknowledged(topic: string): void {
  const expected = acknowledged.filter((batch) => batch.topic === topic);
  const stored = storedBatches(topic);
  expect(stored.map((batch) => batch.baseOffset), `${topic}: stored batches`).toEqual(expected.map((batch) => batch.baseOffset));
  stored.forEach((batch, i) => {
    expect(storedEpoch(batch.bytes), `${topic} batch at ${batch.baseOffset}: a leader epoch`).toBeGreaterThanOrEqual(0);
    expect(batch.bytes.subarray(BATCH_LENGTH_OFFSET).toString('hex'), `${topic} batch at ${batch.baseOffset}`).toBe(withLeaderEpoch(expected[i]?.stored ?? Buffer.alloc(0), storedEpoch(batch.bytes)));
    expect(() => validation.validation.validateStoredBatch(Buffer.from(batch.bytes)), `${topic} batch at ${batch.baseOffset} (${validation.source} validator)`).not.toThrow();
  });
}

/** Every partition holds exactly its acknowledged batches, each valid; kcat reads them all. */
async function expectEverythingAcknowledged(): Promise<void> {
  // The conversation answers one request at a time; the kcat reads (each a process, mostly
  // waiting on its connection set-up) run a few at once to keep the restart tests short.
  for (const topic of topicsMade) await expectHighWatermarkAtAcknowledged(topic);
  const topics = [...topicsMade];
  const readers = Array.from({ length: 6 }, async () => {
    for (let topic = topics.shift(); topic !== undefined; topic = topics.shift()) await expectKcatReadsAcknowledged(topic);
  });
  await Promise.all(readers);
}

/** A plain batch's records section damaged by `damage`, recompressed with `codec`, CRC valid. */
function recompressed(values: readonly string[], codec: Exclude<CompressionName, 'none'>, damage: (section: Buffer) => Buffer): Buffer {
  const plain = encodeRecordBatch(values.map((value) => ({ value: Buffer.from(value), timestamp: Date.now() })));
  const section = damage(Buffer.from(plain.subarray(RECORD_BATCH_OVERHEAD)));
  const payload = compress(codec, section);
  const batch = Buffer.concat([plain.subarray(0, RECORD_BATCH_OVERHEAD), payload]);
  batch.writeInt32BE(batch.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET);
  batch.writeInt16BE(Compression[codec], ATTRIBUTES_OFFSET);
  writeBatchCrc(batch);
  return batch;
}

/** `batch` with its header MaxTimestamp set to `maxTimestamp` and the CRC recomputed (Kafka's rewrite). */
function withMaxTimestamp(batch: Buffer, maxTimestamp: bigint): Buffer {
  const copy = Buffer.from(batch);
  copy.writeBigInt64BE(maxTimestamp, MAX_TIMESTAMP_OFFSET);
  writeBatchCrc(copy);
  return copy;
}

/** One record of `value` at `timestamp` (exact int64: base timestamp = it, delta 0). */
function recordAt(timestamp: bigint, value: string): Buffer {
  const batch = encodeRecordBatch([{ value: Buffer.from(value), timestamp: 0 }]);
  batch.writeBigInt64BE(timestamp, 27);
  batch.writeBigInt64BE(timestamp, MAX_TIMESTAMP_OFFSET);
  writeBatchCrc(batch);
  return batch;
}

// ---------------------------------------------------------------------------------------------

describe('issue 16: a malformed produce request never corrupts, skips or bricks a partition', () => {
  it('case 1: a header MaxTimestamp of 2^63−1 over a record of 1,700,000,000,000 is accepted with MaxTimestamp corrected, and the partition keeps serving', async () => {
    const created: CreateTopicsResponse = await conversation.raw(CreateTopicsApi, 0, frame(CASE_1.createTopic));
    expect(created.topics).toEqual([expect.objectContaining({ name: 'repro-ts', errorCode: 0 })]);
    topicsMade.add('repro-ts');

    const first: ProduceResponse = await conversation.raw(ProduceApi, 3, frame(CASE_1.maxTimestampProduce));
    const sent = batchOfFrame(CASE_1.maxTimestampProduce);
    expect(sent.readBigInt64BE(MAX_TIMESTAMP_OFFSET)).toBe(INT64_MAX);
    expectAccepted(first.responses[0]?.partitionResponses[0] as ProducePartitionResponse, 'repro-ts', withMaxTimestamp(sent, ISSUE_TIMESTAMP), ['x'], [ISSUE_TIMESTAMP]);

    const second: ProduceResponse = await conversation.raw(ProduceApi, 3, frame(CASE_1.normalProduce));
    expectAccepted(second.responses[0]?.partitionResponses[0] as ProducePartitionResponse, 'repro-ts', batchOfFrame(CASE_1.normalProduce), ['after'], [ISSUE_TIMESTAMP]);
    // The issue saw every produce fail with KAFKA_STORAGE_ERROR ~200 ms later, once the index was persisted.
    await new Promise((resolve) => setTimeout(resolve, 600));
    await expectServing('repro-ts', 'later');
    const found = await latestOffset('repro-ts', ISSUE_TIMESTAMP);
    expect(found).toMatchObject({ errorCode: 0, offset: 0n, timestamp: ISSUE_TIMESTAMP });
  });

  it('case 1: a record timestamp of 2^63−1 is refused with INVALID_TIMESTAMP and record_errors under the default one-hour after-bound', async () => {
    const answer = await conversation.produce('repro-ts', 0, recordAt(INT64_MAX, 'far future'), { version: 8 });
    expectRefused(answer, [KafkaErrorCode.INVALID_TIMESTAMP]);
    expect(answer.recordErrors.map((error) => error.batchIndex)).toEqual([0]);
    // Two hours ahead is refused too; 30 minutes ahead is within the bound.
    expectRefused(await conversation.produce('repro-ts', 0, recordAt(now() + 7_200_000n, 'two hours ahead')), [KafkaErrorCode.INVALID_TIMESTAMP]);
    const soon = now() + 1_800_000n;
    const batch = recordAt(soon, 'half an hour ahead');
    expectAccepted(await conversation.produce('repro-ts', 0, Buffer.from(batch)), 'repro-ts', batch, ['half an hour ahead'], [soon]);
    await expectReadable('repro-ts');
  });

  it('case 1: with message.timestamp.after.max.ms=9223372036854775807 a record at 2^63−1 is kept exactly: ListOffsets and Fetch show it, the stored bytes are the producer\'s', async () => {
    await createTopic('repro-ts-max', { 'index.interval.bytes': '0', 'message.timestamp.after.max.ms': '9223372036854775807' });
    const batch = recordAt(INT64_MAX, 'end of time');
    expectAccepted(await conversation.produce('repro-ts-max', 0, Buffer.from(batch), { acks: 1 }), 'repro-ts-max', batch, ['end of time'], [INT64_MAX]);
    const normal = encodeRecordBatch([{ value: Buffer.from('after'), timestamp: Date.now() }]);
    expectAccepted(await conversation.produce('repro-ts-max', 0, Buffer.from(normal), { acks: 1 }), 'repro-ts-max', normal, ['after']);
    await new Promise((resolve) => setTimeout(resolve, 600));
    await expectServing('repro-ts-max', 'later');
    expect(await latestOffset('repro-ts-max', INT64_MAX)).toMatchObject({ errorCode: 0, offset: 0n, timestamp: INT64_MAX });
    const first = storedBatches('repro-ts-max')[0]?.bytes ?? Buffer.alloc(0);
    expect(first.subarray(BATCH_LENGTH_OFFSET).toString('hex')).toBe(withLeaderEpoch(batch.subarray(BATCH_LENGTH_OFFSET), storedEpoch(first)));

    // The start-up failure of the issue: a 5,000-byte record at 2^63−1 and one more batch, default index interval.
    await createTopic('repro-ts-big', { 'message.timestamp.after.max.ms': '9223372036854775807' });
    const big = recordAt(INT64_MAX, 'b'.repeat(5000));
    expectAccepted(await conversation.produce('repro-ts-big', 0, Buffer.from(big)), 'repro-ts-big', big, ['b'.repeat(5000)], [INT64_MAX]);
    const more = encodeRecordBatch([{ value: Buffer.from('one more'), timestamp: Date.now() }]);
    expectAccepted(await conversation.produce('repro-ts-big', 0, Buffer.from(more)), 'repro-ts-big', more, ['one more']);
    await expectReadable('repro-ts-big');
  });

  it('case 2: a batch claiming 2^31−1 records while holding one is refused (twice), and the next batches get offsets 0 and 1', async () => {
    const created: CreateTopicsResponse = await conversation.raw(CreateTopicsApi, 0, frame(CASE_2.createTopic));
    expect(created.topics).toEqual([expect.objectContaining({ name: 'repro-idx', errorCode: 0 })]);
    topicsMade.add('repro-idx');
    for (let i = 0; i < 2; i += 1) {
      const answer: ProduceResponse = await conversation.raw(ProduceApi, 3, frame(CASE_2.lyingCount));
      expectRefused(answer.responses[0]?.partitionResponses[0] as ProducePartitionResponse, REFUSED_RECORD);
    }
    for (const value of ['normal-1', 'normal-2']) {
      const batch = encodeRecordBatch([{ value: Buffer.from(value), timestamp: Date.now() }]);
      expectAccepted(await conversation.produce('repro-idx', 0, Buffer.from(batch), { version: 3, acks: 1 }), 'repro-idx', batch, [value]);
    }
    await expectReadable('repro-idx');
    expect(await latestOffset('repro-idx', -1n)).toMatchObject({ offset: 2n });
  });

  it.each([
    ['the count claims 5 records and the batch holds 1', 'countFiveHoldsOne', REFUSED_RECORD],
    ['snappy codec bits on plain records', 'snappyBitsOnPlain', [KafkaErrorCode.CORRUPT_MESSAGE]],
    ['gzip codec bits on a payload that is not gzip', 'gzipBitsNotGzip', [KafkaErrorCode.CORRUPT_MESSAGE]],
    ['a record length varint longer than the record', 'recordLengthTooLong', REFUSED_RECORD],
  ] as const)('case 3: %s is refused and nothing is stored', async (_what, key, codes) => {
    if (!topicsMade.has('repro-bad')) {
      const created: CreateTopicsResponse = await conversation.raw(CreateTopicsApi, 0, frame(CASE_3.createTopic));
      expect(created.topics).toEqual([expect.objectContaining({ name: 'repro-bad', errorCode: 0 })]);
      topicsMade.add('repro-bad');
    }
    const answer: ProduceResponse = await conversation.raw(ProduceApi, 3, frame(CASE_3[key]));
    expectRefused(answer.responses[0]?.partitionResponses[0] as ProducePartitionResponse, codes);
    await expectServing('repro-bad', key);
  });

  describe('every rule of the record validator', () => {
    // Each rule its own topic: one wrongly accepted batch must not shift the offsets of the others.
    const fresh = async (slug: string): Promise<string> => {
      const name = `rules-${slug}`.replace(/[^a-zA-Z0-9._-]/g, '-');
      await createTopic(name);
      return name;
    };
    const batchOf = (prefix: string, count = 3, codec: CompressionName = 'none'): Buffer =>
      encodeRecordBatch(values(count, prefix).map((value) => ({ value: Buffer.from(value), timestamp: Date.now(), headers: [{ key: 'h', value: Buffer.from('v') }] })), { compression: codec });

    it.each(['gzip', 'snappy', 'lz4', 'zstd'] as const)('accepts a valid %s batch on Produce v7+ and stores it byte for byte', async (codec) => {
      const topic = await fresh(`valid-${codec}`);
      const batch = batchOf(`valid-${codec}`, 4, codec);
      expectAccepted(await conversation.produce(topic, 0, Buffer.from(batch), { version: 7 }), topic, batch, values(4, `valid-${codec}`));
      await expectReadable(topic);
    });

    it('refuses zstd on Produce v3 with UNSUPPORTED_COMPRESSION_TYPE', async () => {
      const topic = await fresh('zstd-v3');
      expectRefused(await conversation.produce(topic, 0, batchOf('zstd-v3', 2, 'zstd'), { version: 3 }), [KafkaErrorCode.UNSUPPORTED_COMPRESSION_TYPE]);
      await expectServing(topic, 'after-zstd-v3');
    });

    it.each([5, 6, 7])('refuses codec bits %i with UNSUPPORTED_COMPRESSION_TYPE', async (bits) => {
      const topic = await fresh(`codec-${bits}`);
      const batch = batchOf(`codec-${bits}`);
      batch.writeInt16BE(bits, ATTRIBUTES_OFFSET);
      writeBatchCrc(batch);
      expectRefused(await conversation.produce(topic, 0, batch), [KafkaErrorCode.UNSUPPORTED_COMPRESSION_TYPE]);
      await expectServing(topic, `after-codec-${bits}`);
    });

    it.each(['gzip', 'snappy', 'lz4', 'zstd'] as const)('refuses a %s decompression bomb with CORRUPT_MESSAGE, without inflating it', async (codec) => {
      const topic = await fresh(`bomb-${codec}`);
      const header = batchOf(`bomb-${codec}`, 1).subarray(0, RECORD_BATCH_OVERHEAD);
      const batch = Buffer.concat([header, decompressionBomb(codec)]);
      batch.writeInt32BE(batch.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET);
      batch.writeInt16BE(Compression[codec], ATTRIBUTES_OFFSET);
      writeBatchCrc(batch);
      expect(batch.length).toBeLessThan(1_048_588);
      expectRefused(await conversation.produce(topic, 0, batch), [KafkaErrorCode.CORRUPT_MESSAGE]);
      await expectServing(topic, `after-bomb-${codec}`);
    });

    const damages: readonly [string, (section: Buffer) => Buffer][] = [
      ['record length one too long', (section) => ((section[0] = (section[0] ?? 0) + 2), section)],
      ['key length lying', (section) => ((section[4] = 0x7e), section)],
      ['stray byte after the last record', (section) => Buffer.concat([section, Buffer.from([0])])],
      ['last record cut short', (section) => section.subarray(0, section.length - 1)],
    ];
    for (const codec of ['gzip', 'snappy', 'lz4', 'zstd'] as const) {
      it.each(damages)(`refuses a ${codec} batch whose inner records are damaged (%s), recompressed, CRC recomputed`, async (what, damage) => {
        const topic = await fresh(`inner-${codec}-${what}`);
        const batch = recompressed(values(3, `inner-${codec}`), codec, damage);
        expectRefused(await conversation.produce(topic, 0, batch), REFUSED_RECORD);
        await expectServing(topic, `after-inner-${codec}-${what.replace(/ /g, '-')}`);
      });
    }

    it('refuses offset deltas that are not 0, 1, 2, … with INVALID_RECORD', async () => {
      const topic = await fresh('offset-deltas');
      for (const deltas of [[0, 2, 2], [1, 2, 3], [0, 0, 1], [0, 1, 1]]) {
        const records = values(3, 'delta').map((value) => ({ value: Buffer.from(value), timestamp: 1_700_000_000_000 }));
        const batch = encodeRecordBatch(records);
        // Each record: length, attributes, timestamp delta 0, offset delta (1-byte varints here).
        let at = RECORD_BATCH_OVERHEAD;
        for (const delta of deltas) {
          expect(batch[at + 1]).toBe(0);
          expect(batch[at + 2]).toBe(0);
          batch[at + 3] = delta * 2;
          at += 1 + (batch[at] ?? 0) / 2;
        }
        writeBatchCrc(batch);
        expectRefused(await conversation.produce(topic, 0, batch), [KafkaErrorCode.INVALID_RECORD]);
      }
      await expectServing(topic, 'after-offset-deltas');
    });

    it('refuses a batch claiming LogAppendTime from a client with INVALID_TIMESTAMP', async () => {
      const topic = await fresh('log-append-time');
      const batch = batchOf('log-append-time');
      batch.writeInt16BE(TIMESTAMP_TYPE_FLAG, ATTRIBUTES_OFFSET);
      writeBatchCrc(batch);
      expectRefused(await conversation.produce(topic, 0, batch), [KafkaErrorCode.INVALID_TIMESTAMP]);
      await expectServing(topic, 'after-log-append-time');
    });

    it('refuses a control batch and a producer id without a base sequence with INVALID_RECORD', async () => {
      const topic = await fresh('control');
      const control = batchOf('control');
      control.writeInt16BE(CONTROL_FLAG, ATTRIBUTES_OFFSET);
      writeBatchCrc(control);
      expectRefused(await conversation.produce(topic, 0, control), [KafkaErrorCode.INVALID_RECORD]);
      const sequence = batchOf('sequence');
      sequence.writeBigInt64BE(7n, PRODUCER_ID_OFFSET);
      sequence.writeInt32BE(-1, BASE_SEQUENCE_OFFSET);
      writeBatchCrc(sequence);
      expectRefused(await conversation.produce(topic, 0, sequence), [KafkaErrorCode.INVALID_RECORD]);
      await expectServing(topic, 'after-control');
    });

    it('rewrites a header MaxTimestamp that disagrees with the records (and the CRC), as Kafka does, for plain and compressed batches', async () => {
      const topic = await fresh('max-timestamp');
      for (const codec of ['none', 'lz4'] as const) {
        const batch = batchOf(`max-ts-${codec}`, 2, codec);
        const truth = batch.readBigInt64BE(MAX_TIMESTAMP_OFFSET);
        const lying = withMaxTimestamp(batch, truth - 5000n);
        expectAccepted(await conversation.produce(topic, 0, Buffer.from(lying)), topic, batch, values(2, `max-ts-${codec}`));
      }
      await expectReadable(topic);
    });
  });

  it('comes back after a clean restart with every acknowledged batch stored byte for byte and readable by kcat with check.crcs=true', async () => {
    await expectEverythingAcknowledged();
    conversation.close();
    expect(await broker.stop()).toBe(0);
    await broker.restart();
    conversation = await Conversation.open(broker.port);
    await expectEverythingAcknowledged();
  });

  it('comes back after SIGKILL the same way, and serves every partition', async () => {
    for (const topic of topicsMade) if (topic.startsWith('rules-valid')) await expectAppendAccepted(topic, 'before-kill');
    conversation.close();
    await broker.kill();
    await broker.restart();
    conversation = await Conversation.open(broker.port);
    await expectEverythingAcknowledged();
    for (const topic of topicsMade) await expectAppendAccepted(topic, 'after-kill');
    await expectEverythingAcknowledged();
  }, 240_000);
});
