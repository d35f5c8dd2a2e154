/**
 * Where the mirror resumes a source partition: after the last record of that origin (source
 * cluster + source partition) in the target partition, found by scanning back from the target's
 * end; the group's committed offset is only a lower bound and the fallback.
 *
 * Why the last origin record found is the resume point, and why the scan may stop where it does:
 *
 * 1. Order. One source partition goes to one target partition (same partition counts,
 *    placement.ts), in source offset order: a pump sends in the order it takes records, the
 *    producer keeps one batch in flight per partition and retries it in place (target.ts uses
 *    retries), and each mirror life starts sending at the resume point computed before it. So the
 *    records of one origin in the target partition have non-decreasing source offsets in target
 *    order (a retried batch may repeat next to itself), without gaps: the last one has the
 *    highest source offset L, and every offset below L down to the first mirrored is there.
 *    Resuming at L + 1 re-sends nothing and skips nothing. Other origins interleave freely; they
 *    do not matter.
 * 2. The bound. With every commit of source offset C the mirror records, in the same ZooKeeper
 *    transaction, a position: source records up to H (H + 1 ≥ C) were acknowledged, the one at H
 *    at target offset T (progress-nodes.ts). By (1), a record of this origin with source offset
 *    above H can only be at a target offset above T. So the scan looks at (T, end] only: the
 *    last origin record there is the answer; if there is none, the target holds nothing of this
 *    origin after H and the answer is H + 1. Records at or below T are covered by the commit.
 *    Without a position (never committed, or the target partition differs) the scan may go back
 *    to the log start; the answer is then the committed offset when nothing is found.
 * 3. Holes. (1) holds while every send succeeds. A batch refused for good (too large for the
 *    target, say) stops the mirror, but the idempotent producer may still store the batches
 *    behind it (it keeps 5 in flight per partition and carries on under a new epoch), so the
 *    origin's run in the target can have a hole. With a recorded position the scan reads all of
 *    (T, end] and resumes at the first source offset missing from the run: the refused record is
 *    tried again (and the mirror stops on it again) rather than skipped. Records after the hole
 *    are then sent twice, which the audit reports; skipping would be silent loss.
 *    Not every jump in source offsets is a hole. A compacted source has offsets without records:
 *    each record's origin names where its consumer read on from (origin-header.ts `from`: the
 *    source holds nothing in [from, offset)), so a jump from the run's end up to `from` or less is
 *    compaction's, and the run goes on. Offsets below the source's log start (`sourceLogStart`)
 *    were deleted by retention: nothing there can be sent again, so a jump over them is stepped
 *    over too (the consumer's offset reset made it), and only what lies above the log start is a hole.
 * 4. Steps. Without a recorded position the scan reads windows of `stepRecords` offsets, the
 *    newest first, each forward from its start; the first window (newest) with a record of this
 *    origin ends the search. Reads step by batches (the next offset a fetch gives), so a target
 *    whose batches end in removed records is read through.
 *
 * The in-process predecessor's in-flight sends are waited for before scanning (the commit gate);
 * a killed predecessor's requests are long processed once its ownership expired (the session
 * timeout), which is when a new owner may scan.
 */
import type { Record as KafkaRecord } from '../protocol/records.js';
import { mirrorOriginOf } from './origin-header.js';

/** Reads of one target partition (a SimpleConsumer of the offline cluster, or a fake in tests). */
export interface TargetPartitionReader {
  /** The first offset still in the log and the high watermark (one past the last readable). */
  bounds(): Promise<{ readonly start: bigint; readonly end: bigint }>;
  /**
   * Records from `from` on, in offset order, and the offset to read next: past the last batch
   * read, which may hold no record from `from` on (compaction); `from` when nothing could be read.
   */
  read(from: bigint): Promise<{ readonly records: readonly KafkaRecord[]; readonly nextOffset: bigint }>;
}

/** What the last commit recorded: source records below `sourceEnd` are at target offsets ≤ `targetOffset`. */
export interface CoveredPosition {
  readonly sourceEnd: bigint;
  readonly targetOffset: bigint;
}

export interface ResumeSearch {
  readonly source: string;
  readonly sourcePartition: number;
  /** The group's committed offset of the source partition, if any. */
  readonly committed: bigint | undefined;
  /** The position recorded with the commit, if it names this target partition. */
  readonly covered: CoveredPosition | undefined;
  /** The source partition's log start now, if known: offsets below it were deleted by retention. */
  readonly sourceLogStart?: bigint | undefined;
  readonly stepRecords: number;
}

export interface ResumePoint {
  /** The next source offset to mirror; undefined when nothing is known (the consumer's reset applies). */
  readonly offset: bigint | undefined;
  /** The highest source offset of this origin found in the target, if one was found. */
  readonly lastInTarget: bigint | undefined;
  /** Target records read to decide. */
  readonly scanned: number;
}

export async function findResumePoint(reader: TargetPartitionReader, search: ResumeSearch): Promise<ResumePoint> {
  if (search.covered !== undefined) return resumeAfterCoveredRun(reader, search, search.covered);
  const { start, end } = await reader.bounds();
  const floor = start;
  let scanned = 0;
  let lastInTarget: bigint | undefined;
  const step = BigInt(Math.max(1, search.stepRecords));
  for (let windowEnd = end; windowEnd > floor && lastInTarget === undefined; ) {
    const windowStart = max(floor, windowEnd - step);
    for (let offset = windowStart; offset < windowEnd; ) {
      const { records, nextOffset } = await reader.read(offset);
      for (const record of records) {
        if (record.offset < offset || record.offset >= windowEnd) continue;
        scanned += 1;
        const origin = mirrorOriginOf(record.headers);
        if (origin === undefined || origin.source !== search.source || origin.partition !== search.sourcePartition) continue;
        if (lastInTarget === undefined || origin.offset > lastInTarget) lastInTarget = origin.offset;
      }
      if (nextOffset <= offset) break; // nothing more readable in this window
      offset = nextOffset;
    }
    windowEnd = windowStart;
  }
  const candidates = [search.committed, lastInTarget === undefined ? undefined : lastInTarget + 1n].filter((value) => value !== undefined);
  return { offset: candidates.length === 0 ? undefined : candidates.reduce(max), lastInTarget, scanned };
}

/**
 * With a recorded position: reads (T, end] once, forward, and follows the origin's run from the
 * recorded source end; the first source offset missing from it is where to resume (point 3).
 */
async function resumeAfterCoveredRun(reader: TargetPartitionReader, search: ResumeSearch, covered: CoveredPosition): Promise<ResumePoint> {
  const { start, end } = await reader.bounds();
  let next = covered.sourceEnd;
  let lastInTarget: bigint | undefined;
  let scanned = 0;
  let holeFound = false;
  for (let offset = max(start, covered.targetOffset + 1n); offset < end && !holeFound; ) {
    const { records, nextOffset } = await reader.read(offset);
    for (const record of records) {
      if (record.offset < offset || record.offset >= end) continue;
      scanned += 1;
      const origin = mirrorOriginOf(record.headers);
      if (origin === undefined || origin.source !== search.source || origin.partition !== search.sourcePartition) continue;
      if (origin.offset >= next) {
        // The source holds nothing in [from, offset) (compaction), nor anything the mirror can send below its log start (retention).
        const missingFrom = search.sourceLogStart === undefined ? next : max(next, search.sourceLogStart);
        if (missingFrom < (origin.from ?? origin.offset)) {
          next = missingFrom;
          holeFound = true; // source offsets from `missingFrom` up to the record never reached the target
          break;
        }
        next = origin.offset + 1n;
      } // below next: a retried batch repeated next to itself
      lastInTarget = lastInTarget === undefined || origin.offset > lastInTarget ? origin.offset : lastInTarget;
    }
    if (nextOffset <= offset) break;
    offset = nextOffset;
  }
  const resumeAt = search.committed === undefined ? next : max(search.committed, next);
  return { offset: resumeAt, lastInTarget, scanned };
}

const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);
