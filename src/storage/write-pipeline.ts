/**
 * Getting a partition's appended batches into the file and onto the disk: the batches queued in
 * one turn of the event loop are written together just after it, flushes run one at a time in
 * the flush slot (a truncation holds it too, so the two never overlap), and a write or fsync
 * that fails past undoing takes the log offline. Apart from partition-log.ts because the order
 * of writes, fsyncs and their failures is a concern of its own; it reaches back into the log
 * only through `WriteHooks`, in the order the log fired them before the split.
 */
import type { Logger } from '../common/logger.js';
import { KafkaProtocolError } from '../protocol/kafka-errors.js';
import type { LocalLog } from './local-log.js';
import type { LogEnds } from './log-ends.js';
import type { LogStatus } from './log-status.js';
import type { ProducerStateTable } from './producer-state.js';

/** What a write or flush tells the log, or asks of it. */
export interface WriteHooks {
  /** visible.on.append, read at each write: the topic's config may change at any time. */
  visibleOnAppend(): boolean;
  /** A failed write was undone back to `end`: leader epochs recorded past it go too. */
  forgetEpochsFrom(end: number): void;
  /** New batches reached the file (the log's appended event). */
  appended(): void;
  /** The flushed end moved forward (the log's flushed event). */
  flushed(): void;
}

/** The producer state's part in writing: settle what reached the file, forget what did not. */
export type WrittenProducers = Pick<ProducerStateTable, 'settleBelow' | 'forgetFrom'>;

export class WritePipeline {
  /** The flush (or truncation fsync) holding the flush slot. */
  private flushing: Promise<void> | undefined;
  /** The appends queued for the next write, settled together when it is done. */
  private writeGroup: { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void } | undefined;

  constructor(
    private readonly name: string,
    private readonly local: LocalLog,
    private readonly ends: LogEnds,
    private readonly status: LogStatus,
    private readonly producers: WrittenProducers,
    private readonly logger: Logger,
    private readonly hooks: WriteHooks,
  ) {}

  /** The write the queued batches wait for, if any batch is queued. */
  get pendingWrite(): Promise<void> | undefined {
    return this.writeGroup?.promise;
  }

  /** The flush or truncation holding the flush slot, if any. */
  get inFlight(): Promise<void> | undefined {
    return this.flushing;
  }

  /** Holds the flush slot until `run` (a flush, or a truncation's fsync) settles: the next flush or truncation waits for it. */
  holdFlushSlot(run: Promise<void>): Promise<void> {
    this.flushing = run.finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /**
   * The batches appended in one turn of the event loop are written together, in one system call,
   * just after it; each append resolves once its bytes are in the file (the page cache).
   */
  scheduleWrite(): Promise<void> {
    if (this.writeGroup === undefined) {
      let resolve: () => void = () => {};
      let reject: (error: unknown) => void = () => {};
      const promise = new Promise<void>((onResolve, onReject) => {
        resolve = onResolve;
        reject = onReject;
      });
      this.writeGroup = { promise, resolve, reject };
      setImmediate(() => {
        try {
          this.writePendingNow();
        } catch {
          // The group's promise carries the error to every append in it.
        }
      });
    }
    return this.writeGroup.promise;
  }

  /** Writes the queued batches now; settles the waiting appends. */
  writePendingNow(): void {
    const group = this.writeGroup;
    this.writeGroup = undefined;
    if (this.status.stopped) {
      // Closing cancelled the queued batches; a write now could only hit a file the log let go.
      group?.reject(this.status.unavailableError());
      return;
    }
    try {
      this.local.activeSegment.writePending();
    } catch (error) {
      // The segment cut its file and offsets back; the producer state and the epochs follow.
      this.producers.forgetFrom(this.local.logEndOffset);
      this.hooks.forgetEpochsFrom(this.local.logEndOffset);
      const failure = this.writeFailure(error);
      group?.reject(failure);
      throw failure;
    }
    this.producers.settleBelow(this.local.logEndOffset);
    const written = this.local.endMark();
    const advanced = this.ends.wroteTo(written);
    if (this.hooks.visibleOnAppend()) this.ends.advanceByPolicy(written);
    group?.resolve();
    if (advanced) this.hooks.appended();
  }

  /** fsyncs everything appended so far, then exposes it. Concurrent calls share the work. */
  flush(): Promise<void> {
    if (this.status.stopped) return Promise.reject(this.status.unavailableError());
    if (this.flushing !== undefined) {
      // One flush at a time; a caller arriving during one gets another that covers its data.
      return this.flushing.then(() => (this.ends.flushed.offset < this.local.logEndOffset ? this.flush() : undefined));
    }
    try {
      this.writePendingNow();
    } catch (error) {
      // A write that took the log offline fails the flush. A full disk only refused the queued
      // batches (their appends have the error): the batches already in the file still get their
      // fsync, or acks=−1 appends written before them would be refused although they are stored.
      if (this.status.failure !== undefined) return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    if (this.ends.flushed.offset >= this.local.logEndOffset) return Promise.resolve();
    const target = this.local.endMark();
    const segments = this.local.takeUnflushed();
    const run = (async () => {
      try {
        await this.local.flushSegments(segments);
      } catch (error) {
        // A write inside the segment's flush may have been undone: forget what never reached the file.
        this.producers.forgetFrom(this.local.logEndOffset);
        // A log deleted under its flush: its files are gone on purpose, nothing went wrong.
        if (this.status.state === 'deleted') throw this.status.unavailableError();
        // Never expose or acknowledge data whose fsync failed, and never retry the fsync blindly.
        this.status.failure = new KafkaProtocolError('KAFKA_STORAGE_ERROR', `fsync of log ${this.name} failed; the log is offline until restart and recovery`, { cause: error });
        this.logger.error({ err: error }, 'fsync failed; taking the log offline');
        throw this.status.failure;
      }
      this.ends.flushedTo(target);
      this.hooks.flushed();
    })();
    return this.holdFlushSlot(run);
  }

  /**
   * Waits until everything before `offset` is fsynced. The batch was numbered at truncation
   * `generation`; if a truncation since cut it away, its offsets may now hold other batches, so
   * the wait fails (NOT_LEADER_OR_FOLLOWER: the log became a follower's) instead of answering for them.
   */
  async flushUpTo(offset: number, generation: number): Promise<void> {
    for (;;) {
      if (this.ends.truncatedAway(generation, offset - 1)) {
        throw new KafkaProtocolError('NOT_LEADER_OR_FOLLOWER', `the records up to offset ${offset - 1} of log ${this.name} were truncated (a leader change) before they were flushed`, {
          details: { offset: offset - 1 },
        });
      }
      if (this.ends.flushed.offset >= offset) return;
      this.status.checkWritable();
      await this.flush();
    }
  }

  /** Refuses the batches queued for the next write (the log is closing, deleted or truncated under them). */
  cancelPendingWrites(error: KafkaProtocolError = this.status.unavailableError()): void {
    const group = this.writeGroup;
    this.writeGroup = undefined;
    // Only the active segment ever holds queued batches: a roll writes the old one's first.
    this.local.segments[this.local.segments.length - 1]?.discardPending();
    if (this.local.segments.length > 0) this.producers.forgetFrom(this.local.logEndOffset);
    group?.reject(error);
  }

  /** Maps a failed write (already undone by the segment) to the error the appends get. */
  private writeFailure(error: unknown): KafkaProtocolError {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC') {
      // Disk full: refuse these batches, stay up, accept writes again once there is room.
      return new KafkaProtocolError('KAFKA_STORAGE_ERROR', `no space left to append to log ${this.name}; the batches were not written — free disk space and retry`, { cause: error });
    }
    const failure = new KafkaProtocolError('KAFKA_STORAGE_ERROR', `write to log ${this.name} failed (${code ?? 'unknown'}); the log is offline until restart`, { cause: error });
    this.status.failure = failure;
    this.logger.error({ err: error }, 'write failed; taking the log offline');
    return failure;
  }
}
