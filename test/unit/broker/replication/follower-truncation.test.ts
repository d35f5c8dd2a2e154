/**
 * Where a follower cuts its log (follower-truncation.ts), on the scripted interleavings of
 * KIP-101 and KIP-279 (replication.md §2 items 2–4).
 */
import { describe, expect, it } from 'vitest';
import { followerEndOffsetFor, truncationFor } from '../../../../src/broker/replication/follower-truncation.js';

describe('follower truncation by leader epoch', () => {
  it('KIP-101 scenario 1: a follower that restarts keeps what the leader has, even past its old HW', () => {
    // Follower fetched offsets 0–1 in epoch 0 (HW learned only 1); the leader has them too.
    expect(truncationFor({ entries: [{ epoch: 0, startOffset: 0 }], logEndOffset: 2, logStartOffset: 0 }, { epoch: 0, endOffset: 2 })).toEqual({ kind: 'truncate', offset: 2 });
  });

  it('KIP-101 scenario 2: a follower drops the tail of a shared epoch the new leader never got', () => {
    // Both wrote epoch 0; the new leader (epoch 1) ended epoch 0 at 1, the follower at 2.
    expect(truncationFor({ entries: [{ epoch: 0, startOffset: 0 }], logEndOffset: 2, logStartOffset: 0 }, { epoch: 0, endOffset: 1 })).toEqual({ kind: 'truncate', offset: 1 });
  });

  it('KIP-279: a follower holding an epoch the leader never saw cuts everything from it in one step', () => {
    // Follower: epoch 1 from 0, epoch 2 from 5 (written by a leader that died at once), end 8.
    // New leader knows epochs 1 and 3; asked about 2 it answers (1, 6): epoch 1 ends at 6 there.
    const follower = { entries: [{ epoch: 1, startOffset: 0 }, { epoch: 2, startOffset: 5 }], logEndOffset: 8, logStartOffset: 0 };
    expect(truncationFor(follower, { epoch: 1, endOffset: 6 })).toEqual({ kind: 'truncate', offset: 5 });
  });

  it('keeps everything when the leader has more of the follower’s latest epoch', () => {
    expect(truncationFor({ entries: [{ epoch: 3, startOffset: 10 }], logEndOffset: 12, logStartOffset: 0 }, { epoch: 3, endOffset: 40 })).toEqual({ kind: 'truncate', offset: 12 });
  });

  it('restarts from the leader’s log start when the leader has no epoch that old', () => {
    expect(truncationFor({ entries: [{ epoch: 1, startOffset: 0 }], logEndOffset: 3, logStartOffset: 0 }, { epoch: -1, endOffset: -1 })).toEqual({ kind: 'restart-from-leader-start' });
  });

  it('has nothing to cut in an empty log', () => {
    expect(truncationFor({ entries: [], logEndOffset: 7, logStartOffset: 7 }, { epoch: -1, endOffset: -1 })).toEqual({ kind: 'truncate', offset: 7 });
  });

  it('reads the follower’s own end of an epoch from the start of its next one', () => {
    const entries = [{ epoch: 1, startOffset: 0 }, { epoch: 4, startOffset: 9 }];
    expect(followerEndOffsetFor(entries, 1, 20)).toBe(9);
    expect(followerEndOffsetFor(entries, 2, 20)).toBe(9);
    expect(followerEndOffsetFor(entries, 4, 20)).toBe(20);
  });
});
