/**
 * The leader epochs of one partition's log (KIP-101, KIP-279): for each epoch whose leader wrote
 * to this log, the offset of its first batch. A follower truncates by it instead of by its high
 * watermark, and a leader answers OffsetForLeaderEpoch from it (`endOffsetFor`), so a replica
 * never keeps a suffix written by a leader the others do not know.
 *
 * File `leader-epoch-checkpoint` in the partition folder, in Kafka's text format:
 *
 *   0                         version
 *   N                         number of entries
 *   <epoch> <startOffset>     N lines, epochs strictly increasing, start offsets non-decreasing
 *
 * Rewritten whole on every change, durably (temp file, fsync, rename, fsync the folder), before
 * the change is visible in memory: the log assigns an epoch before writing the first batch of it,
 * so after a crash no batch carries an epoch the file lacks. A partition that is not replicated
 * never assigns an epoch and so never has the file.
 *
 * A full disk (ENOSPC) defers the write instead: the change is made in memory and the file is
 * written by `ensurePersisted`, which the log calls before it writes any batch carrying an epoch
 * (and which refuses that batch while the disk stays full). The rule above still holds — no batch
 * reaches the file before its epoch — while a broker that becomes leader on a full disk can serve
 * reads. A crash before the deferred write loses only entries no batch refers to: an epoch with
 * no batch, or cuts that loading the log repeats (entries past the log end or before its start).
 *
 * A file that does not parse is logged and the cache starts empty (the next change rewrites it):
 * an empty cache makes a follower truncate to its log start and fetch everything again, which is
 * slow but safe, where a guessed entry could keep a diverged suffix.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../common/logger.js';
import { TributaryError } from '../common/errors.js';
import { fsyncDirectory, writeFileDurably } from './durable-files.js';

export const LEADER_EPOCH_CHECKPOINT = 'leader-epoch-checkpoint';
/** The epoch of data written before replication, and the answer for an epoch nobody knows. */
export const UNDEFINED_EPOCH = -1;
export const UNDEFINED_EPOCH_OFFSET = -1;

export interface EpochEntry {
  readonly epoch: number;
  readonly startOffset: number;
}

export class LeaderEpochCache {
  private list: readonly EpochEntry[];
  /** The entries in memory differ from the file: a full disk deferred their write. */
  private unpersisted = false;

  private constructor(
    readonly directory: string,
    private readonly logger: Logger,
    entries: readonly EpochEntry[],
  ) {
    this.list = entries;
  }

  get path(): string {
    return join(this.directory, LEADER_EPOCH_CHECKPOINT);
  }

  /**
   * Reads `leader-epoch-checkpoint` from the partition folder: none means empty. An unreadable or
   * malformed file is logged and the cache starts empty; entries that break the order (epoch not
   * above the previous one, start offset below it) are logged and dropped.
   */
  static load(directory: string, logger: Logger): LeaderEpochCache {
    const path = join(directory, LEADER_EPOCH_CHECKPOINT);
    if (!existsSync(path)) return new LeaderEpochCache(directory, logger, []);
    let parsed: EpochEntry[];
    try {
      parsed = parseCheckpoint(readFileSync(path, 'utf8'));
    } catch (error) {
      logger.warn({ err: error, path }, 'leader-epoch checkpoint unreadable; starting with no epochs (a follower then re-fetches from its log start)');
      return new LeaderEpochCache(directory, logger, []);
    }
    const kept: EpochEntry[] = [];
    for (const entry of parsed) {
      const last = kept[kept.length - 1];
      if (last !== undefined && (entry.epoch <= last.epoch || entry.startOffset < last.startOffset)) {
        logger.warn({ path, entry, previous: last }, 'leader-epoch checkpoint entry out of order; dropping it');
        continue;
      }
      kept.push(entry);
    }
    return new LeaderEpochCache(directory, logger, kept);
  }

  entries(): readonly EpochEntry[] {
    return this.list;
  }

  /** The newest epoch, UNDEFINED_EPOCH when there is none. */
  latestEpoch(): number {
    return this.list[this.list.length - 1]?.epoch ?? UNDEFINED_EPOCH;
  }

  /**
   * Records that `epoch` starts at `startOffset`. Only a newer epoch is added (entries starting at
   * or after `startOffset` are removed first, so start offsets stay in order); the latest epoch
   * again with the same start changes nothing; the latest with another start, or an older epoch,
   * is ignored with a warning (the first batch of an epoch fixes its start). Written durably
   * before it returns (a full disk defers the write: see the file comment); returns whether
   * anything changed. Throws TributaryError LEADER_EPOCH_INVALID for a negative epoch or offset,
   * LEADER_EPOCH_CHECKPOINT_FAILED when the file cannot be written for another reason (the cache
   * is then unchanged).
   */
  assign(epoch: number, startOffset: number): boolean {
    if (!Number.isSafeInteger(epoch) || epoch < 0 || epoch > 0x7fffffff || !Number.isSafeInteger(startOffset) || startOffset < 0) {
      throw new TributaryError({
        code: 'LEADER_EPOCH_INVALID',
        message: `leader epoch ${epoch} at offset ${startOffset} cannot be recorded in ${this.path}: the epoch must be an int32 ≥ 0 and the offset ≥ 0`,
        details: { directory: this.directory, epoch, startOffset },
      });
    }
    const latest = this.list[this.list.length - 1];
    if (latest !== undefined && epoch === latest.epoch) {
      if (startOffset !== latest.startOffset) {
        this.logger.warn({ epoch, startOffset, recordedStart: latest.startOffset }, 'leader epoch already started at another offset; keeping the recorded start');
      }
      return false;
    }
    if (latest !== undefined && epoch < latest.epoch) {
      this.logger.warn({ epoch, startOffset, latestEpoch: latest.epoch }, 'leader epoch older than the latest recorded; ignoring it');
      return false;
    }
    const next = [...this.list.filter((entry) => entry.startOffset < startOffset), { epoch, startOffset }];
    const removed = this.list.length + 1 - next.length;
    if (removed > 0) this.logger.info({ epoch, startOffset, removed }, 'new leader epoch starts at or before the start of recorded ones; removed them');
    this.persist(next);
    return true;
  }

  /**
   * KIP-279 OffsetForLeaderEpoch: the largest epoch ≤ `requestedEpoch` this log knows and the
   * offset where it ended (the start of the next epoch), or the log end for the latest epoch.
   * As Kafka's LeaderEpochFileCache.endOffsetFor: an epoch older than every entry answers itself
   * with the first entry's start (its data is gone from this log); an epoch newer than the latest,
   * or UNDEFINED_EPOCH, answers UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET.
   */
  endOffsetFor(requestedEpoch: number, logEndOffset: number): { epoch: number; endOffset: number } {
    if (requestedEpoch === UNDEFINED_EPOCH) return { epoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET };
    if (this.list.length > 0 && requestedEpoch === this.latestEpoch()) return { epoch: requestedEpoch, endOffset: logEndOffset };
    const higher = this.list.find((entry) => entry.epoch > requestedEpoch);
    if (higher === undefined) return { epoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET };
    const floor = this.list.findLast((entry) => entry.epoch <= requestedEpoch);
    if (floor === undefined) return { epoch: requestedEpoch, endOffset: higher.startOffset };
    return { epoch: floor.epoch, endOffset: higher.startOffset };
  }

  /** The log was cut back to `endOffset`: epochs starting at or after it are removed. */
  truncateFromEnd(endOffset: number): void {
    const next = this.list.filter((entry) => entry.startOffset < endOffset);
    if (next.length === this.list.length) return;
    this.logger.info({ endOffset, removed: this.list.slice(next.length) }, 'removed leader epochs past the log end');
    this.persist(next);
  }

  /**
   * The log now starts at `startOffset` (retention, or an empty log started there): epochs that
   * started before it are removed, except the last of them, which now starts at `startOffset`
   * (its batches from there on are still in the log).
   */
  truncateFromStart(startOffset: number): void {
    const before = this.list.filter((entry) => entry.startOffset <= startOffset);
    const last = before[before.length - 1];
    if (last === undefined || (before.length === 1 && last.startOffset === startOffset)) return;
    this.persist([{ epoch: last.epoch, startOffset }, ...this.list.slice(before.length)]);
  }

  /** Forgets every epoch and deletes the file (the log was emptied). */
  clear(): void {
    if (this.list.length === 0 && !existsSync(this.path)) return;
    try {
      rmSync(this.path, { force: true });
      fsyncDirectory(this.directory);
    } catch (error) {
      throw this.writeFailure(error);
    }
    this.list = [];
  }

  /** Whether entries wait for a disk with room (see the file comment). */
  get pendingWrite(): boolean {
    return this.unpersisted;
  }

  /**
   * Writes the entries a full disk deferred, if any; throws LEADER_EPOCH_CHECKPOINT_FAILED while
   * it cannot. The log calls this before writing a batch that carries an epoch.
   */
  ensurePersisted(): void {
    if (!this.unpersisted) return;
    try {
      this.write(this.list);
    } catch (error) {
      throw this.writeFailure(error);
    }
    this.unpersisted = false;
    this.logger.info({ entries: this.list.length }, 'leader epochs deferred by a full disk are written');
  }

  private persist(next: readonly EpochEntry[]): void {
    try {
      this.write(next);
      this.unpersisted = false;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw this.writeFailure(error);
      if (!this.unpersisted) this.logger.warn({ err: error, path: this.path }, 'disk full: leader epochs kept in memory; written before the next batch that carries one');
      this.unpersisted = true;
    }
    this.list = next;
  }

  private write(entries: readonly EpochEntry[]): void {
    const lines = ['0', String(entries.length), ...entries.map((entry) => `${entry.epoch} ${entry.startOffset}`)];
    writeFileDurably(this.path, `${lines.join('\n')}\n`, this.directory);
  }

  private writeFailure(error: unknown): TributaryError {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown';
    return new TributaryError({
      code: 'LEADER_EPOCH_CHECKPOINT_FAILED',
      message: `could not write ${this.path} (${code}); the leader epochs are unchanged`,
      cause: error,
      details: { directory: this.directory },
    });
  }
}

/** Parses the file; throws a TributaryError naming what is wrong. */
function parseCheckpoint(text: string): EpochEntry[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const [version, count, ...rest] = lines;
  const malformed = (why: string): TributaryError =>
    new TributaryError({ code: 'LEADER_EPOCH_CHECKPOINT_CORRUPT', message: `${LEADER_EPOCH_CHECKPOINT} is malformed: ${why}` });
  if (version !== '0') throw malformed(`version ${version ?? 'missing'}, expected 0`);
  if (count === undefined || !/^\d+$/.test(count) || Number(count) !== rest.length) {
    throw malformed(`declares ${count ?? 'no'} entries, holds ${rest.length}`);
  }
  return rest.map((line) => {
    const match = /^(\d{1,10}) (\d{1,16})$/.exec(line);
    const epoch = Number(match?.[1]);
    const startOffset = Number(match?.[2]);
    if (match === null || epoch > 0x7fffffff || !Number.isSafeInteger(startOffset)) throw malformed(`bad line "${line}"`);
    return { epoch, startOffset };
  });
}
