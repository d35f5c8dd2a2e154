/**
 * Moving a partition's log start forward: retention deleting whole old segments, and
 * DeleteRecords or a follower taking its leader's start (Kafka's deleteOldSegments and
 * maybeIncrementLogStartOffset). Both make the new start durable before anything goes, then drop
 * the producers, snapshots, leader epochs and segments below it. Apart from partition-log.ts
 * because it is the one place the log shrinks from the front; it reaches the rest of the log
 * through `LogStartHooks`.
 */
import type { Logger } from '../common/logger.js';
import { KafkaProtocolError } from '../protocol/kafka-errors.js';
import type { LeaderEpochCache } from './leader-epoch-cache.js';
import type { LocalLog } from './local-log.js';
import { deletesByRetention, type LogConfig } from './log-config.js';
import type { LogEnds } from './log-ends.js';
import { moveEpochsToStart } from './log-epochs.js';
import type { ProducerStateManager } from './producer-state-manager.js';

/** What moving the log start reads from the log, changes in it, and tells it. */
export interface LogStartHooks {
  /** Read at each use: the topic's config may be replaced. */
  config(): LogConfig;
  /** Opened when the log loads, after this object is made. */
  epochCache(): LeaderEpochCache;
  logStartOffset(): number;
  setLogStartOffset(offset: number): void;
  /** The log's logStartOffsetChanged event, which records the new start durably: throws if it could not. */
  logStartOffsetChanged(): void;
}

/** The producer state's part: producers and snapshots below the new start are dropped. */
export type StartedProducerState = Pick<ProducerStateManager, 'producers' | 'deleteSnapshots'>;

export class LogStartMover {
  constructor(
    private readonly name: string,
    private readonly local: LocalLog,
    private readonly ends: LogEnds,
    private readonly producerState: StartedProducerState,
    private readonly logger: Logger,
    private readonly hooks: LogStartHooks,
  ) {}

  /** See PartitionLog.applyRetention (which refuses a log that is not open). */
  applyRetention(now: number): number {
    const config = this.hooks.config();
    // A compact-only log keeps its old segments: the cleaner, not age or size, decides what goes.
    const { retentionMs, retentionBytes } = deletesByRetention(config) ? config : { retentionMs: -1, retentionBytes: -1 };
    let remainingBytes = this.local.sizeInBytes;
    let deletable = 0;
    for (let index = 0; index < this.local.segments.length - 1; index += 1) {
      const segment = this.local.segments[index];
      if (segment === undefined || segment.nextOffset > this.ends.highWatermark.offset) break;
      // Timestamps are exact int64 (a producer's may be far in the future: such a segment never expires by time).
      const newest = segment.maxTimestamp >= 0n ? segment.maxTimestamp : BigInt(Math.trunc(segment.lastWrittenAt));
      const expired = retentionMs >= 0 && BigInt(now) - newest > BigInt(retentionMs);
      const oversized = retentionBytes >= 0 && remainingBytes - segment.size >= retentionBytes;
      if (!expired && !oversized) break;
      remainingBytes -= segment.size;
      deletable += 1;
    }
    if (deletable === 0) return 0;
    const previousStart = this.hooks.logStartOffset();
    this.hooks.setLogStartOffset(this.local.segments[deletable]?.baseOffset ?? previousStart);
    // The new start is made durable before any file goes, so a crash cannot resurrect them.
    try {
      this.hooks.logStartOffsetChanged();
    } catch (error) {
      // Not recorded (a full disk): nothing is deleted, the next retention pass tries again.
      this.hooks.setLogStartOffset(previousStart);
      this.logger.warn({ err: error, segments: deletable }, 'could not record the new log start; retention deletes nothing until it can');
      return 0;
    }
    const removed = this.local.deleteOldest(deletable);
    // Producers whose batches are all gone are unknown again (any sequence is accepted), as in Kafka.
    this.producerState.producers.removeBefore(this.hooks.logStartOffset());
    this.producerState.deleteSnapshots((offset) => offset < this.hooks.logStartOffset());
    moveEpochsToStart(this.hooks.epochCache(), this.hooks.logStartOffset(), this.logger);
    this.logger.info({ segments: removed.map((s) => s.baseOffset), logStartOffset: this.hooks.logStartOffset() }, 'retention deleted segments');
    return deletable;
  }

  /** See PartitionLog.incrementLogStartOffset (which checks the log and the offset first). */
  increment(offset: number): boolean {
    if (offset <= this.hooks.logStartOffset()) return false;
    if (offset > this.ends.highWatermark.offset) {
      throw new KafkaProtocolError('OFFSET_OUT_OF_RANGE', `cannot move the start of log ${this.name} to ${offset}: it is past the high watermark ${this.ends.highWatermark.offset}`, {
        details: { offset, highWatermark: this.ends.highWatermark.offset, logStartOffset: this.hooks.logStartOffset() },
      });
    }
    const previousStart = this.hooks.logStartOffset();
    this.hooks.setLogStartOffset(offset);
    try {
      this.hooks.logStartOffsetChanged();
    } catch (error) {
      this.hooks.setLogStartOffset(previousStart);
      throw new KafkaProtocolError('KAFKA_STORAGE_ERROR', `could not record the new start ${offset} of log ${this.name}; nothing was deleted — retry once the disk has room`, {
        cause: error,
        details: { offset, logStartOffset: previousStart },
      });
    }
    let covered = 0;
    const segments = this.local.segments;
    while (covered < segments.length - 1 && (segments[covered + 1]?.baseOffset ?? Infinity) <= offset) covered += 1;
    // Readers holding a segment keep its descriptor until they release it (as for retention).
    const removed = this.local.deleteOldest(covered);
    this.producerState.producers.removeBefore(offset);
    if (removed.length > 0) this.producerState.deleteSnapshots((snapshot) => snapshot < this.local.firstSegment().baseOffset);
    moveEpochsToStart(this.hooks.epochCache(), offset, this.logger);
    this.logger.info({ logStartOffset: offset, previousLogStartOffset: previousStart, segmentsDeleted: removed.map((segment) => segment.baseOffset) }, 'moved the log start');
    return true;
  }
}
