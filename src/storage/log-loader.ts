/**
 * Opening a partition's segments at start-up (Kafka's LogLoader): finishing or rolling back a
 * cleaner swap a stop interrupted, removing leftover files, dropping segments below the log
 * start, loading or rebuilding indexes, and after an unclean stop checking every batch from the
 * recovery point on and cutting the log at the first invalid byte.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { verifyBatches } from './batch-scan.js';
import { largestBatchBytes, type LogConfig } from './log-config.js';
import type { LocalLog } from './local-log.js';
import { LogSegment } from './segment.js';
import { recoverSwaps } from './cleaner/segment-swap.js';

const SEGMENT_FILE = /^(\d{20})\.log$/;

export interface SegmentLoadOptions {
  /** From `recovery-point-offset-checkpoint`; everything before it was fsynced. */
  readonly recoveryPoint: number;
  /** From `log-start-offset-checkpoint`. */
  readonly logStartOffset: number;
  /** True when the last stop was clean and nothing needs checking. */
  readonly cleanShutdown: boolean;
}

/**
 * Fills the empty `local` with the segments in its folder, recovered (see above). Returns the log
 * start offset: the checkpointed one, or the first segment's base when that is later.
 */
export function loadSegments(local: LocalLog, options: SegmentLoadOptions, config: LogConfig, clock: Clock, logger: Logger): Promise<number> {
  return new LogLoader(local, config, clock, logger).load(options);
}

class LogLoader {
  /** What recovery after an unclean stop checked and cut (logged once at load). */
  private readonly recoveryReport = { segmentsChecked: 0, batchesVerified: 0, bytesTruncated: 0, segmentsDeleted: 0 };

  constructor(
    private readonly local: LocalLog,
    private readonly config: LogConfig,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  async load(options: SegmentLoadOptions): Promise<number> {
    const directory = this.local.directory;
    // The folder is made now (one cheap call, no fsync, no descriptor); its entry in the data dir
    // is fsynced by the first flush, before any data in it counts as flushed.
    this.local.createDirectory();
    const swaps = recoverSwaps(directory);
    if (swaps.removedCleaned > 0 || swaps.finishedSwaps.length > 0) this.logger.warn({ ...swaps }, 'finished or rolled back a cleaner swap a stop interrupted');
    const files = listFolder(directory);
    const bases: number[] = [];
    for (const file of files) {
      const match = SEGMENT_FILE.exec(file);
      if (match?.[1] !== undefined) bases.push(Number(match[1]));
      else if (file.endsWith('.tmp') || file.endsWith('.deleted')) rmSync(join(directory, file), { force: true });
    }
    bases.sort((a, b) => a - b);
    // Index files whose segment is gone are leftovers of an interrupted deletion.
    for (const file of files) {
      const base = /^(\d{20})\.(index|timeindex)$/.exec(file)?.[1];
      if (base !== undefined && !bases.includes(Number(base))) rmSync(join(directory, file), { force: true });
    }

    // Segments wholly before the persisted log start were deleted by retention before a crash.
    let logStartOffset = options.logStartOffset;
    for (const base of bases) this.local.addSegment(LogSegment.open(directory, base));
    const segments = this.local.segments;
    while (segments.length > 1 && (segments[1]?.baseOffset ?? Infinity) <= logStartOffset) {
      this.local.deleteOldest(1);
    }
    if (segments.length === 0) {
      // Empty: a segment without files, created when the first batch comes.
      this.local.addSegment(LogSegment.create(directory, logStartOffset, this.clock.now()));
    }
    if (logStartOffset < this.local.firstSegment().baseOffset) logStartOffset = this.local.firstSegment().baseOffset;

    const recoverFrom = options.cleanShutdown ? segments.length : this.local.segmentIndexFor(options.recoveryPoint);
    for (let index = 0; index < segments.length; index += 1) {
      const segment = segments[index];
      if (segment === undefined) break;
      if (!segment.hasFile) continue;
      if (index < recoverFrom) {
        let whole: boolean;
        const problem = segment.loadIndex();
        if (problem !== undefined) {
          const what = problem.kind === 'damaged' ? 'index missing or corrupt' : "index written by an earlier version (base offsets, not Kafka's last offsets)";
          this.logger.warn({ segment: segment.baseOffset, reason: problem.reason }, `${what}; rebuilding it from the segment`);
          whole = await this.rebuild(segment);
        } else {
          whole = segment.loadTail(this.config.indexIntervalBytes);
        }
        if (!segment.overflowed && whole) continue;
        // Written before segments rolled on relative-offset overflow (offsets past what the index
        // holds), or bytes that are not whole batches: damage, cut like any other (checked in full,
        // truncated there, and the later segments dropped: they cannot follow a cut).
        this.logger.warn({ segment: segment.baseOffset, overflowed: segment.overflowed }, 'segment holds offsets its index cannot represent or bytes that are not whole batches; checking it in full');
        if (await this.recoverSegment(segment)) {
          this.dropSegmentsFrom(index + 1);
          break;
        }
        continue;
      }
      const previous = segments[index - 1];
      // Among recovered segments a gap is a hole a crash left (a segment whose data never reached
      // the disk), and an overlap is damage: either way the log is valid only up to the previous
      // one. The cleaner keeps each cleaned segment's last batch (if only as a header), so its
      // segments end where the next begins; the versions before that did not, and left gaps after
      // trusted segments (below the recovery point, where the cleaner swaps), which are allowed.
      const gapAllowed = index - 1 < recoverFrom;
      if (previous !== undefined && (segment.baseOffset < previous.nextOffset || (!gapAllowed && segment.baseOffset !== previous.nextOffset))) {
        this.logger.warn({ segment: segment.baseOffset, expected: previous.nextOffset }, 'segment does not follow on; deleting it and later ones');
        this.dropSegmentsFrom(index);
        break;
      }
      if (await this.recoverSegment(segment)) {
        // Everything after the first invalid byte is gone: later segments cannot follow on.
        this.dropSegmentsFrom(index + 1);
        break;
      }
    }
    if (!options.cleanShutdown) {
      // What survived the crash is valid; make it durable before exposing it.
      for (const segment of segments.slice(Math.min(recoverFrom, segments.length - 1))) await segment.flush();
      this.logger.info(
        { ...this.recoveryReport, recoveryPoint: options.recoveryPoint, logEndOffset: this.local.logEndOffset },
        this.recoveryReport.bytesTruncated > 0 ? 'recovered log; truncated invalid bytes' : 'recovered log; every batch valid',
      );
    }
    return logStartOffset;
  }

  /** Rebuilds a trusted segment's index by scanning its batches (no CRC checks). */
  private async rebuild(segment: LogSegment): Promise<boolean> {
    segment.resetForRebuild();
    const whole = segment.loadTail(this.config.indexIntervalBytes);
    this.local.noteIndexWrite(segment.rewriteIndex());
    return whole;
  }

  private dropSegmentsFrom(index: number): void {
    for (const later of this.local.removeFrom(index)) {
      this.recoveryReport.segmentsDeleted += 1;
      this.recoveryReport.bytesTruncated += later.size;
      this.logger.warn({ segment: later.baseOffset }, 'deleting segment after the truncation point');
      later.delete();
    }
    if (this.local.segments.length === 0) throw new Error(`log ${this.local.name} lost its first segment`);
  }

  /** Checks every batch of a segment, truncating at the first invalid one. Returns true if it truncated. */
  private async recoverSegment(segment: LogSegment): Promise<boolean> {
    segment.resetForRebuild();
    // Batches up to the largest size any topic setting allows were valid when written.
    const largestBatch = largestBatchBytes(this.config);
    const scan = await verifyBatches(
      segment.fd, 0, segment.size, segment.baseOffset, largestBatch,
      (batch) => segment.track(batch, this.config.indexIntervalBytes),
      segment.baseOffset,
    );
    this.local.noteIndexWrite(segment.rewriteIndex());
    this.recoveryReport.segmentsChecked += 1;
    this.recoveryReport.batchesVerified += scan.batches;
    if (scan.damage === undefined) return false;
    this.recoveryReport.bytesTruncated += segment.size - scan.validEnd;
    this.logger.warn(
      { segment: segment.baseOffset, position: scan.damage.position, reason: scan.damage.reason, bytesDropped: segment.size - scan.validEnd },
      'recovery truncated the segment at the first invalid byte',
    );
    segment.truncateTo(scan.validEnd);
    return true;
  }
}

/** A folder's entries; none when it does not exist (deleted under a lookup). */
function listFolder(directory: string): string[] {
  try {
    return readdirSync(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}
