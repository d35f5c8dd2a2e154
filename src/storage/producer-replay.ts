/**
 * Rebuilding producer state from a segment file: the headers of its batches, read in windows
 * (the records are never decoded), applied through the same rules as an append
 * (ProducerStateTable.apply — without its checks: what is in the log is the truth).
 */
import {
  ATTRIBUTES_OFFSET,
  BASE_SEQUENCE_OFFSET,
  BATCH_LENGTH_OFFSET,
  LAST_OFFSET_DELTA_OFFSET,
  LOG_OVERHEAD,
  MAX_TIMESTAMP_OFFSET,
  PRODUCER_EPOCH_OFFSET,
  PRODUCER_ID_OFFSET,
  RECORD_BATCH_OVERHEAD,
  TIMESTAMP_TYPE_FLAG,
} from '../protocol/record-batch.js';
import { readFullySync } from './batch-scan.js';
import { hasProducerId, type ProducerStateTable } from './producer-state.js';

const HEADER_WINDOW = 64 * 1024;

/**
 * Applies the producer batches of [start, end) of a segment file to `table`; returns how many
 * producer batches it applied. `now` stands in for the append time of a batch whose MaxTimestamp
 * is missing or in the future (the broker's append time is not stored; a CreateTime timestamp was
 * within the topic's bounds of it when appended, so it is the best estimate of when the producer
 * was last active). A producer idle `expirationMs` before a batch starts afresh there, as expiry
 * made it do when the batch was appended.
 */
export function replayProducerBatches(table: ProducerStateTable, fd: number, start: number, end: number, now: number, expirationMs: number): number {
  const window = Buffer.allocUnsafe(HEADER_WINDOW);
  let windowStart = 0;
  let windowLength = 0;
  let position = start;
  let applied = 0;
  while (position + RECORD_BATCH_OVERHEAD <= end) {
    if (position < windowStart || position + RECORD_BATCH_OVERHEAD > windowStart + windowLength) {
      windowStart = position;
      windowLength = readFullySync(fd, window, Math.min(HEADER_WINDOW, end - position), position);
      if (windowLength < RECORD_BATCH_OVERHEAD) break;
    }
    const at = position - windowStart;
    const size = window.readInt32BE(at + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
    if (size < RECORD_BATCH_OVERHEAD || position + size > end) break;
    const producerId = window.readBigInt64BE(at + PRODUCER_ID_OFFSET);
    if (hasProducerId({ producerId })) {
      const maxTimestamp = window.readBigInt64BE(at + MAX_TIMESTAMP_OFFSET);
      const logAppendTime = (window.readInt16BE(at + ATTRIBUTES_OFFSET) & TIMESTAMP_TYPE_FLAG) !== 0 ? maxTimestamp : -1n;
      table.apply(
        {
          producerId,
          producerEpoch: window.readInt16BE(at + PRODUCER_EPOCH_OFFSET),
          baseSequence: window.readInt32BE(at + BASE_SEQUENCE_OFFSET),
          lastOffsetDelta: window.readInt32BE(at + LAST_OFFSET_DELTA_OFFSET),
        },
        {
          firstOffset: Number(window.readBigInt64BE(at)),
          maxTimestamp,
          logAppendTime,
          appendedAt: maxTimestamp >= 0n && maxTimestamp <= BigInt(Math.trunc(now)) ? Number(maxTimestamp) : now,
        },
        expirationMs,
      );
      applied += 1;
    }
    position += size;
  }
  return applied;
}
