/**
 * A partition's log (paper §3.1): a folder `<topic>-<partition>/` of segments, found by binary
 * search over their base offsets. Producers' batches are validated, numbered and appended to the
 * last (active) segment; a flush fsyncs them and moves the high watermark, the end of what
 * consumers may read. Reads return file ranges of whole batches for the network layer to stream.
 *
 * Idempotent producers: each batch with a producer id is checked against the partition's producer
 * state (producer-state.ts) in the same synchronous step that numbers it; the state is kept across
 * restarts by `<offset>.snapshot` files (producer-snapshot.ts) taken on every roll and at close,
 * and rebuilt at load from the newest valid one plus a replay of the batches after it
 * (producer-replay.ts).
 *
 * Replication (reference/replication.md §5.5–5.6). A leader's appends carry its epoch, stamped
 * into each batch and recorded in the folder's leader-epoch cache (leader-epoch-cache.ts) before
 * the first batch of a new epoch is written; a follower appends the leader's bytes unchanged
 * (`appendAsFollower`) and cuts its log back where it diverged (`truncateTo`,
 * `truncateFullyAndStartAt`). Three ends, each at a batch boundary:
 *
 *   written end     one past the last batch in the file (the page cache): what followers read
 *   flushed end     one past the last fsynced batch (the recovery point)
 *   high watermark  what consumers read: the flushed end (or the written end with
 *                   visible.on.append) in 'flushed' mode, today's and the default; in
 *                   'replicated' mode only the replica manager moves it (`updateHighWatermark`)
 *
 * A truncation never cuts a batch in half, and never runs beside a flush: it waits for the one
 * in progress, and flushes wait for it (it holds the flush slot while it fsyncs the cut).
 *
 * This file is the log's public face (Kafka's UnifiedLog). The segment list is local-log.ts,
 * loading and recovery log-loader.ts, producer snapshots producer-state-manager.ts, the
 * cleaner's view and swap cleaner/cleanable-log.ts, the three ends log-ends.ts, writing and
 * flushing write-pipeline.ts, truncation log-truncation.ts, moving the log start log-start.ts,
 * whether it serves log-status.ts, and the types it takes and returns partition-log-types.ts.
 */
import { rmSync } from 'node:fs';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { TributaryError } from '../common/errors.js';
import { KafkaProtocolError } from '../protocol/kafka-errors.js';
import { validateProducerBatch } from '../protocol/batch-validation.js';
import { PARTITION_LEADER_EPOCH_OFFSET, setBaseOffset, TIMESTAMP_TYPE_FLAG } from '../protocol/record-batch.js';
import { checkFollowerBatches } from './follower-batches.js';
import { LeaderEpochCache } from './leader-epoch-cache.js';
import { assignEpoch, checkLeaderEpoch, forgetEpochsFrom, writeDeferredEpochs } from './log-epochs.js';
import { LocalLog } from './local-log.js';
import { isCompacted, largestBatchBytes, type LogConfig } from './log-config.js';
import { loadSegments } from './log-loader.js';
import { SegmentSlice } from './log-slice.js';
import { recordAtOrAfterTime } from './record-timestamps.js';
import type { AppendOptions, AppendResult, FollowerAppendResult, HighWatermarkMode, ReadOptions, ReadResult, TimestampLookup } from './partition-log-types.js';
import type { ProducerBatch, ProducerEntry, ProducerStateTable } from './producer-state.js';
import { ProducerStateManager } from './producer-state-manager.js';
import { LogStatus } from './log-status.js';
import { LogEnds } from './log-ends.js';
import { WritePipeline } from './write-pipeline.js';
import { LogTruncation } from './log-truncation.js';
import { LogStartMover } from './log-start.js';
import type { CleanedGroup } from './cleaner/clean-pass.js';
import { cleanableView, swapCleanedSegment, type CleanableView } from './cleaner/cleanable-log.js';

export type { LogSlice } from './log-slice.js';
export type { CleanableView } from './cleaner/cleanable-log.js';

export type {
  AppendOptions,
  AppendResult,
  FollowerAppendResult,
  HighWatermarkMode,
  ReadOptions,
  ReadResult,
  TimestampLookup,
} from './partition-log-types.js';

/** What the log tells its manager so checkpoints stay current. */
export interface LogEvents {
  logStartOffsetChanged(log: PartitionLog): void;
  /** New records became readable (the fetch long-poll wakes on this). */
  highWatermarkAdvanced(log: PartitionLog): void;
  /** The flushed end moved forward (a follower's next fetch may go; a leader's HW may move). */
  flushed?(log: PartitionLog): void;
  /** New batches reached the file (followers' fetch long-polls wake on this). */
  appended?(log: PartitionLog): void;
  /**
   * The log is about to be cut back so it ends at or above `end` (a follower's truncation): the
   * cleaner's first dirty offset must not stay above what will grow there again.
   */
  truncating?(log: PartitionLog, end: number): void;
}

export interface LoadOptions {
  readonly directory: string;
  readonly topic: string;
  readonly partition: number;
  readonly config: LogConfig;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: LogEvents;
  /** From `recovery-point-offset-checkpoint`; everything before it was fsynced. */
  readonly recoveryPoint: number;
  /** From `log-start-offset-checkpoint`. */
  readonly logStartOffset: number;
  /** True when the last stop was clean and nothing needs checking. */
  readonly cleanShutdown: boolean;
  /** producer.id.expiration.ms: producers idle this long are forgotten (`expireProducers`). */
  readonly producerIdExpirationMs?: number;
}

export const DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000;

export class PartitionLog {
  private readonly local: LocalLog;
  private readonly ends: LogEnds;
  private epochCache!: LeaderEpochCache;
  private readonly status: LogStatus;
  logStartOffset = 0;
  config: LogConfig;
  private readonly producerState: ProducerStateManager;
  /** The producer state's table (`producerState.producers`), which every append checks and records. */
  private readonly producers: ProducerStateTable;
  private readonly writes: WritePipeline;
  private readonly truncation: LogTruncation;
  private readonly logStart: LogStartMover;

  private constructor(
    readonly topic: string,
    readonly partition: number,
    readonly directory: string,
    config: LogConfig,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly events: LogEvents,
    producerIdExpirationMs: number,
  ) {
    this.config = config;
    this.status = new LogStatus(`${topic}-${partition}`);
    this.local = new LocalLog(directory, `${topic}-${partition}`, logger);
    this.ends = new LogEnds(this.local, () => this.events.highWatermarkAdvanced(this));
    this.producerState = new ProducerStateManager(`${topic}-${partition}`, directory, producerIdExpirationMs, clock, logger, () => this.status.state === 'deleted');
    this.producers = this.producerState.producers;
    this.writes = new WritePipeline(this.name, this.local, this.ends, this.status, this.producers, this.logger, {
      visibleOnAppend: () => this.config.visibleOnAppend,
      forgetEpochsFrom: (end) => forgetEpochsFrom(this.epochCache, end, this.logger),
      appended: () => this.events.appended?.(this),
      flushed: () => this.events.flushed?.(this),
    });
    // Bound once, shared by the parts that move the log start or cut the log back.
    const hooks = {
      config: () => this.config,
      epochCache: () => this.epochCache,
      logStartOffset: () => this.logStartOffset,
      setLogStartOffset: (offset: number) => {
        this.logStartOffset = offset;
      },
      truncating: (end: number) => this.events.truncating?.(this, end),
      highWatermarkAdvanced: () => this.events.highWatermarkAdvanced(this),
      logStartOffsetChanged: () => this.events.logStartOffsetChanged(this),
      flushed: () => this.events.flushed?.(this),
    };
    this.truncation = new LogTruncation(this.name, directory, this.local, this.ends, this.writes, this.status, this.producerState, clock, this.logger, hooks);
    this.logStart = new LogStartMover(this.name, this.local, this.ends, this.producerState, this.logger, hooks);
  }

  /** Opens (or creates) the log in `directory`, recovering it first after an unclean stop. */
  static async load(options: LoadOptions): Promise<PartitionLog> {
    const log = new PartitionLog(
      options.topic, options.partition, options.directory, options.config, options.clock,
      options.logger.child({ topic: options.topic, partition: options.partition }), options.events,
      options.producerIdExpirationMs ?? DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    );
    try {
      log.logStartOffset = await loadSegments(log.local, options, log.config, log.clock, log.logger);
      log.ends.startAt(log.local.endMark());
      log.producerState.load(log.local, log.logStartOffset);
      // Epochs past what recovery kept (assigned just before a crash, or on becoming leader with
      // nothing appended since) and before the log start are gone with their batches.
      log.epochCache = LeaderEpochCache.load(log.directory, log.logger);
      log.epochCache.truncateFromEnd(log.logEndOffset);
      log.epochCache.truncateFromStart(log.logStartOffset);
    } catch (error) {
      // Whatever was opened before the failure is let go: an offline log holds no descriptors.
      for (const segment of log.local.segments) segment.abandon();
      throw error;
    }
    return log;
  }

  get name(): string {
    return `${this.topic}-${this.partition}`;
  }

  get logEndOffset(): number {
    return this.local.logEndOffset;
  }

  get highWatermark(): number {
    return this.ends.highWatermark.offset;
  }

  /** Everything before this offset is fsynced. */
  get recoveryPoint(): number {
    return this.ends.flushed.offset;
  }

  /** The same as `recoveryPoint`: one past the last fsynced batch. */
  get flushedEndOffset(): number {
    return this.ends.flushed.offset;
  }

  /** One past the last batch in the file; batches queued for the next write are not counted. */
  get writtenEndOffset(): number {
    return this.ends.written.offset;
  }

  get leaderEpochCache(): LeaderEpochCache {
    return this.epochCache;
  }

  get highWatermarkMode(): HighWatermarkMode {
    return this.ends.mode;
  }

  get sizeInBytes(): number {
    return this.local.sizeInBytes;
  }

  get segmentBaseOffsets(): readonly number[] {
    return this.local.baseOffsets;
  }

  /**
   * Validates and appends one producer batch (rewriting its base offset in `batch`). With
   * `waitForFlush` (acks=−1) it resolves only once the batch is fsynced. An invalid batch is
   * rejected whole with a KafkaProtocolError and the log is unchanged.
   *
   * Everything up to the first await — validation, the producer-state check, numbering, queueing
   * and recording the producer's new state — is one synchronous step: appends called one after
   * another (pipelined requests) are checked and numbered in call order, each against the state
   * its predecessors left. A batch of an idempotent producer that repeats one of its last five is
   * a duplicate: nothing is appended, and it resolves with the original's offsets once the
   * original is as durable as this request asks.
   *
   * With `leaderEpoch` (a replicated partition's leader) the epoch is written into the batch's
   * PartitionLeaderEpoch field, which the CRC does not cover, and a newer epoch is recorded in the
   * leader-epoch cache (durably) before the batch is queued. An epoch older than the cache's latest
   * is refused with NOT_LEADER_OR_FOLLOWER: a newer leader has written to this log since.
   */
  async append(batch: Buffer, { waitForFlush = false, allowZstd = true, leaderEpoch }: AppendOptions = {}): Promise<AppendResult> {
    this.status.checkWritable();
    if (leaderEpoch !== undefined) checkLeaderEpoch(this.epochCache, leaderEpoch, this.name);
    const now = this.clock.now();
    const config = this.config;
    const validated = validateProducerBatch(batch, {
      maxBatchBytes: config.maxMessageBytes,
      allowZstd,
      timestampType: config.timestampType,
      timestampBeforeMaxMs: config.timestampBeforeMaxMs,
      timestampAfterMaxMs: config.timestampAfterMaxMs,
      now,
      requireKeys: isCompacted(config),
    });
    const { duplicateOf } = this.producers.check(validated.header);
    if (duplicateOf !== undefined) return this.answerDuplicate(duplicateOf, waitForFlush);
    this.maybeRoll(batch.length, validated.recordCount, now);
    const baseOffset = this.logEndOffset;
    const lastOffset = baseOffset + validated.recordCount - 1;
    if (lastOffset >= Number.MAX_SAFE_INTEGER) {
      throw new KafkaProtocolError('KAFKA_STORAGE_ERROR', `log ${this.name} reached the largest offset this broker can number`);
    }
    const segment = this.local.activeSegment;
    this.local.ensureFile(segment);
    if (leaderEpoch !== undefined) {
      // Recorded before the batch can reach the file: after a crash no batch has an epoch the cache lacks.
      if (leaderEpoch > this.epochCache.latestEpoch()) assignEpoch(this.epochCache, leaderEpoch, baseOffset, this.name, this.logger);
      else writeDeferredEpochs(this.epochCache, this.name);
      batch.writeInt32BE(leaderEpoch, PARTITION_LEADER_EPOCH_OFFSET);
    }
    const generation = this.ends.generation;
    setBaseOffset(batch, BigInt(baseOffset));
    // The batch's MaxTimestamp as stored: the validator sets it to the records' maximum (or the append time).
    segment.append(batch, { baseOffset, lastOffset, maxTimestamp: validated.maxTimestamp }, this.config.indexIntervalBytes, now);
    // Undone by writePendingNow/cancelPendingWrites if the batch never reaches the file.
    this.producers.record(validated.header, { firstOffset: baseOffset, maxTimestamp: validated.maxTimestamp, logAppendTime: validated.logAppendTime, appendedAt: now });
    const written = this.writes.scheduleWrite();
    this.local.noteAppended(segment, validated.recordCount, now);
    if (this.local.unflushedRecords >= this.config.flushMessages) void this.flush().catch(() => {});
    await written;
    const result = { baseOffset, lastOffset, logStartOffset: this.logStartOffset, logAppendTime: validated.logAppendTime, duplicate: false };
    if (waitForFlush) await this.writes.flushUpTo(lastOffset + 1, generation);
    return result;
  }

  /**
   * A retried batch: answered with the original's offsets, once the original is in the file
   * (acks=1) or fsynced (acks=−1). A queued original is in the pending write group; if that write
   * fails, the original is gone (and forgotten by the producer state) and this answer fails with it.
   */
  private async answerDuplicate(original: ProducerBatch, waitForFlush: boolean): Promise<AppendResult> {
    const generation = this.ends.generation;
    const pending = this.writes.pendingWrite;
    if (pending !== undefined) await pending;
    if (waitForFlush) await this.writes.flushUpTo(original.lastOffset + 1, generation);
    return {
      baseOffset: original.firstOffset,
      lastOffset: original.lastOffset,
      logStartOffset: this.logStartOffset,
      logAppendTime: original.logAppendTime,
      duplicate: true,
    };
  }

  /** Whether the flush policy wants a flush now: enough records waiting, or the oldest waiting long enough. */
  flushDue(now: number): boolean {
    if (this.status.state !== 'open') return false;
    return this.local.flushDue(now, this.config);
  }

  /** Flushes when the policy says so (`flushDue`). */
  async maybeFlush(now: number): Promise<void> {
    if (this.flushDue(now)) await this.flush();
  }

  /** fsyncs everything appended so far, then exposes it. Concurrent calls share the work. */
  flush(): Promise<void> {
    return this.writes.flush();
  }

  /** Chooses who moves the high watermark (see HighWatermarkMode); back to 'flushed', it catches up at once. */
  setHighWatermarkMode(mode: HighWatermarkMode): void {
    this.ends.setMode(mode, this.config.visibleOnAppend);
  }

  /**
   * Moves the high watermark forward to `offset` (the replica manager, in 'replicated' mode):
   * never past the written end, and an offset inside a batch counts from that batch's start
   * (a consumer is never sent part of a batch). Returns whether it moved; fires
   * highWatermarkAdvanced when it did. Never moves it back.
   */
  updateHighWatermark(offset: number): boolean {
    if (this.status.stopped) return false;
    return this.ends.update(offset);
  }

  /**
   * Sets the high watermark to `offset`, backwards too (a replica starting from its checkpointed
   * high watermark), within [log start, written end] and rounded down to a batch start (up to the
   * next one inside a gap the cleaner left, see `LocalLog.markAt`). Returns
   * the new high watermark; fires highWatermarkAdvanced if it moved forward.
   */
  resetHighWatermark(offset: number): number {
    this.status.checkReadable();
    return this.ends.reset(offset, this.logStartOffset);
  }

  /**
   * Whole batches from the one holding `offset`, up to the high watermark and `maxBytes`; the
   * first batch comes whole even when larger. Offsets before the log start or after its end are
   * OFFSET_OUT_OF_RANGE; offsets at or after the high watermark read nothing. With
   * `upTo: 'written'` (a follower's fetch) the limit is the written end instead: offsets from it
   * to the log end (batches queued for the next write) read nothing.
   *
   * A consumer's read steps over headers without records (what the cleaner keeps of emptied
   * batches) when they are all it would get: it lands on the next batch with records, as in any
   * gap. Some clients (kafkajs) cannot advance past a fetch holding only such headers and would
   * ask for the same offset for ever. A follower gets them: they carry its log end forward.
   */
  async read(offset: number, maxBytes: number, options: ReadOptions = {}): Promise<ReadResult> {
    this.status.checkReadable();
    const bounds = { highWatermark: this.highWatermark, logStartOffset: this.logStartOffset, logEndOffset: this.logEndOffset };
    if (offset < this.logStartOffset || offset > this.logEndOffset) {
      throw new KafkaProtocolError(
        'OFFSET_OUT_OF_RANGE',
        `offset ${offset} is outside log ${this.name}, which holds offsets ${this.logStartOffset} to ${this.logEndOffset - 1}`,
        { details: { offset, ...bounds } },
      );
    }
    // A follower reads what is in the file; a consumer what is visible.
    const end = options.upTo === 'written' ? this.ends.written : this.ends.highWatermark;
    if (offset >= end.offset) return { slice: undefined, ...bounds };
    let from = offset;
    for (let index = this.local.segmentIndexFor(offset); index < this.local.segments.length; index += 1) {
      const segment = this.local.segments[index];
      if (segment === undefined || segment.baseOffset >= end.offset) break;
      const atEnd = segment === end.segment;
      const range = segment.readRange(from, atEnd ? end.position : segment.size, maxBytes, atEnd ? end.offset : undefined);
      if (range === undefined) continue;
      if (options.upTo !== 'written') {
        const headersEnd = segment.emptyBatchesLastOffset(range.position, range.position + range.size);
        if (headersEnd !== undefined) {
          // Read on from after the headers, in this segment first.
          from = headersEnd + 1;
          index -= 1;
          continue;
        }
      }
      return { slice: new SegmentSlice(segment, range.position, range.size, range.firstBatchOffset, range.cached), ...bounds };
    }
    return { slice: undefined, ...bounds };
  }

  /** The first record with timestamp ≥ `timestamp` below the high watermark, if any (ListOffsets). */
  async offsetForTimestamp(timestamp: bigint): Promise<TimestampLookup | undefined> {
    this.status.checkReadable();
    return recordAtOrAfterTime(this.local.segments, this.ends.highWatermark, timestamp, () => this.status.checkReadable());
  }

  /**
   * Deletes whole closed segments that retention no longer keeps: older than `retention.ms` (by
   * their newest record) or beyond `retention.bytes`. Never the active segment, never a segment
   * with records above the high watermark. Returns how many were deleted.
   */
  applyRetention(now: number): number {
    if (this.status.state !== 'open') return 0;
    return this.logStart.applyRetention(now);
  }

  // ---- compaction: what the cleaner may read, and swapping its output in ----------------

  /**
   * The closed segments the cleaner may read now, from the log start: each wholly below the
   * active segment, the high watermark, and the first segment holding a record younger than
   * min.compaction.lag.ms (Kafka's uncleanable tail, rounded down to a segment boundary).
   * `generation` changes whenever segments are truncated, so a pass started before is refused.
   */
  cleanableView(now: number): CleanableView {
    const bounds = {
      highWatermark: this.highWatermark,
      recoveryPoint: this.recoveryPoint,
      logStartOffset: this.logStartOffset,
      generation: this.ends.generation,
      producers: this.producers.entries(),
    };
    return cleanableView(this.local, this.config, bounds, now);
  }

  /** Why a pass that read the log at `generation` can no longer swap its output in, or undefined. */
  cleaningStale(generation: number): string | undefined {
    if (this.status.state !== 'open') return `log ${this.name} is ${this.status.state}`;
    if (this.ends.generation !== generation) return `log ${this.name} was truncated while it was cleaned`;
    return undefined;
  }

  /**
   * Replaces the live segments `group.sources` with the cleaned segment the pass wrote
   * (cleaner/segment-swap.ts has the file steps and their crash recovery). Synchronous: nothing
   * else happens to the log meanwhile. Throws, changing nothing, when the sources are no longer
   * the live segments (retention or truncation removed one) or the log changed generation.
   */
  swapInCleaned(group: CleanedGroup, generation: number): void {
    const stale = this.cleaningStale(generation);
    if (stale !== undefined) throw new TributaryError({ code: 'CLEANING_ABORTED', message: stale, retriable: true });
    swapCleanedSegment(this.local, this.config, group);
  }

  // ---- log start: DeleteRecords and a follower following its leader's -------------------

  /**
   * Raises the log start to `offset` (Kafka's maybeIncrementLogStartOffset): DeleteRecords on a
   * leader, or a follower taking its leader's start. Records below it are no longer served: a read
   * there is OFFSET_OUT_OF_RANGE, ListOffsets EARLIEST answers the new start. The start may fall
   * inside a batch; that batch stays readable whole from it. Returns whether the start moved: an
   * offset at or below the current start changes nothing. Above the high watermark is
   * OFFSET_OUT_OF_RANGE: what no consumer could read yet cannot be deleted.
   *
   * One synchronous step, so no append, read or truncation sees half of it. The new start is made
   * durable first (log-start-offset-checkpoint, fsynced): an answer to DeleteRecords is never
   * undone by a crash. Kafka writes that checkpoint only every minute and accepts losing the move
   * when every replica crashes in between; one small file write per move is cheap here. If it
   * cannot be written nothing changes (KAFKA_STORAGE_ERROR, retriable).
   *
   * Then, as retention does: producers whose batches are all below the start are forgotten, leader
   * epochs before it are dropped, and the closed segments it covers entirely (the next segment's
   * base ≤ the start) are deleted at once rather than at the next retention pass (Kafka's way):
   * whoever deletes records expects the disk back, and the pass may be minutes away. The active
   * segment is never deleted; records before the start in the first kept segment stay on disk,
   * unreadable, until retention or a later move removes that segment. A crash between the
   * checkpoint and the deletions leaves files the next load deletes (`loadSegments`).
   */
  incrementLogStartOffset(offset: number): boolean {
    this.status.checkWritable();
    this.checkOffsetArgument(offset, 'move the log start to');
    return this.logStart.increment(offset);
  }

  // ---- replication: follower appends and truncation --------------------------------------

  /**
   * Appends what a leader's Fetch response carried for this partition: RecordBatch v2 batches
   * back to back, possibly ending in a partial batch (the leader's size limit cut it), which is
   * ignored — the next fetch brings it whole. Every whole batch is checked first (magic, length,
   * CRC-32C, counts, offsets following on from the log end without gap or overlap); one failure
   * refuses them all with a TributaryError (REPLICA_BATCH_INVALID or REPLICA_OFFSET_MISMATCH,
   * not retriable) and changes nothing.
   *
   * The bytes are stored unchanged: the leader numbered them, stamped its epoch and set their
   * timestamps. Segments roll as for `append`; producer state follows each batch as replay does
   * (no sequence checks: the leader made them), so this replica answers duplicates as the leader
   * would once it leads. A batch whose PartitionLeaderEpoch is newer than the cache's latest has
   * it recorded (durably) before the batch is written, starting where this log ended before the
   * batch: after a gap the leader's cleaner left, the epoch began somewhere in the gap (the leader
   * removed its first batches), and this replica holds nothing there; recording it from the gap's
   * start makes the end of the previous epoch, as this replica answers it to OffsetForLeaderEpoch
   * once it leads, never later than the truth, so a replica holding an uncommitted suffix of that
   * epoch cuts all of it (at worst also copies of records the cleaner removed, fetched again
   * from the leader — which no longer has them). Resolves once the bytes are in the file;
   * the caller flushes (`flush`) before its next fetch. Undefined when no whole batch came.
   *
   * A write failure after some batches were written leaves those (whole, contiguous) in the log
   * and throws KAFKA_STORAGE_ERROR: the next fetch starts at the new log end.
   */
  async appendAsFollower(records: Buffer): Promise<FollowerAppendResult | undefined> {
    this.status.checkWritable();
    const batches = checkFollowerBatches(records, this, largestBatchBytes(this.config));
    const first = batches[0];
    const last = batches[batches.length - 1];
    if (first === undefined || last === undefined) return undefined;
    const now = this.clock.now();
    try {
      for (const batch of batches) {
        const { header } = batch;
        // Where this replica's log ends before the batch: past it is a gap the leader's cleaner left.
        const start = this.logEndOffset;
        this.maybeRoll(batch.size, header.recordsCount, now);
        const segment = this.local.activeSegment;
        this.local.ensureFile(segment);
        if (header.partitionLeaderEpoch > this.epochCache.latestEpoch()) assignEpoch(this.epochCache, header.partitionLeaderEpoch, start, this.name, this.logger);
        else writeDeferredEpochs(this.epochCache, this.name);
        const bytes = records.subarray(batch.position, batch.position + batch.size);
        // A header a leader's cleaner kept holds no records, so no timestamp (BatchInfo.maxTimestamp).
        const maxTimestamp = header.recordsCount === 0 ? -1n : header.maxTimestamp;
        segment.append(bytes, { baseOffset: batch.baseOffset, lastOffset: batch.lastOffset, maxTimestamp }, this.config.indexIntervalBytes, now);
        const logAppendTime = (header.attributes & TIMESTAMP_TYPE_FLAG) !== 0 ? header.maxTimestamp : -1n;
        this.producers.record(header, { firstOffset: batch.baseOffset, maxTimestamp: header.maxTimestamp, logAppendTime, appendedAt: now });
        this.local.noteAppended(segment, header.recordsCount, now);
      }
    } finally {
      // Written in this call, not after this turn: `records` is the caller's buffer, and the
      // bytes queued so far are valid whatever stopped the loop.
      this.writes.writePendingNow();
    }
    return { batches: batches.length, firstOffset: first.baseOffset, lastOffset: last.lastOffset };
  }

  /**
   * A follower's truncation (reference/replication.md §5.6): cuts the log so it ends at or below
   * `offset`, never inside a batch — the new end is the base offset of the first batch whose last
   * offset is ≥ `offset`. At or past the log end nothing is cut (only leader epochs starting at
   * the log end, which no batch has, are removed); at or below the log start the log is emptied
   * and starts afresh there (`truncateFullyAndStartAt(logStartOffset)`).
   *
   * Resolves with the end it cut to; log-truncation.ts says how, and what readers of the cut see.
   */
  async truncateTo(offset: number): Promise<number> {
    this.checkOffsetArgument(offset, 'truncate to');
    return this.truncation.truncateTo(offset);
  }

  /**
   * Deletes every segment, snapshot and leader epoch and starts an empty log at `offset` (log
   * start = high watermark = log end): a follower too far behind its leader's log start, or a
   * replica re-replicated from nothing. Queued appends are refused, as in `truncateTo`. Resolves
   * once the deletions are durable and the new log start has been reported (logStartOffsetChanged).
   */
  async truncateFullyAndStartAt(offset: number): Promise<void> {
    this.checkOffsetArgument(offset, 'start afresh at');
    await this.truncation.truncateFullyAndStartAt(offset);
  }

  private checkOffsetArgument(offset: number, what: string): void {
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new TributaryError({ code: 'OFFSET_INVALID', message: `cannot ${what} offset ${offset} of log ${this.name}: offsets are integers ≥ 0`, details: { offset } });
    }
  }

  /** Flushes and closes the files (a clean stop). New appends are refused from the start. */
  async close(): Promise<void> {
    if (this.status.state !== 'open') return;
    this.status.state = 'closing';
    const errors: unknown[] = [];
    try {
      if (this.status.failure === undefined) {
        await this.flush();
        // Everything is in the file: the next start loads this and replays nothing.
        if (this.logEndOffset > this.local.firstSegment().baseOffset) this.producerState.takeSnapshot(this.logEndOffset);
        await this.whenSnapshotsWritten();
      }
    } catch (error) {
      errors.push(error);
    }
    this.status.state = 'closed';
    this.writes.cancelPendingWrites();
    for (const segment of this.local.segments) {
      try {
        segment.close();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw new TributaryError({ code: 'LOG_CLOSE_FAILED', message: `log ${this.name} did not flush and close cleanly`, cause: errors[0] });
  }

  /**
   * Stops the log because its topic was deleted, then removes `folder` (its directory, or where
   * the owner renamed it). Queued appends are refused with UNKNOWN_TOPIC_OR_PARTITION and never
   * written; an fsync under way finishes on its still-open descriptor; readers keep theirs until
   * they release. No descriptor is closed while anything may still use it.
   */
  async deleteFiles(folder: string | undefined = this.directory): Promise<void> {
    this.beginDeletion();
    await this.writes.inFlight?.catch(() => {});
    for (const segment of this.local.segments) segment.abandon();
    if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
  }

  /** The producer state (per producer id: epoch, last five batches), for tests and diagnostics. */
  producerStateSnapshot(): readonly ProducerEntry[] {
    return this.producers.entries();
  }

  /** Forgets producers idle for producer.id.expiration.ms; returns how many. */
  expireProducers(now: number): number {
    if (this.status.state !== 'open') return 0;
    return this.producerState.expire(now);
  }

  /** Resolves once the snapshot writes under way are done (whatever their outcome). */
  async whenSnapshotsWritten(): Promise<void> {
    await this.producerState.whenSnapshotsWritten();
  }

  /** The synchronous first step of `deleteFiles`: from now on every append and read is refused. */
  beginDeletion(): void {
    if (this.status.state === 'deleted') return;
    this.status.state = 'deleted';
    this.writes.cancelPendingWrites();
  }

  private maybeRoll(incomingBytes: number, incomingRecords: number, now: number): void {
    if (!this.local.shouldRoll(incomingBytes, incomingRecords, now, this.config)) return;
    this.writes.writePendingNow();
    this.local.roll(now);
    // Every batch before the new segment is in the file: its producer state is the snapshot's.
    this.producerState.takeSnapshot(this.logEndOffset);
  }
}

export function invalidLogDirectory(name: string): TributaryError {
  return new TributaryError({
    code: 'STORAGE_LAYOUT_INVALID',
    message: `folder ${name} in the data dir is not <topic>-<partition>; move it out of the data dir`,
    details: { name },
  });
}
