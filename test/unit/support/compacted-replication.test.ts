/**
 * The replicated-compaction checker (test/support/compacted-replication.ts) on made-up replicas:
 * two valid compactions of one history pass, and each kind of damage is reported by its rule.
 */
import { describe, expect, it } from 'vitest';
import { checkCompactedPartition, type KeyedWrite, type ReplicaContents, type StoredBatch } from '../../support/compacted-replication.js';

const writes = new Map<number, KeyedWrite>();
const write = (id: number, key: string, offset: number | undefined, tombstone = false): void =>
  void writes.set(id, { id, partition: 0, key, tombstone, time: 0, outcome: offset === undefined ? { type: 'unknown', error: 'X' } : { type: 'acknowledged', offset } });
// History: a=1 at 0, b=2 at 1, a=3 at 2, b tombstone at 3, c=5 at 4 (unknown outcome).
write(1, 'a', 0);
write(2, 'b', 1);
write(3, 'a', 2);
write(4, 'b', 3, true);
write(5, 'c', undefined);

const batch = (baseOffset: number, lastOffset: number, records: [number, string, number, boolean?][], leaderEpoch = 0): StoredBatch => ({
  baseOffset,
  lastOffset,
  leaderEpoch,
  producerId: 7n,
  producerEpoch: 0,
  baseSequence: baseOffset,
  records: records.map(([offset, key, id, tombstone]) => ({ offset, key, id, tombstone: tombstone ?? false })),
});

const replica = (brokerId: number, batches: StoredBatch[], overrides: Partial<ReplicaContents> = {}): ReplicaContents => ({
  brokerId,
  error: undefined,
  logStartOffset: 0,
  logEndOffset: 5,
  readEnd: 5,
  highWatermark: 5,
  batches,
  epochs: [{ epoch: 0, startOffset: 0 }],
  producers: [{ producerId: 7n, epoch: 0, lastSequence: 4, lastOffset: 4 }],
  ...overrides,
});

/** Everything, uncleaned. */
const whole = (brokerId: number): ReplicaContents =>
  replica(brokerId, [batch(0, 1, [[0, 'a', 1], [1, 'b', 2]]), batch(2, 2, [[2, 'a', 3]]), batch(3, 4, [[3, 'b', 4, true], [4, 'c', 5]])]);
/** Cleaned: the first batch emptied and dropped. */
const cleaned = (brokerId: number): ReplicaContents => replica(brokerId, [batch(2, 2, [[2, 'a', 3]]), batch(3, 4, [[3, 'b', 4, true], [4, 'c', 5]])]);

describe('checkCompactedPartition', () => {
  it('passes a cleaned and an uncleaned replica of the same history', () => {
    const check = checkCompactedPartition(0, writes, [whole(1), cleaned(2)]);
    expect(check.violations).toEqual([]);
    expect(check.held.map((held) => held.records)).toEqual([5, 3]);
    expect(check.keys).toBe(3);
  });

  it('lets a tombstone past its horizon go, but not while a value it deleted is left (R3, R4)', () => {
    const dropped = replica(2, [batch(2, 2, [[2, 'a', 3]]), batch(3, 4, [[4, 'c', 5]])]);
    const checked = checkCompactedPartition(0, writes, [whole(1), dropped]);
    expect(checked.violations).toEqual([]);
    expect(checked.tombstonesDropped).toBe(1);
    const resurrected = replica(2, [batch(0, 1, [[1, 'b', 2]]), batch(2, 2, [[2, 'a', 3]]), batch(3, 4, [[4, 'c', 5]])]);
    const kinds = checkCompactedPartition(0, writes, [whole(1), resurrected]).violations.map((line) => line.split(':')[0]);
    expect(kinds).toEqual(expect.arrayContaining(['p0 R3 lost', 'p0 R4 not the latest', 'p0 R4 replicas disagree']));
  });

  it('reports a key whose latest acknowledged write is gone (R3) and an older value left as its newest (R4)', () => {
    const lost = replica(2, [batch(0, 1, [[0, 'a', 1], [1, 'b', 2]]), batch(3, 4, [[3, 'b', 4, true], [4, 'c', 5]])]);
    const check = checkCompactedPartition(0, writes, [whole(1), lost]);
    expect(check.lost).toBe(1);
    expect(check.violations.some((line) => line.includes('R3 lost') && line.includes('a=v3'))).toBe(true);
    expect(check.violations.some((line) => line.includes('R4 not the latest'))).toBe(true);
    expect(check.violations.some((line) => line.includes('R4 replicas disagree'))).toBe(true);
  });

  it('reports a record nobody wrote, one away from its acknowledged offset, and two values at one offset (R1, R2)', () => {
    const strange = replica(2, [batch(0, 1, [[0, 'a', 3], [1, 'b', 9]]), batch(2, 2, [[2, 'a', 3]]), batch(3, 4, [[3, 'b', 4, true], [4, 'c', 5]])]);
    const check = checkCompactedPartition(0, writes, [whole(1), strange]);
    const kinds = check.violations.map((line) => line.split(':')[0]);
    expect(kinds).toEqual(expect.arrayContaining(['p0 R1 never written', 'p0 R1 moved', 'p0 R1 duplicate', 'p0 R2 offset differs']));
  });

  it('reports batches that differ in header fields, epochs the cache does not give, and producer state that differs (R2, R5, R6)', () => {
    const other = replica(2, [batch(2, 2, [[2, 'a', 3]], 1), batch(3, 4, [[3, 'b', 4, true], [4, 'c', 5]])], { producers: [{ producerId: 7n, epoch: 0, lastSequence: 3, lastOffset: 3 }] });
    const check = checkCompactedPartition(0, writes, [whole(1), other]);
    const kinds = check.violations.map((line) => line.split(':')[0]);
    expect(kinds).toEqual(expect.arrayContaining(['p0 R2 batch differs', 'p0 R5 epoch of batch', 'p0 R6 producer state']));
  });

  it('reports a replica whose epoch cache dates an epoch later than another replica holds batches of it (R5)', () => {
    // Everything written in epoch 1; offsets 0–1 are obsolete (a and b written again later).
    const inEpochOne = (brokerId: number, batches: StoredBatch[], epochs: ReplicaContents['epochs']): ReplicaContents => replica(brokerId, batches.map((stored) => ({ ...stored, leaderEpoch: 1 })), { epochs });
    const uncleaned = inEpochOne(1, whole(1).batches as StoredBatch[], [{ epoch: 1, startOffset: 0 }]);
    // Fetched across the gap 0–1 and dated epoch 1 from where its log ended: early, allowed.
    const early = inEpochOne(2, cleaned(2).batches as StoredBatch[], [{ epoch: 1, startOffset: 0 }]);
    expect(checkCompactedPartition(0, writes, [uncleaned, early]).violations).toEqual([]);
    // Dated it from its first batch instead, after an older epoch: late.
    const late = inEpochOne(3, cleaned(3).batches as StoredBatch[], [{ epoch: 0, startOffset: 0 }, { epoch: 1, startOffset: 2 }]);
    const check = checkCompactedPartition(0, writes, [uncleaned, late]);
    expect(check.violations.map((line) => line.split(':')[0])).toEqual(['p0 R5 epoch starts late']);
  });

  it('reports unequal log starts and ends, a short read, an unreadable replica, and an epoch past the log end (R1, R5)', () => {
    const shorter = replica(2, [batch(2, 2, [[2, 'a', 3]])], { logStartOffset: 2, logEndOffset: 3, readEnd: 2, epochs: [{ epoch: 0, startOffset: 0 }, { epoch: 1, startOffset: 3 }] });
    const broken = replica(3, [], { error: 'offline: damaged' });
    const check = checkCompactedPartition(0, writes, [whole(1), shorter, broken]);
    const kinds = check.violations.map((line) => line.split(':')[0]);
    expect(kinds).toEqual(expect.arrayContaining(['p0 R5 unreadable', 'p0 R1 short read', 'p0 R5 log start', 'p0 R5 log end', 'p0 R5 epoch past end']));
  });
});
