/**
 * The sparse indexes of one segment in Kafka's convention (OffsetIndex, TimeIndex), kept in memory
 * as typed arrays and appended to two files beside the segment.
 *
 * Offset index. Entry (offset, position): the batch that starts at `position` ends at `offset`
 * (its LAST offset). There is an entry for the segment's first batch and then for the first batch
 * after every `index.interval.bytes`; offsets and positions strictly increase.
 *
 * Time index. Entry (timestamp, offset): `timestamp` is the largest record timestamp of the
 * segment up to the batch that ends at `offset`, and that batch is the first to hold it (every
 * batch before it is older). One is added with each offset entry, but only when the segment's
 * max timestamp has grown since the last one (TimeIndex.maybeAppend), so timestamps strictly
 * increase, the offsets too, and the time index may hold fewer entries than the offset index.
 *
 * File formats (big-endian, no header; a file's length is a multiple of its entry size):
 *
 *   <base>.index      entry = RelativeOffset int32, Position int32                    (8 bytes)
 *                     RelativeOffset = last offset of the batch at Position − base
 *   <base>.timeindex  entry = MaxTimestampSoFar int64, RelativeOffset int32          (12 bytes)
 *                     RelativeOffset = last offset of the first batch that holds it − base
 *
 * These are the files Kafka writes; `kafka-dump-log.sh --index-sanity-check` and
 * `--verify-index-only` check them against the segment. One addition: an entry for the batch at
 * position 0, which Kafka's index never has (its first is for the first batch past
 * `index.interval.bytes`) and which its readers take like any other. Versions before this one
 * wrote BASE offsets in both files (a time entry with every offset entry) and never an entry at
 * position 0: the loader takes a non-empty segment whose offset index has entries but none at
 * position 0 for theirs and has it rebuilt (`load`), as it does an empty one (cut short, or
 * theirs); it also checks the last offset entry against its batch (LogSegment.loadIndex).
 *
 * Lookups are correct under either convention, so a file of the earlier one would still be read
 * right: `floorByOffset(t)` takes the last entry whose offset is ≤ t, and the batch it points at
 * starts at or before t whether the entry names its first or its last offset; `lastOlderThan(t)`
 * takes the last time entry strictly older than t, and every batch up to the one holding its
 * offset is older than t under both.
 *
 * Index files are never fsynced on the write path: after an unclean stop they are checked and
 * rebuilt from the segment data, which is the only source of truth.
 *
 * Timestamps are int64 end to end (a BigInt64Array, not doubles): a producer may send any int64,
 * and 2^63−1 as a double rounds to 2^63, which no int64 field can hold.
 */
import { closeSync, openSync, readFileSync, writeSync, ftruncateSync } from 'node:fs';
import { basename } from 'node:path';

export const OFFSET_ENTRY_BYTES = 8;
export const TIME_ENTRY_BYTES = 12;

/** Largest relative offset an index entry holds (Int32); segments roll before exceeding it. */
export const MAX_RELATIVE_OFFSET = 0x7fffffff;

/** The batch at `position` ends at `offset`. */
export interface OffsetEntry {
  readonly offset: number;
  readonly position: number;
}

/** `timestamp` is the max timestamp of the segment up to the batch ending at `offset`, which holds it. */
export interface TimeEntry {
  readonly timestamp: bigint;
  readonly offset: number;
}

/** Why the index files were not loaded; the segment's index is then rebuilt from its batches. */
export interface IndexLoadProblem {
  /** `earlier-convention`: written by a version whose entries named base offsets (see the file comment). */
  readonly kind: 'damaged' | 'earlier-convention';
  readonly reason: string;
}

/** Entries a fresh index has room for; small, because most partitions hold few segments' worth. */
const INITIAL_CAPACITY = 8;

/** The time index holds no entry at or below this timestamp (Kafka's NO_TIMESTAMP). */
const NO_TIMESTAMP = -1n;

export class SparseIndex {
  /** Offset index: last offset of the batch (relative) and where the batch starts. */
  private offsets = new Int32Array(INITIAL_CAPACITY);
  private positions = new Int32Array(INITIAL_CAPACITY);
  private count = 0;
  /** Time index: max timestamp so far and the last offset (relative) of the batch holding it. */
  private timestamps = new BigInt64Array(INITIAL_CAPACITY);
  private timeOffsets = new Int32Array(INITIAL_CAPACITY);
  private timeCount = 0;
  /** Entries already in the files. */
  private persistedOffsets = 0;
  private persistedTimes = 0;
  /** Whether both files exist (written or loaded); until then `persist` creates them even when empty. */
  private filesExist = false;
  /** Set when the segment's files are deleted: nothing may write (and so recreate) them again. */
  private detached = false;

  constructor(
    readonly baseOffset: number,
    readonly offsetIndexPath: string,
    readonly timeIndexPath: string,
  ) {}

  /** Entries of the offset index. */
  get length(): number {
    return this.count;
  }

  /** Entries of the time index. */
  get timeLength(): number {
    return this.timeCount;
  }

  entry(index: number): OffsetEntry {
    return { offset: this.baseOffset + (this.offsets[index] ?? 0), position: this.positions[index] ?? 0 };
  }

  last(): OffsetEntry | undefined {
    return this.count === 0 ? undefined : this.entry(this.count - 1);
  }

  timeEntry(index: number): TimeEntry {
    return { timestamp: this.timestamps[index] ?? NO_TIMESTAMP, offset: this.baseOffset + (this.timeOffsets[index] ?? 0) };
  }

  lastTime(): TimeEntry | undefined {
    return this.timeCount === 0 ? undefined : this.timeEntry(this.timeCount - 1);
  }

  /** Whether `offset` can be stored as a relative offset of this index. */
  fits(offset: number): boolean {
    const relative = offset - this.baseOffset;
    return relative >= 0 && relative <= MAX_RELATIVE_OFFSET;
  }

  /** Adds an offset entry: the batch starting at `position` ends at `lastOffset`. */
  add(lastOffset: number, position: number): void {
    this.checkFits(lastOffset);
    if (this.count === this.positions.length) {
      this.offsets = grownInt32(this.offsets);
      this.positions = grownInt32(this.positions);
    }
    this.offsets[this.count] = lastOffset - this.baseOffset;
    this.positions[this.count] = position;
    this.count += 1;
  }

  /**
   * Adds a time entry if `maxTimestampSoFar` is newer than the last one (Kafka's maybeAppend);
   * `offset` is the last offset of the first batch that holds it.
   */
  addTime(maxTimestampSoFar: bigint, offset: number): void {
    if (maxTimestampSoFar <= (this.lastTime()?.timestamp ?? NO_TIMESTAMP)) return;
    this.checkFits(offset);
    if (this.timeCount === this.timestamps.length) {
      this.timestamps = grownBigInt64(this.timestamps);
      this.timeOffsets = grownInt32(this.timeOffsets);
    }
    this.timestamps[this.timeCount] = maxTimestampSoFar;
    this.timeOffsets[this.timeCount] = offset - this.baseOffset;
    this.timeCount += 1;
  }

  /**
   * Last entry whose offset is ≤ `offset` (binary search), or undefined: its batch ends at or
   * before `offset`, or holds it, so a scan for `offset` may start there. (Under the earlier
   * convention, base offsets, the batch starts at or before `offset`: as good.)
   */
  floorByOffset(offset: number): OffsetEntry | undefined {
    const found = floor(this.count, (index) => this.baseOffset + (this.offsets[index] ?? 0) <= offset);
    return found < 0 ? undefined : this.entry(found);
  }

  /** Last entry whose batch starts at or before `position`. */
  floorByPosition(position: number): OffsetEntry | undefined {
    const found = floor(this.count, (index) => (this.positions[index] ?? 0) <= position);
    return found < 0 ? undefined : this.entry(found);
  }

  /**
   * Last time entry older than `timestamp`: every batch up to the one holding its offset is older,
   * so the first batch reaching `timestamp` comes after it. Strictly older, not Kafka's ≤: with an
   * equal timestamp, an entry of the earlier convention may name a batch after the first one to
   * reach it.
   */
  lastOlderThan(timestamp: bigint): TimeEntry | undefined {
    const found = floor(this.timeCount, (index) => (this.timestamps[index] ?? NO_TIMESTAMP) < timestamp);
    return found < 0 ? undefined : this.timeEntry(found);
  }

  /**
   * Drops the entries of the batches at or past `position` (the segment was cut there, or their
   * write was undone): the offset entries by position, and the time entries added with them,
   * which are those naming an offset past the last offset entry kept. (A time entry is added only
   * with an offset entry and names an offset at or before that entry's; one added later has a
   * newer timestamp, so it names a batch after every batch up to that entry's.)
   */
  truncateToPosition(position: number): void {
    let keep = this.count;
    while (keep > 0 && (this.positions[keep - 1] ?? 0) >= position) keep -= 1;
    this.count = keep;
    const lastKept = keep === 0 ? -1 : (this.offsets[keep - 1] ?? 0);
    let keepTimes = this.timeCount;
    while (keepTimes > 0 && (this.timeOffsets[keepTimes - 1] ?? 0) > lastKept) keepTimes -= 1;
    this.timeCount = keepTimes;
    if (this.persistedOffsets > keep || this.persistedTimes > keepTimes) {
      this.persistedOffsets = Math.min(this.persistedOffsets, keep);
      this.persistedTimes = Math.min(this.persistedTimes, keepTimes);
      this.truncateFiles();
    }
  }

  /** Appends the entries not yet in the files. */
  persist(): void {
    if (this.detached) return;
    if (this.persistedOffsets === this.count && this.persistedTimes === this.timeCount && this.filesExist) return;
    const offsets = Buffer.allocUnsafe((this.count - this.persistedOffsets) * OFFSET_ENTRY_BYTES);
    for (let index = this.persistedOffsets, at = 0; index < this.count; index += 1, at += OFFSET_ENTRY_BYTES) {
      offsets.writeInt32BE(this.offsets[index] ?? 0, at);
      offsets.writeInt32BE(this.positions[index] ?? 0, at + 4);
    }
    const times = Buffer.allocUnsafe((this.timeCount - this.persistedTimes) * TIME_ENTRY_BYTES);
    for (let index = this.persistedTimes, at = 0; index < this.timeCount; index += 1, at += TIME_ENTRY_BYTES) {
      times.writeBigInt64BE(this.timestamps[index] ?? NO_TIMESTAMP, at);
      times.writeInt32BE(this.timeOffsets[index] ?? 0, at + 8);
    }
    try {
      writeAt(this.offsetIndexPath, offsets, this.persistedOffsets * OFFSET_ENTRY_BYTES);
      writeAt(this.timeIndexPath, times, this.persistedTimes * TIME_ENTRY_BYTES);
    } catch (error) {
      // A full disk can take part of these entries: both files are cut back to the entries they
      // held, so the next persist appends at the right place.
      try {
        this.truncateFiles();
      } catch {
        // Shrinking needs no space; if even that fails, a file's length is no longer a whole
        // number of entries, or its entries no longer match the segment, and the next load
        // rejects it and rebuilds the index from the segment.
      }
      throw error;
    }
    this.persistedOffsets = this.count;
    this.persistedTimes = this.timeCount;
    this.filesExist = true;
  }

  /** The segment's files are gone: never write them again (a write would recreate them). */
  detach(): void {
    this.detached = true;
  }

  /** Rewrites both files from the in-memory entries (after a rebuild). */
  rewriteFiles(): void {
    if (this.detached) return;
    this.persistedOffsets = 0;
    this.persistedTimes = 0;
    this.truncateFiles();
    this.persist();
  }

  /**
   * Loads the files written by `persist`. Returns why not, leaving the index empty, when they are
   * missing, unreadable, of a wrong length, out of order or pointing past `segmentSize`, or when a
   * non-empty segment's offset index has no entry at position 0 (the earlier convention) — the
   * caller then rebuilds from the segment data. The segment checks the last entries against its
   * batches as it scans its tail (LogSegment.loadIndex).
   */
  load(segmentSize: number): IndexLoadProblem | undefined {
    let problem: IndexLoadProblem | undefined;
    try {
      problem = this.loadFiles(segmentSize);
    } catch (error) {
      problem = { kind: 'damaged', reason: error instanceof Error ? error.message : String(error) };
    }
    if (problem !== undefined) {
      this.clear();
      return problem;
    }
    this.persistedOffsets = this.count;
    this.persistedTimes = this.timeCount;
    this.filesExist = true;
    return undefined;
  }

  private loadFiles(segmentSize: number): IndexLoadProblem | undefined {
    const offsets = readFileSync(this.offsetIndexPath);
    const times = readFileSync(this.timeIndexPath);
    const damaged = (reason: string): IndexLoadProblem => ({ kind: 'damaged', reason });
    if (offsets.length % OFFSET_ENTRY_BYTES !== 0) return damaged(`${basename(this.offsetIndexPath)} holds ${offsets.length} bytes, not whole ${OFFSET_ENTRY_BYTES}-byte entries`);
    if (times.length % TIME_ENTRY_BYTES !== 0) return damaged(`${basename(this.timeIndexPath)} holds ${times.length} bytes, not whole ${TIME_ENTRY_BYTES}-byte entries`);
    this.clear();
    for (let at = 0; at < offsets.length; at += OFFSET_ENTRY_BYTES) {
      const relative = offsets.readInt32BE(at);
      const position = offsets.readInt32BE(at + 4);
      const previous = this.last();
      const ordered =
        relative >= 0 &&
        position >= 0 &&
        position < segmentSize &&
        (previous === undefined || (this.baseOffset + relative > previous.offset && position > previous.position));
      if (!ordered) return damaged(`offset index entry ${at / OFFSET_ENTRY_BYTES} (relative offset ${relative}, position ${position}) is out of order or past the segment's ${segmentSize} bytes`);
      this.add(this.baseOffset + relative, position);
    }
    if (segmentSize > 0 && this.count === 0) {
      return damaged('the offset index is empty and the segment is not (cut short, or written by an earlier version for a segment of less than index.interval.bytes)');
    }
    if (segmentSize > 0 && this.entry(0).position !== 0) {
      return { kind: 'earlier-convention', reason: 'the offset index has no entry for the batch at position 0' };
    }
    for (let at = 0; at < times.length; at += TIME_ENTRY_BYTES) {
      const timestamp = times.readBigInt64BE(at);
      const relative = times.readInt32BE(at + 8);
      const previous = this.lastTime();
      const ordered =
        relative >= 0 &&
        timestamp > (previous?.timestamp ?? NO_TIMESTAMP) &&
        (previous === undefined || this.baseOffset + relative > previous.offset);
      if (!ordered) return damaged(`time index entry ${at / TIME_ENTRY_BYTES} (timestamp ${timestamp}, relative offset ${relative}) is out of order`);
      this.addTime(timestamp, this.baseOffset + relative);
    }
    // A time entry is added only with an offset entry, naming an offset at or before that entry's.
    const lastTime = this.lastTime();
    if (lastTime !== undefined && lastTime.offset > (this.last()?.offset ?? -1)) {
      return damaged(`the last time index entry names offset ${lastTime.offset}, past the last offset index entry's ${this.last()?.offset ?? 'none'}`);
    }
    return undefined;
  }

  clear(): void {
    this.count = 0;
    this.timeCount = 0;
    this.persistedOffsets = 0;
    this.persistedTimes = 0;
  }

  private checkFits(offset: number): void {
    // An Int32Array wraps silently; a wrapped entry would send lookups to the wrong batch.
    if (!this.fits(offset)) throw new RangeError(`offset ${offset} does not fit the index of segment ${this.baseOffset}`);
  }

  /** Cuts both files to the entries persisted. */
  private truncateFiles(): void {
    truncateFile(this.offsetIndexPath, this.persistedOffsets * OFFSET_ENTRY_BYTES);
    truncateFile(this.timeIndexPath, this.persistedTimes * TIME_ENTRY_BYTES);
  }
}

/** Index of the last of `count` entries for which `isAtOrBefore` holds (they are a prefix), or −1. */
function floor(count: number, isAtOrBefore: (index: number) => boolean): number {
  let low = 0;
  let high = count - 1;
  let found = -1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    if (isAtOrBefore(middle)) {
      found = middle;
      low = middle + 1;
    } else {
      high = middle - 1;
    }
  }
  return found;
}

function grownInt32(array: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> {
  const larger = new Int32Array(array.length * 2);
  larger.set(array);
  return larger;
}

function grownBigInt64(array: BigInt64Array<ArrayBuffer>): BigInt64Array<ArrayBuffer> {
  const larger = new BigInt64Array(array.length * 2);
  larger.set(array);
  return larger;
}

function writeAt(path: string, bytes: Buffer, position: number): void {
  const fd = openSync(path, 'a+');
  try {
    // 'a+' appends; the files only ever grow from `position`, which is their current length. A
    // nearly full disk may take only part of the bytes: the rest is written until done or ENOSPC.
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, position + done);
  } finally {
    closeSync(fd);
  }
}

function truncateFile(path: string, length: number): void {
  const fd = openSync(path, 'a+');
  try {
    ftruncateSync(fd, length);
  } finally {
    closeSync(fd);
  }
}
