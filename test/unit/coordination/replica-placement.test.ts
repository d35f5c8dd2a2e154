import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../../src/common/errors.js';
import { assignNewPartitions, assignReplicas, validateManualAssignment, type PlacementBroker } from '../../../src/coordination/replica-placement.js';
import { seededRandom } from '../../support/seeded-random.js';


const SEEDS = Array.from({ length: 25 }, (_, i) => i * 7919 + 1);

function brokers(...ids: number[]): PlacementBroker[] {
  return ids.map((id) => ({ id }));
}

function racked(racks: Record<number, string>): PlacementBroker[] {
  return Object.entries(racks).map(([id, rack]) => ({ id: Number(id), rack }));
}

/** How many times each broker appears at `position` (0 = leader), or anywhere when position is undefined. */
function counts(assignment: ReadonlyMap<number, readonly number[]>, position?: number): Map<number, number> {
  const tally = new Map<number, number>();
  for (const replicas of assignment.values()) {
    const chosen = position === undefined ? replicas : replicas.slice(position, position + 1);
    for (const broker of chosen) tally.set(broker, (tally.get(broker) ?? 0) + 1);
  }
  return tally;
}

/** The error `action` throws (fails the test if none). */
function refusal(action: () => unknown): TributaryError {
  try {
    action();
  } catch (error) {
    if (error instanceof TributaryError) return error;
    throw error;
  }
  throw new Error('nothing was thrown');
}

describe('assignReplicas without racks', () => {
  it("reproduces Kafka's documented example (5 brokers, 10 partitions, 3 replicas, start 0, shift 0)", () => {
    const assignment = assignReplicas(brokers(0, 1, 2, 3, 4), 10, 3, { random: () => 0 });
    expect([...assignment]).toEqual([
      [0, [0, 1, 2]],
      [1, [1, 2, 3]],
      [2, [2, 3, 4]],
      [3, [3, 4, 0]],
      [4, [4, 0, 1]],
      // Second round: the followers shift by one more.
      [5, [0, 2, 3]],
      [6, [1, 3, 4]],
      [7, [2, 4, 0]],
      [8, [3, 0, 1]],
      [9, [4, 1, 2]],
    ]);
  });

  it('lists partitions 0..n-1, each with distinct brokers, the requested number of them', () => {
    for (const seed of SEEDS) {
      for (const [brokerCount, partitions, replicationFactor] of [[1, 4, 1], [3, 6, 3], [4, 10, 2], [5, 7, 4], [7, 20, 3]] as const) {
        const ids = Array.from({ length: brokerCount }, (_, i) => i + 1);
        const assignment = assignReplicas(brokers(...ids), partitions, replicationFactor, { random: seededRandom(seed) });
        expect([...assignment.keys()]).toEqual(Array.from({ length: partitions }, (_, i) => i));
        for (const replicas of assignment.values()) {
          expect(replicas).toHaveLength(replicationFactor);
          expect(new Set(replicas).size).toBe(replicationFactor);
          for (const broker of replicas) expect(ids).toContain(broker);
        }
      }
    }
  });

  it('spreads leaders evenly: 6 partitions over 3 brokers lead 2 each', () => {
    for (const seed of SEEDS) {
      const assignment = assignReplicas(brokers(1, 2, 3), 6, 3, { random: seededRandom(seed) });
      expect(counts(assignment, 0)).toEqual(new Map([[1, 2], [2, 2], [3, 2]]));
    }
  });

  it('spreads replicas evenly: 8 partitions × 2 replicas over 4 brokers are 4 each, 2 of them leaders', () => {
    for (const seed of SEEDS) {
      const assignment = assignReplicas(brokers(10, 20, 30, 40), 8, 2, { random: seededRandom(seed) });
      expect([...counts(assignment, 0).values()]).toEqual([2, 2, 2, 2]);
      expect([...counts(assignment).values()]).toEqual([4, 4, 4, 4]);
    }
  });

  it("spreads the followers of one broker's partitions over the other brokers", () => {
    // 4 brokers, 12 partitions, 2 replicas: each broker leads 3 and their followers are 3 different brokers.
    for (const seed of SEEDS) {
      const assignment = assignReplicas(brokers(1, 2, 3, 4), 12, 2, { random: seededRandom(seed) });
      const followersOf = new Map<number, Set<number>>();
      for (const [leader, follower] of assignment.values()) {
        if (leader === undefined || follower === undefined) throw new Error('short list');
        followersOf.set(leader, (followersOf.get(leader) ?? new Set()).add(follower));
      }
      for (const followers of followersOf.values()) expect(followers.size).toBe(3);
    }
  });

  it('is deterministic for a seed, whatever order the brokers are listed in', () => {
    const first = assignReplicas(brokers(1, 2, 3, 4, 5), 9, 3, { random: seededRandom(42) });
    expect(assignReplicas(brokers(5, 3, 1, 4, 2), 9, 3, { random: seededRandom(42) })).toStrictEqual(first);
    const starts = new Set(SEEDS.map((seed) => assignReplicas(brokers(1, 2, 3, 4, 5), 1, 1, { random: seededRandom(seed) }).get(0)?.[0]));
    expect(starts.size).toBeGreaterThan(1);
  });

  it('numbers the lists from firstPartition, placing them as those partitions of a whole topic', () => {
    // Partitions 5–7 of the documented example: partition 5 starts a round, so the followers shift.
    const assignment = assignReplicas(brokers(0, 1, 2, 3, 4), 3, 3, { random: () => 0, firstPartition: 5 });
    expect([...assignment]).toEqual([
      [5, [0, 2, 3]],
      [6, [1, 3, 4]],
      [7, [2, 4, 0]],
    ]);
  });

  it('keeps a generator that strays outside [0, 1) inside the broker list', () => {
    for (const value of [1, 7, -3, Number.NaN]) {
      const assignment = assignReplicas(brokers(1, 2, 3), 3, 2, { random: () => value });
      for (const replicas of assignment.values()) expect(replicas.every((id) => [1, 2, 3].includes(id))).toBe(true);
    }
  });
});

describe('assignReplicas with racks', () => {
  it("reproduces Kafka's documented rack-aware example (interleaved 0,3,1,5,4,2; start 0, shift 0)", () => {
    const cluster = racked({ 0: 'rack1', 1: 'rack3', 2: 'rack3', 3: 'rack2', 4: 'rack2', 5: 'rack1' });
    const assignment = assignReplicas(cluster, 7, 3, { random: () => 0 });
    expect([...assignment]).toEqual([
      [0, [0, 3, 1]],
      [1, [3, 1, 5]],
      [2, [1, 5, 4]],
      [3, [5, 4, 2]],
      [4, [4, 2, 0]],
      [5, [2, 0, 3]],
      [6, [0, 4, 2]],
    ]);
  });

  it('puts every partition on as many different racks as it has replicas, when racks allow', () => {
    const cluster = racked({ 1: 'a', 2: 'a', 3: 'b', 4: 'b', 5: 'c', 6: 'c' });
    const rackOf = new Map(cluster.map((broker) => [broker.id, broker.rack]));
    for (const seed of SEEDS) {
      for (const replicationFactor of [2, 3]) {
        const assignment = assignReplicas(cluster, 12, replicationFactor, { random: seededRandom(seed) });
        for (const replicas of assignment.values()) {
          expect(new Set(replicas).size).toBe(replicationFactor);
          expect(new Set(replicas.map((id) => rackOf.get(id))).size).toBe(replicationFactor);
        }
      }
    }
  });

  it('with more replicas than racks, gives every rack at least one replica', () => {
    const cluster = racked({ 1: 'east', 2: 'east', 3: 'east', 4: 'west', 5: 'west' });
    const rackOf = new Map(cluster.map((broker) => [broker.id, broker.rack]));
    for (const seed of SEEDS) {
      const assignment = assignReplicas(cluster, 10, 4, { random: seededRandom(seed) });
      for (const replicas of assignment.values()) {
        expect(new Set(replicas).size).toBe(4);
        expect(new Set(replicas.map((id) => rackOf.get(id)))).toEqual(new Set(['east', 'west']));
      }
    }
  });

  it('spreads leaders and replicas evenly when racks are equal and replicas = racks', () => {
    const cluster = racked({ 1: 'a', 2: 'a', 3: 'b', 4: 'b', 5: 'c', 6: 'c' });
    for (const seed of SEEDS) {
      const assignment = assignReplicas(cluster, 12, 3, { random: seededRandom(seed) });
      expect([...counts(assignment, 0).values()]).toEqual([2, 2, 2, 2, 2, 2]);
      expect([...counts(assignment).values()]).toEqual([6, 6, 6, 6, 6, 6]);
    }
  });

  it('refuses a cluster where only some brokers have a rack, unless racks are ignored', () => {
    const cluster: PlacementBroker[] = [{ id: 1, rack: 'a' }, { id: 2 }, { id: 3, rack: 'b' }];
    const error = refusal(() => assignReplicas(cluster, 3, 2));
    expect(error.code).toBe('INVALID_REPLICA_ASSIGNMENT');
    expect(error.message).toContain('brokers 1, 3 have a rack but 2 has none');
    const assignment = assignReplicas(cluster, 3, 2, { random: () => 0, ignoreRacks: true });
    expect([...assignment]).toEqual([
      [0, [1, 2]],
      [1, [2, 3]],
      [2, [3, 1]],
    ]);
  });

  it('ignores racks on request even when every broker has one', () => {
    const cluster = racked({ 1: 'a', 2: 'a', 3: 'b' });
    expect(assignReplicas(cluster, 3, 2, { random: () => 0, ignoreRacks: true })).toStrictEqual(assignReplicas(brokers(1, 2, 3), 3, 2, { random: () => 0 }));
  });
});

describe('assignReplicas refusals', () => {
  it.each([
    ['more replicas than brokers', () => assignReplicas(brokers(1, 2), 3, 3), 'INVALID_REPLICATION_FACTOR', 'replication factor 3 is larger than the number of live brokers: there are 2 live brokers'],
    ['no brokers at all', () => assignReplicas([], 1, 1), 'INVALID_REPLICATION_FACTOR', 'there are 0 live brokers'],
    ['a replication factor of 0', () => assignReplicas(brokers(1), 1, 0), 'INVALID_REPLICATION_FACTOR', 'at least 1, not 0 (there is 1 live broker)'],
    ['a fractional replication factor', () => assignReplicas(brokers(1, 2), 1, 1.5), 'INVALID_REPLICATION_FACTOR', 'not 1.5'],
    ['no partitions', () => assignReplicas(brokers(1), 0, 1), 'INVALID_PARTITIONS', 'at least one partition, not 0'],
    ['negative partitions', () => assignReplicas(brokers(1), -3, 1), 'INVALID_PARTITIONS', 'not -3'],
    ['a negative first partition', () => assignReplicas(brokers(1), 1, 1, { firstPartition: -1 }), 'INVALID_PARTITIONS', 'not -1'],
    ['a broker listed twice', () => assignReplicas(brokers(1, 2, 1), 1, 1), 'INVALID_BROKER_LIST', 'broker 1 is listed more than once'],
    ['a negative broker id', () => assignReplicas(brokers(1, -2), 1, 1), 'INVALID_BROKER_LIST', '-2 is not a broker id'],
  ])('refuses %s', (_name, action, code, message) => {
    const error = refusal(action);
    expect(error.code).toBe(code);
    expect(error.message).toContain(message);
  });
});

describe('assignNewPartitions', () => {
  it("gives new partitions to the brokers leading and holding the fewest of the topic's, with its replication factor", () => {
    // Created with start 2 over brokers 1..3: leaders 3, 1, 2; each leads 1 and holds 2.
    const existing = new Map([
      [0, [3, 1]],
      [1, [1, 2]],
      [2, [2, 3]],
    ]);
    const added = assignNewPartitions(brokers(1, 2, 3), existing, 6);
    expect([...added.keys()]).toEqual([3, 4, 5]);
    expect([...added.values()].map((replicas) => replicas[0])).toEqual([1, 3, 2]);
    for (const replicas of added.values()) {
      expect(replicas).toHaveLength(2);
      expect(new Set(replicas).size).toBe(2);
    }
    expect(counts(new Map([...existing, ...added]), 0)).toEqual(new Map([[3, 2], [1, 2], [2, 2]]));
  });

  it('keeps leaders even across growth of a randomly placed topic', () => {
    for (const seed of SEEDS) {
      const cluster = brokers(1, 2, 3, 4);
      const existing = assignReplicas(cluster, 4, 3, { random: seededRandom(seed) });
      const added = assignNewPartitions(cluster, existing, 8);
      expect([...added.keys()]).toEqual([4, 5, 6, 7]);
      expect([...counts(new Map([...existing, ...added]), 0).values()]).toEqual([2, 2, 2, 2]);
    }
  });

  it('puts a new partition on a broker that joined after the topic was created', () => {
    const existing = new Map([
      [0, [1]],
      [1, [1]],
    ]);
    expect(assignNewPartitions(brokers(1, 2), existing, 3).get(2)).toEqual([2]);
    // With replicas: the newcomer leads, the follower is whoever holds the fewest.
    const replicated = new Map([
      [0, [1, 2]],
      [1, [2, 1]],
    ]);
    expect(assignNewPartitions(brokers(1, 2, 3), replicated, 3).get(2)).toEqual([3, 1]);
  });

  it('places on distinct racks in a racked cluster', () => {
    const cluster = racked({ 1: 'a', 2: 'a', 3: 'b', 4: 'b' });
    const rackOf = new Map(cluster.map((broker) => [broker.id, broker.rack]));
    const existing = assignReplicas(cluster, 2, 2, { random: seededRandom(3) });
    const added = assignNewPartitions(cluster, existing, 6);
    for (const replicas of added.values()) expect(new Set(replicas.map((id) => rackOf.get(id))).size).toBe(2);
  });

  it.each([
    ['a count that does not grow the topic', () => assignNewPartitions(brokers(1, 2), new Map([[0, [1]], [1, [2]]]), 2), 'INVALID_PARTITIONS', 'the topic has 2 partitions; the new count must be larger, not 2'],
    ['a replication factor above the live brokers', () => assignNewPartitions(brokers(1, 2), new Map([[0, [1, 2, 3]]]), 2), 'INVALID_REPLICATION_FACTOR', "the topic's replication factor 3 is larger than the number of live brokers: there are 2 live brokers"],
    ['an existing assignment with a gap', () => assignNewPartitions(brokers(1, 2), new Map([[0, [1]], [2, [2]]]), 4), 'INVALID_TOPIC_ASSIGNMENT', 'but 1 is missing'],
    ['an empty existing assignment', () => assignNewPartitions(brokers(1, 2), new Map(), 4), 'INVALID_TOPIC_ASSIGNMENT', 'no partition 0'],
  ])('refuses %s', (_name, action, code, message) => {
    const error = refusal(action);
    expect(error.code).toBe(code);
    expect(error.message).toContain(message);
  });
});

describe('validateManualAssignment', () => {
  const live = new Set([1, 2, 3]);

  it('accepts partitions 0..n-1 of equal, duplicate-free lists of live brokers', () => {
    expect(() => validateManualAssignment(new Map([[0, [1, 2]], [1, [2, 3]], [2, [3, 1]]]), live)).not.toThrow();
    expect(() => validateManualAssignment(new Map([[0, [2]]]), live)).not.toThrow();
  });

  it.each([
    ['no partitions', [], 'it lists no partitions'],
    ['a gap', [[0, [1]], [2, [2]]], 'partitions must be numbered 0..1, but 1 is missing'],
    ['a negative partition', [[0, [1]], [-1, [2]]], 'partition -1 is not a partition number'],
    ['an empty list', [[0, [1]], [1, []]], 'partition 1 has no replicas'],
    ['lists of different lengths', [[0, [1, 2]], [1, [3]]], 'partition 1 has 1 replicas and partition 0 has 2: every partition needs the same number'],
    ['a broker twice', [[0, [1, 2, 1, 1]]], 'partition 0 lists broker 1 more than once'],
    ['an unknown broker', [[0, [1, 7]]], 'partition 0 lists broker 7, which is not a live broker (live: 1, 2, 3)'],
  ] as [string, [number, number[]][], string][])('refuses %s with INVALID_REPLICA_ASSIGNMENT', (_name, entries, message) => {
    const error = refusal(() => validateManualAssignment(new Map(entries), live));
    expect(error.code).toBe('INVALID_REPLICA_ASSIGNMENT');
    expect(error.retriable).toBe(false);
    expect(error.message).toContain(message);
  });

  it('names every problem, not only the first', () => {
    const error = refusal(() => validateManualAssignment(new Map([[0, [1, 1]], [1, [9, 2]]]), live));
    expect(error.message).toContain('partition 0 lists broker 1 more than once');
    expect(error.message).toContain('partition 1 lists broker 9');
    expect(error.details['problems']).toHaveLength(2);
  });
});
