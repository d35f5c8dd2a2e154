/**
 * The log cleaner of one broker (Kafka's LogCleaner + LogCleanerManager): picks the dirtiest
 * compacted log, cleans it (clean-pass.ts), swaps the result in (PartitionLog.swapInCleaned),
 * records how far each log is clean, and goes on with the next.
 *
 *   <data-dir>/cleaner-offset-checkpoint   first dirty offset per compacted partition (checkpoint.ts
 *                                          format, with its crc32c line), written after every pass
 *
 * Choosing (`grabFilthiestCompactedLog`): among logs whose cleanup.policy has `compact`, not
 * marked uncleanable, the dirty ratio is cleanable bytes ÷ (clean + cleanable bytes) over the
 * closed segments below the uncleanable tail. A log is eligible when the ratio is above its
 * min.cleanable.dirty.ratio, or when a dirty segment is older than max.compaction.lag.ms; the
 * highest ratio wins. The first dirty offset comes from the checkpoint, reset to the log start
 * when it is below it or past the log end.
 *
 * Failures: a pass that fails on one partition (a damaged batch, a key map too small for one
 * batch, an I/O error) marks that partition uncleanable with the reason (logged, counted in
 * `uncleanablePartitions`) until restart; the others go on. A pass whose log changed under it
 * (truncated, deleted) is dropped and the log tried again later. A truncation below the first
 * dirty offset lowers it (`truncating`).
 *
 * One pass runs at a time, on a thread of its own (clean-thread.ts), so cleaning takes a core
 * rather than the event loop's time for requests; the key map lives there between passes. Kafka's
 * `log.cleaner.threads` is accepted, but passes are serial. Reads plus writes are throttled to
 * `log.cleaner.io.max.bytes.per.second`.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../../common/clock.js';
import { checkpointKey, readCheckpoint, writeCheckpoint, type OffsetCheckpoint } from '../checkpoint.js';
import { isCompacted } from '../log-config.js';
import type { CleanableView, PartitionLog } from '../partition-log.js';
import type { PassResult } from './clean-pass.js';
import { CleanThread } from './clean-thread.js';
import { SLOT_BYTES } from './key-offset-map.js';

export const CLEANER_CHECKPOINT = 'cleaner-offset-checkpoint';

export interface CleanerConfig {
  readonly enable: boolean;
  readonly threads: number;
  readonly dedupeBufferSize: number;
  readonly loadFactor: number;
  readonly ioBufferSize: number;
  readonly maxIoBytesPerSecond: number;
  readonly backoffMs: number;
}

export const DEFAULT_CLEANER_CONFIG: CleanerConfig = {
  enable: true,
  threads: 1,
  dedupeBufferSize: 128 * 1024 * 1024,
  loadFactor: 0.9,
  ioBufferSize: 512 * 1024,
  maxIoBytesPerSecond: Infinity,
  backoffMs: 15_000,
};

/** The logs the cleaner looks after. */
export interface CleanerLogs {
  readonly dataDir: string;
  allLogs(): readonly PartitionLog[];
  /**
   * Makes every log's recovery point durable. Called before a pass swaps segments in: recovery
   * trusts a gap between segments only below the recovery point (partition-log.ts, loadSegments).
   */
  writeRecoveryCheckpoint(): void;
}

export interface CleanerOptions {
  readonly logs: CleanerLogs;
  readonly config: CleanerConfig;
  readonly logger: Logger;
  readonly clock?: Clock;
}

/** The result of one pass, for tests and the log. */
export interface CleanedLog extends PassResult {
  readonly topic: string;
  readonly partition: number;
  readonly dirtyRatio: number;
  readonly firstDirtyOffset: number;
}

interface Candidate {
  readonly log: PartitionLog;
  readonly view: CleanableView;
  readonly firstDirty: number;
  readonly ratio: number;
}

export class LogCleaner {
  private readonly clock: Clock;
  private readonly checkpointPath: string;
  private readonly firstDirty: OffsetCheckpoint;
  private readonly uncleanable = new Map<string, string>();
  /** Per log, when the earliest tombstone its last pass kept may go: a pass is due then, dirty or not (KIP-534). */
  private readonly tombstoneHorizons = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;
  /** Where passes run: a thread of their own, off the broker's event loop. */
  private readonly thread = new CleanThread();
  /** Passes run one after another (they share the key map), whoever asks. */
  private passes: Promise<unknown> = Promise.resolve();
  /** Counters, as Kafka's cleaner metrics. */
  readonly metrics = { passes: 0, bytesRead: 0, bytesWritten: 0, recordsRemoved: 0, lastRunAt: 0, maxDirtyPercent: 0 };

  constructor(private readonly options: CleanerOptions) {
    this.clock = options.clock ?? systemClock;
    this.checkpointPath = join(options.logs.dataDir, CLEANER_CHECKPOINT);
    this.firstDirty = this.readCheckpointOrEmpty();
  }

  /** Partitions marked uncleanable, with why. */
  get uncleanablePartitions(): ReadonlyMap<string, string> {
    return this.uncleanable;
  }

  /** Cleans in the background until `stop`: the dirtiest log, then the next, backing off when none is eligible. */
  start(): void {
    if (!this.options.config.enable || this.timer !== undefined || this.stopped) return;
    const loop = (): void => {
      this.timer = undefined;
      if (this.stopped) return;
      this.running = this.cleanOnce()
        .catch((error: unknown) => this.options.logger.error({ err: error }, 'log cleaner pass failed'))
        .then((cleaned) => {
          if (!this.stopped) this.timer = setTimeout(loop, cleaned === undefined ? this.options.config.backoffMs : 0);
        });
    };
    this.timer = setTimeout(loop, 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
    await this.passes;
    await this.thread.stop();
  }

  /** Cleans the dirtiest eligible log once; undefined when no log is eligible. */
  cleanOnce(): Promise<CleanedLog | undefined> {
    return this.serially(() => this.cleanFilthiest());
  }

  private serially<T>(task: () => Promise<T>): Promise<T> {
    const run = this.passes.then(task);
    this.passes = run.catch(() => undefined);
    return run;
  }

  private async cleanFilthiest(): Promise<CleanedLog | undefined> {
    const now = this.clock.now();
    this.metrics.lastRunAt = now;
    const candidate = this.filthiest(now);
    if (candidate === undefined) return undefined;
    return this.clean(candidate, now);
  }

  /**
   * The log is being cut back to end at or above `end` (a follower's truncation): a first dirty
   * offset above it is lowered to it and written at once (Kafka's `maybeTruncateCheckpoint`).
   * Otherwise what the log grows again below the old offset would count as clean without ever
   * being in the key map: older values of its keys would stay, and a tombstone there would be
   * stamped and, past its horizon, dropped while the value it deletes is still in the log.
   */
  truncating(log: PartitionLog, end: number): void {
    const key = keyOf(log);
    const firstDirty = this.firstDirty.get(key);
    if (firstDirty === undefined || firstDirty <= end) return;
    this.firstDirty.set(key, end);
    this.writeCheckpoint();
  }

  /** Cleans one log now whatever its dirty ratio (tests, tools); undefined when it has nothing cleanable. */
  cleanLogNow(log: PartitionLog): Promise<CleanedLog | undefined> {
    return this.serially(async () => {
      const now = this.clock.now();
      const candidate = this.candidate(log, now, true);
      return candidate === undefined ? undefined : this.clean(candidate, now);
    });
  }

  private filthiest(now: number): Candidate | undefined {
    let best: Candidate | undefined;
    let maxRatio = 0;
    for (const log of this.options.logs.allLogs()) {
      const candidate = this.candidate(log, now, false);
      if (candidate === undefined) continue;
      maxRatio = Math.max(maxRatio, candidate.ratio);
      if (best === undefined || candidate.ratio > best.ratio) best = candidate;
    }
    this.metrics.maxDirtyPercent = Math.round(maxRatio * 100);
    return best;
  }

  private candidate(log: PartitionLog, now: number, force: boolean): Candidate | undefined {
    if (!isCompacted(log.config) || this.uncleanable.has(keyOf(log))) return undefined;
    let view: CleanableView;
    try {
      view = log.cleanableView(now);
    } catch {
      return undefined; // closed or offline: not a candidate
    }
    const checkpointed = this.firstDirty.get(keyOf(log)) ?? view.logStartOffset;
    const firstDirty = checkpointed < view.logStartOffset || checkpointed > log.logEndOffset ? view.logStartOffset : checkpointed;
    let cleanBytes = 0;
    let dirtyBytes = 0;
    let oldestDirty = Infinity;
    for (const segment of view.segments) {
      if (segment.nextOffset <= firstDirty) {
        cleanBytes += segment.size;
      } else {
        dirtyBytes += segment.size;
        oldestDirty = Math.min(oldestDirty, Number(segment.maxTimestamp));
      }
    }
    // Horizons are kept in memory: a log first seen since start may hold tombstones stamped before
    // it, whose horizons are at most delete.retention.ms from now.
    if (!this.tombstoneHorizons.has(keyOf(log))) this.tombstoneHorizons.set(keyOf(log), now + log.config.deleteRetentionMs);
    const tombstonesDue = (this.tombstoneHorizons.get(keyOf(log)) ?? Infinity) <= now && cleanBytes > 0;
    if (dirtyBytes === 0 && !tombstonesDue) return undefined;
    const ratio = dirtyBytes / (cleanBytes + dirtyBytes);
    const overdue = oldestDirty < now - log.config.maxCompactionLagMs;
    if (!force && !tombstonesDue && ratio <= log.config.minCleanableDirtyRatio && !overdue) return undefined;
    return { log, view, firstDirty, ratio };
  }

  private async clean(candidate: Candidate, now: number): Promise<CleanedLog | undefined> {
    const { log, view, firstDirty } = candidate;
    const config = log.config;
    const key = keyOf(log);
    let recoveryPointWritten = false;
    let result: PassResult;
    const { dedupeBufferSize, loadFactor, threads, maxIoBytesPerSecond, ioBufferSize } = this.options.config;
    try {
      result = await this.thread.run({
        input: {
          directory: log.directory,
          segments: view.segments,
          firstDirty,
          firstUncleanable: view.firstUncleanable,
          producerLastOffsets: view.producerLastOffsets,
          segmentBytes: config.segmentBytes,
          indexIntervalBytes: config.indexIntervalBytes,
          deleteRetentionMs: config.deleteRetentionMs,
          now,
          readBufferBytes: Math.max(ioBufferSize, 64 * 1024),
        },
        mapSlots: Math.floor(dedupeBufferSize / Math.max(threads, 1) / SLOT_BYTES),
        loadFactor,
        maxIoBytesPerSecond,
        swap: (group) => {
          if (!recoveryPointWritten) {
            this.options.logs.writeRecoveryCheckpoint();
            recoveryPointWritten = true;
          }
          log.swapInCleaned(group, view.generation);
        },
        shouldStop: () => log.cleaningStale(view.generation) ?? (this.stopped ? 'the cleaner is stopping' : undefined),
      });
    } catch (error) {
      // A pass that failed while the log changed under it (a segment deleted by retention or a
      // truncation mid-read) is dropped and tried again, not held against the partition.
      const stale = log.cleaningStale(view.generation);
      if ((error as { code?: string }).code === 'CLEANING_ABORTED' || stale !== undefined || this.stopped) {
        this.options.logger.info({ topic: log.topic, partition: log.partition, reason: (error as Error).message }, 'cleaning pass dropped: the log changed under it');
        return undefined;
      }
      const reason = error instanceof Error ? error.message : String(error);
      this.uncleanable.set(key, reason);
      this.options.logger.error({ err: error, topic: log.topic, partition: log.partition }, 'partition marked uncleanable; the cleaner goes on with the others');
      return undefined;
    }
    // A truncation between the last swap and here lowered the checkpoint; this pass's end is stale.
    if (log.cleaningStale(view.generation) !== undefined) return undefined;
    this.firstDirty.set(key, result.nextDirtyOffset);
    this.tombstoneHorizons.set(key, result.earliestTombstoneHorizon);
    this.writeCheckpoint();
    this.metrics.passes += 1;
    this.metrics.bytesRead += result.bytesRead;
    this.metrics.bytesWritten += result.bytesWritten;
    this.metrics.recordsRemoved += result.recordsRemoved;
    this.options.logger.info(
      { topic: log.topic, partition: log.partition, firstDirty, nextDirty: result.nextDirtyOffset, groups: result.groups.length, removed: result.recordsRemoved, bytesRead: result.bytesRead, bytesWritten: result.bytesWritten },
      'cleaned log',
    );
    return { ...result, topic: log.topic, partition: log.partition, dirtyRatio: candidate.ratio, firstDirtyOffset: firstDirty };
  }

  private readCheckpointOrEmpty(): OffsetCheckpoint {
    if (!existsSync(this.checkpointPath)) return new Map();
    try {
      return readCheckpoint(this.checkpointPath);
    } catch (error) {
      // Losing it only makes the next passes re-read logs from their start.
      this.options.logger.warn({ err: error, path: this.checkpointPath }, 'cleaner checkpoint unreadable; cleaning every log from its start');
      return new Map();
    }
  }

  private writeCheckpoint(): void {
    const live = new Set(this.options.logs.allLogs().map(keyOf));
    for (const key of this.firstDirty.keys()) if (!live.has(key)) this.firstDirty.delete(key);
    try {
      writeCheckpoint(this.checkpointPath, this.firstDirty);
    } catch (error) {
      this.options.logger.warn({ err: error }, 'could not write the cleaner checkpoint; the next pass re-reads from the last one written');
    }
  }
}

function keyOf(log: PartitionLog): string {
  return checkpointKey(log.topic, log.partition);
}
