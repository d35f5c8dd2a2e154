/**
 * The segments of one partition's log, in offset order (Kafka's LocalLog): finding the segment
 * and batch boundary for an offset, rolling, adding, replacing, cutting and deleting segments,
 * and what is not yet durable — segments with unflushed batches, directory entries not yet
 * fsynced, index writes a full disk deferred. The log's ends and what they mean to producers,
 * consumers and followers are PartitionLog's.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../common/logger.js';
import { TributaryError } from '../common/errors.js';
import { KafkaProtocolError } from '../protocol/kafka-errors.js';
import { fsyncDirectoryAsync } from './durable-files.js';
import { rollAfterMs, type LogConfig } from './log-config.js';
import { LogSegment } from './segment.js';

/** A batch boundary: an offset and where it lies, in which segment. */
export interface Mark {
  readonly offset: number;
  readonly segment: LogSegment;
  readonly position: number;
}

/** What a truncation cut (`LocalLog.truncateTo`). */
export interface SegmentCut {
  readonly removed: readonly LogSegment[];
  readonly bytesCut: number;
  /** The cut segment and the others with unflushed batches: the truncation fsyncs them. */
  readonly toSync: ReadonlySet<LogSegment>;
}

export class LocalLog {
  private segmentList: LogSegment[] = [];
  private baseOffsetList: number[] = [];
  private readonly unflushedSegments = new Set<LogSegment>();
  private unflushedRecordCount = 0;
  private firstUnflushedAt = 0;
  /**
   * Directory entries created and not yet fsynced: the partition folder (in the data dir) and
   * segment files (in the folder). Files are created lazily on the first append, and the folders
   * are fsynced by the next flush, before the data in those files counts as flushed.
   */
  private readonly unsyncedEntries = { dataDir: false, folder: false };
  /** A full disk made index writes fail; logged once per episode (`noteIndexWrite`). */
  private indexWritesDeferred = false;

  constructor(
    readonly directory: string,
    readonly name: string,
    private readonly logger: Logger,
  ) {}

  get segments(): readonly LogSegment[] {
    return this.segmentList;
  }

  get baseOffsets(): readonly number[] {
    return this.baseOffsetList;
  }

  get logEndOffset(): number {
    return this.activeSegment.nextOffset;
  }

  get sizeInBytes(): number {
    return this.segmentList.reduce((sum, segment) => sum + segment.size, 0);
  }

  get activeSegment(): LogSegment {
    const active = this.segmentList[this.segmentList.length - 1];
    if (active === undefined) throw new Error(`log ${this.name} has no segment`);
    return active;
  }

  firstSegment(): LogSegment {
    const first = this.segmentList[0];
    if (first === undefined) throw new Error(`log ${this.name} has no segment`);
    return first;
  }

  endMark(): Mark {
    const segment = this.activeSegment;
    return { offset: segment.nextOffset, segment, position: segment.size };
  }

  /** Index of the last segment whose base offset is ≤ `offset` (binary search). */
  segmentIndexFor(offset: number): number {
    let low = 0;
    let high = this.baseOffsetList.length - 1;
    let found = 0;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      if ((this.baseOffsetList[middle] ?? 0) <= offset) {
        found = middle;
        low = middle + 1;
      } else {
        high = middle - 1;
      }
    }
    return found;
  }

  /**
   * The mark of the batch boundary at or below `offset`: the start of the batch holding it, or
   * the written end. Offsets below the first segment give its start. In a gap the cleaner left
   * (no batch holds `offset`) it is the first boundary after it: the start of the next batch in
   * the segment, or of the next segment when the gap runs to the segment's end (a cleaned segment
   * may end early or hold nothing). Nothing lies between `offset` and that boundary, and the
   * cleaner removed only what was below the high watermark then, so the boundary was committed.
   * `known` are marks already found (the high watermark, the flushed end), tried first.
   */
  markAt(offset: number, written: Mark, known: readonly Mark[]): Mark {
    if (offset >= written.offset) return written;
    for (const mark of known) {
      if (mark.offset === offset && !mark.segment.isClosed) return mark;
    }
    const index = this.segmentIndexFor(offset);
    const segment = this.segmentList[index];
    if (segment === undefined) throw new Error(`log ${this.name} has no segment`);
    if (offset <= segment.baseOffset) return { offset: segment.baseOffset, segment, position: 0 };
    const next = this.segmentList[index + 1];
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

  addSegment(segment: LogSegment): void {
    this.segmentList.push(segment);
    this.baseOffsetList.push(segment.baseOffset);
  }

  /** Whether the active segment must roll before a batch of this size and record count. */
  shouldRoll(incomingBytes: number, incomingRecords: number, now: number, config: LogConfig): boolean {
    const active = this.activeSegment;
    if (active.size === 0) return false;
    const full = active.size + incomingBytes > config.segmentBytes;
    const old = now - active.createdAt >= rollAfterMs(config);
    // Kafka's rule (LogSegment.canConvertToRelativeOffset): every offset of the batch must fit the
    // index as an Int32 relative to the segment's base, or the entries would wrap.
    const overflow = !active.index.fits(this.logEndOffset + Math.max(incomingRecords, 1) - 1);
    return full || old || overflow;
  }

  /** Starts a new active segment at the log end; the old one's batches must all be written. */
  roll(now: number): void {
    // Deferred on a full disk (see LogSegment.persistIndex): the next flush or the close retries.
    this.noteIndexWrite(this.activeSegment.persistIndex());
    this.addSegment(LogSegment.create(this.directory, this.logEndOffset, now));
  }

  /** Counts an appended batch for the flush policy and the next flush. */
  noteAppended(segment: LogSegment, records: number, now: number): void {
    if (this.unflushedRecordCount === 0) this.firstUnflushedAt = now;
    this.unflushedRecordCount += records;
    this.unflushedSegments.add(segment);
  }

  get unflushedRecords(): number {
    return this.unflushedRecordCount;
  }

  /** Whether the flush policy wants a flush now: enough records waiting, or the oldest waiting long enough. */
  flushDue(now: number, config: LogConfig): boolean {
    if (this.unflushedRecordCount === 0) return false;
    return this.unflushedRecordCount >= config.flushMessages || now - this.firstUnflushedAt >= config.flushMs;
  }

  /** The segments with unflushed batches, handed to a flush: from now on none is unflushed. */
  takeUnflushed(): LogSegment[] {
    const segments = [...this.unflushedSegments];
    this.unflushedSegments.clear();
    this.unflushedRecordCount = 0;
    return segments;
  }

  /** fsyncs `segments`, then the folders whose entries were created since the last flush. */
  async flushSegments(segments: readonly LogSegment[]): Promise<void> {
    for (const segment of segments) this.noteIndexWrite(await segment.flush());
    await this.syncEntries();
  }

  /** Logs when a full disk starts deferring index writes, and when they succeed again (once each). */
  noteIndexWrite(written: boolean): void {
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

  /** Makes the log's folder; a new entry in the data dir is fsynced by the next flush. */
  createDirectory(): void {
    if (mkdirSync(this.directory, { recursive: true }) !== undefined) this.unsyncedEntries.dataDir = true;
  }

  /** Creates the segment's file (and the log's folder) just before its first batch. */
  ensureFile(segment: LogSegment): void {
    if (segment.hasFile) return;
    try {
      this.createDirectory();
      segment.createFile();
      this.unsyncedEntries.folder = true;
    } catch (error) {
      // Nothing was appended: refuse this batch, keep the log up (a full disk or descriptor table may clear).
      const code = (error as NodeJS.ErrnoException).code ?? 'unknown';
      this.logger.error({ err: error, segment: segment.baseOffset }, 'could not create a segment file');
      throw new KafkaProtocolError('KAFKA_STORAGE_ERROR', `could not create segment ${segment.baseOffset} of log ${this.name} (${code}); the batch was not written`, { cause: error });
    }
  }

  /** Deletes the `count` oldest segments (below a new log start); returns them. */
  deleteOldest(count: number): LogSegment[] {
    const removed = this.segmentList.splice(0, count);
    this.baseOffsetList.splice(0, count);
    for (const segment of removed) {
      this.unflushedSegments.delete(segment);
      // Readers holding the segment (a fetch being sent, a timestamp lookup) keep its descriptor
      // until they release it; nothing new can start on it.
      segment.delete();
    }
    return removed;
  }

  /** Takes the segments from `index` on out of the list (their files stay); returns them. */
  removeFrom(index: number): LogSegment[] {
    const removed = this.segmentList.splice(index);
    this.baseOffsetList.splice(index);
    return removed;
  }

  /** Puts `replacement` where `sources` (consecutive, from index `first`) were, and lets them go. */
  replaceSegments(first: number, sources: readonly LogSegment[], replacement: LogSegment): void {
    this.segmentList.splice(first, sources.length, replacement);
    this.baseOffsetList.splice(first, sources.length, replacement.baseOffset);
    // Readers holding an old segment keep its descriptor (its file is already unlinked) until they release it.
    for (const segment of sources) {
      this.unflushedSegments.delete(segment);
      segment.abandon();
    }
  }

  /**
   * Cuts the log at byte `cutPosition` (a batch boundary) of the segment at `index`: deletes the
   * later segments and rebuilds the cut segment's offsets, timestamps and index.
   */
  truncateTo(index: number, cutPosition: number, config: LogConfig): SegmentCut {
    const segment = this.segmentList[index];
    if (segment === undefined) throw new Error(`log ${this.name} has no segment`);
    const removed = this.removeFrom(index + 1);
    let bytesCut = segment.size - cutPosition;
    const toSync = new Set(this.unflushedSegments);
    toSync.add(segment);
    this.takeUnflushed();
    for (const later of removed) {
      bytesCut += later.size;
      toSync.delete(later);
      later.delete();
    }
    if (cutPosition < segment.size) segment.truncateTo(cutPosition);
    // Truncation is rare: the cut segment's offsets, timestamps and index are rebuilt from its batches.
    segment.resetForRebuild();
    if (segment.hasFile) {
      segment.loadTail(config.indexIntervalBytes);
      this.noteIndexWrite(segment.rewriteIndex());
    }
    return { removed, bytesCut, toSync };
  }

  /** Replaces every segment with one empty segment at `offset`; returns the old ones, for the caller to delete. */
  truncateFullyAndStartAt(offset: number, now: number): LogSegment[] {
    const doomed = this.segmentList;
    this.segmentList = [];
    this.baseOffsetList = [];
    this.takeUnflushed();
    this.addSegment(LogSegment.create(this.directory, offset, now));
    return doomed;
  }
}
