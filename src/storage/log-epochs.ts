/**
 * Keeping a log's leader-epoch cache (leader-epoch-cache.ts) in step with its batches: refusing
 * appends of a deposed leader, recording a new epoch durably before its first batch is queued,
 * and dropping epochs whose batches never reached the file or lie below the log start.
 */
import type { Logger } from '../common/logger.js';
import { TributaryError } from '../common/errors.js';
import { KafkaProtocolError } from '../protocol/kafka-errors.js';
import type { LeaderEpochCache } from './leader-epoch-cache.js';

/** A leader epoch must be an int32 ≥ 0 and not older than the newest this log has seen. */
export function checkLeaderEpoch(cache: LeaderEpochCache, leaderEpoch: number, logName: string): void {
  if (!Number.isInteger(leaderEpoch) || leaderEpoch < 0 || leaderEpoch > 0x7fffffff) {
    throw new TributaryError({
      code: 'LEADER_EPOCH_INVALID',
      message: `leader epoch ${leaderEpoch} for log ${logName} is not an int32 ≥ 0`,
      details: { leaderEpoch },
    });
  }
  const latest = cache.latestEpoch();
  if (leaderEpoch < latest) {
    throw new KafkaProtocolError(
      'NOT_LEADER_OR_FOLLOWER',
      `log ${logName} has data of leader epoch ${latest}; an append as leader of epoch ${leaderEpoch} comes from a deposed leader`,
      { details: { leaderEpoch, latestEpoch: latest } },
    );
  }
}

/**
 * Writes the leader epochs a full disk deferred (leader-epoch-cache.ts) before a batch carrying
 * one is queued; while the disk stays full the batch is refused (nothing was queued yet).
 */
export function writeDeferredEpochs(cache: LeaderEpochCache, logName: string): void {
  if (!cache.pendingWrite) return;
  try {
    cache.ensurePersisted();
  } catch (error) {
    throw new KafkaProtocolError('KAFKA_STORAGE_ERROR', `could not record the leader epochs of log ${logName} (disk full); the batch was not written`, { cause: error });
  }
}

/** Records a new epoch in the cache; a failed write refuses the batch (nothing was queued yet). */
export function assignEpoch(cache: LeaderEpochCache, epoch: number, startOffset: number, logName: string, logger: Logger): void {
  try {
    cache.assign(epoch, startOffset);
    // A full disk deferred the write: the batch may not go before it.
    cache.ensurePersisted();
  } catch (error) {
    logger.error({ err: error, epoch, startOffset }, 'could not record a leader epoch; the batch was not appended');
    throw new KafkaProtocolError('KAFKA_STORAGE_ERROR', `could not record leader epoch ${epoch} of log ${logName}; the batch was not written`, { cause: error });
  }
}

/** Epochs recorded for batches that never reached the file (best effort: load does it again). */
export function forgetEpochsFrom(cache: LeaderEpochCache, offset: number, logger: Logger): void {
  try {
    cache.truncateFromEnd(offset);
  } catch (error) {
    logger.warn({ err: error, offset }, 'could not remove leader epochs of batches that were not written; the next start removes them');
  }
}

/** Drops the epochs before a new log start (best effort: load does it again). */
export function moveEpochsToStart(cache: LeaderEpochCache, logStartOffset: number, logger: Logger): void {
  try {
    cache.truncateFromStart(logStartOffset);
  } catch (error) {
    // Epochs left before the log start only make OffsetForLeaderEpoch answer offsets no longer held.
    logger.warn({ err: error, logStartOffset }, 'could not move the leader epochs to the new log start; the next start does');
  }
}
