/**
 * Reads a partition through the broker the way a careful client would, and checks every batch it
 * is served rather than trusting it: magic 2, the CRC-32C, offsets that follow on from the
 * previous batch, records that decode, leader epochs that never go back. Then checks the indexes
 * from the outside: fetches starting at random offsets must begin with the batch holding that
 * offset, and ListOffsets by timestamp must name the first record at or after the timestamp.
 * Used by the corrupt-files fault runs (test/chaos/corrupt-files.ts), where every finding is a
 * violation: a broker must never serve a damaged batch nor answer from a damaged index.
 */
import type { KafkaConnection } from '../../src/client/connection.js';
import { FetchApi } from '../../src/protocol/apis/fetch.js';
import { ListOffsetsApi } from '../../src/protocol/apis/list-offsets.js';
import { computeBatchCrc, CURRENT_MAGIC, LOG_OVERHEAD, readBatchHeader, RECORD_BATCH_OVERHEAD } from '../../src/protocol/record-batch.js';
import { decodeRecords } from '../../src/protocol/records.js';

export interface StoredRecord {
  readonly value: string;
  readonly timestamp: number;
}

export interface VerifiedPartition {
  readonly logStart: bigint;
  /** The high watermark: one past the last offset read. */
  readonly end: bigint;
  readonly records: ReadonlyMap<bigint, StoredRecord>;
  /** What the broker served that it must not have (each a sentence). */
  readonly violations: readonly string[];
}

const MAX_BYTES = 4 << 20;

function fetchAt(connection: KafkaConnection, topic: string, partition: number, offset: bigint) {
  return connection.request(FetchApi, 11, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: MAX_BYTES,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [{ topic, partitions: [{ partition, currentLeaderEpoch: -1, fetchOffset: offset, logStartOffset: -1n, partitionMaxBytes: MAX_BYTES }] }],
    forgottenTopicsData: [],
    rackId: '',
  });
}

interface ServedBatch {
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly epoch: number;
  readonly records: readonly { readonly offset: bigint; readonly value: string; readonly timestamp: number }[];
}

/** The whole batches of a fetch answer, each checked; a problem ends the walk with a violation. */
function servedBatches(bytes: Buffer, where: string, violations: string[]): ServedBatch[] {
  const batches: ServedBatch[] = [];
  let position = 0;
  while (position + LOG_OVERHEAD <= bytes.length) {
    const size = bytes.readInt32BE(position + 8) + LOG_OVERHEAD;
    if (position + size > bytes.length) break; // a partial batch at the end of a fetch is normal
    if (size < RECORD_BATCH_OVERHEAD) {
      violations.push(`${where}: served a batch of ${size} bytes at byte ${position} of the answer (shorter than a batch header)`);
      return batches;
    }
    const header = readBatchHeader(bytes, position);
    if (header.magic !== CURRENT_MAGIC) {
      violations.push(`${where}: served a batch with magic ${header.magic} at offset ${header.baseOffset}`);
      return batches;
    }
    if (computeBatchCrc(bytes, position, size) !== header.crc) {
      violations.push(`${where}: served a batch whose CRC does not match at offset ${header.baseOffset}`);
      return batches;
    }
    let records;
    try {
      records = decodeRecords(bytes, position).map((record) => ({ offset: record.offset, value: record.value?.toString('utf8') ?? '', timestamp: record.timestamp }));
    } catch (error) {
      violations.push(`${where}: served a batch at offset ${header.baseOffset} whose records do not decode: ${(error as Error).message}`);
      return batches;
    }
    batches.push({ baseOffset: header.baseOffset, lastOffset: header.baseOffset + BigInt(header.lastOffsetDelta), epoch: header.partitionLeaderEpoch, records });
    position += size;
  }
  return batches;
}

async function listOffset(connection: KafkaConnection, topic: string, partition: number, timestamp: bigint): Promise<bigint> {
  const answer = await connection.request(ListOffsetsApi, 1, { replicaId: -1, isolationLevel: 0, topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp }] }] });
  const result = answer.topics[0]?.partitions[0];
  if (result === undefined || result.errorCode !== 0) throw new Error(`ListOffsets ${topic}-${partition} at ${timestamp} failed with error ${result?.errorCode ?? 'none'}`);
  return result.offset;
}

/**
 * Reads `topic`-`partition` from its log start to its high watermark, checking every batch, then
 * probes `probes` random offsets and `probes` record timestamps (`random` in [0, 1)).
 */
export async function readVerified(connection: KafkaConnection, topic: string, partition: number, options: { readonly probes: number; readonly random: () => number }): Promise<VerifiedPartition> {
  const violations: string[] = [];
  const records = new Map<bigint, StoredRecord>();
  const logStart = await listOffset(connection, topic, partition, -2n);
  let next = logStart;
  let end = logStart;
  let lastEpoch = -1;
  for (;;) {
    const answer = (await fetchAt(connection, topic, partition, next)).responses[0]?.partitions[0];
    if (answer === undefined || answer.errorCode !== 0) {
      violations.push(`fetch of ${topic}-${partition} at ${next} failed with error ${answer?.errorCode ?? 'none'}`);
      break;
    }
    end = answer.highWatermark;
    if (next >= end) break;
    const bytes = Buffer.isBuffer(answer.records) ? answer.records : Buffer.alloc(0);
    const batches = servedBatches(bytes, `${topic}-${partition} read from ${next}`, violations);
    if (batches.length === 0) {
      if (violations.length === 0) violations.push(`${topic}-${partition}: a fetch at ${next} below the high watermark ${end} returned no whole batch`);
      break;
    }
    for (const batch of batches) {
      if (batch.baseOffset > next || batch.lastOffset < next) {
        violations.push(`${topic}-${partition}: expected the batch holding offset ${next}, was served [${batch.baseOffset}, ${batch.lastOffset}]`);
        return { logStart, end, records, violations };
      }
      if (batch.epoch < lastEpoch) violations.push(`${topic}-${partition}: the batch at ${batch.baseOffset} has leader epoch ${batch.epoch}, below the ${lastEpoch} of the batch before it`);
      lastEpoch = Math.max(lastEpoch, batch.epoch);
      for (const record of batch.records) if (record.offset >= next) records.set(record.offset, { value: record.value, timestamp: record.timestamp });
      next = batch.lastOffset + 1n;
    }
    if (violations.length > 0) break;
  }
  if (violations.length > 0 || end <= logStart) return { logStart, end, records, violations };

  // The offset index, from outside: a read from any offset starts with the batch holding it.
  const span = Number(end - logStart);
  for (let probe = 0; probe < options.probes; probe += 1) {
    const offset = logStart + BigInt(Math.floor(options.random() * span));
    const answer = (await fetchAt(connection, topic, partition, offset)).responses[0]?.partitions[0];
    const where = `${topic}-${partition} read from ${offset}`;
    if (answer === undefined || answer.errorCode !== 0) {
      violations.push(`${where} failed with error ${answer?.errorCode ?? 'none'}`);
      continue;
    }
    const first = servedBatches(Buffer.isBuffer(answer.records) ? answer.records : Buffer.alloc(0), where, violations)[0];
    if (first === undefined || first.baseOffset > offset || first.lastOffset < offset) {
      violations.push(`${where}: expected the batch holding ${offset} first, was served ${first === undefined ? 'none' : `[${first.baseOffset}, ${first.lastOffset}]`}`);
      continue;
    }
    for (const record of first.records) {
      const stored = records.get(record.offset);
      if (stored?.value !== record.value) violations.push(`${where}: offset ${record.offset} served as "${record.value}", the full read had "${stored?.value ?? 'nothing'}"`);
    }
  }

  // The time index, from outside: the first offset whose timestamp is at or after the target.
  const ordered = [...records.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  for (let probe = 0; probe < options.probes && ordered.length > 0; probe += 1) {
    const target = ordered[Math.floor(options.random() * ordered.length)]?.[1].timestamp ?? 0;
    const expected = ordered.find(([, record]) => record.timestamp >= target)?.[0] ?? end;
    const answered = await listOffset(connection, topic, partition, BigInt(target));
    if (answered !== expected) violations.push(`${topic}-${partition}: ListOffsets at timestamp ${target} answered ${answered}, the first record at or after it is at ${expected}`);
  }
  return { logStart, end, records, violations };
}
