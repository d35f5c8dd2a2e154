/**
 * Where a follower cuts its log when it starts following a leader (KIP-101 with KIP-279's
 * refinement; replication.md §5.6). The follower asked the leader, with OffsetForLeaderEpoch, for
 * the end of its own latest epoch e; the leader answered (e_L, end_L): the largest epoch it has at
 * or below e, and where that epoch ends in the leader's log. The follower keeps exactly what both
 * logs share:
 *
 *   cut = min(end_L, the follower's own end of epoch e_L)
 *
 * where the follower's end of e_L is the start of its next epoch after e_L, or its log end. One
 * step removes every suffix written in epochs the leader never had (KIP-279's back-to-back
 * failovers) and the leader's shorter tail of a shared epoch (KIP-101 scenario 2). It is never the
 * high watermark: truncating to the HW lost acknowledged records (KIP-101 scenario 1).
 *
 * Pure: the caller does the I/O.
 */
import type { EpochEntry } from '../../storage/leader-epoch-cache.js';

export const UNDEFINED_EPOCH = -1;

export type TruncationDecision =
  /** Cut the log at `offset` (no-op when at or past the log end), then fetch from there. */
  | { readonly kind: 'truncate'; readonly offset: number }
  /**
   * The leader holds nothing as old as this follower's epochs (or the follower has none): drop
   * the whole log and fetch from the leader's log start.
   */
  | { readonly kind: 'restart-from-leader-start' };

/**
 * The follower's end offset for `epoch`: the start of its first epoch above `epoch`, or its log
 * end when it has none (as LeaderEpochCache.endOffsetFor, on the follower's own entries).
 */
export function followerEndOffsetFor(entries: readonly EpochEntry[], epoch: number, logEndOffset: number): number {
  for (const entry of entries) if (entry.epoch > epoch) return entry.startOffset;
  return logEndOffset;
}

/** What to do with the leader's answer to OffsetForLeaderEpoch for the follower's latest epoch. */
export function truncationFor(
  follower: { readonly entries: readonly EpochEntry[]; readonly logEndOffset: number; readonly logStartOffset: number },
  leader: { readonly epoch: number; readonly endOffset: number },
): TruncationDecision {
  if (follower.logEndOffset <= follower.logStartOffset) return { kind: 'truncate', offset: follower.logEndOffset };
  if (leader.epoch === UNDEFINED_EPOCH || leader.endOffset < 0) return { kind: 'restart-from-leader-start' };
  const own = followerEndOffsetFor(follower.entries, leader.epoch, follower.logEndOffset);
  return { kind: 'truncate', offset: Math.min(leader.endOffset, own, follower.logEndOffset) };
}
