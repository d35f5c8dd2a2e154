/**
 * The values PartitionLog's methods take and return (appends, reads, follower appends, lookups
 * by time). Apart from partition-log.ts so the parts split from the log (write pipeline, ends)
 * can name them without importing the log; partition-log.ts re-exports them unchanged.
 */
import type { LogSlice } from './log-slice.js';
import type { RecordTime } from './record-timestamps.js';

export interface AppendResult {
  readonly baseOffset: number;
  readonly lastOffset: number;
  readonly logStartOffset: number;
  /** The broker's append time on a LogAppendTime topic, −1 otherwise. */
  readonly logAppendTime: bigint;
  /**
   * The batch repeats one of its producer's last five (same epoch and sequences): nothing was
   * appended, and the offsets and append time are the original's.
   */
  readonly duplicate: boolean;
}

export interface AppendOptions {
  /** acks=−1: resolve only once the batch is fsynced. */
  readonly waitForFlush?: boolean;
  /** The request may carry zstd (Produce v7+). */
  readonly allowZstd?: boolean;
  /**
   * A replicated partition's leader epoch: written into the batch's PartitionLeaderEpoch (outside
   * the CRC), and recorded in the leader-epoch cache when newer than its latest. Absent: the batch
   * is stored as the producer sent it, as for a partition that is not replicated.
   */
  readonly leaderEpoch?: number;
}

export interface ReadOptions {
  /**
   * How far a read may go: the high watermark (consumers; the default) or the written end (a
   * follower's fetch: batches in the file, fsynced or not).
   */
  readonly upTo?: 'highWatermark' | 'written';
}

/**
 * Who moves the high watermark: the log itself as it flushes ('flushed', a partition that is
 * not replicated) or only the replica manager, through `updateHighWatermark` ('replicated').
 */
export type HighWatermarkMode = 'flushed' | 'replicated';

/** The offsets of the batches a follower appended. */
export interface FollowerAppendResult {
  readonly batches: number;
  readonly firstOffset: number;
  readonly lastOffset: number;
}

export interface ReadResult {
  readonly slice: LogSlice | undefined;
  readonly highWatermark: number;
  readonly logStartOffset: number;
  readonly logEndOffset: number;
}

/** A record found by timestamp; the timestamp is exact (int64). */
export type TimestampLookup = RecordTime;
