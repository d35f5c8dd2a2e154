/**
 * One cleaning pass over one log (Kafka's `Cleaner.doClean`), on closed segments only, writing new
 * files beside the log and never touching its live ones; the log swaps them in (segment-swap.ts).
 *
 *   1. Key map: the keyed records of the dirty range [firstDirty, firstUncleanable), batch by
 *      batch, until the map is full (a partial pass: the rest stays dirty for the next one).
 *   2. Groups: the segments from the log start to the end of what the map covers, consecutive,
 *      together at most segment.bytes and spanning offsets an index can hold (Int32 relative).
 *   3. Each group is written as one segment `<first base>.log.cleaned` with its indexes
 *      (`.index.cleaned`, `.timeindex.cleaned`), by batch-filter.ts's rules. A producer's last
 *      batch is kept, as a header if emptied (idempotence after a reload), and so is the group's
 *      last batch: a cleaned segment ends at the offset its sources ended, so the next segment
 *      starts where it ends (recovery can tell a crash's hole from a cleaned range), and a
 *      follower that fetches the end of a cleaned segment is carried to the next one. Other
 *      emptied batches go. Consumers never see these headers alone (PartitionLog.read).
 *
 * Files are read and written with asynchronous I/O in chunks, and the pass yields to the event loop
 * between batches whenever it has run for `sliceMs`, so a broker keeps serving while it cleans.
 */
import { open, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { BATCH_LENGTH_OFFSET, CONTROL_FLAG, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, readBatchHeader } from '../../protocol/record-batch.js';
import { MAX_RELATIVE_OFFSET, SparseIndex } from '../sparse-index.js';
import { segmentFileName } from '../segment.js';
import { filterBatch, keyedOffsets } from './batch-filter.js';
import { KeyOffsetMap } from './key-offset-map.js';

export const CLEANED_SUFFIX = '.cleaned';

/** A closed segment the pass may read. */
export interface CleanableSegment {
  readonly baseOffset: number;
  readonly size: number;
  /** One past its last offset. */
  readonly nextOffset: number;
  /** Its newest record's timestamp (−1 if none). */
  readonly maxTimestamp: bigint;
}

export interface PassInput {
  readonly directory: string;
  /** Closed segments from the log start, in order, every one ending at or before `firstUncleanable`. */
  readonly segments: readonly CleanableSegment[];
  readonly firstDirty: number;
  readonly firstUncleanable: number;
  /** Last offsets of the producers' last batches: those batches are kept, if only as headers. */
  readonly producerLastOffsets: ReadonlySet<number>;
  readonly map: KeyOffsetMap;
  readonly segmentBytes: number;
  readonly indexIntervalBytes: number;
  readonly deleteRetentionMs: number;
  readonly now: number;
  /** Bytes per read; grown to fit a larger batch. */
  readonly readBufferBytes: number;
  /** Called with the bytes read or written; resolves when the throttle lets the pass go on. */
  readonly throttle: (bytes: number) => Promise<void>;
  /** Throws when the pass must stop (the log was truncated, deleted or closed). */
  readonly checkAborted: () => void;
  /** Longest run without yielding to the event loop. */
  readonly sliceMs: number;
}

export interface CleanedGroup {
  /** The new segment's base offset: its first source segment's. */
  readonly baseOffset: number;
  /** Base offsets of the segments it replaces. */
  readonly sources: readonly number[];
  readonly size: number;
}

export interface PassResult {
  readonly groups: readonly CleanedGroup[];
  /** Where the next pass's dirty range starts. */
  readonly nextDirtyOffset: number;
  readonly bytesRead: number;
  readonly bytesWritten: number;
  readonly recordsRemoved: number;
  readonly keylessRecords: number;
  /** The earliest delete horizon of the tombstones kept (Infinity when none): the log is due a pass then. */
  readonly earliestTombstoneHorizon: number;
}

/** A batch read from a segment file. */
interface StoredBatch {
  readonly bytes: Buffer;
  readonly baseOffset: number;
  readonly lastOffset: number;
  readonly maxTimestamp: bigint;
  readonly control: boolean;
}

class Slicer {
  private sliceStart = performance.now();
  constructor(private readonly sliceMs: number) {}
  async maybeYield(): Promise<void> {
    if (performance.now() - this.sliceStart < this.sliceMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.sliceStart = performance.now();
  }
}

/** The batches of a segment file, read in chunks. */
async function* readSegment(input: PassInput, segment: CleanableSegment, counters: { bytesRead: number }): AsyncGenerator<StoredBatch> {
  const path = join(input.directory, segmentFileName(segment.baseOffset, '.log'));
  const file = await open(path, 'r');
  try {
    let buffer = Buffer.allocUnsafe(input.readBufferBytes);
    let position = 0;
    while (position + LOG_OVERHEAD <= segment.size) {
      const wanted = Math.min(buffer.length, segment.size - position);
      const { bytesRead } = await file.read(buffer, 0, wanted, position);
      counters.bytesRead += bytesRead;
      await input.throttle(bytesRead);
      let at = 0;
      while (at + LOG_OVERHEAD <= bytesRead) {
        const size = buffer.readInt32BE(at + BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
        if (size < RECORD_BATCH_OVERHEAD) throw new Error(`segment ${segment.baseOffset} has a batch of ${size} bytes at ${position + at}`);
        if (at + size > bytesRead) break;
        const bytes = Buffer.from(buffer.subarray(at, at + size));
        const header = readBatchHeader(bytes);
        const baseOffset = Number(header.baseOffset);
        yield { bytes, baseOffset, lastOffset: baseOffset + header.lastOffsetDelta, maxTimestamp: header.maxTimestamp, control: (header.attributes & CONTROL_FLAG) !== 0 };
        at += size;
      }
      if (at === 0) {
        // One batch larger than the buffer: grow to fit it.
        const size = buffer.readInt32BE(BATCH_LENGTH_OFFSET) + LOG_OVERHEAD;
        if (position + size > segment.size) throw new Error(`segment ${segment.baseOffset} ends inside a batch of ${size} bytes at ${position}`);
        buffer = Buffer.allocUnsafe(size);
        continue;
      }
      position += at;
    }
  } finally {
    await file.close();
  }
}

/** Step 1: fills the map from the dirty range; returns the last offset it covers. */
async function buildKeyMap(input: PassInput, counters: { bytesRead: number }, slicer: Slicer): Promise<number> {
  const { map } = input;
  map.clear();
  let mapEnd = input.firstDirty - 1;
  for (const [index, segment] of input.segments.entries()) {
    if (segment.nextOffset <= input.firstDirty) continue;
    for await (const batch of readSegment(input, segment, counters)) {
      input.checkAborted();
      if (batch.lastOffset < input.firstDirty) continue;
      const keyed = batch.control ? [] : keyedOffsets(batch.bytes);
      if (!map.hasRoomFor(keyed.length)) {
        if (mapEnd < input.firstDirty) {
          throw new Error(`one batch of ${keyed.length} keys at offset ${batch.baseOffset} does not fit the cleaner's key map (${map.capacity} keys): raise log.cleaner.dedupe.buffer.size`);
        }
        return mapEnd;
      }
      for (const { key, offset } of keyed) if (offset >= input.firstDirty) map.put(KeyOffsetMap.digest(key), offset);
      mapEnd = batch.lastOffset;
      await slicer.maybeYield();
    }
    // A whole segment is covered: the range reaches the next one's base (gaps included).
    mapEnd = (input.segments[index + 1]?.baseOffset ?? segment.nextOffset) - 1;
  }
  return mapEnd;
}

/** Step 2: consecutive segments up to `mapEnd`, grouped by size and offset span. */
function groupSegments(input: PassInput, mapEnd: number): CleanableSegment[][] {
  const groups: CleanableSegment[][] = [];
  let current: CleanableSegment[] = [];
  let bytes = 0;
  for (const segment of input.segments) {
    if (segment.baseOffset > mapEnd) break;
    const first = current[0];
    const fits = first !== undefined && bytes + segment.size <= input.segmentBytes && segment.nextOffset - 1 - first.baseOffset <= MAX_RELATIVE_OFFSET;
    if (first !== undefined && !fits) {
      groups.push(current);
      current = [];
      bytes = 0;
    }
    current.push(segment);
    bytes += segment.size;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/** The cleaned files of the segment with this base offset, by the live name they will take. */
export function cleanedFiles(directory: string, baseOffset: number): { log: string; index: string; timeIndex: string } {
  return {
    log: join(directory, segmentFileName(baseOffset, '.log') + CLEANED_SUFFIX),
    index: join(directory, segmentFileName(baseOffset, '.index') + CLEANED_SUFFIX),
    timeIndex: join(directory, segmentFileName(baseOffset, '.timeindex') + CLEANED_SUFFIX),
  };
}

/** Step 3: writes one group as a cleaned segment. */
async function cleanGroup(
  input: PassInput,
  group: readonly CleanableSegment[],
  mapEnd: number,
  counters: { bytesRead: number; bytesWritten: number; recordsRemoved: number; keylessRecords: number; earliestTombstoneHorizon: number },
  slicer: Slicer,
): Promise<CleanedGroup> {
  const first = group[0] as CleanableSegment;
  const lastOffset = (group[group.length - 1] as CleanableSegment).nextOffset - 1;
  const files = cleanedFiles(input.directory, first.baseOffset);
  const index = new SparseIndex(first.baseOffset, files.index, files.timeIndex);
  let file: FileHandle | undefined = await open(files.log, 'w');
  let size = 0;
  let maxTimestamp = -1n;
  let offsetOfMaxTimestamp = -1;
  let bytesSinceIndexEntry = 0;
  // Kept batches are gathered and written in chunks: a write per batch cost a round trip each.
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let inFile = 0;
  const writePending = async (): Promise<void> => {
    if (pendingBytes === 0 || file === undefined) return;
    const chunk = pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending, pendingBytes);
    await file.write(chunk, 0, chunk.length, inFile);
    inFile += chunk.length;
    counters.bytesWritten += chunk.length;
    await input.throttle(chunk.length);
    pending = [];
    pendingBytes = 0;
  };
  try {
    for (const segment of group) {
      for await (const batch of readSegment(input, segment, counters)) {
        input.checkAborted();
        // A producer's last batch keeps its sequence; the group's last batch keeps the segment's
        // end offset (Kafka keeps the cleaning round's last batch so offsets are not lost).
        const keepEmpty = input.producerLastOffsets.has(batch.lastOffset) || batch.lastOffset === lastOffset;
        const filtered = filterBatch(batch.bytes, { map: input.map, mapEnd, now: input.now, deleteRetentionMs: input.deleteRetentionMs, keepEmpty });
        counters.recordsRemoved += filtered.removedRecords;
        counters.keylessRecords += filtered.keylessRecords;
        if (filtered.tombstoneHorizon !== undefined) counters.earliestTombstoneHorizon = Math.min(counters.earliestTombstoneHorizon, filtered.tombstoneHorizon);
        const bytes = filtered.bytes;
        if (bytes === undefined) continue;
        // The written batch's newest record (rebuilt batches have their kept records'; a header
        // alone has none: BatchInfo.maxTimestamp).
        const written = readBatchHeader(bytes);
        const batchMax = written.recordsCount === 0 ? -1n : written.maxTimestamp;
        if (batchMax > maxTimestamp) {
          maxTimestamp = batchMax;
          offsetOfMaxTimestamp = batch.lastOffset;
        }
        // Index entries as the live segment writes them (LogSegment.track, Kafka's convention).
        if (size === 0 || bytesSinceIndexEntry >= input.indexIntervalBytes) {
          index.add(batch.lastOffset, size);
          index.addTime(maxTimestamp, offsetOfMaxTimestamp);
          bytesSinceIndexEntry = 0;
        }
        bytesSinceIndexEntry += bytes.length;
        pending.push(bytes);
        pendingBytes += bytes.length;
        size += bytes.length;
        if (pendingBytes >= input.readBufferBytes) await writePending();
        await slicer.maybeYield();
      }
    }
    await writePending();
    await file.sync();
    await file.close();
    file = undefined;
    index.rewriteFiles();
    return { baseOffset: first.baseOffset, sources: group.map((segment) => segment.baseOffset), size };
  } catch (error) {
    await file?.close().catch(() => undefined);
    await removeCleanedFiles(input.directory, first.baseOffset);
    throw error;
  }
}

export async function removeCleanedFiles(directory: string, baseOffset: number): Promise<void> {
  const files = cleanedFiles(directory, baseOffset);
  await Promise.all([files.log, files.index, files.timeIndex].map((path) => rm(path, { force: true })));
}

/**
 * Runs steps 1–3, then hands each cleaned group to `swap` (which replaces the live segments, or
 * throws when the log changed under the pass). On any failure the cleaned files not yet swapped
 * are removed.
 */
export async function cleanLog(input: PassInput, swap: (group: CleanedGroup) => Promise<void>): Promise<PassResult> {
  const counters = { bytesRead: 0, bytesWritten: 0, recordsRemoved: 0, keylessRecords: 0, earliestTombstoneHorizon: Infinity };
  const slicer = new Slicer(input.sliceMs);
  const mapEnd = await buildKeyMap(input, counters, slicer);
  const groups: CleanedGroup[] = [];
  for (const group of groupSegments(input, mapEnd)) {
    const cleaned = await cleanGroup(input, group, mapEnd, counters, slicer);
    try {
      input.checkAborted();
      await swap(cleaned);
    } catch (error) {
      await removeCleanedFiles(input.directory, cleaned.baseOffset);
      throw error;
    }
    groups.push(cleaned);
  }
  return { groups, nextDirtyOffset: mapEnd + 1, ...counters };
}
