/**
 * A partition's producer state over time (Kafka's ProducerStateManager): the table the appends
 * check and record (producer-state.ts), kept across restarts by `<offset>.snapshot` files
 * (producer-snapshot.ts) and rebuilt at load or after a truncation from the newest valid snapshot
 * plus a replay of the batches after it (producer-replay.ts); idle producers expire.
 */
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { LocalLog } from './local-log.js';
import { deleteSnapshot, listSnapshots, readSnapshot, writeSnapshot } from './producer-snapshot.js';
import { replayProducerBatches } from './producer-replay.js';
import { ProducerStateTable } from './producer-state.js';

/** The segments the producer state is loaded from. */
export type ProducerStateSource = Pick<LocalLog, 'segments' | 'segmentIndexFor' | 'firstSegment' | 'logEndOffset'>;

export class ProducerStateManager {
  readonly producers: ProducerStateTable;
  /** The last snapshot written or loaded, so an unchanged state is not written again at the same offset. */
  private lastSnapshot = { offset: -1, changes: -1 };
  /** Snapshot writes under way (their fsyncs and renames); a clean close waits for them. */
  private readonly snapshotWrites = new Set<Promise<void>>();

  constructor(
    name: string,
    private readonly directory: string,
    /** producer.id.expiration.ms: producers idle this long are forgotten. */
    readonly expirationMs: number,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** Whether the log was deleted with its topic (a snapshot write failing then is expected). */
    private readonly deleted: () => boolean,
  ) {
    this.producers = new ProducerStateTable(name);
  }

  /**
   * Producer state after the segments are loaded: the newest valid snapshot at or below the log
   * end, then the batches after it replayed from the segments. Snapshots above the log end
   * (truncated away) and below the first segment are deleted; an unreadable one is logged,
   * deleted and the next older one tried; with none, the whole log is replayed. Never fails the
   * load over a snapshot. Producers idle past producer.id.expiration.ms are then forgotten.
   */
  load(log: ProducerStateSource, logStartOffset: number): void {
    const end = log.logEndOffset;
    const first = log.firstSegment().baseOffset;
    const offsets = listSnapshots(this.directory);
    for (const offset of offsets) {
      if (offset > end) this.logger.info({ snapshot: offset, logEndOffset: end }, 'deleting a producer snapshot past the log end (truncated away)');
    }
    this.deleteSnapshots((offset) => offset > end || offset < first);
    let replayFrom = first;
    for (const offset of offsets.filter((candidate) => candidate >= first && candidate <= end).reverse()) {
      try {
        this.producers.load(readSnapshot(this.directory, offset));
        replayFrom = offset;
        this.lastSnapshot = { offset, changes: this.producers.changes };
        break;
      } catch (error) {
        this.logger.warn({ err: error, snapshot: offset }, 'producer snapshot unreadable; deleting it and trying an older one');
        this.deleteSnapshots((candidate) => candidate === offset);
      }
    }
    const now = this.clock.now();
    let replayed = 0;
    for (let index = log.segmentIndexFor(replayFrom); index < log.segments.length; index += 1) {
      const segment = log.segments[index];
      if (segment === undefined || !segment.hasFile || segment.nextOffset <= replayFrom) continue;
      const start = segment.baseOffset >= replayFrom ? 0 : segment.findBatch(replayFrom, segment.size)?.position;
      if (start === undefined) continue;
      replayed += replayProducerBatches(this.producers, segment.fd, start, segment.size, now, this.expirationMs);
    }
    this.producers.removeBefore(logStartOffset);
    // As Kafka does when loading: producers idle past expiration while the broker was down are gone.
    this.producers.removeExpired(now, this.expirationMs);
    if (replayFrom < end) {
      this.logger.info({ from: replayFrom, to: end, producerBatches: replayed, producers: this.producers.size }, 'rebuilt producer state from the log');
    }
  }

  /** Producer state for the log as it now is: from nothing, the newest snapshot at or below the end, then replay. */
  rebuild(log: ProducerStateSource, logStartOffset: number): void {
    const end = log.logEndOffset;
    // Strict, unlike load: a snapshot of the cut suffix left behind would be loaded once the log grows past it again.
    for (const snapshot of listSnapshots(this.directory)) if (snapshot > end) deleteSnapshot(this.directory, snapshot);
    this.producers.load([]);
    this.lastSnapshot = { offset: -1, changes: -1 };
    this.load(log, logStartOffset);
  }

  /** Forgets every producer and deletes every snapshot (the log starts afresh); throws if a deletion fails. */
  clear(): void {
    this.producers.load([]);
    this.lastSnapshot = { offset: -1, changes: -1 };
    for (const snapshot of listSnapshots(this.directory)) deleteSnapshot(this.directory, snapshot);
  }

  /** Forgets producers idle for producer.id.expiration.ms; returns how many. */
  expire(now: number): number {
    const expired = this.producers.removeExpired(now, this.expirationMs);
    if (expired.length > 0) {
      this.logger.info({ producers: expired.map(String), expirationMs: this.expirationMs }, 'forgot idle producers; their next batch is accepted at any sequence');
    }
    return expired.length;
  }

  get writingSnapshots(): boolean {
    return this.snapshotWrites.size > 0;
  }

  /** Resolves once the snapshot writes under way are done (whatever their outcome). */
  async whenSnapshotsWritten(): Promise<void> {
    await Promise.allSettled([...this.snapshotWrites]);
  }

  /**
   * Writes the producer state as the snapshot at `offset` (all batches before it are in the
   * file): the bytes now, the fsyncs in the background. A failure only costs replay time at the
   * next start: it is logged, never thrown.
   */
  takeSnapshot(offset: number): void {
    const changes = this.producers.changes;
    if (this.lastSnapshot.offset === offset && this.lastSnapshot.changes === changes) return;
    this.lastSnapshot = { offset, changes };
    const write = writeSnapshot(this.directory, offset, this.producers.entries())
      .catch((error: unknown) => {
        // A log deleted meanwhile took its folder away: nothing went wrong.
        if (this.deleted()) return;
        if (this.lastSnapshot.offset === offset) this.lastSnapshot = { offset: -1, changes: -1 };
        this.logger.warn({ err: error, offset }, 'could not write a producer-state snapshot; the next start replays more of the log');
      })
      .finally(() => this.snapshotWrites.delete(write));
    this.snapshotWrites.add(write);
  }

  deleteSnapshots(doomed: (offset: number) => boolean): void {
    try {
      for (const offset of listSnapshots(this.directory)) if (doomed(offset)) deleteSnapshot(this.directory, offset);
    } catch (error) {
      this.logger.warn({ err: error }, 'could not delete producer-state snapshots');
    }
  }
}
