/**
 * The sparse indexes of one segment, kept in memory as parallel typed arrays and appended to two
 * files beside the segment. Entry i points at the batch that starts at `positions[i]`, whose base
 * offset is `baseOffset + relativeOffsets[i]`; `maxTimestamps[i]` is the largest record timestamp
 * of that batch and every batch before it in the segment. All three columns grow monotonically.
 *
 * File formats (big-endian, no header; a file's length is a multiple of its entry size):
 *
 *   <base>.index      entry = RelativeOffset int32, Position int32                   (8 bytes)
 *   <base>.timeindex  entry = MaxTimestampSoFar int64, RelativeOffset int32         (12 bytes)
 *
 * Index files are never fsynced on the write path: after an unclean stop they are checked and
 * rebuilt from the segment data, which is the only source of truth.
 *
 * Timestamps are int64 end to end (a BigInt64Array, not doubles): a producer may send any int64,
 * and 2^63−1 as a double rounds to 2^63, which no int64 field can hold.
 */
import { closeSync, openSync, readFileSync, writeSync, ftruncateSync } from 'node:fs';

export const OFFSET_ENTRY_BYTES = 8;
export const TIME_ENTRY_BYTES = 12;

/** Largest relative offset an index entry holds (Int32); segments roll before exceeding it. */
export const MAX_RELATIVE_OFFSET = 0x7fffffff;

export interface IndexEntry {
  readonly offset: number;
  readonly position: number;
  readonly maxTimestamp: bigint;
}

/** Entries a fresh index has room for; small, because most partitions hold few segments' worth. */
const INITIAL_CAPACITY = 8;

export class SparseIndex {
  private relativeOffsets = new Int32Array(INITIAL_CAPACITY);
  private positions = new Int32Array(INITIAL_CAPACITY);
  private maxTimestamps = new BigInt64Array(INITIAL_CAPACITY);
  private count = 0;
  /** Entries already in the files. */
  private persisted = 0;
  /** Whether both files exist (written or loaded); until then `persist` creates them even when empty. */
  private filesExist = false;
  /** Set when the segment's files are deleted: nothing may write (and so recreate) them again. */
  private detached = false;

  constructor(
    readonly baseOffset: number,
    readonly offsetIndexPath: string,
    readonly timeIndexPath: string,
  ) {}

  get length(): number {
    return this.count;
  }

  entry(index: number): IndexEntry {
    return {
      offset: this.baseOffset + (this.relativeOffsets[index] ?? 0),
      position: this.positions[index] ?? 0,
      maxTimestamp: this.maxTimestamps[index] ?? -1n,
    };
  }

  last(): IndexEntry | undefined {
    return this.count === 0 ? undefined : this.entry(this.count - 1);
  }

  /** Whether `offset` can be stored as a relative offset of this index. */
  fits(offset: number): boolean {
    const relative = offset - this.baseOffset;
    return relative >= 0 && relative <= MAX_RELATIVE_OFFSET;
  }

  add(offset: number, position: number, maxTimestampSoFar: bigint): void {
    // An Int32Array wraps silently; a wrapped entry would send lookups to the wrong batch.
    if (!this.fits(offset)) throw new RangeError(`offset ${offset} does not fit the index of segment ${this.baseOffset}`);
    if (this.count === this.positions.length) this.grow();
    this.relativeOffsets[this.count] = offset - this.baseOffset;
    this.positions[this.count] = position;
    this.maxTimestamps[this.count] = maxTimestampSoFar;
    this.count += 1;
  }

  /** Last entry whose batch starts at or before `offset` (binary search), or undefined. */
  floorByOffset(offset: number): IndexEntry | undefined {
    return this.floor((index) => this.baseOffset + (this.relativeOffsets[index] ?? 0) <= offset);
  }

  /** Last entry whose batch starts at or before `position`. */
  floorByPosition(position: number): IndexEntry | undefined {
    return this.floor((index) => (this.positions[index] ?? 0) <= position);
  }

  /** Last entry whose max timestamp so far is below `timestamp`: every batch up to it is older. */
  lastOlderThan(timestamp: bigint): IndexEntry | undefined {
    return this.floor((index) => (this.maxTimestamps[index] ?? -1n) < timestamp);
  }

  /** Drops entries at or past `position` (after the segment was truncated there). */
  truncateToPosition(position: number): void {
    let keep = this.count;
    while (keep > 0 && (this.positions[keep - 1] ?? 0) >= position) keep -= 1;
    this.count = keep;
    if (this.persisted > keep) {
      this.persisted = keep;
      this.truncateFiles(keep);
    }
  }

  /** Appends the entries not yet in the files. */
  persist(): void {
    if (this.detached) return;
    if (this.persisted === this.count && this.filesExist) return;
    const pending = this.count - this.persisted;
    const offsets = Buffer.allocUnsafe(pending * OFFSET_ENTRY_BYTES);
    const times = Buffer.allocUnsafe(pending * TIME_ENTRY_BYTES);
    for (let i = 0; i < pending; i += 1) {
      const index = this.persisted + i;
      offsets.writeInt32BE(this.relativeOffsets[index] ?? 0, i * OFFSET_ENTRY_BYTES);
      offsets.writeInt32BE(this.positions[index] ?? 0, i * OFFSET_ENTRY_BYTES + 4);
      times.writeBigInt64BE(this.maxTimestamps[index] ?? -1n, i * TIME_ENTRY_BYTES);
      times.writeInt32BE(this.relativeOffsets[index] ?? 0, i * TIME_ENTRY_BYTES + 8);
    }
    try {
      writeAt(this.offsetIndexPath, offsets, this.persisted * OFFSET_ENTRY_BYTES);
      writeAt(this.timeIndexPath, times, this.persisted * TIME_ENTRY_BYTES);
    } catch (error) {
      // A full disk can take part of these entries: both files are cut back to the entries they
      // held, so the next persist appends at the right place and the files always agree.
      try {
        this.truncateFiles(this.persisted);
      } catch {
        // Shrinking needs no space; if even that fails, the files' lengths no longer match and
        // the next load rejects them and rebuilds the index from the segment.
      }
      throw error;
    }
    this.persisted = this.count;
    this.filesExist = true;
  }

  /** The segment's files are gone: never write them again (a write would recreate them). */
  detach(): void {
    this.detached = true;
  }

  /** Rewrites both files from the in-memory entries (after a rebuild). */
  rewriteFiles(): void {
    if (this.detached) return;
    this.persisted = 0;
    this.truncateFiles(0);
    this.persist();
  }

  /**
   * Loads the files written by `persist`. Returns false, leaving the index empty, when they are
   * missing, unreadable, of a wrong length, out of order, or pointing past `segmentSize` — the
   * caller then rebuilds from the segment data.
   */
  load(segmentSize: number): boolean {
    try {
      return this.loadFiles(segmentSize);
    } catch {
      this.clear();
      return false;
    }
  }

  private loadFiles(segmentSize: number): boolean {
    const offsets = readFileSync(this.offsetIndexPath);
    const times = readFileSync(this.timeIndexPath);
    const entries = offsets.length / OFFSET_ENTRY_BYTES;
    if (!Number.isInteger(entries) || times.length !== entries * TIME_ENTRY_BYTES) return false;
    this.count = 0;
    for (let i = 0; i < entries; i += 1) {
      const relativeOffset = offsets.readInt32BE(i * OFFSET_ENTRY_BYTES);
      const position = offsets.readInt32BE(i * OFFSET_ENTRY_BYTES + 4);
      const maxTimestamp = times.readBigInt64BE(i * TIME_ENTRY_BYTES);
      const previous = this.last();
      const ordered =
        relativeOffset >= 0 &&
        position >= 0 &&
        position < segmentSize &&
        times.readInt32BE(i * TIME_ENTRY_BYTES + 8) === relativeOffset &&
        (previous === undefined ||
          (this.baseOffset + relativeOffset > previous.offset && position > previous.position && maxTimestamp >= previous.maxTimestamp));
      if (!ordered) {
        this.count = 0;
        return false;
      }
      this.add(this.baseOffset + relativeOffset, position, maxTimestamp);
    }
    this.persisted = this.count;
    this.filesExist = true;
    return true;
  }

  clear(): void {
    this.count = 0;
    this.persisted = 0;
  }

  private floor(isAtOrBefore: (index: number) => boolean): IndexEntry | undefined {
    let low = 0;
    let high = this.count - 1;
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
    return found < 0 ? undefined : this.entry(found);
  }

  private grow(): void {
    const size = this.positions.length * 2;
    const relativeOffsets = new Int32Array(size);
    relativeOffsets.set(this.relativeOffsets);
    const positions = new Int32Array(size);
    positions.set(this.positions);
    const maxTimestamps = new BigInt64Array(size);
    maxTimestamps.set(this.maxTimestamps);
    this.relativeOffsets = relativeOffsets;
    this.positions = positions;
    this.maxTimestamps = maxTimestamps;
  }

  private truncateFiles(entries: number): void {
    truncateFile(this.offsetIndexPath, entries * OFFSET_ENTRY_BYTES);
    truncateFile(this.timeIndexPath, entries * TIME_ENTRY_BYTES);
  }
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
