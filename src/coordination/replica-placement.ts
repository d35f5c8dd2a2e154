/**
 * Where a topic's replicas go: Kafka's replica placement (AdminUtils.assignReplicasToBrokers),
 * as pure functions of the live brokers. Its goals, in Kafka's words: spread the replicas evenly
 * over the brokers; for the partitions led by one broker, spread their other replicas over the
 * other brokers; with racks, put each partition's replicas on different racks where possible.
 *
 * Rack-unaware (brokers in id order, n of them):
 *   - the leader (first replica) of partition p is broker (p + start) mod n, start random;
 *   - follower j (0-based) of a partition whose leader is at index f is at
 *       (f + 1 + (shift + j) mod (n − 1)) mod n
 *     which is never f itself, and for a fixed shift sends the j-th followers of n consecutive
 *     partitions to n different brokers; shift starts random and grows by one each time p
 *     reaches a multiple of n, so the next round pairs brokers differently.
 *
 * Rack-aware (every broker has a rack): brokers are first interleaved by rack (racks in name
 * order, each rack's brokers in id order: rack a [1,2], rack b [3,4] → 1,3,2,4), leaders go
 * round robin over that list as above, and each follower is the next candidate in the shifted
 * order (shift × number of racks) that is on a rack with no replica of the partition yet, until
 * every rack has one, and not already a replica. With replicas ≥ racks every rack gets one;
 * with fewer, no rack gets two.
 *
 * Growing a topic (assignNewPartitions) continues the same round robin from the leader of the
 * existing partition 0, with the topic's replication factor, as Kafka's addPartitions does.
 */
import { TributaryError } from '../common/errors.js';

export interface PlacementBroker {
  readonly id: number;
  readonly rack?: string;
}

export interface PlacementOptions {
  /** A uniform number in [0, 1), for where the round robin starts; Math.random by default. */
  readonly random?: () => number;
  /**
   * Number the lists from this partition on (default 0): partitions firstPartition..
   * firstPartition+partitions-1, whose leaders continue the round robin as if partitions
   * 0..firstPartition-1 had been placed by the same call.
   */
  readonly firstPartition?: number;
  /** Place as if no broker had a rack (also lets a cluster where only some brokers have one place at all). */
  readonly ignoreRacks?: boolean;
}

export interface NewPartitionsOptions {
  /** As PlacementOptions.ignoreRacks. */
  readonly ignoreRacks?: boolean;
}

/**
 * Replica lists for partitions 0..partitions-1 (from options.firstPartition when given), each
 * `replicationFactor` distinct brokers long, the preferred leader first.
 */
export function assignReplicas(brokers: readonly PlacementBroker[], partitions: number, replicationFactor: number, options: PlacementOptions = {}): Map<number, number[]> {
  if (!Number.isSafeInteger(partitions) || partitions < 1) {
    throw placementError('INVALID_PARTITIONS', `a topic needs at least one partition, not ${String(partitions)}`, { partitions });
  }
  const firstPartition = options.firstPartition ?? 0;
  if (!Number.isSafeInteger(firstPartition) || firstPartition < 0) {
    throw placementError('INVALID_PARTITIONS', `the first partition to place must be a partition number, not ${String(firstPartition)}`, { firstPartition });
  }
  const ring = brokerRing(brokers, options.ignoreRacks ?? false);
  checkReplicationFactor(replicationFactor, ring.brokers.length, 'replication factor');
  const random = options.random ?? Math.random;
  // Two draws, as Kafka: where the leaders start, and how far the followers are shifted.
  const start = randomIndex(random, ring.brokers.length);
  const shift = randomIndex(random, ring.brokers.length);
  return place(ring, partitions, replicationFactor, firstPartition, start, shift);
}

/**
 * Replica lists for new partitions current..count-1 of an existing topic (current = the number
 * of partitions it has), with the topic's replication factor (the length of partition 0's list).
 * Each new partition is led by the live broker leading the fewest partitions of the topic, and
 * its followers are the brokers holding the fewest of its replicas (ties by id; distinct racks
 * first in a racked cluster). Kafka instead continues the creation round robin from partition 0's
 * leader, which ignores brokers added since: a topic grown after new brokers joined is grown onto
 * them here, as the paper's operators expected (a new partition on a new broker).
 */
export function assignNewPartitions(
  brokers: readonly PlacementBroker[],
  existing: ReadonlyMap<number, readonly number[]>,
  count: number,
  options: NewPartitionsOptions = {},
): Map<number, number[]> {
  const current = existing.size;
  for (let partition = 0; partition < current; partition += 1) {
    if (!existing.has(partition)) {
      throw placementError('INVALID_TOPIC_ASSIGNMENT', `the topic's partitions must be numbered 0..${current - 1}, but ${partition} is missing`, { partition });
    }
  }
  if (existing.get(0)?.[0] === undefined) throw placementError('INVALID_TOPIC_ASSIGNMENT', 'the topic has no partition 0 with replicas to take the replication factor from', {});
  if (!Number.isSafeInteger(count) || count <= current) {
    throw placementError('INVALID_PARTITIONS', `the topic has ${current} partitions; the new count must be larger, not ${String(count)}`, { current, count });
  }
  const replicationFactor = existing.get(0)?.length ?? 0;
  const ring = brokerRing(brokers, options.ignoreRacks ?? false);
  checkReplicationFactor(replicationFactor, ring.brokers.length, "the topic's replication factor");
  const leads = new Map(ring.brokers.map((id) => [id, 0]));
  const holds = new Map(ring.brokers.map((id) => [id, 0]));
  for (const replicas of existing.values()) {
    const leader = replicas[0];
    if (leader !== undefined && leads.has(leader)) leads.set(leader, (leads.get(leader) ?? 0) + 1);
    for (const id of replicas) if (holds.has(id)) holds.set(id, (holds.get(id) ?? 0) + 1);
  }
  const load = (counts: ReadonlyMap<number, number>, id: number): number => counts.get(id) ?? 0;
  const assignment = new Map<number, number[]>();
  for (let partition = current; partition < count; partition += 1) {
    const leader = [...ring.brokers].sort((a, b) => load(leads, a) - load(leads, b) || load(holds, a) - load(holds, b) || a - b)[0];
    if (leader === undefined) throw placementError('PLACEMENT_FAILED', 'no live broker to place a partition on', {});
    const replicas = [leader];
    const racksUsed = new Set([ring.racks?.get(leader)]);
    const candidates = ring.brokers.filter((id) => id !== leader).sort((a, b) => load(holds, a) - load(holds, b) || a - b);
    while (replicas.length < replicationFactor) {
      // A broker on a rack not used yet first; once every rack holds one, any.
      const fresh = ring.racks === undefined || racksUsed.size >= ring.rackCount ? undefined : candidates.find((id) => !replicas.includes(id) && !racksUsed.has(ring.racks?.get(id)));
      const next = fresh ?? candidates.find((id) => !replicas.includes(id));
      if (next === undefined) throw placementError('PLACEMENT_FAILED', `could not find ${replicationFactor} distinct brokers for partition ${partition}`, { partition });
      replicas.push(next);
      racksUsed.add(ring.racks?.get(next));
    }
    leads.set(leader, load(leads, leader) + 1);
    for (const id of replicas) holds.set(id, load(holds, id) + 1);
    assignment.set(partition, replicas);
  }
  return assignment;
}

/**
 * Checks a manual assignment (CreateTopics with Assignments): partitions 0..n-1, lists of the
 * same non-zero length, no broker twice in a list, every broker known. Throws
 * INVALID_REPLICA_ASSIGNMENT listing what is wrong.
 */
export function validateManualAssignment(assignment: ReadonlyMap<number, readonly number[]>, knownBrokers: ReadonlySet<number>): void {
  const problems: string[] = [];
  if (assignment.size === 0) problems.push('it lists no partitions');
  const partitions = [...assignment.keys()].sort((a, b) => a - b);
  for (const partition of partitions) {
    if (!Number.isSafeInteger(partition) || partition < 0) problems.push(`partition ${String(partition)} is not a partition number`);
  }
  const missing: number[] = [];
  for (let partition = 0; partition < assignment.size && missing.length < 5; partition += 1) {
    if (!assignment.has(partition)) missing.push(partition);
  }
  if (missing.length > 0) {
    problems.push(`partitions must be numbered 0..${assignment.size - 1}, but ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} missing`);
  }
  const reference = partitions[0];
  const referenceLength = reference === undefined ? 0 : (assignment.get(reference)?.length ?? 0);
  const known = [...knownBrokers].sort((a, b) => a - b).join(', ');
  for (const partition of partitions) {
    const replicas = assignment.get(partition) ?? [];
    if (replicas.length === 0) problems.push(`partition ${partition} has no replicas`);
    else if (replicas.length !== referenceLength) {
      problems.push(`partition ${partition} has ${replicas.length} replicas and partition ${String(reference)} has ${referenceLength}: every partition needs the same number`);
    }
    const seen = new Set<number>();
    const repeated = new Set<number>();
    for (const broker of replicas) {
      if (seen.has(broker)) {
        if (!repeated.has(broker)) problems.push(`partition ${partition} lists broker ${broker} more than once`);
        repeated.add(broker);
      } else if (!knownBrokers.has(broker)) {
        problems.push(`partition ${partition} lists broker ${String(broker)}, which is not a live broker (live: ${known === '' ? 'none' : known})`);
      }
      seen.add(broker);
    }
  }
  if (problems.length > 0) {
    throw placementError('INVALID_REPLICA_ASSIGNMENT', `invalid replica assignment: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? `; and ${problems.length - 5} more` : ''}`, { problems });
  }
}

/** The brokers in the order the round robin walks, with their racks when placement is rack-aware. */
interface BrokerRing {
  readonly brokers: readonly number[];
  /** Broker → rack; undefined when placing without racks. */
  readonly racks: ReadonlyMap<number, string> | undefined;
  readonly rackCount: number;
}

function brokerRing(brokers: readonly PlacementBroker[], ignoreRacks: boolean): BrokerRing {
  const seen = new Set<number>();
  for (const { id } of brokers) {
    if (!Number.isSafeInteger(id) || id < 0) throw placementError('INVALID_BROKER_LIST', `${String(id)} is not a broker id`, { id });
    if (seen.has(id)) throw placementError('INVALID_BROKER_LIST', `broker ${id} is listed more than once`, { id });
    seen.add(id);
  }
  // Id order, as Kafka sorts the live brokers, so the same cluster places the same way whatever
  // order the registrations were listed in.
  const sorted = [...brokers].sort((a, b) => a.id - b.id);
  const withRack = sorted.filter((broker) => broker.rack !== undefined);
  if (ignoreRacks || withRack.length === 0) return { brokers: sorted.map((broker) => broker.id), racks: undefined, rackCount: 0 };
  if (withRack.length < sorted.length) {
    const without = sorted.filter((broker) => broker.rack === undefined).map((broker) => broker.id);
    throw placementError(
      'INVALID_REPLICA_ASSIGNMENT',
      `brokers ${withRack.map((broker) => broker.id).join(', ')} have a rack but ${without.join(', ')} ${without.length === 1 ? 'has' : 'have'} none: rack-aware placement needs a rack on every broker (set one on each, or ignore racks)`,
      { withRack: withRack.map((broker) => broker.id), withoutRack: without },
    );
  }
  const racks = new Map(withRack.map((broker) => [broker.id, broker.rack ?? '']));
  const byRack = new Map<string, number[]>();
  for (const [id, rack] of racks) byRack.set(rack, [...(byRack.get(rack) ?? []), id]);
  const rackNames = [...byRack.keys()].sort();
  // Interleave: the first broker of each rack, then the second of each, … (ids ascending within a rack).
  const interleaved: number[] = [];
  for (let round = 0; interleaved.length < racks.size; round += 1) {
    for (const rack of rackNames) {
      const id = byRack.get(rack)?.[round];
      if (id !== undefined) interleaved.push(id);
    }
  }
  return { brokers: interleaved, racks, rackCount: rackNames.length };
}

function place(ring: BrokerRing, count: number, replicationFactor: number, firstPartition: number, start: number, initialShift: number): Map<number, number[]> {
  const { brokers, racks, rackCount } = ring;
  const n = brokers.length;
  const assignment = new Map<number, number[]>();
  let shift = initialShift;
  for (let partition = firstPartition; partition < firstPartition + count; partition += 1) {
    if (partition > 0 && partition % n === 0) shift += 1;
    const leaderIndex = (partition + start) % n;
    const replicas = [at(brokers, leaderIndex)];
    if (racks === undefined) {
      for (let j = 0; j < replicationFactor - 1; j += 1) replicas.push(at(brokers, followerIndex(leaderIndex, shift, j, n)));
    } else {
      const racksUsed = new Set([racks.get(at(brokers, leaderIndex))]);
      const brokersUsed = new Set(replicas);
      // k walks the candidates in shifted order across all followers of the partition. Within any
      // n − 1 consecutive steps it meets every other broker, among them an unused one on an
      // unused rack while such a rack exists, so each follower is found in fewer than n steps.
      let k = 0;
      for (let j = 0; j < replicationFactor - 1; j += 1) {
        for (let step = 0; ; step += 1, k += 1) {
          if (step >= n) throw placementError('PLACEMENT_FAILED', `no broker found for replica ${j + 2} of partition ${partition}`, { partition });
          const candidate = at(brokers, followerIndex(leaderIndex, shift * rackCount, k, n));
          const rack = racks.get(candidate);
          const rackAllowed = !racksUsed.has(rack) || racksUsed.size === rackCount;
          const brokerAllowed = !brokersUsed.has(candidate) || brokersUsed.size === n;
          if (rackAllowed && brokerAllowed) {
            replicas.push(candidate);
            racksUsed.add(rack);
            brokersUsed.add(candidate);
            k += 1;
            break;
          }
        }
      }
    }
    assignment.set(partition, replicas);
  }
  return assignment;
}

/** Index of follower j of a partition whose leader is at `leaderIndex`: never the leader's. */
function followerIndex(leaderIndex: number, shift: number, j: number, n: number): number {
  return (leaderIndex + 1 + ((shift + j) % (n - 1))) % n;
}

function at(brokers: readonly number[], index: number): number {
  const id = brokers[index];
  if (id === undefined) throw placementError('PLACEMENT_FAILED', `no broker at position ${index} of ${brokers.length}`, { index });
  return id;
}

function randomIndex(random: () => number, n: number): number {
  const draw = random();
  // A generator outside [0, 1) (or NaN) must not index outside the list.
  return Number.isFinite(draw) ? Math.min(n - 1, Math.max(0, Math.floor(draw * n))) : 0;
}

function checkReplicationFactor(replicationFactor: number, liveBrokers: number, what: string): void {
  const live = `there ${liveBrokers === 1 ? 'is 1 live broker' : `are ${liveBrokers} live brokers`}`;
  if (!Number.isSafeInteger(replicationFactor) || replicationFactor < 1) {
    throw placementError('INVALID_REPLICATION_FACTOR', `${what} must be at least 1, not ${String(replicationFactor)} (${live})`, { replicationFactor, liveBrokers });
  }
  if (replicationFactor > liveBrokers) {
    throw placementError('INVALID_REPLICATION_FACTOR', `${what} ${replicationFactor} is larger than the number of live brokers: ${live}`, { replicationFactor, liveBrokers });
  }
}

function placementError(code: string, message: string, details: Readonly<Record<string, unknown>>): TributaryError {
  return new TributaryError({ code, message, details });
}
