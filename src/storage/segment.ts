/**
 * One segment of a partition log: `<base>.log` holding RecordBatch v2 bytes back to back, exactly
 * as they are served, plus its sparse indexes (sparse-index.ts). The segment's name is its first
 * offset, zero-padded to 20 digits.
 *
 * Appended batches are queued and written together by `writePending` (one `writev` for all the
 * batches appended in one turn of the event loop): a system call per batch would cost more than
 * the copy. Writes are synchronous (page cache), fsyncs go to the thread pool. Reads hand out the file
 * descriptor with a position and length, holding a reference so a segment deleted by retention
 * stays readable until the last reader lets go.
 */
import { closeSync, fstatSync, ftruncateSync, openSync, rmSync, writeSync, writevSync } from 'node:fs';
import { join } from 'node:path';
import { scanBatches, type BatchInfo } from './batch-scan.js';
import { fsyncAsync, fsyncDirectory } from './durable-files.js';
import { SparseIndex } from './sparse-index.js';

export function segmentFileName(baseOffset: number, suffix: '.log' | '.index' | '.timeindex'): string {
  return `${String(baseOffset).padStart(20, '0')}${suffix}`;
}

export class LogSegment {
  readonly index: SparseIndex;
  /** Bytes appended, written or still queued; the next batch goes here. */
  size: number;
  /** Bytes actually in the file. */
  private writtenSize: number;
  private pending: Buffer[] = [];
  /** Offsets and timestamp state before the first queued batch, to undo a failed write. */
  private beforePending: { nextOffset: number; maxTimestamp: number; bytesSinceIndexEntry: number } | undefined;
  /** One past the last offset in the segment (= baseOffset when empty). */
  nextOffset: number;
  /** Largest record timestamp seen, −1 if none. */
  maxTimestamp = -1;
  /** When the segment was created (for segment.ms) or last written (for retention without timestamps). */
  createdAt: number;
  lastWrittenAt: number;
  private bytesSinceIndexEntry = 0;
  private readers = 0;
  private deleted = false;
  private closed = false;

  private constructor(
    readonly directory: string,
    readonly baseOffset: number,
    readonly fd: number,
    size: number,
    now: number,
  ) {
    this.index = new SparseIndex(
      baseOffset,
      join(directory, segmentFileName(baseOffset, '.index')),
      join(directory, segmentFileName(baseOffset, '.timeindex')),
    );
    this.size = size;
    this.writtenSize = size;
    this.nextOffset = baseOffset;
    this.createdAt = now;
    this.lastWrittenAt = now;
  }

  get logPath(): string {
    return join(this.directory, segmentFileName(this.baseOffset, '.log'));
  }

  /** Creates a new, empty segment; its files exist durably when this returns. */
  static create(directory: string, baseOffset: number, now: number): LogSegment {
    const fd = openSync(join(directory, segmentFileName(baseOffset, '.log')), 'wx+');
    const segment = new LogSegment(directory, baseOffset, fd, 0, now);
    segment.index.rewriteFiles();
    fsyncDirectory(directory);
    return segment;
  }

  /** Opens an existing segment file; indexes and offsets are filled in by the loader. */
  static open(directory: string, baseOffset: number): LogSegment {
    const fd = openSync(join(directory, segmentFileName(baseOffset, '.log')), 'r+');
    const stat = fstatSync(fd);
    return new LogSegment(directory, baseOffset, fd, stat.size, stat.mtimeMs);
  }

  /** Queues one batch whose offsets are already assigned; `writePending` puts it in the file. */
  append(batch: Buffer, info: Omit<BatchInfo, 'position' | 'size'>, indexIntervalBytes: number, now: number): void {
    this.beforePending ??= { nextOffset: this.nextOffset, maxTimestamp: this.maxTimestamp, bytesSinceIndexEntry: this.bytesSinceIndexEntry };
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
    const batches = this.pending;
    this.pending = [];
    const before = this.beforePending;
    this.beforePending = undefined;
    const total = this.size - this.writtenSize;
    try {
      let written = writevSync(this.fd, batches, this.writtenSize);
      if (written < total) {
        // A short write: finish the rest from one contiguous copy.
        const rest = Buffer.concat(batches).subarray(written);
        let done = 0;
        while (done < rest.length) done += writeSync(this.fd, rest, done, rest.length - done, this.writtenSize + written + done);
        written += done;
      }
      this.writtenSize += written;
    } catch (error) {
      this.size = this.writtenSize;
      if (before !== undefined) {
        this.nextOffset = before.nextOffset;
        this.maxTimestamp = before.maxTimestamp;
        this.bytesSinceIndexEntry = before.bytesSinceIndexEntry;
      }
      this.index.truncateToPosition(this.writtenSize);
      ftruncateSync(this.fd, this.writtenSize);
      throw error;
    }
  }

  /** Updates offsets, timestamps and the sparse index for a batch now in the file. */
  track(batch: BatchInfo, indexIntervalBytes: number): void {
    if (batch.maxTimestamp > this.maxTimestamp) this.maxTimestamp = batch.maxTimestamp;
    // An entry for the first batch after every `indexIntervalBytes` bytes; offsets before the first
    // entry are found by scanning from position 0.
    if (this.bytesSinceIndexEntry >= indexIntervalBytes && batch.position > 0) {
      this.index.add(batch.baseOffset, batch.position, this.maxTimestamp);
      this.bytesSinceIndexEntry = 0;
    }
    this.bytesSinceIndexEntry += batch.size;
    this.nextOffset = batch.lastOffset + 1;
  }

  /**
   * After loading trusted indexes: scans the batches after the last index entry to learn the next
   * offset, the max timestamp and how far the current index interval has filled.
   */
  loadTail(indexIntervalBytes: number): void {
    const last = this.index.last();
    this.maxTimestamp = last?.maxTimestamp ?? -1;
    this.nextOffset = last?.offset ?? this.baseOffset;
    this.bytesSinceIndexEntry = 0;
    const start = last?.position ?? 0;
    let first = true;
    for (const batch of scanBatches(this.fd, start, this.size)) {
      if (first && last !== undefined) {
        // The indexed batch itself: already has its entry.
        if (batch.maxTimestamp > this.maxTimestamp) this.maxTimestamp = batch.maxTimestamp;
        this.bytesSinceIndexEntry = batch.size;
        this.nextOffset = batch.lastOffset + 1;
      } else {
        this.track(batch, indexIntervalBytes);
      }
      first = false;
    }
  }

  /** Resets the index so `track` can rebuild it from a full scan. */
  resetForRebuild(): void {
    this.index.clear();
    this.bytesSinceIndexEntry = 0;
    this.maxTimestamp = -1;
    this.nextOffset = this.baseOffset;
  }

  /** Cuts the file at `position` (recovery found invalid bytes there). */
  truncateTo(position: number): void {
    ftruncateSync(this.fd, position);
    this.size = position;
    this.writtenSize = position;
    this.index.truncateToPosition(position);
  }

  /** Position of the first batch with lastOffset ≥ `offset` that starts before `end`, if any. */
  findBatch(offset: number, end: number): BatchInfo | undefined {
    const start = this.index.floorByOffset(offset)?.position ?? 0;
    for (const batch of scanBatches(this.fd, start, end)) {
      if (batch.lastOffset >= offset) return batch;
    }
    return undefined;
  }

  /** End of the last whole batch in [start, limit], scanning from the nearest index entry. */
  lastBoundaryWithin(start: number, limit: number, end: number): number {
    const from = Math.max(start, this.index.floorByPosition(limit)?.position ?? start);
    let boundary = from;
    for (const batch of scanBatches(this.fd, from, end)) {
      if (batch.position + batch.size > limit) break;
      boundary = batch.position + batch.size;
    }
    return boundary;
  }

  /** First batch whose max timestamp is ≥ `timestamp`, starting before `end`. */
  findBatchByTime(timestamp: number, end: number): BatchInfo | undefined {
    const start = this.index.lastOlderThan(timestamp)?.position ?? 0;
    for (const batch of scanBatches(this.fd, start, end)) {
      if (batch.maxTimestamp >= timestamp) return batch;
    }
    return undefined;
  }

  /** Writes pending index entries and fsyncs the segment data. */
  async flush(): Promise<void> {
    this.writePending();
    this.index.persist();
    await fsyncAsync(this.fd);
  }

  retain(): void {
    this.readers += 1;
  }

  release(): void {
    this.readers -= 1;
    if (this.readers === 0 && this.deleted) this.closeFiles();
  }

  /** Closes the files, keeping them on disk. */
  close(): void {
    if (this.closed) return;
    this.writePending();
    this.index.persist();
    this.closeFiles();
  }

  /** Deletes the files; readers holding the segment keep reading until they release it. */
  delete(): void {
    this.deleted = true;
    for (const suffix of ['.log', '.index', '.timeindex'] as const) {
      rmSync(join(this.directory, segmentFileName(this.baseOffset, suffix)), { force: true });
    }
    if (this.readers === 0) this.closeFiles();
  }

  private closeFiles(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}
