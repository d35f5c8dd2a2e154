/** The controller's rules for a partition's state (leader-election.ts), case by case. */
import { describe, expect, it } from 'vitest';
import type { PartitionState } from '../../../../src/coordination/partition-state.js';
import { decidePartitionState, offlineReason, type LiveBroker } from '../../../../src/broker/replication/leader-election.js';

const live = (...entries: [number, LiveBroker][]): Map<number, LiveBroker> => new Map(entries);
const broker = (incarnation: string, storageId = `disk-${incarnation}`): LiveBroker => ({ incarnation, storageId });
const state = (overrides: Partial<PartitionState>): PartitionState => ({
  leader: 1,
  leaderEpoch: 4,
  isr: [1, 2, 3],
  controllerEpoch: 2,
  replicaStorage: { 1: 'disk-a', 2: 'disk-b', 3: 'disk-c' },
  leaderIncarnation: 'a',
  ...overrides,
});
const all = live([1, broker('a')], [2, broker('b')], [3, broker('c')]);

describe('a partition without a state', () => {
  it('gets the live replicas as its ISR, the first of them as leader, epoch 0', () => {
    expect(decidePartitionState([2, 3, 1], undefined, live([1, broker('a')], [3, broker('c')]), 7)).toEqual({
      leader: 3,
      leaderEpoch: 0,
      isr: [3, 1],
      controllerEpoch: 7,
      replicaStorage: { 3: 'disk-c', 1: 'disk-a' },
      leaderIncarnation: 'c',
    });
  });

  it('with no replica alive, has no leader and every replica in the ISR (their logs are all empty)', () => {
    expect(decidePartitionState([2, 3], undefined, live([1, broker('a')]), 1)).toMatchObject({ leader: -1, leaderEpoch: 0, isr: [2, 3], leaderIncarnation: '' });
  });
});

describe('a partition with a state', () => {
  it('stands when every replica is live and the leader is the one elected', () => {
    expect(decidePartitionState([1, 2, 3], state({}), all, 2)).toBeUndefined();
  });

  it('loses a dead follower from the ISR, keeping leader and epoch', () => {
    const next = decidePartitionState([1, 2, 3], state({}), live([1, broker('a')], [3, broker('c')]), 5);
    expect(next).toEqual({ ...state({ isr: [1, 3], replicaStorage: { 1: 'disk-a', 3: 'disk-c' } }), controllerEpoch: 5 });
  });

  it('elects the first in-sync replica in assignment order when the leader dies, in the next epoch', () => {
    const next = decidePartitionState([1, 3, 2], state({}), live([2, broker('b')], [3, broker('c')]), 5);
    expect(next).toMatchObject({ leader: 3, leaderEpoch: 5, isr: [2, 3], leaderIncarnation: 'c', controllerEpoch: 5 });
  });

  it('never elects a replica outside the ISR (no unclean election): the partition goes offline instead', () => {
    const next = decidePartitionState([1, 2, 3], state({ isr: [1] , replicaStorage: { 1: 'disk-a' } }), live([2, broker('b')], [3, broker('c')]), 5);
    expect(next).toMatchObject({ leader: -1, leaderEpoch: 5, isr: [1] });
    expect(offlineReason(next!, live([2, broker('b')]))).toMatch(/broker 1, is down/);
  });

  it('keeps the last ISR member when all are gone at once (the leader, which held the most)', () => {
    expect(decidePartitionState([1, 2, 3], state({ leader: 2 }), live(), 5)).toMatchObject({ leader: -1, isr: [2], replicaStorage: { 2: 'disk-b' } });
  });

  it('re-elects the last ISR member when it comes back on its own disk', () => {
    const offline = state({ leader: -1, leaderEpoch: 5, isr: [1], replicaStorage: { 1: 'disk-a' }, leaderIncarnation: '' });
    expect(decidePartitionState([1, 2, 3], offline, live([1, broker('a2', 'disk-a')], [2, broker('b')]), 6)).toMatchObject({ leader: 1, leaderEpoch: 6, isr: [1], leaderIncarnation: 'a2' });
  });

  it('keeps a partition offline when its last ISR member came back with a wiped disk, and says why', () => {
    const offline = state({ leader: -1, leaderEpoch: 5, isr: [1], replicaStorage: { 1: 'disk-a' }, leaderIncarnation: '' });
    const wiped = live([1, broker('a2', 'disk-new')], [2, broker('b')]);
    expect(decidePartitionState([1, 2, 3], offline, wiped, 6)).toBeUndefined();
    expect(offlineReason(offline, wiped)).toMatch(/another data dir.*no unclean election/);
  });

  it('drops a follower whose disk was wiped from the ISR even though it is registered', () => {
    const next = decidePartitionState([1, 2, 3], state({}), live([1, broker('a')], [2, broker('b2', 'disk-new')], [3, broker('c')]), 2);
    expect(next).toMatchObject({ leader: 1, leaderEpoch: 4, isr: [1, 3] });
  });

  it('replaces a leader that restarted (another incarnation), even by itself, in a new epoch', () => {
    const restarted = live([1, broker('a-again', 'disk-a')], [2, broker('b')], [3, broker('c')]);
    expect(decidePartitionState([1, 2, 3], state({}), restarted, 2)).toMatchObject({ leader: 1, leaderEpoch: 5, leaderIncarnation: 'a-again', isr: [1, 2, 3] });
  });

  it('accepts a state written without an incarnation (before replication) as standing', () => {
    expect(decidePartitionState([1, 2, 3], state({ leaderIncarnation: '' }), all, 2)).toBeUndefined();
  });
});
