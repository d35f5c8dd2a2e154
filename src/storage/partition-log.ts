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
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { TributaryError } from '../common/errors.js';
import { KafkaProtocolError } from '../protocol/kafka-errors.js';
import { validateProducerBatch } from '../protocol/batch-validation.js';
import {
  BATCH_LENGTH_OFFSET,
  computeBatchCrc,
  CURRENT_MAGIC,
  LOG_OVERHEAD,
  PARTITION_LEADER_EPOCH_OFFSET,
  readBatchHeader,
  RECORD_BATCH_OVERHEAD,
  setBaseOffset,
  TIMESTAMP_TYPE_FLAG,
  type RecordBatchHeader,
} from '../protocol/record-batch.js';
import { readFully, verifyBatches } from './batch-scan.js';
import { fsyncDirectoryAsync } from './durable-files.js';
import { LeaderEpochCache } from './leader-epoch-cache.js';
import { deletesByRetention, isCompacted, rollAfterMs, type LogConfig } from './log-config.js';
import { firstRecordAtOrAfter, type RecordTime } from './record-timestamps.js';
import { deleteSnapshot, listSnapshots, readSnapshot, writeSnapshot } from './producer-snapshot.js';
import { replayProducerBatches } from './producer-replay.js';
import { ProducerStateTable, type ProducerBatch, type ProducerEntry } from './producer-state.js';
import { LogSegment } from './segment.js';
import type { CleanableSegment, CleanedGroup } from './cleaner/clean-pass.js';
import { recoverSwaps, swapInCleaned as swapInCleanedFiles } from './cleaner/segment-swap.js';

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

/** Whole batches from one segment: `size` bytes of the segment file from `position`. */
export interface LogSlice {
  readonly fd: number;
  readonly path: string;
  readonly position: number;
  readonly size: number;
  /** Offset of the first batch in the slice (≤ the offset asked for). */
  readonly firstBatchOffset: number;
  /**
   * The lookup that made the slice read its headers from the page cache just now (at its start or
   * its end, in under CACHED_READ_MS): reading the slice at once will almost surely not wait for
   * the disk. False when that is not known (no header was read) or a read was slow.
   */
  readonly cached: boolean;
  /** Copies the slice into memory (tests and small tools; the broker streams `fd` instead). */
  readBytes(): Promise<Buffer>;
  /** Must be called once the bytes have been sent; keeps a deleted segment's file open until then. */
  release(): void;
}

export interface ReadResult {
  readonly slice: LogSlice | undefined;
  readonly highWatermark: number;
  readonly logStartOffset: number;
  readonly logEndOffset: number;
}

/** A record found by timestamp; the timestamp is exact (int64). */
export type TimestampLookup = RecordTime;

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

interface Mark {
  readonly offset: number;
  readonly segment: LogSegment;
  readonly position: number;
}

/** A whole batch of a leader's records, checked, at `position` in the buffer. */
interface FollowerBatch {
  readonly position: number;
  readonly size: number;
  readonly header: RecordBatchHeader;
  readonly baseOffset: number;
  readonly lastOffset: number;
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

/** What the cleaner may read of a log now (PartitionLog.cleanableView). */
export interface CleanableView {
  readonly segments: readonly CleanableSegment[];
  readonly firstUncleanable: number;
  readonly logStartOffset: number;
  readonly producerLastOffsets: ReadonlySet<number>;
  readonly generation: number;
  readonly sizeInBytes: number;
}

export const DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000;

const SEGMENT_FILE = /^(\d{20})\.log$/;

/** Truncations remembered for `truncatedAway` (a waiter older than these is told its batch may be gone). */
const CUTS_REMEMBERED = 64;

/**
 * open: serving. closing: a clean stop is flushing it (no new appends). closed: stopped, files
 * kept. deleted: its topic is gone; queued appends were refused and its files are being removed.
 */
type LogState = 'open' | 'closing' | 'closed' | 'deleted';

export class PartitionLog {
  private segments: LogSegment[] = [];
  private baseOffsets: number[] = [];
  private highWatermarkMark!: Mark;
  private flushedMark!: Mark;
  /** The end of the batches in the file; queued batches lie past it until `writePendingNow`. */
  private writtenMark!: Mark;
  private highWatermarkPolicy: HighWatermarkMode = 'flushed';
  private epochCache!: LeaderEpochCache;
  /**
   * Truncations so far, and where the recent ones cut: an acks=−1 append waiting for its flush
   * learns that its batch was cut away instead of waiting for offsets that now hold other data.
   */
  private truncations = 0;
  private readonly cuts: { readonly generation: number; readonly end: number }[] = [];
  private unflushedSegments = new Set<LogSegment>();
  private unflushedRecords = 0;
  private firstUnflushedAt = 0;
  private flushing: Promise<void> | undefined;
  /** What recovery after an unclean stop checked and cut (logged once at load). */
  private readonly recoveryReport = { segmentsChecked: 0, batchesVerified: 0, bytesTruncated: 0, segmentsDeleted: 0 };
  private writeGroup: { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void } | undefined;
  private failure: Error | undefined;
  private state: LogState = 'open';
  /**
   * Directory entries created and not yet fsynced: the partition folder (in the data dir) and
   * segment files (in the folder). Files are created lazily on the first append, and the folders
   * are fsynced by the next flush, before the data in those files counts as flushed.
   */
  private readonly unsyncedEntries = { dataDir: false, folder: false };
  logStartOffset = 0;
  config: LogConfig;
  private readonly producers: ProducerStateTable;
  private producerIdExpirationMs = DEFAULT_PRODUCER_ID_EXPIRATION_MS;
  /** The last snapshot written or loaded, so an unchanged state is not written again at the same offset. */
  private lastSnapshot = { offset: -1, changes: -1 };
  /** Snapshot writes under way (their fsyncs and renames); a clean close waits for them. */
  private readonly snapshotWrites = new Set<Promise<void>>();
  /** A full disk made index writes fail; logged once per episode (`noteIndexWrite`). */
  private indexWritesDeferred = false;

  private constructor(
    readonly topic: string,
    readonly partition: number,
    readonly directory: string,
    config: LogConfig,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly events: LogEvents,
  ) {
    this.config = config;
    this.producers = new ProducerStateTable(`${topic}-${partition}`);
  }

  /** Opens (or creates) the log in `directory`, recovering it first after an unclean stop. */
  static async load(options: LoadOptions): Promise<PartitionLog> {
    const log = new PartitionLog(
      options.topic, options.partition, options.directory, options.config, options.clock,
      options.logger.child({ topic: options.topic, partition: options.partition }), options.events,
    );
    if (options.producerIdExpirationMs !== undefined) log.producerIdExpirationMs = options.producerIdExpirationMs;
    try {
      await log.loadSegments(options);
      log.loadProducerState();
      // Epochs past what recovery kept (assigned just before a crash, or on becoming leader with
      // nothing appended since) and before the log start are gone with their batches.
      log.epochCache = LeaderEpochCache.load(log.directory, log.logger);
      log.epochCache.truncateFromEnd(log.logEndOffset);
      log.epochCache.truncateFromStart(log.logStartOffset);
    } catch (error) {
      // Whatever was opened before the failure is let go: an offline log holds no descriptors.
      for (const segment of log.segments) segment.abandon();
      throw error;
    }
    return log;
  }

  get name(): string {
    return `${this.topic}-${this.partition}`;
  }

  get logEndOffset(): number {
    return this.activeSegment.nextOffset;
  }

  get highWatermark(): number {
    return this.highWatermarkMark.offset;
  }

  /** Everything before this offset is fsynced. */
  get recoveryPoint(): number {
    return this.flushedMark.offset;
  }

  /** The same as `recoveryPoint`: one past the last fsynced batch. */
  get flushedEndOffset(): number {
    return this.flushedMark.offset;
  }

  /** One past the last batch in the file; batches queued for the next write are not counted. */
  get writtenEndOffset(): number {
    return this.writtenMark.offset;
  }

  get leaderEpochCache(): LeaderEpochCache {
    return this.epochCache;
  }

  get highWatermarkMode(): HighWatermarkMode {
    return this.highWatermarkPolicy;
  }

  get sizeInBytes(): number {
    return this.segments.reduce((sum, segment) => sum + segment.size, 0);
  }

  get segmentBaseOffsets(): readonly number[] {
    return this.baseOffsets;
  }

  private get activeSegment(): LogSegment {
    const active = this.segments[this.segments.length - 1];
    if (active === undefined) throw new Error(`log ${this.name} has no segment`);
    return active;
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
    this.checkWritable();
    if (leaderEpoch !== undefined) this.checkLeaderEpoch(leaderEpoch);
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
    const segment = this.activeSegment;
    this.ensureFile(segment);
    if (leaderEpoch !== undefined) {
      // Recorded before the batch can reach the file: after a crash no batch has an epoch the cache lacks.
      if (leaderEpoch > this.epochCache.latestEpoch()) this.assignEpoch(leaderEpoch, baseOffset);
      else this.writeDeferredEpochs();
      batch.writeInt32BE(leaderEpoch, PARTITION_LEADER_EPOCH_OFFSET);
    }
    const generation = this.truncations;
    setBaseOffset(batch, BigInt(baseOffset));
    // The batch's MaxTimestamp as stored: the validator sets it to the records' maximum (or the append time).
    segment.append(batch, { baseOffset, lastOffset, maxTimestamp: validated.maxTimestamp }, this.config.indexIntervalBytes, now);
    // Undone by writePendingNow/cancelPendingWrites if the batch never reaches the file.
    this.producers.record(validated.header, { firstOffset: baseOffset, maxTimestamp: validated.maxTimestamp, logAppendTime: validated.logAppendTime, appendedAt: now });
    const written = this.scheduleWrite();
    if (this.unflushedRecords === 0) this.firstUnflushedAt = now;
    this.unflushedRecords += validated.recordCount;
    this.unflushedSegments.add(segment);
    if (this.unflushedRecords >= this.config.flushMessages) void this.flush().catch(() => {});
    await written;
    const result = { baseOffset, lastOffset, logStartOffset: this.logStartOffset, logAppendTime: validated.logAppendTime, duplicate: false };
    if (waitForFlush) await this.flushUpTo(lastOffset + 1, generation);
    return result;
  }

  /** A leader epoch must be an int32 ≥ 0 and not older than the newest this log has seen. */
  private checkLeaderEpoch(leaderEpoch: number): void {
    if (!Number.isInteger(leaderEpoch) || leaderEpoch < 0 || leaderEpoch > 0x7fffffff) {
      throw new TributaryError({
        code: 'LEADER_EPOCH_INVALID',
        message: `leader epoch ${leaderEpoch} for log ${this.name} is not an int32 ≥ 0`,
        details: { leaderEpoch },
      });
    }
    const latest = this.epochCache.latestEpoch();
    if (leaderEpoch < latest) {
      throw new KafkaProtocolError(
        'NOT_LEADER_OR_FOLLOWER',
        `log ${this.name} has data of leader epoch ${latest}; an append as leader of epoch ${leaderEpoch} comes from a deposed leader`,
        { details: { leaderEpoch, latestEpoch: latest } },
      );
    }
  }

  /**
   * Writes the leader epochs a full disk deferred (leader-epoch-cache.ts) before a batch carrying
   * one is queued; while the disk stays full the batch is refused (nothing was queued yet).
   */
  private writeDeferredEpochs(): void {
    if (!this.epochCache.pendingWrite) return;
    try {
      this.epochCache.ensurePersisted();
    } catch (error) {
      throw new KafkaProtocolError('KAFKA_STORAGE_ERROR', `could not record the leader epochs of log ${this.name} (disk full); the batch was not written`, { cause: error });
    }
  }

  /** Records a new epoch in the cache; a failed write refuses the batch (nothing was queued yet). */
  private assignEpoch(epoch: number, startOffset: number): void {
    try {
      this.epochCache.assign(epoch, startOffset);
      // A full disk deferred the write: the batch may not go before it.
      this.epochCache.ensurePersisted();
    } catch (error) {
      this.logger.error({ err: error, epoch, startOffset }, 'could not record a leader epoch; the batch was not appended');
      throw new KafkaProtocolError('KAFKA_STORAGE_ERROR', `could not record leader epoch ${epoch} of log ${this.name}; the batch was not written`, { cause: error });
    }
  }

  /**
   * A retried batch: answered with the original's offsets, once the original is in the file
   * (acks=1) or fsynced (acks=−1). A queued original is in the pending write group; if that write
   * fails, the original is gone (and forgotten by the producer state) and this answer fails with it.
   */
  private async answerDuplicate(original: ProducerBatch, waitForFlush: boolean): Promise<AppendResult> {
    const generation = this.truncations;
    if (this.writeGroup !== undefined) await this.writeGroup.promise;
    if (waitForFlush) await this.flushUpTo(original.lastOffset + 1, generation);
    return {
      baseOffset: original.firstOffset,
      lastOffset: original.lastOffset,
      logStartOffset: this.logStartOffset,
      logAppendTime: original.logAppendTime,
      duplicate: true,
    };
  }

  /**
   * The batches appended in one turn of the event loop are written together, in one system call,
   * just after it; each append resolves once its bytes are in the file (the page cache).
   */
  private scheduleWrite(): Promise<void> {
    if (this.writeGroup === undefined) {
      let resolve: () => void = () => {};
      let reject: (error: unknown) => void = () => {};
      const promise = new Promise<void>((onResolve, onReject) => {
        resolve = onResolve;
        reject = onReject;
      });
      this.writeGroup = { promise, resolve, reject };
      setImmediate(() => {
        try {
          this.writePendingNow();
        } catch {
          // The group's promise carries the error to every append in it.
        }
      });
    }
    return this.writeGroup.promise;
  }

  /** Writes the queued batches now; settles the waiting appends. */
  private writePendingNow(): void {
    const group = this.writeGroup;
    this.writeGroup = undefined;
    if (this.state === 'closed' || this.state === 'deleted') {
      // Closing cancelled the queued batches; a write now could only hit a file the log let go.
      group?.reject(this.unavailableError());
      return;
    }
    try {
      this.activeSegment.writePending();
    } catch (error) {
      // The segment cut its file and offsets back; the producer state and the epochs follow.
      this.producers.forgetFrom(this.logEndOffset);
      this.forgetEpochsFrom(this.logEndOffset);
      const failure = this.writeFailure(error);
      group?.reject(failure);
      throw failure;
    }
    this.producers.settleBelow(this.logEndOffset);
    const written = this.endMark();
    const advanced = written.offset > this.writtenMark.offset;
    this.writtenMark = written;
    if (this.config.visibleOnAppend) this.advanceHighWatermarkByPolicy(written);
    group?.resolve();
    if (advanced) this.events.appended?.(this);
  }

  /** Epochs recorded for batches that never reached the file (best effort: load does it again). */
  private forgetEpochsFrom(offset: number): void {
    try {
      this.epochCache.truncateFromEnd(offset);
    } catch (error) {
      this.logger.warn({ err: error, offset }, 'could not remove leader epochs of batches that were not written; the next start removes them');
    }
  }

  /** Whether the flush policy wants a flush now: enough records waiting, or the oldest waiting long enough. */
  flushDue(now: number): boolean {
    if (this.unflushedRecords === 0 || this.state !== 'open') return false;
    return this.unflushedRecords >= this.config.flushMessages || now - this.firstUnflushedAt >= this.config.flushMs;
  }

  /** Flushes when the policy says so (`flushDue`). */
  async maybeFlush(now: number): Promise<void> {
    if (this.flushDue(now)) await this.flush();
  }

  /** fsyncs everything appended so far, then exposes it. Concurrent calls share the work. */
  flush(): Promise<void> {
    if (this.state === 'closed' || this.state === 'deleted') return Promise.reject(this.unavailableError());
    if (this.flushing !== undefined) {
      // One flush at a time; a caller arriving during one gets another that covers its data.
      return this.flushing.then(() => (this.flushedMark.offset < this.logEndOffset ? this.flush() : undefined));
    }
    try {
      this.writePendingNow();
    } catch (error) {
      // A write that took the log offline fails the flush. A full disk only refused the queued
      // batches (their appends have the error): the batches already in the file still get their
      // fsync, or acks=−1 appends written before them would be refused although they are stored.
      if (this.failure !== undefined) return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    if (this.flushedMark.offset >= this.logEndOffset) return Promise.resolve();
    const target = this.endMark();
    const segments = [...this.unflushedSegments];
    this.unflushedSegments.clear();
    this.unflushedRecords = 0;
    const run = (async () => {
      try {
        for (const segment of segments) this.noteIndexWrite(await segment.flush());
        await this.syncEntries();
      } catch (error) {
        // A write inside the segment's flush may have been undone: forget what never reached the file.
        this.producers.forgetFrom(this.logEndOffset);
        // A log deleted under its flush: its files are gone on purpose, nothing went wrong.
        if (this.state === 'deleted') throw this.unavailableError();
        // Never expose or acknowledge data whose fsync failed, and never retry the fsync blindly.
        this.failure = new KafkaProtocolError('KAFKA_STORAGE_ERROR', `fsync of log ${this.name} failed; the log is offline until restart and recovery`, { cause: error });
        this.logger.error({ err: error }, 'fsync failed; taking the log offline');
        throw this.failure;
      }
      this.flushedMark = target;
      this.advanceHighWatermarkByPolicy(target);
      this.events.flushed?.(this);
    })();
    this.flushing = run.finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** Logs when a full disk starts deferring index writes, and when they succeed again (once each). */
  private noteIndexWrite(written: boolean): void {
    if (written === !this.indexWritesDeferred) return;
    this.indexWritesDeferred = !written;
    if (written) this.logger.info('index files written again');
    else this.logger.warn('disk full: index entries kept in memory only until there is room (a restart without a clean stop rebuilds them)');
  }

  /** fsyncs the folders whose entries were created since the last flush (data dir first). */
  private async syncEntries(): Promise<void> {
    const entries = this.unsyncedEntries;
    if (entries.dataDir) {
      entries.dataDir = false;
      try {
        await fsyncDirectoryAsync(dirname(this.directory));
      } catch (error) {
        entries.dataDir = true;
        throw error;
      }
    }
    if (entries.folder) {
      entries.folder = false;
      try {
        await fsyncDirectoryAsync(this.directory);
      } catch (error) {
        entries.folder = true;
        throw error;
      }
    }
  }

  /** Creates the segment's file (and the log's folder) just before its first batch. */
  private ensureFile(segment: LogSegment): void {
    if (segment.hasFile) return;
    try {
      if (mkdirSync(this.directory, { recursive: true }) !== undefined) this.unsyncedEntries.dataDir = true;
      segment.createFile();
      this.unsyncedEntries.folder = true;
    } catch (error) {
      // Nothing was appended: refuse this batch, keep the log up (a full disk or descriptor table may clear).
      const code = (error as NodeJS.ErrnoException).code ?? 'unknown';
      this.logger.error({ err: error, segment: segment.baseOffset }, 'could not create a segment file');
      throw new KafkaProtocolError('KAFKA_STORAGE_ERROR', `could not create segment ${segment.baseOffset} of log ${this.name} (${code}); the batch was not written`, { cause: error });
    }
  }

  private advanceHighWatermark(mark: Mark): boolean {
    if (mark.offset <= this.highWatermarkMark.offset) return false;
    this.highWatermarkMark = mark;
    this.events.highWatermarkAdvanced(this);
    return true;
  }

  /** A flush or a write moved an end: the high watermark follows in 'flushed' mode only. */
  private advanceHighWatermarkByPolicy(mark: Mark): void {
    if (this.highWatermarkPolicy === 'flushed') this.advanceHighWatermark(mark);
  }

  /**
   * Waits until everything before `offset` is fsynced. The batch was numbered at truncation
   * `generation`; if a truncation since cut it away, its offsets may now hold other batches, so
   * the wait fails (NOT_LEADER_OR_FOLLOWER: the log became a follower's) instead of answering for them.
   */
  private async flushUpTo(offset: number, generation: number): Promise<void> {
    for (;;) {
      if (this.truncatedAway(generation, offset - 1)) {
        throw new KafkaProtocolError('NOT_LEADER_OR_FOLLOWER', `the records up to offset ${offset - 1} of log ${this.name} were truncated (a leader change) before they were flushed`, {
          details: { offset: offset - 1 },
        });
      }
      if (this.flushedMark.offset >= offset) return;
      this.checkWritable();
      await this.flush();
    }
  }

  /** Whether a truncation since `generation` removed the offset `lastOffset` (unsure = yes). */
  private truncatedAway(generation: number, lastOffset: number): boolean {
    if (generation === this.truncations) return false;
    const oldest = this.cuts[0];
    if (oldest === undefined || oldest.generation > generation + 1) return true;
    return this.cuts.some((cut) => cut.generation > generation && cut.end <= lastOffset);
  }

  private recordCut(end: number): void {
    this.truncations += 1;
    this.cuts.push({ generation: this.truncations, end });
    if (this.cuts.length > CUTS_REMEMBERED) this.cuts.shift();
  }

  /** Chooses who moves the high watermark (see HighWatermarkMode); back to 'flushed', it catches up at once. */
  setHighWatermarkMode(mode: HighWatermarkMode): void {
    if (mode === this.highWatermarkPolicy) return;
    this.highWatermarkPolicy = mode;
    if (mode === 'flushed') this.advanceHighWatermark(this.config.visibleOnAppend ? this.writtenMark : this.flushedMark);
  }

  /**
   * Moves the high watermark forward to `offset` (the replica manager, in 'replicated' mode):
   * never past the written end, and an offset inside a batch counts from that batch's start
   * (a consumer is never sent part of a batch). Returns whether it moved; fires
   * highWatermarkAdvanced when it did. Never moves it back.
   */
  updateHighWatermark(offset: number): boolean {
    if (this.state === 'closed' || this.state === 'deleted') return false;
    const target = Math.min(offset, this.writtenMark.offset);
    if (target <= this.highWatermarkMark.offset) return false;
    return this.advanceHighWatermark(this.markAt(target));
  }

  /**
   * Sets the high watermark to `offset`, backwards too (a replica starting from its checkpointed
   * high watermark), within [log start, written end] and rounded down to a batch start (up to the
   * next one inside a gap the cleaner left, see `markAt`). Returns
   * the new high watermark; fires highWatermarkAdvanced if it moved forward.
   */
  resetHighWatermark(offset: number): number {
    this.checkReadable();
    const target = Math.max(this.logStartOffset, Math.min(offset, this.writtenMark.offset));
    const mark = this.markAt(target);
    const before = this.highWatermarkMark.offset;
    this.highWatermarkMark = mark;
    if (mark.offset > before) this.events.highWatermarkAdvanced(this);
    return mark.offset;
  }

  /**
   * The mark of the batch boundary at or below `offset`: the start of the batch holding it, or
   * the written end. Offsets below the first segment give its start. In a gap the cleaner left
   * (no batch holds `offset`) it is the first boundary after it: the start of the next batch in
   * the segment, or of the next segment when the gap runs to the segment's end (a cleaned segment
   * may end early or hold nothing). Nothing lies between `offset` and that boundary, and the
   * cleaner removed only what was below the high watermark then, so the boundary was committed.
   */
  private markAt(offset: number): Mark {
    const written = this.writtenMark;
    if (offset >= written.offset) return written;
    for (const known of [this.highWatermarkMark, this.flushedMark]) {
      if (known.offset === offset && !known.segment.isClosed) return known;
    }
    const index = this.segmentIndexFor(offset);
    const segment = this.segments[index];
    if (segment === undefined) throw new Error(`log ${this.name} has no segment`);
    if (offset <= segment.baseOffset) return { offset: segment.baseOffset, segment, position: 0 };
    const next = this.segments[index + 1];
    if (offset >= segment.nextOffset && next !== undefined) return { offset: next.baseOffset, segment: next, position: 0 };
    const batch = segment.findBatch(offset, segment === written.segment ? written.position : segment.size);
    if (batch === undefined) {
      throw new TributaryError({
        code: 'LOG_INCONSISTENT',
        message: `log ${this.name}: no batch holds offset ${offset} in segment ${segment.baseOffset}, which ends at ${segment.nextOffset}`,
        details: { offset, segment: segment.baseOffset },
      });
    }
    return { offset: batch.baseOffset, segment, position: batch.position };
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
    this.checkReadable();
    const bounds = { highWatermark: this.highWatermark, logStartOffset: this.logStartOffset, logEndOffset: this.logEndOffset };
    if (offset < this.logStartOffset || offset > this.logEndOffset) {
      throw new KafkaProtocolError(
        'OFFSET_OUT_OF_RANGE',
        `offset ${offset} is outside log ${this.name}, which holds offsets ${this.logStartOffset} to ${this.logEndOffset - 1}`,
        { details: { offset, ...bounds } },
      );
    }
    // A follower reads what is in the file; a consumer what is visible.
    const end = options.upTo === 'written' ? this.writtenMark : this.highWatermarkMark;
    if (offset >= end.offset) return { slice: undefined, ...bounds };
    let from = offset;
    for (let index = this.segmentIndexFor(offset); index < this.segments.length; index += 1) {
      const segment = this.segments[index];
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
      return { slice: this.slice(segment, range.position, range.size, range.firstBatchOffset, range.cached), ...bounds };
    }
    return { slice: undefined, ...bounds };
  }

  /** The first record with timestamp ≥ `timestamp` below the high watermark, if any (ListOffsets). */
  async offsetForTimestamp(timestamp: bigint): Promise<TimestampLookup | undefined> {
    this.checkReadable();
    const hw = this.highWatermarkMark;
    // A copy: retention may drop segments from the list while this waits on a read.
    for (const segment of [...this.segments]) {
      if (segment.baseOffset >= hw.offset) break;
      if (segment.isClosed || segment.maxTimestamp < timestamp) continue;
      const end = segment === hw.segment ? hw.position : segment.size;
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
      this.checkReadable();
      if (read < batch.size) continue;
      // Resolved to the exact record, decompressing the batch if it is compressed.
      const record = firstRecordAtOrAfter(bytes, timestamp);
      if (record !== undefined) return record;
    }
    return undefined;
  }

  /**
   * Deletes whole closed segments that retention no longer keeps: older than `retention.ms` (by
   * their newest record) or beyond `retention.bytes`. Never the active segment, never a segment
   * with records above the high watermark. Returns how many were deleted.
   */
  applyRetention(now: number): number {
    if (this.state !== 'open') return 0;
    // A compact-only log keeps its old segments: the cleaner, not age or size, decides what goes.
    const { retentionMs, retentionBytes } = deletesByRetention(this.config) ? this.config : { retentionMs: -1, retentionBytes: -1 };
    let remainingBytes = this.sizeInBytes;
    let deletable = 0;
    for (let index = 0; index < this.segments.length - 1; index += 1) {
      const segment = this.segments[index];
      if (segment === undefined || segment.nextOffset > this.highWatermark) break;
      // Timestamps are exact int64 (a producer's may be far in the future: such a segment never expires by time).
      const newest = segment.maxTimestamp >= 0n ? segment.maxTimestamp : BigInt(Math.trunc(segment.lastWrittenAt));
      const expired = retentionMs >= 0 && BigInt(now) - newest > BigInt(retentionMs);
      const oversized = retentionBytes >= 0 && remainingBytes - segment.size >= retentionBytes;
      if (!expired && !oversized) break;
      remainingBytes -= segment.size;
      deletable += 1;
    }
    if (deletable === 0) return 0;
    const previousStart = this.logStartOffset;
    this.logStartOffset = this.segments[deletable]?.baseOffset ?? previousStart;
    // The new start is made durable before any file goes, so a crash cannot resurrect them.
    try {
      this.events.logStartOffsetChanged(this);
    } catch (error) {
      // Not recorded (a full disk): nothing is deleted, the next retention pass tries again.
      this.logStartOffset = previousStart;
      this.logger.warn({ err: error, segments: deletable }, 'could not record the new log start; retention deletes nothing until it can');
      return 0;
    }
    const removed = this.segments.splice(0, deletable);
    this.baseOffsets.splice(0, deletable);
    for (const segment of removed) {
      this.unflushedSegments.delete(segment);
      // Readers holding the segment (a fetch being sent, a timestamp lookup) keep its descriptor
      // until they release it; nothing new can start on it.
      segment.delete();
    }
    // Producers whose batches are all gone are unknown again (any sequence is accepted), as in Kafka.
    this.producers.removeBefore(this.logStartOffset);
    this.deleteSnapshots((offset) => offset < this.logStartOffset);
    try {
      this.epochCache.truncateFromStart(this.logStartOffset);
    } catch (error) {
      // Epochs left before the log start only make OffsetForLeaderEpoch answer offsets no longer held.
      this.logger.warn({ err: error, logStartOffset: this.logStartOffset }, 'could not move the leader epochs to the new log start; the next start does');
    }
    this.logger.info({ segments: removed.map((s) => s.baseOffset), logStartOffset: this.logStartOffset }, 'retention deleted segments');
    return deletable;
  }

  // ---- compaction: what the cleaner may read, and swapping its output in ----------------

  /**
   * The closed segments the cleaner may read now, from the log start: each wholly below the
   * active segment, the high watermark, and the first segment holding a record younger than
   * min.compaction.lag.ms (Kafka's uncleanable tail, rounded down to a segment boundary).
   * `generation` changes whenever segments are truncated, so a pass started before is refused.
   */
  cleanableView(now: number): CleanableView {
    const segments: CleanableSegment[] = [];
    const lagBound = BigInt(now - this.config.minCompactionLagMs);
    // Below the flushed end too: a follower's high watermark may be ahead of what it has fsynced,
    // and only durable segments may be replaced (the recovery point must cover them, see loadSegments).
    const limit = Math.min(this.highWatermark, this.recoveryPoint);
    for (const segment of this.segments.slice(0, -1)) {
      if (segment.nextOffset > limit || segment.isClosed || !segment.hasFile) break;
      if (this.config.minCompactionLagMs > 0 && segment.maxTimestamp > lagBound) break;
      segments.push({ baseOffset: segment.baseOffset, size: segment.size, nextOffset: segment.nextOffset, maxTimestamp: segment.maxTimestamp });
    }
    const firstUncleanable = this.segments[segments.length]?.baseOffset ?? this.logEndOffset;
    const producerLastOffsets = new Set(this.producers.entries().flatMap((entry) => entry.batches.at(-1)?.lastOffset ?? []));
    return { segments, firstUncleanable, logStartOffset: this.logStartOffset, producerLastOffsets, generation: this.truncations, sizeInBytes: this.sizeInBytes };
  }

  /** Why a pass that read the log at `generation` can no longer swap its output in, or undefined. */
  cleaningStale(generation: number): string | undefined {
    if (this.state !== 'open') return `log ${this.name} is ${this.state}`;
    if (this.truncations !== generation) return `log ${this.name} was truncated while it was cleaned`;
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
    const first = this.baseOffsets.indexOf(group.baseOffset);
    const sources = this.segments.slice(first, first + group.sources.length);
    const current = first >= 0 && sources.every((segment, index) => segment.baseOffset === group.sources[index]) && first + sources.length < this.segments.length;
    if (!current) {
      throw new TributaryError({ code: 'CLEANING_ABORTED', message: `log ${this.name}: segments ${group.sources.join(', ')} are no longer live; the cleaned copy is dropped`, retriable: true });
    }
    for (const segment of sources) segment.writePending();
    swapInCleanedFiles(this.directory, group.baseOffset, group.sources);
    const cleaned = LogSegment.open(this.directory, group.baseOffset);
    // The cleaner wrote the index; one that does not load is rebuilt from the batches.
    const unusable = cleaned.loadIndex() !== undefined;
    if (unusable) cleaned.resetForRebuild();
    cleaned.loadTail(this.config.indexIntervalBytes);
    if (unusable) this.noteIndexWrite(cleaned.rewriteIndex());
    const last = sources.at(-1) as LogSegment;
    // Retention by time reads the newest record's timestamp; keep the sources' view of it.
    cleaned.lastWrittenAt = last.lastWrittenAt;
    cleaned.createdAt = sources[0]?.createdAt ?? cleaned.createdAt;
    cleaned.maxTimestamp = sources.reduce((max, segment) => (segment.maxTimestamp > max ? segment.maxTimestamp : max), cleaned.maxTimestamp);
    this.segments.splice(first, sources.length, cleaned);
    this.baseOffsets.splice(first, sources.length, cleaned.baseOffset);
    // Readers holding an old segment keep its descriptor (its file is already unlinked) until they release it.
    for (const segment of sources) {
      this.unflushedSegments.delete(segment);
      segment.abandon();
    }
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
    this.checkWritable();
    this.checkOffsetArgument(offset, 'move the log start to');
    if (offset <= this.logStartOffset) return false;
    if (offset > this.highWatermark) {
      throw new KafkaProtocolError('OFFSET_OUT_OF_RANGE', `cannot move the start of log ${this.name} to ${offset}: it is past the high watermark ${this.highWatermark}`, {
        details: { offset, highWatermark: this.highWatermark, logStartOffset: this.logStartOffset },
      });
    }
    const previousStart = this.logStartOffset;
    this.logStartOffset = offset;
    try {
      this.events.logStartOffsetChanged(this);
    } catch (error) {
      this.logStartOffset = previousStart;
      throw new KafkaProtocolError('KAFKA_STORAGE_ERROR', `could not record the new start ${offset} of log ${this.name}; nothing was deleted — retry once the disk has room`, {
        cause: error,
        details: { offset, logStartOffset: previousStart },
      });
    }
    let covered = 0;
    while (covered < this.segments.length - 1 && (this.segments[covered + 1]?.baseOffset ?? Infinity) <= offset) covered += 1;
    const removed = this.segments.splice(0, covered);
    this.baseOffsets.splice(0, covered);
    for (const segment of removed) {
      this.unflushedSegments.delete(segment);
      // Readers holding the segment keep its descriptor until they release it (as for retention).
      segment.delete();
    }
    this.producers.removeBefore(offset);
    if (removed.length > 0) this.deleteSnapshots((snapshot) => snapshot < this.activeOrFirst().baseOffset);
    try {
      this.epochCache.truncateFromStart(offset);
    } catch (error) {
      // Epochs left before the log start only make OffsetForLeaderEpoch answer offsets no longer held.
      this.logger.warn({ err: error, logStartOffset: offset }, 'could not move the leader epochs to the new log start; the next start does');
    }
    this.logger.info({ logStartOffset: offset, previousLogStartOffset: previousStart, segmentsDeleted: removed.map((segment) => segment.baseOffset) }, 'moved the log start');
    return true;
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
    this.checkWritable();
    const batches = this.checkFollowerBatches(records);
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
        const segment = this.activeSegment;
        this.ensureFile(segment);
        if (header.partitionLeaderEpoch > this.epochCache.latestEpoch()) this.assignEpoch(header.partitionLeaderEpoch, start);
        else this.writeDeferredEpochs();
        const bytes = records.subarray(batch.position, batch.position + batch.size);
        // A header a leader's cleaner kept holds no records, so no timestamp (BatchInfo.maxTimestamp).
        const maxTimestamp = header.recordsCount === 0 ? -1n : header.maxTimestamp;
        segment.append(bytes, { baseOffset: batch.baseOffset, lastOffset: batch.lastOffset, maxTimestamp }, this.config.indexIntervalBytes, now);
        const logAppendTime = (header.attributes & TIMESTAMP_TYPE_FLAG) !== 0 ? header.maxTimestamp : -1n;
        this.producers.record(header, { firstOffset: batch.baseOffset, maxTimestamp: header.maxTimestamp, logAppendTime, appendedAt: now });
        if (this.unflushedRecords === 0) this.firstUnflushedAt = now;
        this.unflushedRecords += header.recordsCount;
        this.unflushedSegments.add(segment);
      }
    } finally {
      // Written in this call, not after this turn: `records` is the caller's buffer, and the
      // bytes queued so far are valid whatever stopped the loop.
      this.writePendingNow();
    }
    return { batches: batches.length, firstOffset: first.baseOffset, lastOffset: last.lastOffset };
  }

  /** The whole batches of a leader's records, checked (see `appendAsFollower`); throws on the first bad one. */
  private checkFollowerBatches(records: Buffer): FollowerBatch[] {
    const largest = this.largestBatchBytes();
    const batches: FollowerBatch[] = [];
    let expected = this.logEndOffset;
    let position = 0;
    while (records.length - position >= LOG_OVERHEAD) {
      const at = position;
      const index = batches.length;
      const refuse = (code: 'REPLICA_BATCH_INVALID' | 'REPLICA_OFFSET_MISMATCH', why: string, details: Record<string, unknown> = {}): TributaryError =>
        new TributaryError({
          code,
          message: `batch ${index} (at byte ${at}) replicated to log ${this.name} ${why}; nothing was appended`,
          details: { topic: this.topic, partition: this.partition, batch: index, position: at, logEndOffset: this.logEndOffset, ...details },
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

  /** The largest batch any topic setting allows: what recovery accepts, and so what a follower may store. */
  private largestBatchBytes(): number {
    return Math.max(this.config.maxMessageBytes, 1_048_588);
  }

  /**
   * A follower's truncation (reference/replication.md §5.6): cuts the log so it ends at or below
   * `offset`, never inside a batch — the new end is the base offset of the first batch whose last
   * offset is ≥ `offset`. At or past the log end nothing is cut (only leader epochs starting at
   * the log end, which no batch has, are removed); at or below the log start the log is emptied
   * and starts afresh there (`truncateFullyAndStartAt(logStartOffset)`).
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
    this.checkOffsetArgument(offset, 'truncate to');
    for (let busy = this.busyForTruncation(); busy !== undefined; busy = this.busyForTruncation()) await busy;
    // From here to the fsync nothing awaits: no append, flush or read runs inside the cut.
    this.cancelPendingWrites(this.truncatingError());
    const previousEnd = this.logEndOffset;
    if (offset >= previousEnd) {
      try {
        this.epochCache.truncateFromEnd(previousEnd);
      } catch (error) {
        throw this.truncationFailure(error);
      }
      return previousEnd;
    }
    if (offset <= this.logStartOffset) {
      await this.startAfresh(this.logStartOffset, offset);
      return this.logEndOffset;
    }
    const index = this.segmentIndexFor(offset);
    const segment = this.segments[index];
    if (segment === undefined) throw new Error(`log ${this.name} has no segment`);
    const holding = segment.findBatch(offset, segment.size);
    const cutPosition = holding?.position ?? segment.size;
    // Inside a gap the cleaner left (the batch found starts after `offset`), the log ends where the
    // batch before it did: known once the segment is cut.
    const inGap = holding !== undefined && holding.baseOffset > offset;
    let newEnd = holding === undefined ? segment.nextOffset : Math.min(holding.baseOffset, offset);
    if (newEnd <= this.logStartOffset) {
      await this.startAfresh(this.logStartOffset, offset);
      return this.logEndOffset;
    }
    // Before anything is cut: inside a gap the end is known only after the cut, but not below the segment's base.
    this.events.truncating?.(this, inGap ? segment.baseOffset : newEnd);
    const removed = this.segments.splice(index + 1);
    this.baseOffsets.splice(index + 1);
    let bytesCut = segment.size - cutPosition;
    const toSync = new Set(this.unflushedSegments);
    toSync.add(segment);
    this.unflushedSegments.clear();
    this.unflushedRecords = 0;
    try {
      for (const later of removed) {
        bytesCut += later.size;
        toSync.delete(later);
        later.delete();
      }
      if (cutPosition < segment.size) segment.truncateTo(cutPosition);
      // Truncation is rare: the cut segment's offsets, timestamps and index are rebuilt from its batches.
      segment.resetForRebuild();
      if (segment.hasFile) {
        segment.loadTail(this.config.indexIntervalBytes);
        this.noteIndexWrite(segment.rewriteIndex());
      }
      if (inGap && segment.nextOffset <= newEnd) newEnd = segment.nextOffset;
      if (segment.nextOffset !== newEnd) throw new Error(`segment ${segment.baseOffset} ends at ${segment.nextOffset} after the cut, not ${newEnd}`);
      const end = this.endMark();
      this.writtenMark = end;
      if (this.flushedMark.offset >= newEnd) this.flushedMark = end;
      if (this.highWatermarkMark.offset >= newEnd) this.highWatermarkMark = end;
      this.recordCut(newEnd);
      this.rebuildProducerState();
      this.epochCache.truncateFromEnd(newEnd);
    } catch (error) {
      throw this.truncationFailure(error);
    }
    this.logger.info(
      { requested: offset, logEndOffset: newEnd, previousLogEndOffset: previousEnd, segmentsDeleted: removed.map((later) => later.baseOffset), bytesTruncated: bytesCut },
      'truncated the log (follower)',
    );
    await this.syncTruncation([...toSync], this.endMark());
    return newEnd;
  }

  /**
   * Deletes every segment, snapshot and leader epoch and starts an empty log at `offset` (log
   * start = high watermark = log end): a follower too far behind its leader's log start, or a
   * replica re-replicated from nothing. Queued appends are refused, as in `truncateTo`. Resolves
   * once the deletions are durable and the new log start has been reported (logStartOffsetChanged).
   */
  async truncateFullyAndStartAt(offset: number): Promise<void> {
    this.checkOffsetArgument(offset, 'start afresh at');
    for (let busy = this.busyForTruncation(); busy !== undefined; busy = this.busyForTruncation()) await busy;
    this.cancelPendingWrites(this.truncatingError());
    await this.startAfresh(offset, offset);
  }

  /** What a truncation must wait for: a flush or truncation under way, or snapshot writes (which could land a snapshot it deleted). */
  private busyForTruncation(): Promise<unknown> | undefined {
    this.checkWritable();
    if (this.flushing !== undefined) return this.flushing.catch(() => undefined);
    if (this.snapshotWrites.size > 0) return this.whenSnapshotsWritten();
    return undefined;
  }

  /** The synchronous part of `truncateFullyAndStartAt`, then its fsync (see there). */
  private startAfresh(offset: number, requested: number): Promise<void> {
    const previous = { logStartOffset: this.logStartOffset, logEndOffset: this.logEndOffset, segments: this.baseOffsets.slice() };
    const highWatermark = this.highWatermark;
    try {
      this.events.truncating?.(this, offset);
      const doomed = this.segments;
      this.segments = [];
      this.baseOffsets = [];
      this.unflushedSegments.clear();
      this.unflushedRecords = 0;
      this.addSegment(LogSegment.create(this.directory, offset, this.clock.now()));
      this.logStartOffset = offset;
      const start = this.endMark();
      this.writtenMark = start;
      this.flushedMark = start;
      this.highWatermarkMark = start;
      this.recordCut(-1);
      for (const segment of doomed) segment.delete();
      this.producers.load([]);
      this.lastSnapshot = { offset: -1, changes: -1 };
      for (const snapshot of listSnapshots(this.directory)) deleteSnapshot(this.directory, snapshot);
      this.epochCache.clear();
    } catch (error) {
      throw this.truncationFailure(error);
    }
    this.logger.info({ requested, logStartOffset: offset, previous }, 'emptied the log and started it afresh (follower)');
    if (offset > highWatermark) this.events.highWatermarkAdvanced(this);
    const run = (async () => {
      try {
        await fsyncDirectoryAsync(this.directory);
      } catch (error) {
        throw this.truncationFailure(error);
      }
      // Only once the deletions are durable: a start checkpoint past resurrected files would keep them.
      this.events.logStartOffsetChanged(this);
    })();
    this.flushing = run.finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
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
      if (end.offset > this.flushedMark.offset) {
        this.flushedMark = end;
        this.advanceHighWatermarkByPolicy(end);
        this.events.flushed?.(this);
      }
    })();
    this.flushing = run.finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** Producer state for the log as it now is: from nothing, the newest snapshot at or below the end, then replay. */
  private rebuildProducerState(): void {
    const end = this.logEndOffset;
    // Strict, unlike load: a snapshot of the cut suffix left behind would be loaded once the log grows past it again.
    for (const snapshot of listSnapshots(this.directory)) if (snapshot > end) deleteSnapshot(this.directory, snapshot);
    this.producers.load([]);
    this.lastSnapshot = { offset: -1, changes: -1 };
    this.loadProducerState();
  }

  /** A truncation that failed halfway leaves the log in no known state: offline until restart and recovery. */
  private truncationFailure(error: unknown): KafkaProtocolError {
    if (this.state === 'deleted') return this.unavailableError();
    if (error instanceof KafkaProtocolError && error === this.failure) return error;
    const failure = new KafkaProtocolError('KAFKA_STORAGE_ERROR', `truncating log ${this.name} failed; the log is offline until restart and recovery`, { cause: error });
    this.failure = failure;
    this.logger.error({ err: error }, 'truncation failed; taking the log offline');
    return failure;
  }

  private truncatingError(): KafkaProtocolError {
    return new KafkaProtocolError('NOT_LEADER_OR_FOLLOWER', `log ${this.name} is being truncated to follow a new leader; the batch was not written`);
  }

  private checkOffsetArgument(offset: number, what: string): void {
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new TributaryError({ code: 'OFFSET_INVALID', message: `cannot ${what} offset ${offset} of log ${this.name}: offsets are integers ≥ 0`, details: { offset } });
    }
  }

  /** Flushes and closes the files (a clean stop). New appends are refused from the start. */
  async close(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'closing';
    const errors: unknown[] = [];
    try {
      if (this.failure === undefined) {
        await this.flush();
        // Everything is in the file: the next start loads this and replays nothing.
        if (this.logEndOffset > this.activeOrFirst().baseOffset) this.takeSnapshot(this.logEndOffset);
        await this.whenSnapshotsWritten();
      }
    } catch (error) {
      errors.push(error);
    }
    this.state = 'closed';
    this.cancelPendingWrites();
    for (const segment of this.segments) {
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
    await this.flushing?.catch(() => {});
    for (const segment of this.segments) segment.abandon();
    if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
  }

  /** The producer state (per producer id: epoch, last five batches), for tests and diagnostics. */
  producerStateSnapshot(): readonly ProducerEntry[] {
    return this.producers.entries();
  }

  /** Forgets producers idle for producer.id.expiration.ms; returns how many. */
  expireProducers(now: number): number {
    if (this.state !== 'open') return 0;
    const expired = this.producers.removeExpired(now, this.producerIdExpirationMs);
    if (expired.length > 0) {
      this.logger.info({ producers: expired.map(String), expirationMs: this.producerIdExpirationMs }, 'forgot idle producers; their next batch is accepted at any sequence');
    }
    return expired.length;
  }

  /** Resolves once the snapshot writes under way are done (whatever their outcome). */
  async whenSnapshotsWritten(): Promise<void> {
    await Promise.allSettled([...this.snapshotWrites]);
  }

  /**
   * Writes the producer state as the snapshot at `offset` (all batches before it are in the
   * file): the bytes now, the fsyncs in the background. A failure only costs replay time at the
   * next start: it is logged, never thrown.
   */
  private takeSnapshot(offset: number): void {
    const changes = this.producers.changes;
    if (this.lastSnapshot.offset === offset && this.lastSnapshot.changes === changes) return;
    this.lastSnapshot = { offset, changes };
    const write = writeSnapshot(this.directory, offset, this.producers.entries())
      .catch((error: unknown) => {
        // A log deleted meanwhile took its folder away: nothing went wrong.
        if (this.state === 'deleted') return;
        if (this.lastSnapshot.offset === offset) this.lastSnapshot = { offset: -1, changes: -1 };
        this.logger.warn({ err: error, offset }, 'could not write a producer-state snapshot; the next start replays more of the log');
      })
      .finally(() => this.snapshotWrites.delete(write));
    this.snapshotWrites.add(write);
  }

  private deleteSnapshots(doomed: (offset: number) => boolean): void {
    try {
      for (const offset of listSnapshots(this.directory)) if (doomed(offset)) deleteSnapshot(this.directory, offset);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not delete producer-state snapshots');
    }
  }

  /** The synchronous first step of `deleteFiles`: from now on every append and read is refused. */
  beginDeletion(): void {
    if (this.state === 'deleted') return;
    this.state = 'deleted';
    this.cancelPendingWrites();
  }

  /** Refuses the batches queued for the next write (the log is closing, deleted or truncated under them). */
  private cancelPendingWrites(error: KafkaProtocolError = this.unavailableError()): void {
    const group = this.writeGroup;
    this.writeGroup = undefined;
    // Only the active segment ever holds queued batches: a roll writes the old one's first.
    this.segments[this.segments.length - 1]?.discardPending();
    if (this.segments.length > 0) this.producers.forgetFrom(this.logEndOffset);
    group?.reject(error);
  }

  private checkWritable(): void {
    if (this.state === 'deleted') throw this.unavailableError();
    if (this.failure !== undefined) throw this.failure;
    if (this.state !== 'open') throw this.unavailableError();
  }

  private checkReadable(): void {
    if (this.state === 'closed' || this.state === 'deleted') throw this.unavailableError();
  }

  /** What a request to a log that stopped serving gets: a deleted topic is unknown, a stopped broker not the leader. */
  private unavailableError(): KafkaProtocolError {
    if (this.state === 'deleted') {
      return new KafkaProtocolError('UNKNOWN_TOPIC_OR_PARTITION', `partition ${this.name} was deleted with its topic`);
    }
    return new KafkaProtocolError('NOT_LEADER_OR_FOLLOWER', `log ${this.name} is closed`);
  }

  /** Maps a failed write (already undone by the segment) to the error the appends get. */
  private writeFailure(error: unknown): KafkaProtocolError {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC') {
      // Disk full: refuse these batches, stay up, accept writes again once there is room.
      return new KafkaProtocolError('KAFKA_STORAGE_ERROR', `no space left to append to log ${this.name}; the batches were not written — free disk space and retry`, { cause: error });
    }
    const failure = new KafkaProtocolError('KAFKA_STORAGE_ERROR', `write to log ${this.name} failed (${code ?? 'unknown'}); the log is offline until restart`, { cause: error });
    this.failure = failure;
    this.logger.error({ err: error }, 'write failed; taking the log offline');
    return failure;
  }

  private maybeRoll(incomingBytes: number, incomingRecords: number, now: number): void {
    const active = this.activeSegment;
    if (active.size === 0) return;
    const full = active.size + incomingBytes > this.config.segmentBytes;
    const old = now - active.createdAt >= rollAfterMs(this.config);
    // Kafka's rule (LogSegment.canConvertToRelativeOffset): every offset of the batch must fit the
    // index as an Int32 relative to the segment's base, or the entries would wrap.
    const overflow = !active.index.fits(this.logEndOffset + Math.max(incomingRecords, 1) - 1);
    if (!full && !old && !overflow) return;
    this.writePendingNow();
    // Deferred on a full disk (see LogSegment.persistIndex): the next flush or the close retries.
    this.noteIndexWrite(active.persistIndex());
    this.addSegment(LogSegment.create(this.directory, this.logEndOffset, now));
    // Every batch before the new segment is in the file: its producer state is the snapshot's.
    this.takeSnapshot(this.logEndOffset);
  }

  private addSegment(segment: LogSegment): void {
    this.segments.push(segment);
    this.baseOffsets.push(segment.baseOffset);
  }

  private activeOrFirst(): LogSegment {
    const first = this.segments[0];
    if (first === undefined) throw new Error(`log ${this.name} has no segment`);
    return first;
  }

  private endMark(): Mark {
    const segment = this.activeSegment;
    return { offset: segment.nextOffset, segment, position: segment.size };
  }

  /** Index of the last segment whose base offset is ≤ `offset` (binary search). */
  private segmentIndexFor(offset: number): number {
    let low = 0;
    let high = this.baseOffsets.length - 1;
    let found = 0;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      if ((this.baseOffsets[middle] ?? 0) <= offset) {
        found = middle;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    return found;
  }

  private slice(segment: LogSegment, position: number, size: number, firstBatchOffset: number, cached: boolean): LogSlice {
    return new SegmentSlice(segment, position, size, firstBatchOffset, cached);
  }

  // ---- loading and recovery -------------------------------------------------------------

  private async loadSegments(options: LoadOptions): Promise<void> {
    // The folder is made now (one cheap call, no fsync, no descriptor); its entry in the data dir
    // is fsynced by the first flush, before any data in it counts as flushed.
    if (mkdirSync(this.directory, { recursive: true }) !== undefined) this.unsyncedEntries.dataDir = true;
    const swaps = recoverSwaps(this.directory);
    if (swaps.removedCleaned > 0 || swaps.finishedSwaps.length > 0) this.logger.warn({ ...swaps }, 'finished or rolled back a cleaner swap a stop interrupted');
    const files = listFolder(this.directory);
    const bases: number[] = [];
    for (const file of files) {
      const match = SEGMENT_FILE.exec(file);
      if (match?.[1] !== undefined) bases.push(Number(match[1]));
      else if (file.endsWith('.tmp') || file.endsWith('.deleted')) rmSync(join(this.directory, file), { force: true });
    }
    bases.sort((a, b) => a - b);
    // Index files whose segment is gone are leftovers of an interrupted deletion.
    for (const file of files) {
      const base = /^(\d{20})\.(index|timeindex)$/.exec(file)?.[1];
      if (base !== undefined && !bases.includes(Number(base))) rmSync(join(this.directory, file), { force: true });
    }

    // Segments wholly before the persisted log start were deleted by retention before a crash.
    this.logStartOffset = options.logStartOffset;
    for (const base of bases) this.addSegment(LogSegment.open(this.directory, base));
    while (this.segments.length > 1 && (this.segments[1]?.baseOffset ?? Infinity) <= this.logStartOffset) {
      this.segments.shift()?.delete();
      this.baseOffsets.shift();
    }
    if (this.segments.length === 0) {
      // Empty: a segment without files, created when the first batch comes.
      this.addSegment(LogSegment.create(this.directory, this.logStartOffset, this.clock.now()));
    }
    if (this.logStartOffset < this.activeOrFirst().baseOffset) this.logStartOffset = this.activeOrFirst().baseOffset;

    const recoverFrom = options.cleanShutdown ? this.segments.length : this.segmentIndexFor(options.recoveryPoint);
    for (let index = 0; index < this.segments.length; index += 1) {
      const segment = this.segments[index];
      if (segment === undefined) break;
      if (!segment.hasFile) continue;
      if (index < recoverFrom) {
        let whole: boolean;
        const problem = segment.loadIndex();
        if (problem !== undefined) {
          const what = problem.kind === 'damaged' ? 'index missing or corrupt' : "index written by an earlier version (base offsets, not Kafka's last offsets)";
          this.logger.warn({ segment: segment.baseOffset, reason: problem.reason }, `${what}; rebuilding it from the segment`);
          whole = await this.rebuild(segment);
        } else {
          whole = segment.loadTail(this.config.indexIntervalBytes);
        }
        if (!segment.overflowed && whole) continue;
        // Written before segments rolled on relative-offset overflow (offsets past what the index
        // holds), or bytes that are not whole batches: damage, cut like any other (checked in full,
        // truncated there, and the later segments dropped: they cannot follow a cut).
        this.logger.warn({ segment: segment.baseOffset, overflowed: segment.overflowed }, 'segment holds offsets its index cannot represent or bytes that are not whole batches; checking it in full');
        if (await this.recoverSegment(segment)) {
          this.dropSegmentsFrom(index + 1);
          break;
        }
        continue;
      }
      const previous = this.segments[index - 1];
      // Among recovered segments a gap is a hole a crash left (a segment whose data never reached
      // the disk), and an overlap is damage: either way the log is valid only up to the previous
      // one. The cleaner keeps each cleaned segment's last batch (if only as a header), so its
      // segments end where the next begins; the versions before that did not, and left gaps after
      // trusted segments (below the recovery point, where the cleaner swaps), which are allowed.
      const gapAllowed = index - 1 < recoverFrom;
      if (previous !== undefined && (segment.baseOffset < previous.nextOffset || (!gapAllowed && segment.baseOffset !== previous.nextOffset))) {
        this.logger.warn({ segment: segment.baseOffset, expected: previous.nextOffset }, 'segment does not follow on; deleting it and later ones');
        this.dropSegmentsFrom(index);
        break;
      }
      if (await this.recoverSegment(segment)) {
        // Everything after the first invalid byte is gone: later segments cannot follow on.
        this.dropSegmentsFrom(index + 1);
        break;
      }
    }
    if (!options.cleanShutdown) {
      // What survived the crash is valid; make it durable before exposing it.
      for (const segment of this.segments.slice(Math.min(recoverFrom, this.segments.length - 1))) await segment.flush();
      this.logger.info(
        { ...this.recoveryReport, recoveryPoint: options.recoveryPoint, logEndOffset: this.logEndOffset },
        this.recoveryReport.bytesTruncated > 0 ? 'recovered log; truncated invalid bytes' : 'recovered log; every batch valid',
      );
    }
    this.flushedMark = this.endMark();
    this.writtenMark = this.flushedMark;
    this.highWatermarkMark = this.flushedMark;
  }

  /**
   * Producer state after the segments are loaded: the newest valid snapshot at or below the log
   * end, then the batches after it replayed from the segments. Snapshots above the log end
   * (truncated away) and below the first segment are deleted; an unreadable one is logged,
   * deleted and the next older one tried; with none, the whole log is replayed. Never fails the
   * load over a snapshot. Producers idle past producer.id.expiration.ms are then forgotten.
   */
  private loadProducerState(): void {
    const end = this.logEndOffset;
    const first = this.activeOrFirst().baseOffset;
    const offsets = listSnapshots(this.directory);
    for (const offset of offsets) {
      if (offset > end) this.logger.info({ snapshot: offset, logEndOffset: end }, 'deleting a producer snapshot past the log end (truncated away)');
    }
    this.deleteSnapshots((offset) => offset > end || offset < first);
    let replayFrom = first;
    for (const offset of offsets.filter((candidate) => candidate >= first && candidate <= end).reverse()) {
      try {
        this.producers.load(readSnapshot(this.directory, offset));
        replayFrom = offset;
        this.lastSnapshot = { offset, changes: this.producers.changes };
        break;
      } catch (error) {
        this.logger.warn({ err: error, snapshot: offset }, 'producer snapshot unreadable; deleting it and trying an older one');
        this.deleteSnapshots((candidate) => candidate === offset);
      }
    }
    const now = this.clock.now();
    let replayed = 0;
    for (let index = this.segmentIndexFor(replayFrom); index < this.segments.length; index += 1) {
      const segment = this.segments[index];
      if (segment === undefined || !segment.hasFile || segment.nextOffset <= replayFrom) continue;
      const start = segment.baseOffset >= replayFrom ? 0 : segment.findBatch(replayFrom, segment.size)?.position;
      if (start === undefined) continue;
      replayed += replayProducerBatches(this.producers, segment.fd, start, segment.size, now, this.producerIdExpirationMs);
    }
    this.producers.removeBefore(this.logStartOffset);
    // As Kafka does when loading: producers idle past expiration while the broker was down are gone.
    this.producers.removeExpired(now, this.producerIdExpirationMs);
    if (replayFrom < end) {
      this.logger.info({ from: replayFrom, to: end, producerBatches: replayed, producers: this.producers.size }, 'rebuilt producer state from the log');
    }
  }

  /** Rebuilds a trusted segment's index by scanning its batches (no CRC checks). */
  private async rebuild(segment: LogSegment): Promise<boolean> {
    segment.resetForRebuild();
    const whole = segment.loadTail(this.config.indexIntervalBytes);
    this.noteIndexWrite(segment.rewriteIndex());
    return whole;
  }

  private dropSegmentsFrom(index: number): void {
    for (const later of this.segments.splice(index)) {
      this.recoveryReport.segmentsDeleted += 1;
      this.recoveryReport.bytesTruncated += later.size;
      this.logger.warn({ segment: later.baseOffset }, 'deleting segment after the truncation point');
      later.delete();
    }
    this.baseOffsets.splice(index);
    if (this.segments.length === 0) throw new Error(`log ${this.name} lost its first segment`);
  }

  /** Checks every batch of a segment, truncating at the first invalid one. Returns true if it truncated. */
  private async recoverSegment(segment: LogSegment): Promise<boolean> {
    segment.resetForRebuild();
    // Batches up to the largest size any topic setting allows were valid when written.
    const largestBatch = this.largestBatchBytes();
    const scan = await verifyBatches(
      segment.fd, 0, segment.size, segment.baseOffset, largestBatch,
      (batch) => segment.track(batch, this.config.indexIntervalBytes),
      segment.baseOffset,
    );
    this.noteIndexWrite(segment.rewriteIndex());
    this.recoveryReport.segmentsChecked += 1;
    this.recoveryReport.batchesVerified += scan.batches;
    if (scan.damage === undefined) return false;
    this.recoveryReport.bytesTruncated += segment.size - scan.validEnd;
    this.logger.warn(
      { segment: segment.baseOffset, position: scan.damage.position, reason: scan.damage.reason, bytesDropped: segment.size - scan.validEnd },
      'recovery truncated the segment at the first invalid byte',
    );
    segment.truncateTo(scan.validEnd);
    return true;
  }
}

/**
 * A LogSlice holding a reference to its segment from creation to `release`. A class rather than
 * an object of closures: a Fetch makes one per partition it returns.
 */
class SegmentSlice implements LogSlice {
  readonly fd: number;
  private released = false;

  constructor(
    private readonly segment: LogSegment,
    readonly position: number,
    readonly size: number,
    readonly firstBatchOffset: number,
    readonly cached: boolean,
  ) {
    segment.retain();
    this.fd = segment.fd;
  }

  get path(): string {
    return this.segment.logPath;
  }

  async readBytes(): Promise<Buffer> {
    // The slice's reference keeps the descriptor open across the read; after release it may be gone.
    if (this.released) throw new TributaryError({ code: 'SLICE_RELEASED', message: `a slice of ${this.segment.logPath} was read after its release` });
    const bytes = Buffer.allocUnsafe(this.size);
    const read = await readFully(this.segment.fd, bytes, this.size, this.position);
    return bytes.subarray(0, read);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.segment.release();
  }
}

/** A folder's entries; none when it does not exist (deleted under a lookup). */
function listFolder(directory: string): string[] {
  try {
    return readdirSync(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

export function invalidLogDirectory(name: string): TributaryError {
  return new TributaryError({
    code: 'STORAGE_LAYOUT_INVALID',
    message: `folder ${name} in the data dir is not <topic>-<partition>; move it out of the data dir`,
    details: { name },
  });
}
