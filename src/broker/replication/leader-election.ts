/**
 * The controller's rules for one partition's state, given the live brokers (replication.md §1.3,
 * §5.4). Pure: the controller reads, decides here, and writes conditionally.
 *
 * - A partition without a state gets its first: the live replicas in assignment order form the
 *   ISR (their logs are all empty), the first of them leads, epoch 0.
 * - An ISR member that is not registered, or came back with another data dir (a new storage id:
 *   its disk was wiped), leaves the ISR — except the last member, which stays: it is the replica
 *   that must come back for the partition to come back.
 * - The leader stays while it is registered, in the ISR, on its disk, and under the incarnation
 *   it was elected in. Otherwise the first replica in assignment order that is in the ISR and
 *   usable leads, in epoch + 1 (even the same broker, restarted: a restarted leader never resumes
 *   from a state written before its restart). With none, the leader is −1: the partition stays
 *   offline. No unclean election: a replica outside the ISR is never elected, so the log never
 *   resets to a shorter one.
 */
import type { PartitionState } from '../../coordination/partition-state.js';

export interface LiveBroker {
  readonly incarnation?: string;
  readonly storageId?: string;
}

/** The new state of a partition, or undefined when the current one stands. */
export function decidePartitionState(
  replicas: readonly number[],
  state: PartitionState | undefined,
  live: ReadonlyMap<number, LiveBroker>,
  controllerEpoch: number,
): PartitionState | undefined {
  if (state === undefined) return initialState(replicas, live, controllerEpoch);
  const wiped = (id: number): boolean => {
    const recorded = state.replicaStorage[String(id)];
    const current = live.get(id)?.storageId;
    return recorded !== undefined && current !== undefined && recorded !== current;
  };
  const usable = (id: number): boolean => live.has(id) && !wiped(id);
  let isr = state.isr.filter(usable);
  if (isr.length === 0 && state.isr.length > 0) {
    // Keep one member: the leader if it was in the ISR (it held the most), else the first.
    const keep = state.isr.includes(state.leader) ? state.leader : state.isr[0];
    isr = keep === undefined ? [] : [keep];
  }
  const leaderStands =
    state.leader >= 0 &&
    isr.includes(state.leader) &&
    usable(state.leader) &&
    (state.leaderIncarnation === '' || live.get(state.leader)?.incarnation === state.leaderIncarnation);
  let leader = state.leader;
  let leaderEpoch = state.leaderEpoch;
  let leaderIncarnation = state.leaderIncarnation;
  if (!leaderStands) {
    leader = replicas.find((id) => isr.includes(id) && usable(id)) ?? -1;
    if (leader !== -1 || state.leader !== -1) leaderEpoch = state.leaderEpoch + 1;
    leaderIncarnation = leader >= 0 ? (live.get(leader)?.incarnation ?? '') : '';
  }
  const replicaStorage: Record<string, string> = {};
  for (const [id, storageId] of Object.entries(state.replicaStorage)) if (isr.includes(Number(id))) replicaStorage[id] = storageId;
  const unchanged =
    leader === state.leader &&
    leaderEpoch === state.leaderEpoch &&
    leaderIncarnation === state.leaderIncarnation &&
    isr.length === state.isr.length &&
    isr.every((id, index) => state.isr[index] === id);
  if (unchanged) return undefined;
  return { leader, leaderEpoch, isr, controllerEpoch, replicaStorage, leaderIncarnation };
}

function initialState(replicas: readonly number[], live: ReadonlyMap<number, LiveBroker>, controllerEpoch: number): PartitionState {
  const liveReplicas = replicas.filter((id) => live.has(id));
  const leader = liveReplicas[0] ?? -1;
  const replicaStorage: Record<string, string> = {};
  for (const id of liveReplicas) {
    const storageId = live.get(id)?.storageId;
    if (storageId !== undefined) replicaStorage[String(id)] = storageId;
  }
  return {
    leader,
    leaderEpoch: 0,
    // With no replica alive, all of them: their logs are empty, any may lead when it comes.
    isr: liveReplicas.length > 0 ? liveReplicas : [...replicas],
    controllerEpoch,
    replicaStorage,
    leaderIncarnation: leader >= 0 ? (live.get(leader)?.incarnation ?? '') : '',
  };
}

/** Why a partition has no leader, in words an operator can act on. */
export function offlineReason(state: PartitionState, live: ReadonlyMap<number, LiveBroker>): string {
  const member = state.isr[0];
  if (member === undefined) return 'its ISR is empty';
  const recorded = state.replicaStorage[String(member)];
  const current = live.get(member)?.storageId;
  if (live.has(member) && recorded !== undefined && current !== undefined && recorded !== current) {
    return `its last in-sync replica, broker ${member}, came back with another data dir (storage id ${current}, was ${recorded}): the records it held are gone from every replica; no unclean election is done — restore that disk, or delete and re-create the topic`;
  }
  return `its last in-sync replica, broker ${member}, is down; the partition comes back when that broker does`;
}
