/**
 * The log's side of compaction: which of its segments the cleaner may read now
 * (PartitionLog.cleanableView), and putting a cleaned segment in place of the ones it was made
 * from (PartitionLog.swapInCleaned; segment-swap.ts has the file steps).
 */
import { TributaryError } from '../../common/errors.js';
import type { LogConfig } from '../log-config.js';
import type { LocalLog } from '../local-log.js';
import type { ProducerEntry } from '../producer-state.js';
import { LogSegment } from '../segment.js';
import type { CleanableSegment, CleanedGroup } from './clean-pass.js';
import { swapInCleaned as swapInCleanedFiles } from './segment-swap.js';

/** What the cleaner may read of a log now (PartitionLog.cleanableView). */
export interface CleanableView {
  readonly segments: readonly CleanableSegment[];
  readonly firstUncleanable: number;
  readonly logStartOffset: number;
  readonly producerLastOffsets: ReadonlySet<number>;
  readonly generation: number;
  readonly sizeInBytes: number;
}

/** The log's offsets and producers a view is taken at. */
export interface CleanableBounds {
  readonly highWatermark: number;
  readonly recoveryPoint: number;
  readonly logStartOffset: number;
  readonly generation: number;
  readonly producers: readonly ProducerEntry[];
}

/** See PartitionLog.cleanableView. */
export function cleanableView(local: LocalLog, config: LogConfig, bounds: CleanableBounds, now: number): CleanableView {
  const segments: CleanableSegment[] = [];
  const lagBound = BigInt(now - config.minCompactionLagMs);
  // Below the flushed end too: a follower's high watermark may be ahead of what it has fsynced,
  // and only durable segments may be replaced (the recovery point must cover them, see loadSegments).
  const limit = Math.min(bounds.highWatermark, bounds.recoveryPoint);
  for (const segment of local.segments.slice(0, -1)) {
    if (segment.nextOffset > limit || segment.isClosed || !segment.hasFile) break;
    if (config.minCompactionLagMs > 0 && segment.maxTimestamp > lagBound) break;
    segments.push({ baseOffset: segment.baseOffset, size: segment.size, nextOffset: segment.nextOffset, maxTimestamp: segment.maxTimestamp });
  }
  const firstUncleanable = local.segments[segments.length]?.baseOffset ?? local.logEndOffset;
  const producerLastOffsets = new Set(bounds.producers.flatMap((entry) => entry.batches.at(-1)?.lastOffset ?? []));
  return { segments, firstUncleanable, logStartOffset: bounds.logStartOffset, producerLastOffsets, generation: bounds.generation, sizeInBytes: local.sizeInBytes };
}

/**
 * Replaces the live segments `group.sources` with the cleaned segment (see
 * PartitionLog.swapInCleaned, which checks the log's generation first). Throws, changing nothing,
 * when the sources are no longer the live segments (retention or truncation removed one).
 */
export function swapCleanedSegment(local: LocalLog, config: LogConfig, group: CleanedGroup): void {
  const first = local.baseOffsets.indexOf(group.baseOffset);
  const sources = local.segments.slice(first, first + group.sources.length);
  const current = first >= 0 && sources.every((segment, index) => segment.baseOffset === group.sources[index]) && first + sources.length < local.segments.length;
  if (!current) {
    throw new TributaryError({ code: 'CLEANING_ABORTED', message: `log ${local.name}: segments ${group.sources.join(', ')} are no longer live; the cleaned copy is dropped`, retriable: true });
  }
  for (const segment of sources) segment.writePending();
  swapInCleanedFiles(local.directory, group.baseOffset, group.sources);
  const cleaned = LogSegment.open(local.directory, group.baseOffset);
  // The cleaner wrote the index; one that does not load is rebuilt from the batches.
  const unusable = cleaned.loadIndex() !== undefined;
  if (unusable) cleaned.resetForRebuild();
  cleaned.loadTail(config.indexIntervalBytes);
  if (unusable) local.noteIndexWrite(cleaned.rewriteIndex());
  const last = sources.at(-1) as LogSegment;
  // Retention by time reads the newest record's timestamp; keep the sources' view of it.
  cleaned.lastWrittenAt = last.lastWrittenAt;
  cleaned.createdAt = sources[0]?.createdAt ?? cleaned.createdAt;
  cleaned.maxTimestamp = sources.reduce((max, segment) => (segment.maxTimestamp > max ? segment.maxTimestamp : max), cleaned.maxTimestamp);
  local.replaceSegments(first, sources, cleaned);
}
