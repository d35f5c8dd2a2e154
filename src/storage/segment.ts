/**
 * One segment of a partition log: `<base>.log` holding RecordBatch v2 bytes back to back, exactly
 * as they are served, plus its sparse indexes (sparse-index.ts). The segment's name is its first
 * offset, zero-padded to 20 digits.
 *
 * Appended batches are queued and written together by `writePending` (one `writev` for all the
 * batches appended in one turn of the event loop): a system call per batch would cost more than
 * the copy. Writes are synchronous (page cache), fsyncs go to the thread pool.
 *
 * Files are created lazily: a new segment holds no file (and no descriptor) until the log asks
 * for it with `createFile`, just before its first append, so thousands of empty partitions cost
 * no descriptors and no system calls.
 *
 * Descriptor lifetime. A descriptor number is reused by the OS as soon as it is closed, so a
 * write or read through a closed one lands in (or comes from) whatever file was opened next. So:
 * every asynchronous use of the descriptor (an fsync, a read of a slice, a fetch streaming from
 * it) holds a reference (`retain`/`release`); closing or deleting only marks the segment closed,
 * and the descriptor is closed when the last reference goes. A closed segment refuses every new
 * operation, and `fd` throws once the descriptor is gone.
 */
import { closeSync, fstatSync, ftruncateSync, openSync, rmSync, writeSync, writevSync } from 'node:fs';
import { join } from 'node:path';
import { TributaryError } from '../common/errors.js';
import { RECORD_BATCH_OVERHEAD } from '../protocol/record-batch.js';
import { scanBatches, type BatchInfo } from './batch-scan.js';
import { fsyncAsync } from './durable-files.js';
import { SparseIndex, type IndexLoadProblem } from './sparse-index.js';

export function segmentFileName(baseOffset: number, suffix: '.log' | '.index' | '.timeindex'): string {
  return `${String(baseOffset).padStart(20, '0')}${suffix}`;
}

/** Whole batches of one read: `size` bytes of the file from `position`. */
export interface SegmentRange {
  readonly position: number;
  readonly size: number;
  /** Base offset of the first batch (≤ the offset asked for). */
  readonly firstBatchOffset: number;
  /** The lookup read headers inside or at the end of the range quickly: see LogSlice.cached. */
  readonly cached: boolean;
}

/**
 * A header read this fast was served by the page cache: the disk answers in milliseconds (a
 * rotational disk's seek alone takes several), the page cache in microseconds.
 */
export const CACHED_READ_MS = 1;

/**
 * Where a batch starts, remembered from an earlier read: a consumer's next fetch asks for the
 * offset just past what it was sent, so the read after this one starts here without a lookup.
 */
interface ReadHint {
  /** The offset a reader is expected to ask for: this batch's base offset. */
  readonly offset: number;
  readonly position: number;
}

/** Read hints kept per segment (one per consumer reading it, up to this many). */
const READ_HINTS = 8;

/** What a segment's state was before its first queued batch, to undo a failed or cancelled write. */
interface BeforePending {
  readonly nextOffset: number;
  readonly maxTimestamp: bigint;
  readonly offsetOfMaxTimestamp: number;
  readonly bytesSinceIndexEntry: number;
  readonly overflowed: boolean;
}

export class LogSegment {
  readonly index: SparseIndex;
  /** Bytes appended, written or still queued; the next batch goes here. */
  size: number;
  /** Bytes actually in the file. */
  private writtenSize: number;
  private pending: Buffer[] = [];
  private beforePending: BeforePending | undefined;
  /** One past the last offset in the segment (= baseOffset when empty). */
  nextOffset: number;
  /** Largest record timestamp seen (exact int64), −1 if none. */
  maxTimestamp = -1n;
  /** Last offset of the first batch that holds `maxTimestamp` (what the time index names); −1 if none. */
  offsetOfMaxTimestamp = -1;
  /** When the segment was created (for segment.ms) or last written (for retention without timestamps). */
  createdAt: number;
  lastWrittenAt: number;
  /** A tracked batch reaches past what the index can hold (only possible in a damaged or old file). */
  overflowed = false;
  private bytesSinceIndexEntry = 0;
  /** The open descriptor; undefined before `createFile` and after the last reference let go. */
  private descriptor: number | undefined;
  /** References besides the owner's: readers and in-flight fsyncs. */
  private references = 0;
  /** The owner let go (closed or deleted): nothing new may start. */
  private closed = false;
  /** Batch starts learnt by reads (`readRange`), newest replacing the oldest. */
  private readonly hints: ReadHint[] = [];
  private nextHint = 0;
  /** `<base>.log` in the folder, computed once: every fetched slice names its file. */
  readonly logPath: string;

  private constructor(
    readonly directory: string,
    readonly baseOffset: number,
    descriptor: number | undefined,
    size: number,
    now: number,
  ) {
    this.index = new SparseIndex(
      baseOffset,
      join(directory, segmentFileName(baseOffset, '.index')),
      join(directory, segmentFileName(baseOffset, '.timeindex')),
    );
    this.logPath = join(directory, segmentFileName(baseOffset, '.log'));
    this.descriptor = descriptor;
    this.size = size;
    this.writtenSize = size;
    this.nextOffset = baseOffset;
    this.createdAt = now;
    this.lastWrittenAt = now;
  }

  /** A new, empty segment without files: `createFile` makes them when the first batch comes. */
  static create(directory: string, baseOffset: number, now: number): LogSegment {
    return new LogSegment(directory, baseOffset, undefined, 0, now);
  }

  /** Opens an existing segment file; indexes and offsets are filled in by the loader. */
  static open(directory: string, baseOffset: number): LogSegment {
    const fd = openSync(join(directory, segmentFileName(baseOffset, '.log')), 'r+');
    try {
      const stat = fstatSync(fd);
      return new LogSegment(directory, baseOffset, fd, stat.size, stat.mtimeMs);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /** The file descriptor, valid while the caller holds a reference (or runs synchronously). */
  get fd(): number {
    if (this.descriptor === undefined) throw this.closedError(this.closed ? 'its file is closed' : 'it has no file yet');
    return this.descriptor;
  }

  get hasFile(): boolean {
    return this.descriptor !== undefined;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Creates the segment's `.log` file (the folder must exist). Its directory entry is not yet
   * durable: the log fsyncs the folder before any data in the file counts as flushed.
   */
  createFile(): void {
    this.assertOpen('create its file');
    if (this.descriptor !== undefined) return;
    this.descriptor = openSync(this.logPath, 'wx+');
  }

  /** Queues one batch whose offsets are already assigned; `writePending` puts it in the file. */
  append(batch: Buffer, info: Omit<BatchInfo, 'position' | 'size'>, indexIntervalBytes: number, now: number): void {
    this.assertOpen('append');
    if (this.descriptor === undefined) throw this.closedError('it has no file yet');
    this.beforePending ??= {
      nextOffset: this.nextOffset,
      maxTimestamp: this.maxTimestamp,
      offsetOfMaxTimestamp: this.offsetOfMaxTimestamp,
      bytesSinceIndexEntry: this.bytesSinceIndexEntry,
      overflowed: this.overflowed,
    };
    const position = this.size;
    this.pending.push(batch);
    this.size += batch.length;
    this.track({ ...info, position, size: batch.length }, indexIntervalBytes);
    this.lastWrittenAt = now;
  }

  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /**
   * Writes the queued batches at the end of the file. On failure the file is cut back to what it
   * held before and the queued batches are forgotten (offsets, index entries), then it throws.
   */
  writePending(): void {
    if (this.pending.length === 0) return;
    // Never reached with batches queued on a closed segment (closing cancels them); refuse anyway.
    this.assertOpen('write');
    const fd = this.fd;
    const batches = this.pending;
    const total = this.size - this.writtenSize;
    this.pending = [];
    try {
      let written = writevSync(fd, batches, this.writtenSize);
      if (written < total) {
        // A short write: finish the rest from one contiguous copy.
        const rest = Buffer.concat(batches).subarray(written);
        let done = 0;
        while (done < rest.length) done += writeSync(fd, rest, done, rest.length - done, this.writtenSize + written + done);
        written += done;
      }
      this.writtenSize += written;
      this.beforePending = undefined;
    } catch (error) {
      this.undoPending();
      ftruncateSync(fd, this.writtenSize);
      throw error;
    }
  }

  /**
   * Forgets the queued batches without writing them (the log is being deleted or closed under
   * them): offsets, timestamps and index entries go back to what the file holds.
   */
  discardPending(): void {
    if (this.pending.length === 0) return;
    this.pending = [];
    this.undoPending();
  }

  private undoPending(): void {
    const before = this.beforePending;
    this.beforePending = undefined;
    this.size = this.writtenSize;
    if (before !== undefined) {
      this.nextOffset = before.nextOffset;
      this.maxTimestamp = before.maxTimestamp;
      this.offsetOfMaxTimestamp = before.offsetOfMaxTimestamp;
      this.bytesSinceIndexEntry = before.bytesSinceIndexEntry;
      this.overflowed = before.overflowed;
    }
    this.index.truncateToPosition(this.writtenSize);
  }

  /**
   * Updates offsets, timestamps and the sparse index for a batch now in the file. Index entries,
   * in Kafka's convention (sparse-index.ts), go to the first batch and to the first after every
   * `indexIntervalBytes` bytes; offsets between entries are found by scanning from the entry before.
   */
  track(batch: BatchInfo, indexIntervalBytes: number): void {
    if (!this.index.fits(batch.lastOffset)) {
      // Only a file written before segments rolled on this (or damaged) gets here; the loader
      // sees the flag and truncates the segment at this batch instead of wrapping its offsets.
      this.overflowed = true;
    } else {
      if (batch.maxTimestamp > this.maxTimestamp) {
        this.maxTimestamp = batch.maxTimestamp;
        this.offsetOfMaxTimestamp = batch.lastOffset;
      }
      if (batch.position === 0 || this.bytesSinceIndexEntry >= indexIntervalBytes) {
        this.index.add(batch.lastOffset, batch.position);
        this.index.addTime(this.maxTimestamp, this.offsetOfMaxTimestamp);
        this.bytesSinceIndexEntry = 0;
      }
    }
    this.bytesSinceIndexEntry += batch.size;
    this.nextOffset = batch.lastOffset + 1;
  }

  /**
   * Loads the index files of a trusted segment (`SparseIndex.load`) and checks the last offset
   * entry against the batch at its position (one header read): it must name that batch's last
   * offset. Returns why the files cannot be used — damaged, or written in the earlier convention —
   * leaving the index empty; the caller then rebuilds it from the batches. Otherwise the caller
   * goes on with `loadTail`.
   */
  loadIndex(): IndexLoadProblem | undefined {
    const problem = this.index.load(this.size);
    if (problem !== undefined) return problem;
    const last = this.index.last();
    if (last === undefined) return undefined;
    let batch: BatchInfo | undefined;
    for (batch of scanBatches(this.fd, last.position, this.size)) break;
    if (batch?.lastOffset === last.offset) return undefined;
    this.index.clear();
    const found = batch === undefined ? 'no whole batch starts there' : `the batch there holds offsets ${batch.baseOffset}–${batch.lastOffset}`;
    return { kind: 'damaged', reason: `the last offset index entry names offset ${last.offset} at position ${last.position}, but ${found}` };
  }

  /**
   * After loading trusted indexes (or clearing them for a rebuild): scans the batches from the
   * last offset entry to learn the next offset, the max timestamp and how far the current index
   * interval has filled, adding entries for the batches after it as appends would. Returns false
   * when the batches stop short of the file's end (stray or torn bytes: damage to recover).
   */
  loadTail(indexIntervalBytes: number): boolean {
    const last = this.index.last();
    const lastTime = this.index.lastTime();
    // The last time entry holds the max timestamp up to the last offset entry's batch (added with
    // that entry, or with an earlier one when it did not rise since).
    this.maxTimestamp = lastTime?.timestamp ?? -1n;
    this.offsetOfMaxTimestamp = lastTime?.offset ?? -1;
    this.nextOffset = this.baseOffset;
    this.bytesSinceIndexEntry = 0;
    if (this.size === 0) return true;
    const start = last?.position ?? 0;
    let scannedEnd = start;
    for (const batch of scanBatches(this.fd, start, this.size)) {
      if (batch.position === last?.position) {
        // The indexed batch itself: it already has its entries (loadIndex checked its last offset).
        if (batch.maxTimestamp > this.maxTimestamp) {
          this.maxTimestamp = batch.maxTimestamp;
          this.offsetOfMaxTimestamp = batch.lastOffset;
        }
        this.bytesSinceIndexEntry = batch.size;
        this.nextOffset = batch.lastOffset + 1;
      } else {
        this.track(batch, indexIntervalBytes);
      }
      scannedEnd = batch.position + batch.size;
    }
    return scannedEnd === this.size;
  }

  /** Resets the index so `track` can rebuild it from a full scan. */
  resetForRebuild(): void {
    this.forgetHints();
    this.index.clear();
    this.bytesSinceIndexEntry = 0;
    this.maxTimestamp = -1n;
    this.offsetOfMaxTimestamp = -1;
    this.nextOffset = this.baseOffset;
    this.overflowed = false;
  }

  /** Cuts the file at `position` (recovery found invalid bytes there). Never under queued batches. */
  truncateTo(position: number): void {
    this.assertOpen('truncate');
    if (this.hasPending) throw new Error(`segment ${this.baseOffset} cannot be truncated with batches queued`);
    ftruncateSync(this.fd, position);
    this.forgetHints();
    this.size = position;
    this.writtenSize = position;
    this.index.truncateToPosition(position);
  }

  /**
   * The last offset of the batches in [position, end) when every one is a header without records
   * (what the cleaner keeps of an emptied batch: a batch with a record is longer), else undefined.
   */
  emptyBatchesLastOffset(position: number, end: number): number | undefined {
    this.assertOpen('read');
    if ((end - position) % RECORD_BATCH_OVERHEAD !== 0) return undefined;
    let lastOffset: number | undefined;
    for (const batch of scanBatches(this.fd, position, end)) {
      if (batch.size !== RECORD_BATCH_OVERHEAD) return undefined;
      lastOffset = batch.lastOffset;
    }
    return lastOffset;
  }

  /** Position of the first batch with lastOffset ≥ `offset` that starts before `end`, if any. */
  findBatch(offset: number, end: number): BatchInfo | undefined {
    this.assertOpen('read');
    if (end <= 0) return undefined;
    const start = this.index.floorByOffset(offset)?.position ?? 0;
    for (const batch of scanBatches(this.fd, start, end)) {
      if (batch.lastOffset >= offset) return batch;
    }
    return undefined;
  }

  /**
   * Whole batches from the one holding `offset` (the first with lastOffset ≥ `offset`), all
   * before `end`, at most `maxBytes` of them — but the first batch comes whole even when larger.
   * `end` must be a batch boundary of written data; `endOffset`, when given, is the offset of the
   * batch that will start there (the high watermark's), so the read that follows this one on can
   * start without a lookup. Undefined when no batch holding `offset` starts before `end`.
   *
   * A lookup reads headers from the file (a system call each time); the batch a sequential reader
   * asks for next is known from the last read (it ends where the last slice ended), so it is
   * remembered (`hints`) and that read needs only the one scan for the slice's end.
   */
  readRange(offset: number, end: number, maxBytes: number, endOffset?: number): SegmentRange | undefined {
    this.assertOpen('read');
    if (end <= 0) return undefined;
    // How long the header reads took, to tell the page cache from the disk (`cached`).
    const started = performance.now();
    let position = this.hintedPosition(offset, end);
    let firstBatchOffset = offset;
    let probed = false;
    if (position === undefined) {
      const first = this.findBatch(offset, end);
      if (first === undefined) return undefined;
      position = first.position;
      firstBatchOffset = first.baseOffset;
      probed = true;
    }
    if (end - position <= maxBytes) {
      if (endOffset !== undefined) this.remember(endOffset, end);
      return { position, size: end - position, firstBatchOffset, cached: probed && performance.now() - started < CACHED_READ_MS };
    }
    // End of the last whole batch within the limit, scanning from the nearest index entry; the
    // batch that does not fit is where the next read starts.
    const limit = position + Math.max(maxBytes, 0);
    const from = Math.max(position, this.index.floorByPosition(limit)?.position ?? position);
    let boundary = from;
    let next: BatchInfo | undefined;
    for (const batch of scanBatches(this.fd, from, end)) {
      if (batch.position + batch.size > limit) {
        next = batch;
        break;
      }
      boundary = batch.position + batch.size;
    }
    const cached = performance.now() - started < CACHED_READ_MS;
    if (boundary > position) {
      if (next !== undefined) this.remember(next.baseOffset, next.position);
      return { position, size: boundary - position, firstBatchOffset, cached };
    }
    // The first batch alone is larger than maxBytes: it comes whole.
    const first = next?.position === position ? next : this.findBatch(offset, end);
    if (first === undefined) return undefined;
    return { position, size: first.size, firstBatchOffset, cached };
  }

  /** Where the batch with base offset `offset` starts, if a read remembered it and it ends before `end`. */
  private hintedPosition(offset: number, end: number): number | undefined {
    for (const hint of this.hints) if (hint.offset === offset && hint.position < end) return hint.position;
    return undefined;
  }

  private remember(offset: number, position: number): void {
    for (const hint of this.hints) if (hint.offset === offset) return;
    if (this.hints.length < READ_HINTS) {
      this.hints.push({ offset, position });
      return;
    }
    this.hints[this.nextHint] = { offset, position };
    this.nextHint = (this.nextHint + 1) % READ_HINTS;
  }

  private forgetHints(): void {
    this.hints.length = 0;
    this.nextHint = 0;
  }

  /** First batch whose max timestamp is ≥ `timestamp`, starting before `end`. */
  findBatchByTime(timestamp: bigint, end: number): BatchInfo | undefined {
    this.assertOpen('read');
    if (end <= 0) return undefined;
    // Every batch up to the one holding the older entry's offset is older: start at or before it.
    const older = this.index.lastOlderThan(timestamp);
    const start = older === undefined ? 0 : (this.index.floorByOffset(older.offset)?.position ?? 0);
    for (const batch of scanBatches(this.fd, start, end)) {
      if (batch.maxTimestamp >= timestamp) return batch;
    }
    return undefined;
  }

  /**
   * Writes queued batches and pending index entries and fsyncs the segment data. A segment closed
   * or deleted meanwhile has nothing left to make durable here (close flushed it; deletion drops it).
   * Resolves false when a full disk deferred the index entries (`persistIndex`).
   */
  async flush(): Promise<boolean> {
    if (this.closed || this.descriptor === undefined) return true;
    this.writePending();
    const indexed = this.persistIndex();
    this.retain();
    try {
      await fsyncAsync(this.fd);
    } finally {
      this.release();
    }
    return indexed;
  }

  /** Rewrites both index files from the in-memory entries (after a rebuild); false when the disk is full, as `persistIndex`. */
  rewriteIndex(): boolean {
    try {
      this.index.rewriteFiles();
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOSPC') return false;
      throw error;
    }
  }

  /**
   * Writes the index entries not yet in the files; false when the disk is full. The index is
   * never the source of truth, so a full disk only defers its entries: they stay in memory (reads
   * use them), a later flush or the close writes them, and a close that cannot leaves no
   * clean-shutdown marker, so the next start rebuilds them from the segment. Other errors throw.
   */
  persistIndex(): boolean {
    try {
      this.index.persist();
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOSPC') return false;
      throw error;
    }
  }

  /** Holds the descriptor open (and the segment readable) until `release`. */
  retain(): void {
    this.assertOpen('be read');
    this.references += 1;
  }

  release(): void {
    if (this.references === 0) throw new Error(`segment ${this.baseOffset} released more often than retained`);
    this.references -= 1;
    if (this.references === 0 && this.closed) this.closeDescriptor();
  }

  /** Writes what is queued, closes the files (once no reader holds them) and keeps them on disk. */
  close(): void {
    if (this.closed) return;
    try {
      if (this.descriptor !== undefined) {
        this.writePending();
        this.index.persist();
      }
    } finally {
      this.letGo();
    }
  }

  /**
   * Closes without writing anything more (the log's folder is being deleted by its owner): queued
   * batches are dropped, the index files are never written again.
   */
  abandon(): void {
    if (this.closed) return;
    this.discardPending();
    this.index.detach();
    this.letGo();
  }

  /** Deletes the files; readers holding the segment keep reading until they release it. */
  delete(): void {
    if (this.closed) return;
    this.abandon();
    for (const suffix of ['.log', '.index', '.timeindex'] as const) {
      rmSync(join(this.directory, segmentFileName(this.baseOffset, suffix)), { force: true });
    }
  }

  private letGo(): void {
    this.closed = true;
    if (this.references === 0) this.closeDescriptor();
  }

  private closeDescriptor(): void {
    const fd = this.descriptor;
    this.descriptor = undefined;
    if (fd !== undefined) closeSync(fd);
  }

  private assertOpen(operation: string): void {
    if (this.closed) throw this.closedError(`it is closed (asked to ${operation})`);
  }

  private closedError(why: string): TributaryError {
    return new TributaryError({
      code: 'SEGMENT_CLOSED',
      message: `segment ${this.baseOffset} of ${this.directory} cannot be used: ${why}`,
      details: { directory: this.directory, baseOffset: this.baseOffset },
    });
  }
}
