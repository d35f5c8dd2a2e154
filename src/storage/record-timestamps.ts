/**
 * ListOffsets by time: the first record at or after a timestamp, found in a log's segments and
 * resolved within its batch by exact record timestamps. The general decoder
 * (protocol/records.ts) gives timestamps as JS numbers, which cannot hold every int64; here the
 * base timestamp and each delta stay bigint, so a lookup near 2^63−1 compares and answers exactly.
 */
import { decompress } from '../protocol/compression.js';
import { KafkaProtocolError } from '../protocol/kafka-errors.js';
import { COMPRESSION_MASK, RECORD_BATCH_OVERHEAD, TIMESTAMP_TYPE_FLAG, readBatchHeader } from '../protocol/record-batch.js';
import { readFully } from './batch-scan.js';
import type { Mark } from './local-log.js';
import type { LogSegment } from './segment.js';

export interface RecordTime {
  readonly offset: number;
  readonly timestamp: bigint;
}

/**
 * The first record with timestamp ≥ `timestamp` in `segments` below `highWatermark`, if any.
 * `checkReadable` throws once the log stopped serving; it is asked again after each read.
 */
export async function recordAtOrAfterTime(
  segments: readonly LogSegment[],
  highWatermark: Mark,
  timestamp: bigint,
  checkReadable: () => void,
): Promise<RecordTime | undefined> {
  // A copy: retention may drop segments from the list while this waits on a read.
  for (const segment of [...segments]) {
    if (segment.baseOffset >= highWatermark.offset) break;
    if (segment.isClosed || segment.maxTimestamp < timestamp) continue;
    const end = segment === highWatermark.segment ? highWatermark.position : segment.size;
    const batch = segment.findBatchByTime(timestamp, end);
    if (batch === undefined) continue;
    const bytes = Buffer.allocUnsafe(batch.size);
    // Held across the read, so the descriptor cannot be closed (and its number reused) under it.
    segment.retain();
    let read: number;
    try {
      read = await readFully(segment.fd, bytes, batch.size, batch.position);
    } finally {
      segment.release();
    }
    checkReadable();
    if (read < batch.size) continue;
    // Resolved to the exact record, decompressing the batch if it is compressed.
    const record = firstRecordAtOrAfter(bytes, timestamp);
    if (record !== undefined) return record;
  }
  return undefined;
}

/** The first record of the batch in `bytes` whose timestamp is ≥ `timestamp`, if any. */
export function firstRecordAtOrAfter(bytes: Buffer, timestamp: bigint): RecordTime | undefined {
  const header = readBatchHeader(bytes, 0);
  const baseOffset = Number(header.baseOffset);
  if ((header.attributes & TIMESTAMP_TYPE_FLAG) !== 0) {
    // LogAppendTime: every record's timestamp is the batch's MaxTimestamp (Kafka ignores the deltas).
    return header.maxTimestamp >= timestamp ? { offset: baseOffset, timestamp: header.maxTimestamp } : undefined;
  }
  const end = Math.min(bytes.length, header.sizeInBytes);
  const codec = header.attributes & COMPRESSION_MASK;
  const records = codec === 0 ? bytes.subarray(RECORD_BATCH_OVERHEAD, end) : decompress(codec, bytes.subarray(RECORD_BATCH_OVERHEAD, end));
  const cursor = { position: 0 };
  for (let index = 0; index < header.recordsCount && cursor.position < records.length; index += 1) {
    const length = Number(readVarlong(records, cursor));
    const recordEnd = cursor.position + length;
    if (length < 1 || recordEnd > records.length) throw corrupt(`record ${index} length ${length} runs past its batch`);
    cursor.position += 1; // attributes
    const recordTimestamp = header.baseTimestamp + readVarlong(records, cursor);
    const offsetDelta = Number(readVarlong(records, cursor));
    if (recordTimestamp >= timestamp) return { offset: baseOffset + offsetDelta, timestamp: recordTimestamp };
    cursor.position = recordEnd;
  }
  return undefined;
}

/** A zigzag varint or varlong (Kafka's record fields), as a bigint; at most 10 bytes. */
function readVarlong(bytes: Buffer, cursor: { position: number }): bigint {
  let result = 0n;
  for (let shift = 0n; shift <= 63n; shift += 7n) {
    const byte = bytes[cursor.position];
    if (byte === undefined) throw corrupt('record field cut short');
    cursor.position += 1;
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return BigInt.asIntN(64, (result >> 1n) ^ -(result & 1n));
  }
  throw corrupt('varlong longer than 10 bytes');
}

function corrupt(why: string): KafkaProtocolError {
  return new KafkaProtocolError('CORRUPT_MESSAGE', `stored batch cannot be read for a timestamp lookup: ${why}`);
}
