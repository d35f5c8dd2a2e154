/**
 * The Jepsen-style checker of the replication tests (docs: shared reference replication.md §4 and
 * §6). A test records a history while faults happen, then heals the cluster and reads every
 * partition from its start to its end; this module compares the three kinds of evidence:
 *
 * - sends: every value the producers tried to write (values are unique integers), and what the
 *   producer was told: acknowledged at an offset, refused for sure, or unknown (timeout, lost
 *   connection: the record may or may not be stored);
 * - polls: every record each consumer received, in the order it received them, with the moments
 *   it moved its position on purpose (seeks, resets) marked;
 * - the final read: each partition's whole log after healing, offset by offset;
 *
 * plus metadata samples (leader and leader epoch per partition) for the epoch checks. It reports
 * every violation of the invariants I1–I5 and I7 precisely (partition, offset, values, consumer),
 * and a one-line summary. Pure: no I/O, no clocks; histories are plain JSON-friendly data (offsets
 * and values are numbers, far below 2^53 in any test) so a failed run can be saved and re-checked.
 */

/** What the producer was told about one send. */
export type SendOutcome =
  /** Stored at `offset` (a negative offset: acknowledged without one, as with acks=0). */
  | { readonly type: 'acknowledged'; readonly offset: number }
  /** Refused for sure: the broker answered that it did not store the record, or it never left. */
  | { readonly type: 'failed'; readonly error: string }
  /** May or may not be stored: the answer was lost, or the broker gave up after appending. */
  | { readonly type: 'unknown'; readonly error: string };

export interface SendRecord {
  readonly partition: number;
  /** Unique across the whole history: the checker finds records by value. */
  readonly value: number;
  /** Whether the producer deduplicated retries; only then is a duplicate of this value an error. */
  readonly idempotent: boolean;
  /**
   * The producer's acks; absent means −1. Only an acks=−1 acknowledgement promises anything: an
   * acks=1 record may be lost, and its offset reused, on failover (replication.md §5.1 G4), so
   * its acknowledgement counts as evidence neither for I1 nor for I2.
   */
  readonly acks?: -1 | 0 | 1;
  readonly outcome: SendOutcome;
  /** Milliseconds since the epoch when the send was made, for reports only. */
  readonly time?: number;
}

/** A record a consumer received. */
export interface PolledRecord {
  readonly type: 'record';
  readonly consumer: string;
  readonly partition: number;
  readonly offset: number;
  readonly value: number;
  readonly time?: number;
}

/**
 * The consumer moved its position on purpose (a seek, or a reset after OFFSET_OUT_OF_RANGE): the
 * next record it receives is not expected to follow the one before. `offset` is the new position
 * when known; the record after a seek with an offset must then be the first existing one from it.
 */
export interface ConsumerSeek {
  readonly type: 'seek';
  readonly consumer: string;
  readonly partition: number;
  readonly offset?: number;
  readonly reason: string;
  readonly time?: number;
}

/** One consumer's events, in the order that consumer saw them (events of different consumers may interleave). */
export type ConsumerEvent = PolledRecord | ConsumerSeek;

export interface FinalRecord {
  readonly offset: number;
  readonly value: number;
}

/** One partition read from its log start to its end after the faults healed. */
export interface FinalPartition {
  readonly partition: number;
  readonly records: readonly FinalRecord[];
}

/**
 * What one observer (one broker process answering Metadata over one connection) said about one
 * partition at one time. Samples with a negative leader epoch (a broker without epochs) are ignored.
 */
export interface MetadataSample {
  readonly time: number;
  readonly observer: string;
  readonly partition: number;
  /** −1 when the partition had no leader. */
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly isr?: readonly number[];
}

export interface ReplicationHistory {
  readonly sends: readonly SendRecord[];
  readonly polls: readonly ConsumerEvent[];
  readonly finalRead: readonly FinalPartition[];
  readonly metadataSamples?: readonly MetadataSample[];
}

/**
 * A record in a consumer or a producer's data that cannot be one of the test's values (not a
 * decimal integer). Values sent are ≥ 0, so this one is never sent and shows as an unsent value.
 */
export const UNREADABLE_VALUE = -1;

/** Where a value was seen at an offset: 'acknowledged send', 'final read', or 'poll by <consumer>'. */
export type Source = string;

export interface Position {
  readonly partition: number;
  readonly offset: number;
}

export type Violation =
  /** I1: an acknowledged value is not at its acknowledged offset in the final read. */
  | {
      readonly invariant: 'I1';
      readonly kind: 'lost';
      readonly partition: number;
      readonly offset: number;
      readonly value: number;
      /** What the final read holds at that offset; undefined when the log does not reach it. */
      readonly finalValue: number | undefined;
      /** Other offsets of the final read holding the value (in any partition). */
      readonly foundAt: readonly Position[];
      /** The value is nowhere in the final read. */
      readonly unseen: boolean;
    }
  /** I1: a partition with acknowledged sends was not in the final read at all. */
  | { readonly invariant: 'I1'; readonly kind: 'partition-not-read'; readonly partition: number; readonly acknowledged: number }
  /** I2: one offset was seen holding two or more values. */
  | {
      readonly invariant: 'I2';
      readonly kind: 'inconsistent-offset';
      readonly partition: number;
      readonly offset: number;
      readonly values: readonly { readonly value: number; readonly seenBy: readonly Source[] }[];
    }
  /** I3: a consumer received a record that the final read does not hold at that offset. */
  | {
      readonly invariant: 'I3';
      readonly kind: 'vanished-poll';
      readonly consumer: string;
      readonly partition: number;
      readonly offset: number;
      readonly value: number;
      readonly finalValue: number | undefined;
    }
  /** I4: one value stored at two or more offsets (an error only from an idempotent producer). */
  | { readonly invariant: 'I4'; readonly kind: 'duplicate'; readonly value: number; readonly idempotent: boolean; readonly positions: readonly Position[] }
  /** I5: a consumer that did not seek jumped over offsets that exist in the final read. */
  | {
      readonly invariant: 'I5';
      readonly kind: 'poll-skip';
      readonly consumer: string;
      readonly partition: number;
      /** The offset the consumer should have received next (after its previous record or its seek). */
      readonly expected: number;
      readonly received: number;
      /** How many offsets of the final read lie in [expected, received). */
      readonly skippedCount: number;
      /** The first of them. */
      readonly skipped: readonly number[];
    }
  /** I5: a consumer that did not seek received an offset at or below one it had already received. */
  | { readonly invariant: 'I5'; readonly kind: 'nonmonotonic-poll'; readonly consumer: string; readonly partition: number; readonly previous: number; readonly received: number }
  /** I7: one observer reported a lower leader epoch after a higher one. */
  | {
      readonly invariant: 'I7';
      readonly kind: 'epoch-regressed';
      readonly observer: string;
      readonly partition: number;
      readonly before: MetadataSample;
      readonly after: MetadataSample;
    }
  /** I7: two different leaders were reported for the same partition and epoch. */
  | { readonly invariant: 'I7'; readonly kind: 'epoch-shared'; readonly partition: number; readonly leaderEpoch: number; readonly leaders: readonly number[]; readonly observers: readonly string[] }
  /** A record stored or polled whose send was refused for sure: the refusal was a lie. */
  | { readonly invariant: 'sends'; readonly kind: 'refused-send-stored'; readonly partition: number; readonly offset: number; readonly value: number; readonly error: string; readonly seenBy: readonly Source[] }
  /** A record stored or polled whose value nobody sent (corruption, or a record from outside the test). */
  | { readonly invariant: 'sends'; readonly kind: 'unsent-value'; readonly partition: number; readonly offset: number; readonly value: number; readonly seenBy: readonly Source[] }
  /** A record stored or polled in a partition its value was not sent to. */
  | {
      readonly invariant: 'sends';
      readonly kind: 'misplaced-value';
      readonly partition: number;
      readonly offset: number;
      readonly value: number;
      readonly sentTo: number;
      readonly seenBy: readonly Source[];
    };

export type ViolationKind = Violation['kind'];
export type DuplicateFinding = Extract<Violation, { kind: 'duplicate' }>;

export interface HistorySummary {
  readonly sends: number;
  readonly acknowledged: number;
  readonly failed: number;
  readonly unknown: number;
  /** Unknown sends whose value is in the final read (they were stored after all). */
  readonly unknownStored: number;
  /** Acknowledged values not at their acknowledged offset … */
  readonly lost: number;
  /** … of which this many are nowhere in the final read. */
  readonly unseen: number;
  /** Sends acknowledged with acks 1 or 0 that are not where they were acknowledged (allowed). */
  readonly lostWithoutAllAcks: number;
  /** Values stored at more than one offset, and the extra copies (a value stored 3 times counts 2). */
  readonly duplicatedValues: number;
  readonly extraCopies: number;
  readonly inconsistentOffsets: number;
  readonly polledRecords: number;
  readonly consumers: number;
  readonly seeks: number;
  readonly vanishedPolls: number;
  readonly pollSkips: number;
  readonly nonmonotonicPolls: number;
  readonly finalRecords: number;
  readonly finalPartitions: number;
  readonly metadataSamples: number;
  readonly epochRegressions: number;
  readonly sharedEpochs: number;
  /** Refused sends that were stored, unsent values, misplaced values. */
  readonly badSends: number;
  readonly violations: number;
}

export type LostFinding = Extract<Violation, { kind: 'lost' }>;

export interface CheckResult {
  /** No violation. */
  readonly ok: boolean;
  readonly violations: readonly Violation[];
  /** Duplicates from producers without idempotence: at-least-once delivery allows them, so they are counted, not failed. */
  readonly toleratedDuplicates: readonly DuplicateFinding[];
  /** Records acknowledged with acks 1 or 0 and not where they were acknowledged: allowed on failover, so counted, not failed. */
  readonly toleratedLosses: readonly LostFinding[];
  readonly summary: HistorySummary;
}

/** Whether an acknowledgement of this send promises the record survives (acks=−1). */
export function acknowledgedByAll(send: SendRecord): boolean {
  return (send.acks ?? -1) === -1;
}

const FINAL: Source = 'final read';
const ACKNOWLEDGED: Source = 'acknowledged send';
const pollSource = (consumer: string): Source => `poll by ${consumer}`;
/** How many skipped offsets a poll-skip lists (it always counts all of them). */
const LISTED_SKIPS = 10;

/** Runs every check. Throws when the history itself is malformed (two sends of one value, non-integer offsets). */
export function checkReplicationHistory(history: ReplicationHistory): CheckResult {
  validateHistory(history);
  const log = indexFinalRead(history.finalRead);
  const sends = indexSends(history.sends);
  const strong = history.sends.filter(acknowledgedByAll);
  const lost = checkLost(strong, log);
  const toleratedLosses = history.sends.length === strong.length ? [] : checkLost(history.sends.filter((send) => !acknowledgedByAll(send)), log).filter((finding): finding is LostFinding => finding.kind === 'lost');
  const inconsistent = checkInconsistentOffsets(history, log);
  const vanished = checkVanishedPolls(history.polls, log);
  const duplicates = checkDuplicates(log, sends);
  const order = checkPollOrder(history.polls, log);
  const epochs = checkLeaderEpochs(history.metadataSamples ?? []);
  const badSends = checkSentValues(history, sends);
  const errorDuplicates = duplicates.filter((duplicate) => duplicate.idempotent);
  const violations: Violation[] = [...lost, ...inconsistent, ...vanished, ...errorDuplicates, ...order, ...epochs, ...badSends];
  const tolerated = duplicates.filter((duplicate) => !duplicate.idempotent);

  const count = (kind: ViolationKind): number => violations.filter((violation) => violation.kind === kind).length;
  const outcomes = { acknowledged: 0, failed: 0, unknown: 0, unknownStored: 0 };
  for (const send of history.sends) {
    outcomes[send.outcome.type] += 1;
    if (send.outcome.type === 'unknown' && log.firstPosition.has(send.value)) outcomes.unknownStored += 1;
  }
  const polled = history.polls.filter((event): event is PolledRecord => event.type === 'record');
  const summary: HistorySummary = {
    sends: history.sends.length,
    ...outcomes,
    lost: count('lost'),
    unseen: lost.filter((violation) => violation.kind === 'lost' && violation.unseen).length,
    lostWithoutAllAcks: toleratedLosses.length,
    duplicatedValues: duplicates.length,
    extraCopies: duplicates.reduce((sum, duplicate) => sum + duplicate.positions.length - 1, 0),
    inconsistentOffsets: count('inconsistent-offset'),
    polledRecords: polled.length,
    consumers: new Set(history.polls.map((event) => event.consumer)).size,
    seeks: history.polls.length - polled.length,
    vanishedPolls: count('vanished-poll'),
    pollSkips: count('poll-skip'),
    nonmonotonicPolls: count('nonmonotonic-poll'),
    finalRecords: history.finalRead.reduce((sum, partition) => sum + partition.records.length, 0),
    finalPartitions: history.finalRead.length,
    metadataSamples: history.metadataSamples?.length ?? 0,
    epochRegressions: count('epoch-regressed'),
    sharedEpochs: count('epoch-shared'),
    badSends: badSends.length,
    violations: violations.length,
  };
  return { ok: violations.length === 0, violations, toleratedDuplicates: tolerated, toleratedLosses, summary };
}

// -------------------------------------------------------------------------------------------------
// The final read, indexed

export interface FinalLogIndex {
  /** partition → offset → value. */
  readonly valueAt: ReadonlyMap<number, ReadonlyMap<number, number>>;
  /** partition → its offsets in increasing order (for counting offsets in a range). */
  readonly offsets: ReadonlyMap<number, readonly number[]>;
  /** value → where it is stored (the first place, for a duplicated value). */
  readonly firstPosition: ReadonlyMap<number, Position>;
  /** value → every place it is stored, for values stored more than once only (kept apart: a list per value of a long run costs too much). */
  readonly duplicatePositions: ReadonlyMap<number, readonly Position[]>;
}

export function indexFinalRead(finalRead: readonly FinalPartition[]): FinalLogIndex {
  const valueAt = new Map<number, Map<number, number>>();
  const offsets = new Map<number, number[]>();
  const firstPosition = new Map<number, Position>();
  const duplicatePositions = new Map<number, Position[]>();
  for (const { partition, records } of finalRead) {
    const values = new Map<number, number>();
    let sorted = true;
    let previous = -Infinity;
    for (const { offset, value } of records) {
      // A read that returned one offset twice is a reader bug, not a log fact: keep the first.
      if (values.has(offset)) continue;
      values.set(offset, value);
      if (offset < previous) sorted = false;
      previous = offset;
      const first = firstPosition.get(value);
      if (first === undefined) {
        firstPosition.set(value, { partition, offset });
        continue;
      }
      const positions = duplicatePositions.get(value);
      if (positions === undefined) duplicatePositions.set(value, [first, { partition, offset }]);
      else positions.push({ partition, offset });
    }
    valueAt.set(partition, values);
    const keys = [...values.keys()];
    offsets.set(partition, sorted ? keys : keys.sort((a, b) => a - b));
  }
  return { valueAt, offsets, firstPosition, duplicatePositions };
}

/** Every place of the final read holding `value`. */
export function positionsOf(log: FinalLogIndex, value: number): readonly Position[] {
  const first = log.firstPosition.get(value);
  return first === undefined ? [] : (log.duplicatePositions.get(value) ?? [first]);
}

function indexSends(sends: readonly SendRecord[]): Map<number, SendRecord> {
  return new Map(sends.map((send) => [send.value, send]));
}

// -------------------------------------------------------------------------------------------------
// I1: acknowledged values are where they were acknowledged

export function checkLost(sends: readonly SendRecord[], log: FinalLogIndex): Violation[] {
  const violations: Violation[] = [];
  const unread = new Map<number, number>();
  for (const send of sends) {
    if (send.outcome.type !== 'acknowledged') continue;
    const partitionLog = log.valueAt.get(send.partition);
    if (partitionLog === undefined) {
      unread.set(send.partition, (unread.get(send.partition) ?? 0) + 1);
      continue;
    }
    const offset = send.outcome.offset;
    // Without an offset (acks=0) the value only has to be somewhere in its partition.
    const found = offset < 0 ? positionsOf(log, send.value).some((position) => position.partition === send.partition) : partitionLog.get(offset) === send.value;
    if (found) continue;
    const positions = positionsOf(log, send.value);
    violations.push({
      invariant: 'I1',
      kind: 'lost',
      partition: send.partition,
      offset,
      value: send.value,
      finalValue: offset < 0 ? undefined : partitionLog.get(offset),
      foundAt: positions,
      unseen: positions.length === 0,
    });
  }
  for (const [partition, acknowledged] of unread) violations.push({ invariant: 'I1', kind: 'partition-not-read', partition, acknowledged });
  return violations;
}

// -------------------------------------------------------------------------------------------------
// I2: one offset, one value — across acknowledgements, polls and the final read

export function checkInconsistentOffsets(history: Pick<ReplicationHistory, 'sends' | 'polls' | 'finalRead'>, log: FinalLogIndex = indexFinalRead(history.finalRead)): Violation[] {
  /** Calls `visit` with every (partition, offset, value) observed; `source` names the observer, built only when asked for. */
  const observations = (visit: (partition: number, offset: number, value: number, source: () => Source) => void): void => {
    for (const { partition, records } of history.finalRead) for (const record of records) visit(partition, record.offset, record.value, () => FINAL);
    for (const send of history.sends) {
      if (send.outcome.type === 'acknowledged' && send.outcome.offset >= 0 && acknowledgedByAll(send)) visit(send.partition, send.outcome.offset, send.value, () => ACKNOWLEDGED);
    }
    for (const event of history.polls) if (event.type === 'record') visit(event.partition, event.offset, event.value, () => pollSource(event.consumer));
  };
  // Two passes: the first finds the offsets with more than one value, the second collects who saw
  // what at those offsets only (a set of sources for every offset of a long run costs too much).
  // The final read gives most offsets their first value; the rest are remembered as they come.
  const beyondFinal = new Map<number, Map<number, number>>();
  const conflicts = new Map<string, { partition: number; offset: number; values: Map<number, Set<Source>> }>();
  observations((partition, offset, value) => {
    let first = log.valueAt.get(partition)?.get(offset);
    if (first === undefined) {
      let offsets = beyondFinal.get(partition);
      if (offsets === undefined) beyondFinal.set(partition, (offsets = new Map<number, number>()));
      first = offsets.get(offset);
      if (first === undefined) offsets.set(offset, value);
    }
    if (first !== undefined && first !== value) conflicts.set(`${partition}/${offset}`, { partition, offset, values: new Map() });
  });
  if (conflicts.size === 0) return [];
  observations((partition, offset, value, source) => {
    const conflict = conflicts.get(`${partition}/${offset}`);
    if (conflict === undefined) return;
    const sources = conflict.values.get(value);
    if (sources === undefined) conflict.values.set(value, new Set([source()]));
    else sources.add(source());
  });
  return [...conflicts.values()]
    .sort((a, b) => a.partition - b.partition || a.offset - b.offset)
    .map(({ partition, offset, values }) => ({
      invariant: 'I2' as const,
      kind: 'inconsistent-offset' as const,
      partition,
      offset,
      values: [...values].map(([value, sources]) => ({ value, seenBy: [...sources] })),
    }));
}

// -------------------------------------------------------------------------------------------------
// I3: what a consumer saw stays in the log

export function checkVanishedPolls(polls: readonly ConsumerEvent[], log: FinalLogIndex): Violation[] {
  const violations: Violation[] = [];
  /** One report per consumer, partition and offset: a consumer that re-read it saw the same thing. */
  const reported = new Set<string>();
  for (const event of polls) {
    if (event.type !== 'record') continue;
    const partitionLog = log.valueAt.get(event.partition);
    // A partition missing from the final read is reported by I1 (or the test did not read it on purpose).
    if (partitionLog === undefined) continue;
    const finalValue = partitionLog.get(event.offset);
    if (finalValue === event.value) continue;
    const key = `${event.consumer}/${event.partition}/${event.offset}/${event.value}`;
    if (reported.has(key)) continue;
    reported.add(key);
    violations.push({ invariant: 'I3', kind: 'vanished-poll', consumer: event.consumer, partition: event.partition, offset: event.offset, value: event.value, finalValue });
  }
  return violations;
}

// -------------------------------------------------------------------------------------------------
// I4: one value, one offset (in the final read)

export function checkDuplicates(log: FinalLogIndex, sends: ReadonlyMap<number, SendRecord>): DuplicateFinding[] {
  const duplicates: DuplicateFinding[] = [];
  for (const [value, positions] of log.duplicatePositions) {
    // A value nobody sent is reported as unsent; calling its copies an idempotence failure would mislead.
    const idempotent = sends.get(value)?.idempotent ?? false;
    duplicates.push({ invariant: 'I4', kind: 'duplicate', value, idempotent, positions });
  }
  return duplicates.sort((a, b) => a.value - b.value);
}

// -------------------------------------------------------------------------------------------------
// I5: a consumer that does not seek reads the log in order, without gaps

export function checkPollOrder(polls: readonly ConsumerEvent[], log: FinalLogIndex): Violation[] {
  const violations: Violation[] = [];
  /** "consumer/partition" → the last offset received since the last seek, and the offset expected next. */
  const positions = new Map<string, { last: number | undefined; expected: number | undefined }>();
  for (const event of polls) {
    const key = `${event.consumer}/${event.partition}`;
    if (event.type === 'seek') {
      positions.set(key, { last: undefined, expected: event.offset });
      continue;
    }
    const position = positions.get(key) ?? { last: undefined, expected: undefined };
    if (position.last !== undefined && event.offset <= position.last) {
      violations.push({ invariant: 'I5', kind: 'nonmonotonic-poll', consumer: event.consumer, partition: event.partition, previous: position.last, received: event.offset });
    } else if (position.expected !== undefined && event.offset > position.expected) {
      const skipped = offsetsInRange(log.offsets.get(event.partition) ?? [], position.expected, event.offset);
      if (skipped.count > 0) {
        violations.push({
          invariant: 'I5',
          kind: 'poll-skip',
          consumer: event.consumer,
          partition: event.partition,
          expected: position.expected,
          received: event.offset,
          skippedCount: skipped.count,
          skipped: skipped.first,
        });
      }
    }
    // After a nonmonotonic poll the consumer goes on from where it now is: one report per jump back.
    positions.set(key, { last: event.offset, expected: event.offset + 1 });
  }
  return violations;
}

/** The sorted offsets in [from, to): how many, and the first few. */
function offsetsInRange(sorted: readonly number[], from: number, to: number): { count: number; first: number[] } {
  const start = lowerBound(sorted, from);
  const end = lowerBound(sorted, to);
  return { count: end - start, first: sorted.slice(start, Math.min(end, start + LISTED_SKIPS)) };
}

function lowerBound(sorted: readonly number[], target: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((sorted[middle] ?? Infinity) < target) low = middle + 1;
    else high = middle;
  }
  return low;
}

// -------------------------------------------------------------------------------------------------
// I7: leader epochs only go up, and name one leader each

export function checkLeaderEpochs(samples: readonly MetadataSample[]): Violation[] {
  const violations: Violation[] = [];
  const withEpoch = samples.map((sample, index) => ({ sample, index })).filter(({ sample }) => sample.leaderEpoch >= 0);
  // Per observer, in time order (input order breaks ties): a broker's own view must not go back.
  // Different brokers learn of a new epoch at different moments, so their views are not compared.
  withEpoch.sort((a, b) => a.sample.time - b.sample.time || a.index - b.index);
  const highest = new Map<string, MetadataSample>();
  for (const { sample } of withEpoch) {
    const key = `${sample.observer}/${sample.partition}`;
    const before = highest.get(key);
    if (before !== undefined && sample.leaderEpoch < before.leaderEpoch) {
      violations.push({ invariant: 'I7', kind: 'epoch-regressed', observer: sample.observer, partition: sample.partition, before, after: sample });
      continue; // keep the highest seen, so a long regression is reported per sample against it
    }
    highest.set(key, sample);
  }
  // Across everyone: an epoch names one leader. "No leader" (−1) under an epoch is no leader at all.
  const leadersOf = new Map<string, { partition: number; leaderEpoch: number; leaders: Set<number>; observers: Set<string> }>();
  for (const { sample } of withEpoch) {
    if (sample.leader < 0) continue;
    const key = `${sample.partition}/${sample.leaderEpoch}`;
    let entry = leadersOf.get(key);
    if (entry === undefined) leadersOf.set(key, (entry = { partition: sample.partition, leaderEpoch: sample.leaderEpoch, leaders: new Set(), observers: new Set() }));
    entry.leaders.add(sample.leader);
    entry.observers.add(sample.observer);
  }
  for (const entry of leadersOf.values()) {
    if (entry.leaders.size < 2) continue;
    violations.push({
      invariant: 'I7',
      kind: 'epoch-shared',
      partition: entry.partition,
      leaderEpoch: entry.leaderEpoch,
      leaders: [...entry.leaders].sort((a, b) => a - b),
      observers: [...entry.observers].sort(),
    });
  }
  return violations;
}

// -------------------------------------------------------------------------------------------------
// Values seen in the log against what was sent

export type SentValueViolation = Extract<Violation, { invariant: 'sends' }>;

export function checkSentValues(history: Pick<ReplicationHistory, 'polls' | 'finalRead'>, sends: ReadonlyMap<number, SendRecord>): SentValueViolation[] {
  /** "partition/offset/value" → the record and who saw it. */
  const seen = new Map<string, { partition: number; offset: number; value: number; sources: Set<Source> }>();
  const observe = (partition: number, offset: number, value: number, source: () => Source): void => {
    const send = sends.get(value);
    if (send !== undefined && send.partition === partition && send.outcome.type !== 'failed') return;
    const key = `${partition}/${offset}/${value}`;
    const entry = seen.get(key);
    if (entry === undefined) seen.set(key, { partition, offset, value, sources: new Set([source()]) });
    else entry.sources.add(source());
  };
  for (const { partition, records } of history.finalRead) for (const record of records) observe(partition, record.offset, record.value, () => FINAL);
  for (const event of history.polls) if (event.type === 'record') observe(event.partition, event.offset, event.value, () => pollSource(event.consumer));

  const violations: SentValueViolation[] = [];
  for (const { partition, offset, value, sources } of seen.values()) {
    const seenBy = [...sources];
    const send = sends.get(value);
    if (send === undefined) violations.push({ invariant: 'sends', kind: 'unsent-value', partition, offset, value, seenBy });
    else if (send.partition !== partition) violations.push({ invariant: 'sends', kind: 'misplaced-value', partition, offset, value, sentTo: send.partition, seenBy });
    else if (send.outcome.type === 'failed') violations.push({ invariant: 'sends', kind: 'refused-send-stored', partition, offset, value, error: send.outcome.error, seenBy });
  }
  return violations.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}

// -------------------------------------------------------------------------------------------------
// Validation and reports

function validateHistory(history: ReplicationHistory): void {
  const values = new Set<number>();
  for (const send of history.sends) {
    if (!Number.isSafeInteger(send.value)) throw new Error(`send to partition ${send.partition}: value ${send.value} is not an integer`);
    if (values.has(send.value)) throw new Error(`value ${send.value} was sent twice: the checker needs every sent value to be unique`);
    values.add(send.value);
    if (send.outcome.type === 'acknowledged' && !Number.isSafeInteger(send.outcome.offset)) {
      throw new Error(`send of ${send.value}: acknowledged offset ${send.outcome.offset} is not an integer`);
    }
  }
  for (const event of history.polls) {
    if (event.type === 'record' && !Number.isSafeInteger(event.offset)) throw new Error(`poll by ${event.consumer}: offset ${event.offset} is not an integer`);
  }
  for (const { partition, records } of history.finalRead) {
    for (const record of records) if (!Number.isSafeInteger(record.offset)) throw new Error(`final read of partition ${partition}: offset ${record.offset} is not an integer`);
  }
}

/** One line: what was sent, what is stored, and how many of each violation. */
export function formatSummary(summary: HistorySummary): string {
  return [
    `sends ${summary.sends}: ${summary.acknowledged} acknowledged, ${summary.failed} failed, ${summary.unknown} unknown (${summary.unknownStored} of them stored)`,
    `final read ${summary.finalRecords} records in ${summary.finalPartitions} partitions`,
    `lost ${summary.lost} (unseen ${summary.unseen}${summary.lostWithoutAllAcks > 0 ? `; ${summary.lostWithoutAllAcks} more acknowledged with acks 1 or 0` : ''}), duplicated values ${summary.duplicatedValues} (${summary.extraCopies} extra copies), inconsistent offsets ${summary.inconsistentOffsets}`,
    `polls ${summary.polledRecords} by ${summary.consumers} consumers (${summary.seeks} seeks): vanished ${summary.vanishedPolls}, skips ${summary.pollSkips}, nonmonotonic ${summary.nonmonotonicPolls}`,
    `epochs: ${summary.metadataSamples} samples, ${summary.epochRegressions} regressions, ${summary.sharedEpochs} shared`,
    `bad sends ${summary.badSends}`,
    `violations ${summary.violations}`,
  ].join(' | ');
}

/** One violation as one line of text. */
export function describeViolation(violation: Violation): string {
  const at = (partition: number, offset: number): string => `partition ${partition} offset ${offset}`;
  const positions = (list: readonly Position[]): string => list.map((position) => at(position.partition, position.offset)).join(', ');
  switch (violation.kind) {
    case 'lost':
      return (
        `I1 lost: value ${violation.value} acknowledged at ${at(violation.partition, violation.offset)}; the final read holds ` +
        `${violation.finalValue === undefined ? 'nothing there' : `value ${violation.finalValue} there`}` +
        (violation.unseen ? ', and the value nowhere (unseen)' : `; the value is at ${positions(violation.foundAt)}`)
      );
    case 'partition-not-read':
      return `I1: partition ${violation.partition} has ${violation.acknowledged} acknowledged sends but is not in the final read`;
    case 'inconsistent-offset':
      return `I2 inconsistent offset: ${at(violation.partition, violation.offset)} holds ${violation.values.map((entry) => `${entry.value} (${entry.seenBy.join(', ')})`).join(' and ')}`;
    case 'vanished-poll':
      return `I3 vanished: ${violation.consumer} received value ${violation.value} at ${at(violation.partition, violation.offset)}; the final read holds ${violation.finalValue === undefined ? 'nothing there' : `value ${violation.finalValue}`}`;
    case 'duplicate':
      return `I4 duplicate${violation.idempotent ? ' from an idempotent producer' : ''}: value ${violation.value} at ${positions(violation.positions)}`;
    case 'poll-skip':
      return `I5 poll-skip: ${violation.consumer} on partition ${violation.partition} expected offset ${violation.expected} and received ${violation.received}, skipping ${violation.skippedCount} existing offsets (${violation.skipped.join(', ')}${violation.skippedCount > violation.skipped.length ? ', …' : ''})`;
    case 'nonmonotonic-poll':
      return `I5 nonmonotonic-poll: ${violation.consumer} on partition ${violation.partition} received offset ${violation.received} after ${violation.previous} without seeking`;
    case 'epoch-regressed':
      return `I7 epoch regressed: ${violation.observer} reported partition ${violation.partition} at epoch ${violation.before.leaderEpoch} (leader ${violation.before.leader}, t=${violation.before.time}) then epoch ${violation.after.leaderEpoch} (leader ${violation.after.leader}, t=${violation.after.time})`;
    case 'epoch-shared':
      return `I7 epoch shared: partition ${violation.partition} epoch ${violation.leaderEpoch} was led by ${violation.leaders.join(' and ')} (reported by ${violation.observers.join(', ')})`;
    case 'refused-send-stored':
      return `refused send stored: value ${violation.value} was refused (${violation.error}) but is at ${at(violation.partition, violation.offset)} (${violation.seenBy.join(', ')})`;
    case 'unsent-value':
      return `unsent value: ${at(violation.partition, violation.offset)} holds ${violation.value}, which nobody sent (${violation.seenBy.join(', ')})`;
    case 'misplaced-value':
      return `misplaced value: ${violation.value} was sent to partition ${violation.sentTo} but is at ${at(violation.partition, violation.offset)} (${violation.seenBy.join(', ')})`;
  }
}

/** The summary line, then up to `limit` violations per kind: the failure message of a test. */
export function formatReport(result: CheckResult, limit = 10): string {
  const lines = [formatSummary(result.summary)];
  const byKind = new Map<ViolationKind, Violation[]>();
  for (const violation of result.violations) {
    const list = byKind.get(violation.kind);
    if (list === undefined) byKind.set(violation.kind, [violation]);
    else list.push(violation);
  }
  for (const [kind, list] of byKind) {
    lines.push(`${kind}: ${list.length}`);
    for (const violation of list.slice(0, limit)) lines.push(`  ${describeViolation(violation)}`);
    if (list.length > limit) lines.push(`  … and ${list.length - limit} more`);
  }
  return lines.join('\n');
}
