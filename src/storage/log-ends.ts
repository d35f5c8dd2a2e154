/**
 * The three ends of a partition's log (partition-log.ts describes them: written end, flushed end,
 * high watermark), who moves the high watermark, and where recent truncations cut. One small
 * object, so the write pipeline, a truncation and the replica manager move the same marks by the
 * same rules without reaching into the whole log.
 */
import type { LocalLog, Mark } from './local-log.js';
import type { HighWatermarkMode } from './partition-log-types.js';

/** Truncations remembered for `truncatedAway` (a waiter older than these is told its batch may be gone). */
const CUTS_REMEMBERED = 64;

export class LogEnds {
  /** The end of the batches in the file; queued batches lie past it until they are written. */
  written!: Mark;
  /** One past the last fsynced batch: the recovery point. */
  flushed!: Mark;
  /** What consumers may read. */
  highWatermark!: Mark;
  private highWatermarkPolicy: HighWatermarkMode = 'flushed';
  /**
   * Truncations so far, and where the recent ones cut: an acks=−1 append waiting for its flush
   * learns that its batch was cut away instead of waiting for offsets that now hold other data.
   */
  private truncations = 0;
  private readonly cuts: { readonly generation: number; readonly end: number }[] = [];

  constructor(
    private readonly local: Pick<LocalLog, 'markAt'>,
    /** Fires the log's highWatermarkAdvanced event. */
    private readonly highWatermarkAdvanced: () => void,
  ) {}

  /** Changes with every truncation: work begun at one generation can tell whether a cut came since. */
  get generation(): number {
    return this.truncations;
  }

  get mode(): HighWatermarkMode {
    return this.highWatermarkPolicy;
  }

  /** All three ends at `mark`: a log just loaded. */
  startAt(mark: Mark): void {
    this.written = mark;
    this.flushed = mark;
    this.highWatermark = mark;
  }

  /** Batches reached the file up to `mark`; returns whether the written end moved forward. */
  wroteTo(mark: Mark): boolean {
    const advanced = mark.offset > this.written.offset;
    this.written = mark;
    return advanced;
  }

  /** Everything before `mark` is fsynced; the high watermark follows in 'flushed' mode. */
  flushedTo(mark: Mark): void {
    this.flushed = mark;
    this.advanceByPolicy(mark);
  }

  /** A flush or a write moved an end: the high watermark follows in 'flushed' mode only. */
  advanceByPolicy(mark: Mark): void {
    if (this.highWatermarkPolicy === 'flushed') this.advance(mark);
  }

  /** Back to 'flushed', the high watermark catches up at once (to the written end with visible.on.append). */
  setMode(mode: HighWatermarkMode, visibleOnAppend: boolean): void {
    if (mode === this.highWatermarkPolicy) return;
    this.highWatermarkPolicy = mode;
    if (mode === 'flushed') this.advance(visibleOnAppend ? this.written : this.flushed);
  }

  /** See PartitionLog.updateHighWatermark: forward only, never past the written end. */
  update(offset: number): boolean {
    const target = Math.min(offset, this.written.offset);
    if (target <= this.highWatermark.offset) return false;
    return this.advance(this.markAt(target));
  }

  /** See PartitionLog.resetHighWatermark: backwards too, within [log start, written end]. */
  reset(offset: number, logStartOffset: number): number {
    const target = Math.max(logStartOffset, Math.min(offset, this.written.offset));
    const mark = this.markAt(target);
    const before = this.highWatermark.offset;
    this.highWatermark = mark;
    if (mark.offset > before) this.highWatermarkAdvanced();
    return mark.offset;
  }

  /** A truncation cut the log to end at `newEnd` (whose mark is `end`): every end past it comes back. */
  cutBackTo(newEnd: number, end: Mark): void {
    this.written = end;
    if (this.flushed.offset >= newEnd) this.flushed = end;
    if (this.highWatermark.offset >= newEnd) this.highWatermark = end;
    this.recordCut(newEnd);
  }

  /** The log was emptied and starts afresh at `start`: every end is there, and every batch numbered before is gone. */
  emptiedAt(start: Mark): void {
    this.startAt(start);
    this.recordCut(-1);
  }

  /** Whether a truncation since `generation` removed the offset `lastOffset` (unsure = yes). */
  truncatedAway(generation: number, lastOffset: number): boolean {
    if (generation === this.truncations) return false;
    const oldest = this.cuts[0];
    if (oldest === undefined || oldest.generation > generation + 1) return true;
    return this.cuts.some((cut) => cut.generation > generation && cut.end <= lastOffset);
  }

  private advance(mark: Mark): boolean {
    if (mark.offset <= this.highWatermark.offset) return false;
    this.highWatermark = mark;
    this.highWatermarkAdvanced();
    return true;
  }

  private recordCut(end: number): void {
    this.truncations += 1;
    this.cuts.push({ generation: this.truncations, end });
    if (this.cuts.length > CUTS_REMEMBERED) this.cuts.shift();
  }

  /** See LocalLog.markAt: the high watermark and the flushed end are tried first. */
  private markAt(offset: number): Mark {
    return this.local.markAt(offset, this.written, [this.highWatermark, this.flushed]);
  }
}
