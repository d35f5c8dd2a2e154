/**
 * Checking what a leader's Fetch response carried before a follower appends it
 * (PartitionLog.appendAsFollower): whole RecordBatch v2 batches, intact, following on from the
 * follower's log end. Nothing here changes the log.
 */
import { TributaryError } from '../common/errors.js';
import {
  BATCH_LENGTH_OFFSET,
  computeBatchCrc,
  CURRENT_MAGIC,
  LOG_OVERHEAD,
  readBatchHeader,
  RECORD_BATCH_OVERHEAD,
  type RecordBatchHeader,
} from '../protocol/record-batch.js';

/** A whole batch of a leader's records, checked, at `position` in the buffer. */
export interface FollowerBatch {
  readonly position: number;
  readonly size: number;
  readonly header: RecordBatchHeader;
  readonly baseOffset: number;
  readonly lastOffset: number;
}

/** The follower's log the batches are for (named in errors). */
export interface FollowerLogEnd {
  readonly name: string;
  readonly topic: string;
  readonly partition: number;
  readonly logEndOffset: number;
}

/**
 * The whole batches of a leader's records, checked (see `PartitionLog.appendAsFollower`); throws
 * on the first bad one. `largest` is the largest batch any topic setting allows.
 */
export function checkFollowerBatches(records: Buffer, log: FollowerLogEnd, largest: number): FollowerBatch[] {
  const batches: FollowerBatch[] = [];
  let expected = log.logEndOffset;
  let position = 0;
  while (records.length - position >= LOG_OVERHEAD) {
    const at = position;
    const index = batches.length;
    const refuse = (code: 'REPLICA_BATCH_INVALID' | 'REPLICA_OFFSET_MISMATCH', why: string, details: Record<string, unknown> = {}): TributaryError =>
      new TributaryError({
        code,
        message: `batch ${index} (at byte ${at}) replicated to log ${log.name} ${why}; nothing was appended`,
        details: { topic: log.topic, partition: log.partition, batch: index, position: at, logEndOffset: log.logEndOffset, ...details },
      });
    const size = records.readInt32BE(at + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
    if (size < RECORD_BATCH_OVERHEAD || size > largest) {
      throw refuse('REPLICA_BATCH_INVALID', `declares ${size} bytes, outside ${RECORD_BATCH_OVERHEAD} to ${largest}`, { size });
    }
    // The leader's response stopped inside this batch: the next fetch brings it whole.
    if (at + size > records.length) break;
    const header = readBatchHeader(records, at);
    if (header.magic !== CURRENT_MAGIC) throw refuse('REPLICA_BATCH_INVALID', `has magic ${header.magic}, not ${CURRENT_MAGIC}`, { magic: header.magic });
    const crc = computeBatchCrc(records, at, size);
    if (crc !== header.crc) throw refuse('REPLICA_BATCH_INVALID', `fails its CRC-32C (stored ${header.crc}, computed ${crc})`, { storedCrc: header.crc, computedCrc: crc });
    // A leader's compacted batches hold fewer records than offsets (none, for a kept header).
    if (header.recordsCount < 0 || header.lastOffsetDelta < 0 || header.recordsCount > header.lastOffsetDelta + 1) {
      throw refuse('REPLICA_BATCH_INVALID', `holds ${header.recordsCount} records with last offset delta ${header.lastOffsetDelta}`, {
        recordsCount: header.recordsCount,
        lastOffsetDelta: header.lastOffsetDelta,
      });
    }
    const baseOffset = Number(header.baseOffset);
    // Past `expected` is a gap the leader's cleaner left (removed batches); before it, an overlap.
    if (baseOffset < expected) {
      throw refuse('REPLICA_OFFSET_MISMATCH', `starts at offset ${header.baseOffset} where ${expected} or later was expected (${index === 0 ? 'the log end' : 'the end of the batch before'})`, {
        baseOffset: String(header.baseOffset),
        expected,
      });
    }
    const lastOffset = baseOffset + header.lastOffsetDelta;
    if (lastOffset >= Number.MAX_SAFE_INTEGER) throw refuse('REPLICA_BATCH_INVALID', `ends at offset ${lastOffset}, past the largest offset this broker can hold`);
    batches.push({ position: at, size, header, baseOffset, lastOffset });
    expected = lastOffset + 1;
    position = at + size;
  }
  return batches;
}
