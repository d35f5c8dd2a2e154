/**
 * A follower's truncation (reference/replication.md §5.6; Kafka's UnifiedLog.truncateTo and
 * truncateFullyAndStartAt): cutting the log back to where it diverged from its leader, or
 * emptying it to start afresh, in one synchronous step between flushes, then fsyncing the cut
 * while holding the flush slot. Apart from partition-log.ts because it is the one operation that
 * moves every part of the log backwards at once (segments, ends, producer state, epochs, log
 * start) and must leave them consistent or the log offline; it reaches the rest of the log
 * through `TruncationHooks`.
 */
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { KafkaProtocolError } from '../protocol/kafka-errors.js';
import { fsyncDirectoryAsync } from './durable-files.js';
import type { LeaderEpochCache } from './leader-epoch-cache.js';
import type { LocalLog, Mark, SegmentCut } from './local-log.js';
import type { LogConfig } from './log-config.js';
import type { LogEnds } from './log-ends.js';
import type { LogStatus } from './log-status.js';
import type { ProducerStateManager } from './producer-state-manager.js';
import type { LogSegment } from './segment.js';
import type { WritePipeline } from './write-pipeline.js';

/** What a truncation reads from the log, changes in it, and tells it (the log's events, bound to it). */
export interface TruncationHooks {
  /** Read at each use: the topic's config may be replaced. */
  config(): LogConfig;
  /** Opened when the log loads, after this object is made. */
  epochCache(): LeaderEpochCache;
  logStartOffset(): number;
  setLogStartOffset(offset: number): void;
  truncating(end: number): void;
  highWatermarkAdvanced(): void;
  logStartOffsetChanged(): void;
  flushed(): void;
}

/** The producer state's part in a truncation: rebuilt or cleared, and its snapshot writes waited out. */
export type TruncatedProducerState = Pick<ProducerStateManager, 'rebuild' | 'clear' | 'writingSnapshots' | 'whenSnapshotsWritten'>;

export class LogTruncation {
  constructor(
    private readonly name: string,
    private readonly directory: string,
    private readonly local: LocalLog,
    private readonly ends: LogEnds,
    private readonly writes: WritePipeline,
    private readonly status: LogStatus,
    private readonly producerState: TruncatedProducerState,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly hooks: TruncationHooks,
  ) {}

  /**
   * See PartitionLog.truncateTo for what is cut.
   *
   * Waits for a flush (or another truncation) in progress and for snapshot writes, then in one
   * synchronous step: refuses the appends queued for the next write (NOT_LEADER_OR_FOLLOWER;
   * a leader becoming follower), deletes later segments, cuts the file, rebuilds the cut
   * segment's offsets and index, pulls the written and flushed ends and the high watermark back
   * to the new end, rebuilds producer state (newest snapshot at or below the new end, deleting
   * later ones, plus replay) and removes leader epochs from the new end. Then it fsyncs the cut
   * file and the folder, holding the flush slot (flushes wait). Resolves with the end it cut to.
   *
   * Readers: a slice of a deleted segment stays readable (it holds the descriptor); a slice of
   * the cut segment that reached past the cut reads short (the Fetch writer then fails that
   * response rather than frame it wrong) or, once new batches are appended, may end in bytes of
   * them. Consumers never read above the high watermark, which a replica never holds above what
   * its leader committed, and followers fetch only from leaders, which do not truncate: a cut
   * under a reader is not expected, only made harmless.
   */
  async truncateTo(offset: number): Promise<number> {
    for (let busy = this.busyForTruncation(); busy !== undefined; busy = this.busyForTruncation()) await busy;
    // From here to the fsync nothing awaits: no append, flush or read runs inside the cut.
    this.writes.cancelPendingWrites(this.truncatingError());
    const previousEnd = this.local.logEndOffset;
    if (offset >= previousEnd) {
      try {
        this.hooks.epochCache().truncateFromEnd(previousEnd);
      } catch (error) {
        throw this.truncationFailure(error);
      }
      return previousEnd;
    }
    if (offset <= this.hooks.logStartOffset()) {
      await this.startAfresh(this.hooks.logStartOffset(), offset);
      return this.local.logEndOffset;
    }
    const index = this.local.segmentIndexFor(offset);
    const segment = this.local.segments[index];
    if (segment === undefined) throw new Error(`log ${this.name} has no segment`);
    const holding = segment.findBatch(offset, segment.size);
    const cutPosition = holding?.position ?? segment.size;
    // Inside a gap the cleaner left (the batch found starts after `offset`), the log ends where the
    // batch before it did: known once the segment is cut.
    const inGap = holding !== undefined && holding.baseOffset > offset;
    let newEnd = holding === undefined ? segment.nextOffset : Math.min(holding.baseOffset, offset);
    if (newEnd <= this.hooks.logStartOffset()) {
      await this.startAfresh(this.hooks.logStartOffset(), offset);
      return this.local.logEndOffset;
    }
    // Before anything is cut: inside a gap the end is known only after the cut, but not below the segment's base.
    this.hooks.truncating(inGap ? segment.baseOffset : newEnd);
    let cut: SegmentCut;
    try {
      cut = this.local.truncateTo(index, cutPosition, this.hooks.config());
      if (inGap && segment.nextOffset <= newEnd) newEnd = segment.nextOffset;
      if (segment.nextOffset !== newEnd) throw new Error(`segment ${segment.baseOffset} ends at ${segment.nextOffset} after the cut, not ${newEnd}`);
      this.ends.cutBackTo(newEnd, this.local.endMark());
      this.producerState.rebuild(this.local, this.hooks.logStartOffset());
      this.hooks.epochCache().truncateFromEnd(newEnd);
    } catch (error) {
      throw this.truncationFailure(error);
    }
    this.logger.info(
      { requested: offset, logEndOffset: newEnd, previousLogEndOffset: previousEnd, segmentsDeleted: cut.removed.map((later) => later.baseOffset), bytesTruncated: cut.bytesCut },
      'truncated the log (follower)',
    );
    await this.syncTruncation([...cut.toSync], this.local.endMark());
    return newEnd;
  }

  /** See PartitionLog.truncateFullyAndStartAt. */
  async truncateFullyAndStartAt(offset: number): Promise<void> {
    for (let busy = this.busyForTruncation(); busy !== undefined; busy = this.busyForTruncation()) await busy;
    this.writes.cancelPendingWrites(this.truncatingError());
    await this.startAfresh(offset, offset);
  }

  /** What a truncation must wait for: a flush or truncation under way, or snapshot writes (which could land a snapshot it deleted). */
  private busyForTruncation(): Promise<unknown> | undefined {
    this.status.checkWritable();
    const inFlight = this.writes.inFlight;
    if (inFlight !== undefined) return inFlight.catch(() => undefined);
    if (this.producerState.writingSnapshots) return this.producerState.whenSnapshotsWritten();
    return undefined;
  }

  /** The synchronous part of `truncateFullyAndStartAt`, then its fsync (see PartitionLog.truncateFullyAndStartAt). */
  private startAfresh(offset: number, requested: number): Promise<void> {
    const previous = { logStartOffset: this.hooks.logStartOffset(), logEndOffset: this.local.logEndOffset, segments: this.local.baseOffsets.slice() };
    const highWatermark = this.ends.highWatermark.offset;
    try {
      this.hooks.truncating(offset);
      const doomed = this.local.truncateFullyAndStartAt(offset, this.clock.now());
      this.hooks.setLogStartOffset(offset);
      this.ends.emptiedAt(this.local.endMark());
      for (const segment of doomed) segment.delete();
      this.producerState.clear();
      this.hooks.epochCache().clear();
    } catch (error) {
      throw this.truncationFailure(error);
    }
    this.logger.info({ requested, logStartOffset: offset, previous }, 'emptied the log and started it afresh (follower)');
    if (offset > highWatermark) this.hooks.highWatermarkAdvanced();
    const run = (async () => {
      try {
        await fsyncDirectoryAsync(this.directory);
      } catch (error) {
        throw this.truncationFailure(error);
      }
      // Only once the deletions are durable: a start checkpoint past resurrected files would keep them.
      this.hooks.logStartOffsetChanged();
    })();
    return this.writes.holdFlushSlot(run);
  }

  /** fsyncs a truncation (the cut file, files with unflushed batches, the folder), holding the flush slot; then the flushed end is `end`. */
  private syncTruncation(segments: readonly LogSegment[], end: Mark): Promise<void> {
    const run = (async () => {
      try {
        for (const segment of segments) await segment.flush();
        await fsyncDirectoryAsync(this.directory);
      } catch (error) {
        throw this.truncationFailure(error);
      }
      if (end.offset > this.ends.flushed.offset) {
        this.ends.flushedTo(end);
        this.hooks.flushed();
      }
    })();
    return this.writes.holdFlushSlot(run);
  }

  /** A truncation that failed halfway leaves the log in no known state: offline until restart and recovery. */
  private truncationFailure(error: unknown): KafkaProtocolError {
    if (this.status.state === 'deleted') return this.status.unavailableError();
    if (error instanceof KafkaProtocolError && error === this.status.failure) return error;
    const failure = new KafkaProtocolError('KAFKA_STORAGE_ERROR', `truncating log ${this.name} failed; the log is offline until restart and recovery`, { cause: error });
    this.status.failure = failure;
    this.logger.error({ err: error }, 'truncation failed; taking the log offline');
    return failure;
  }

  private truncatingError(): KafkaProtocolError {
    return new KafkaProtocolError('NOT_LEADER_OR_FOLLOWER', `log ${this.name} is being truncated to follow a new leader; the batch was not written`);
  }
}
