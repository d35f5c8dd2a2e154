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
 */
import { closeSync, openSync, readFileSync, writeSync, ftruncateSync } from 'node:fs';

export const OFFSET_ENTRY_BYTES = 8;
export const TIME_ENTRY_BYTES = 12;

export interface IndexEntry {
  readonly offset: number;
  readonly position: number;
  readonly maxTimestamp: number;
}

export class SparseIndex {
  private relativeOffsets = new Int32Array(64);
  private positions = new Int32Array(64);
  private maxTimestamps = new Float64Array(64);
  private count = 0;
  /** Entries already in the files. */
  private persisted = 0;

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
      maxTimestamp: this.maxTimestamps[index] ?? -1,
    };
  }

  last(): IndexEntry | undefined {
    return this.count === 0 ? undefined : this.entry(this.count - 1);
  }

  add(offset: number, position: number, maxTimestampSoFar: number): void {
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
  lastOlderThan(timestamp: number): IndexEntry | undefined {
    return this.floor((index) => (this.maxTimestamps[index] ?? -1) < timestamp);
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
    if (this.persisted === this.count) return;
    const pending = this.count - this.persisted;
    const offsets = Buffer.allocUnsafe(pending * OFFSET_ENTRY_BYTES);
    const times = Buffer.allocUnsafe(pending * TIME_ENTRY_BYTES);
    for (let i = 0; i < pending; i += 1) {
      const index = this.persisted + i;
      offsets.writeInt32BE(this.relativeOffsets[index] ?? 0, i * OFFSET_ENTRY_BYTES);
      offsets.writeInt32BE(this.positions[index] ?? 0, i * OFFSET_ENTRY_BYTES + 4);
      times.writeBigInt64BE(BigInt(this.maxTimestamps[index] ?? -1), i * TIME_ENTRY_BYTES);
      times.writeInt32BE(this.relativeOffsets[index] ?? 0, i * TIME_ENTRY_BYTES + 8);
    }
    writeAt(this.offsetIndexPath, offsets, this.persisted * OFFSET_ENTRY_BYTES);
    writeAt(this.timeIndexPath, times, this.persisted * TIME_ENTRY_BYTES);
    this.persisted = this.count;
  }

  /** Rewrites both files from the in-memory entries (after a rebuild). */
  rewriteFiles(): void {
    this.persisted = 0;
    this.truncateFiles(0);
    this.persist();
  }

  /**
   * Loads the files written by `persist`. Returns false, leaving the index empty, when they are
   * missing, of a wrong length, out of order, or pointing past `segmentSize` — the caller then
   * rebuilds from the segment data.
   */
  load(segmentSize: number): boolean {
    let offsets: Buffer;
    let times: Buffer;
    try {
      offsets = readFileSync(this.offsetIndexPath);
      times = readFileSync(this.timeIndexPath);
    } catch {
      return false;
    }
    const entries = offsets.length / OFFSET_ENTRY_BYTES;
    if (!Number.isInteger(entries) || times.length !== entries * TIME_ENTRY_BYTES) return false;
    this.count = 0;
    for (let i = 0; i < entries; i += 1) {
      const relativeOffset = offsets.readInt32BE(i * OFFSET_ENTRY_BYTES);
      const position = offsets.readInt32BE(i * OFFSET_ENTRY_BYTES + 4);
      const maxTimestamp = Number(times.readBigInt64BE(i * TIME_ENTRY_BYTES));
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
    const maxTimestamps = new Float64Array(size);
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
    // 'a+' appends; the files only ever grow from `position`, which is their current length.
    writeSync(fd, bytes, 0, bytes.length, position);
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
