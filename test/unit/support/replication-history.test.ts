/**
 * The replication checker on hand-made histories: a clean run reports nothing, and each kind of
 * violation is reported once, with the partition, offset, values and consumer that show it.
 */
import { describe, expect, it } from 'vitest';
import {
  checkReplicationHistory,
  describeViolation,
  formatReport,
  formatSummary,
  type ConsumerEvent,
  type FinalPartition,
  type MetadataSample,
  type ReplicationHistory,
  type SendRecord,
  type Violation,
} from '../../support/replication-history.js';

const acknowledged = (partition: number, value: number, offset: number, idempotent = true): SendRecord => ({ partition, value, idempotent, outcome: { type: 'acknowledged', offset } });
const failed = (partition: number, value: number, error = 'NOT_ENOUGH_REPLICAS'): SendRecord => ({ partition, value, idempotent: true, outcome: { type: 'failed', error } });
const unknown = (partition: number, value: number, error = 'REQUEST_TIMED_OUT'): SendRecord => ({ partition, value, idempotent: true, outcome: { type: 'unknown', error } });
const polled = (consumer: string, partition: number, offset: number, value: number): ConsumerEvent => ({ type: 'record', consumer, partition, offset, value });
const seek = (consumer: string, partition: number, offset?: number): ConsumerEvent => ({ type: 'seek', consumer, partition, reason: 'test', ...(offset === undefined ? {} : { offset }) });
/** A partition whose log holds `values` from offset `start` on. */
const partitionLog = (partition: number, values: readonly number[], start = 0): FinalPartition => ({ partition, records: values.map((value, index) => ({ offset: start + index, value })) });
const sample = (time: number, observer: string, partition: number, leader: number, leaderEpoch: number): MetadataSample => ({ time, observer, partition, leader, leaderEpoch });

/**
 * A clean run on two partitions: values 0–5 to partition 0 and 10–13 to partition 1, all
 * acknowledged at the offsets they are stored at; one consumer per partition saw everything in order.
 */
function cleanHistory(): ReplicationHistory {
  return {
    sends: [...[0, 1, 2, 3, 4, 5].map((value) => acknowledged(0, value, value)), ...[10, 11, 12, 13].map((value, index) => acknowledged(1, value, index))],
    polls: [...[0, 1, 2, 3, 4, 5].map((value) => polled('c0', 0, value, value)), ...[10, 11, 12, 13].map((value, index) => polled('c1', 1, index, value))],
    finalRead: [partitionLog(0, [0, 1, 2, 3, 4, 5]), partitionLog(1, [10, 11, 12, 13])],
    metadataSamples: [sample(1, 'broker-1', 0, 1, 0), sample(2, 'broker-1', 0, 2, 1), sample(3, 'broker-2', 0, 2, 1), sample(4, 'broker-1', 0, 2, 1)],
  };
}

/** The history with some parts replaced. */
function edited(changes: Partial<ReplicationHistory>): ReplicationHistory {
  return { ...cleanHistory(), ...changes };
}

function kinds(violations: readonly Violation[]): string[] {
  return violations.map((violation) => violation.kind);
}

describe('checkReplicationHistory', () => {
  it('finds nothing in a clean history and counts what happened', () => {
    const result = checkReplicationHistory(cleanHistory());
    expect(result.violations).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.summary).toMatchObject({
      sends: 10,
      acknowledged: 10,
      failed: 0,
      unknown: 0,
      lost: 0,
      unseen: 0,
      duplicatedValues: 0,
      polledRecords: 10,
      consumers: 2,
      seeks: 0,
      finalRecords: 10,
      finalPartitions: 2,
      metadataSamples: 4,
      violations: 0,
    });
    const line = formatSummary(result.summary);
    expect(line).not.toContain('\n');
    expect(line).toContain('sends 10: 10 acknowledged, 0 failed, 0 unknown');
    expect(line).toContain('violations 0');
  });

  it('accepts failed sends that are absent and unknown sends either way, counting the unknown ones stored', () => {
    const history = cleanHistory();
    const result = checkReplicationHistory({
      ...history,
      sends: [...history.sends, failed(0, 100), unknown(0, 101), unknown(0, 102)],
      finalRead: [partitionLog(0, [0, 1, 2, 3, 4, 5, 101]), partitionLog(1, [10, 11, 12, 13])],
    });
    expect(result.violations).toEqual([]);
    expect(result.summary).toMatchObject({ failed: 1, unknown: 2, unknownStored: 1 });
  });

  describe('I1 lost', () => {
    it('reports an acknowledged value that is elsewhere, one that is nowhere (unseen), and one past the log end', () => {
      const result = checkReplicationHistory(
        edited({
          polls: [],
          // 2 and 3 swapped places; 5 is gone, and the log ends at offset 5 (4 is the last record).
          finalRead: [partitionLog(0, [0, 1, 3, 2, 4]), partitionLog(1, [10, 11, 12, 13])],
        }),
      );
      const lost = result.violations.filter((violation) => violation.kind === 'lost');
      expect(lost).toEqual([
        { invariant: 'I1', kind: 'lost', partition: 0, offset: 2, value: 2, finalValue: 3, foundAt: [{ partition: 0, offset: 3 }], unseen: false },
        { invariant: 'I1', kind: 'lost', partition: 0, offset: 3, value: 3, finalValue: 2, foundAt: [{ partition: 0, offset: 2 }], unseen: false },
        { invariant: 'I1', kind: 'lost', partition: 0, offset: 5, value: 5, finalValue: undefined, foundAt: [], unseen: true },
      ]);
      expect(result.summary).toMatchObject({ lost: 3, unseen: 1 });
      expect(describeViolation(lost[2]!)).toContain('unseen');
      // Acknowledged at 2 and at 3, stored the other way round: each offset holds two values.
      expect(kinds(result.violations).filter((kind) => kind === 'inconsistent-offset')).toHaveLength(2);
    });

    it('tolerates, and counts, the loss of a record acknowledged with acks=1, whose offset was reused', () => {
      const history = cleanHistory();
      // A zombie leader acknowledged 50 at offset 6 with acks=1; the new leader stored 6 there.
      const weak: SendRecord = { partition: 0, value: 50, idempotent: false, acks: 1, outcome: { type: 'acknowledged', offset: 6 } };
      const result = checkReplicationHistory({
        ...history,
        sends: [...history.sends, weak, acknowledged(0, 6, 6)],
        finalRead: [partitionLog(0, [0, 1, 2, 3, 4, 5, 6]), partitionLog(1, [10, 11, 12, 13])],
      });
      expect(result.violations).toEqual([]);
      expect(result.toleratedLosses).toEqual([{ invariant: 'I1', kind: 'lost', partition: 0, offset: 6, value: 50, finalValue: 6, foundAt: [], unseen: true }]);
      expect(result.summary.lostWithoutAllAcks).toBe(1);
      expect(formatSummary(result.summary)).toContain('lost 0 (unseen 0; 1 more acknowledged with acks 1 or 0)');
    });

    it('reports a partition with acknowledged sends that the final read left out, once', () => {
      const result = checkReplicationHistory(edited({ polls: [], finalRead: [partitionLog(0, [0, 1, 2, 3, 4, 5])] }));
      expect(result.violations).toEqual([{ invariant: 'I1', kind: 'partition-not-read', partition: 1, acknowledged: 4 }]);
    });
  });

  describe('I2 inconsistent offsets', () => {
    it('reports an offset seen with two values, naming who saw each', () => {
      const history = cleanHistory();
      const result = checkReplicationHistory({
        ...history,
        // c0 saw value 99 at offset 3 (nobody sent 99: also an unsent value), c9 saw the true one.
        polls: [...history.polls.map((event) => (event.type === 'record' && event.consumer === 'c0' && event.offset === 3 ? { ...event, value: 99 } : event)), polled('c9', 0, 3, 3)],
      });
      const inconsistent = result.violations.filter((violation) => violation.kind === 'inconsistent-offset');
      expect(inconsistent).toEqual([
        {
          invariant: 'I2',
          kind: 'inconsistent-offset',
          partition: 0,
          offset: 3,
          values: [
            { value: 3, seenBy: ['final read', 'acknowledged send', 'poll by c9'] },
            { value: 99, seenBy: ['poll by c0'] },
          ],
        },
      ]);
      expect(describeViolation(inconsistent[0]!)).toBe('I2 inconsistent offset: partition 0 offset 3 holds 3 (final read, acknowledged send, poll by c9) and 99 (poll by c0)');
      expect(kinds(result.violations).sort()).toEqual(['inconsistent-offset', 'unsent-value', 'vanished-poll']);
    });

    it('reports two acknowledgements of one offset even when the final read does not reach it', () => {
      const history = cleanHistory();
      const result = checkReplicationHistory({ ...history, sends: [...history.sends, acknowledged(0, 6, 6), acknowledged(0, 7, 6)], polls: [] });
      expect(result.violations.find((violation) => violation.kind === 'inconsistent-offset')).toMatchObject({
        partition: 0,
        offset: 6,
        values: [
          { value: 6, seenBy: ['acknowledged send'] },
          { value: 7, seenBy: ['acknowledged send'] },
        ],
      });
    });
  });

  describe('I3 polled records stay', () => {
    it('reports a polled record the final read lost, once per consumer and offset', () => {
      const result = checkReplicationHistory(
        edited({
          sends: [...[0, 1, 2, 3].map((value) => acknowledged(0, value, value)), unknown(0, 4), unknown(0, 5)],
          // c0 read 4 and 5 twice (after a seek back): one report for each offset.
          polls: [...[0, 1, 2, 3, 4, 5].map((value) => polled('c0', 0, value, value)), seek('c0', 0, 4), polled('c0', 0, 4, 4), polled('c0', 0, 5, 5)],
          finalRead: [partitionLog(0, [0, 1, 2, 3]), partitionLog(1, [])],
          metadataSamples: [],
        }),
      );
      const vanished = result.violations.filter((violation) => violation.kind === 'vanished-poll');
      expect(vanished).toEqual([
        { invariant: 'I3', kind: 'vanished-poll', consumer: 'c0', partition: 0, offset: 4, value: 4, finalValue: undefined },
        { invariant: 'I3', kind: 'vanished-poll', consumer: 'c0', partition: 0, offset: 5, value: 5, finalValue: undefined },
      ]);
      expect(kinds(result.violations)).toEqual(['vanished-poll', 'vanished-poll']);
    });

    it('reports a polled record replaced by another value at its offset', () => {
      const result = checkReplicationHistory(
        edited({
          sends: [acknowledged(0, 0, 0), unknown(0, 1), acknowledged(0, 2, 1)],
          polls: [polled('c0', 0, 0, 0), polled('c0', 0, 1, 1)],
          finalRead: [partitionLog(0, [0, 2])],
          metadataSamples: [],
        }),
      );
      expect(result.violations.find((violation) => violation.kind === 'vanished-poll')).toEqual({
        invariant: 'I3',
        kind: 'vanished-poll',
        consumer: 'c0',
        partition: 0,
        offset: 1,
        value: 1,
        finalValue: 2,
      });
      expect(kinds(result.violations).sort()).toEqual(['inconsistent-offset', 'vanished-poll']);
    });
  });

  describe('I4 duplicates', () => {
    it('fails a value stored twice by an idempotent producer', () => {
      const result = checkReplicationHistory(edited({ polls: [], finalRead: [partitionLog(0, [0, 1, 2, 3, 4, 5, 5]), partitionLog(1, [10, 11, 12, 13])] }));
      expect(result.violations).toEqual([
        {
          invariant: 'I4',
          kind: 'duplicate',
          value: 5,
          idempotent: true,
          positions: [
            { partition: 0, offset: 5 },
            { partition: 0, offset: 6 },
          ],
        },
      ]);
      expect(result.summary).toMatchObject({ duplicatedValues: 1, extraCopies: 1 });
    });

    it('counts, without failing, values stored twice by a producer without idempotence', () => {
      const sends = [0, 1, 2].map((value) => acknowledged(0, value, value === 2 ? 3 : value, false));
      const result = checkReplicationHistory({ sends, polls: [], finalRead: [partitionLog(0, [0, 1, 2, 2, 1])] });
      expect(result.ok).toBe(true);
      expect(result.violations).toEqual([]);
      expect(result.toleratedDuplicates.map((duplicate) => [duplicate.value, duplicate.positions.length])).toEqual([
        [1, 2],
        [2, 2],
      ]);
      expect(result.summary).toMatchObject({ duplicatedValues: 2, extraCopies: 2 });
    });
  });

  describe('I5 poll order', () => {
    const log = partitionLog(0, [0, 1, 2, 3, 4, 5]);
    const sends = [0, 1, 2, 3, 4, 5].map((value) => acknowledged(0, value, value));
    const check = (polls: ConsumerEvent[], finalRead: FinalPartition[] = [log]) =>
      checkReplicationHistory({ sends, polls, finalRead }).violations.filter((violation) => violation.invariant === 'I5');

    it('reports a consumer jumping over existing offsets, counting and listing them', () => {
      expect(check([polled('c0', 0, 0, 0), polled('c0', 0, 1, 1), polled('c0', 0, 4, 4), polled('c0', 0, 5, 5)])).toEqual([
        { invariant: 'I5', kind: 'poll-skip', consumer: 'c0', partition: 0, expected: 2, received: 4, skippedCount: 2, skipped: [2, 3] },
      ]);
    });

    it('reports a consumer going back without a seek, once per jump', () => {
      expect(check([0, 1, 2, 3, 1, 2, 3, 4].map((offset) => polled('c0', 0, offset, offset)))).toEqual([
        { invariant: 'I5', kind: 'nonmonotonic-poll', consumer: 'c0', partition: 0, previous: 3, received: 1 },
      ]);
      expect(check([0, 1, 1].map((offset) => polled('c0', 0, offset, offset)))).toEqual([
        { invariant: 'I5', kind: 'nonmonotonic-poll', consumer: 'c0', partition: 0, previous: 1, received: 1 },
      ]);
    });

    it('lets a seek move the position either way, then expects the records from the seek offset on', () => {
      const rereads = [0, 1, 2].map((offset) => polled('c0', 0, offset, offset));
      expect(check([...rereads, seek('c0', 0, 0), ...rereads, seek('c0', 0), polled('c0', 0, 4, 4)])).toEqual([]);
      // After a seek to 1 the first record must be 1: receiving 3 skips 1 and 2.
      expect(check([polled('c0', 0, 0, 0), seek('c0', 0, 1), polled('c0', 0, 3, 3)])).toEqual([
        { invariant: 'I5', kind: 'poll-skip', consumer: 'c0', partition: 0, expected: 1, received: 3, skippedCount: 2, skipped: [1, 2] },
      ]);
    });

    it('does not call a jump over offsets the log does not hold a skip (log start moved)', () => {
      const trimmed = partitionLog(0, [3, 4, 5], 3);
      expect(check([seek('c0', 0, 0), polled('c0', 0, 3, 3), polled('c0', 0, 4, 4)], [trimmed])).toEqual([]);
    });

    it('tracks each consumer and partition on its own, whatever the interleaving', () => {
      const interleaved = [polled('a', 0, 0, 0), polled('b', 0, 0, 0), polled('a', 0, 1, 1), polled('b', 0, 1, 1), polled('a', 0, 2, 2), polled('b', 0, 3, 3)];
      expect(check(interleaved)).toEqual([{ invariant: 'I5', kind: 'poll-skip', consumer: 'b', partition: 0, expected: 2, received: 3, skippedCount: 1, skipped: [2] }]);
    });
  });

  describe('I7 leader epochs', () => {
    const check = (samples: MetadataSample[]) => checkReplicationHistory(edited({ metadataSamples: samples })).violations;

    it('reports an observer whose epoch went down, in time order whatever the input order', () => {
      const samples = [sample(3, 'broker-1', 0, 2, 1), sample(1, 'broker-1', 0, 1, 0), sample(2, 'broker-1', 0, 3, 2)];
      expect(check(samples)).toEqual([
        { invariant: 'I7', kind: 'epoch-regressed', observer: 'broker-1', partition: 0, before: samples[2], after: samples[0] },
      ]);
    });

    it('allows different observers to lag behind each other', () => {
      expect(check([sample(1, 'broker-1', 0, 2, 5), sample(2, 'broker-2', 0, 1, 4), sample(3, 'broker-2', 0, 2, 5)])).toEqual([]);
    });

    it('reports two leaders under one epoch, ignoring "no leader" and brokers without epochs', () => {
      const violations = check([
        sample(1, 'broker-1', 0, 1, 4),
        sample(2, 'broker-2', 0, 3, 4),
        sample(3, 'broker-3', 0, -1, 4),
        sample(4, 'broker-1', 1, 1, -1),
        sample(5, 'broker-2', 1, 2, -1),
      ]);
      expect(violations).toEqual([{ invariant: 'I7', kind: 'epoch-shared', partition: 0, leaderEpoch: 4, leaders: [1, 3], observers: ['broker-1', 'broker-2'] }]);
    });
  });

  describe('values against sends', () => {
    it('reports a refused send that was stored, a value nobody sent, and a value in the wrong partition', () => {
      const history = cleanHistory();
      const result = checkReplicationHistory({
        ...history,
        sends: [...history.sends, failed(0, 6), acknowledged(1, 14, 4)],
        polls: [...history.polls, polled('c0', 0, 6, 6)],
        finalRead: [partitionLog(0, [0, 1, 2, 3, 4, 5, 6, 14]), partitionLog(1, [10, 11, 12, 13, 77])],
      });
      expect(result.violations.filter((violation) => violation.invariant === 'sends')).toEqual([
        { invariant: 'sends', kind: 'refused-send-stored', partition: 0, offset: 6, value: 6, error: 'NOT_ENOUGH_REPLICAS', seenBy: ['final read', 'poll by c0'] },
        { invariant: 'sends', kind: 'misplaced-value', partition: 0, offset: 7, value: 14, sentTo: 1, seenBy: ['final read'] },
        { invariant: 'sends', kind: 'unsent-value', partition: 1, offset: 4, value: 77, seenBy: ['final read'] },
      ]);
      // 14 was acknowledged at partition 1 offset 4, which holds 77: lost and inconsistent too.
      expect(kinds(result.violations).sort()).toEqual(['inconsistent-offset', 'lost', 'misplaced-value', 'refused-send-stored', 'unsent-value']);
      expect(result.summary.badSends).toBe(3);
    });
  });

  it('refuses a history that sent one value twice', () => {
    expect(() => checkReplicationHistory(edited({ sends: [acknowledged(0, 1, 0), unknown(1, 1)] }))).toThrow(/value 1 was sent twice/);
  });

  it('formats a report: the summary, then each kind with its count and first violations', () => {
    const result = checkReplicationHistory(edited({ polls: [], finalRead: [partitionLog(0, [0, 1, 2]), partitionLog(1, [10, 11, 12, 13])] }));
    const report = formatReport(result, 2);
    const lines = report.split('\n');
    expect(lines[0]).toBe(formatSummary(result.summary));
    expect(lines.slice(1)).toEqual([
      'lost: 3',
      '  I1 lost: value 3 acknowledged at partition 0 offset 3; the final read holds nothing there, and the value nowhere (unseen)',
      '  I1 lost: value 4 acknowledged at partition 0 offset 4; the final read holds nothing there, and the value nowhere (unseen)',
      '  … and 1 more',
    ]);
  });
});
