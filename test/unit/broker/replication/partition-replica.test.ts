/**
 * A leader replica's rules (partition-replica.ts) on a real partition log: the high watermark is
 * the minimum fsynced end over the ISR and moves only with at least min.insync.replicas in it;
 * acks=−1 answers only once the HW passes the batch, and otherwise fails in the ways Kafka names;
 * followers are judged caught up or lagging by their fetches.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../src/common/clock.js';
import { TributaryError } from '../../../../src/common/errors.js';
import type { PartitionState } from '../../../../src/coordination/partition-state.js';
import { PartitionReplica } from '../../../../src/broker/replication/partition-replica.js';
import { batch, openManager, temporaryDirectory } from '../../storage/helpers.js';

const ME = 1;

function state(isr: number[], leaderEpoch = 3): PartitionState {
  return { leader: ME, leaderEpoch, isr, controllerEpoch: 1, replicaStorage: {}, leaderIncarnation: '' };
}

async function leader(isr = [1, 2, 3]): Promise<{ replica: PartitionReplica; clock: ManualClock }> {
  const clock = new ManualClock();
  const { manager } = await openManager(temporaryDirectory(), {}, clock);
  const log = await manager.getOrCreateLog('t', 0);
  const replica = new PartitionReplica('t', 0, log, [1, 2, 3], ME, clock);
  log.leaderEpochCache.assign(3, log.logEndOffset);
  replica.becomeLeader(state(isr), 0);
  return { replica, clock };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'no error';
  } catch (error) {
    return error instanceof TributaryError ? error.code : String(error);
  }
}

const ACKS_ALL = { acks: -1 as const, allowZstd: true, timeoutMs: 5_000, minInsyncReplicas: 2 };

describe('a leader replica', () => {
  it('moves the HW to the minimum fsynced end over the ISR, once every follower fetched in this epoch', async () => {
    const { replica } = await leader();
    // Three batches: fetch offsets (and so HWs) are batch boundaries.
    const appended = replica.appendAsLeader(batch(1), ACKS_ALL);
    void replica.appendAsLeader(batch(1), ACKS_ALL).catch(() => undefined);
    void replica.appendAsLeader(batch(1), ACKS_ALL).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 10));
    await replica.log.flush();
    expect(replica.maybeAdvanceHighWatermark(2, false), 'no follower has fetched yet').toBe(false);
    replica.recordFollowerFetch(2, 3);
    expect(replica.maybeAdvanceHighWatermark(2, false), 'follower 3 has not fetched').toBe(false);
    replica.recordFollowerFetch(3, 1);
    replica.maybeAdvanceHighWatermark(2, false);
    expect(replica.log.highWatermark).toBe(1);
    replica.recordFollowerFetch(3, 3);
    replica.maybeAdvanceHighWatermark(2, false);
    expect(replica.log.highWatermark).toBe(3);
    expect((await appended).baseOffset).toBe(0);
  });

  it('stamps its epoch into every batch it appends', async () => {
    const { replica } = await leader([1]);
    await replica.appendAsLeader(batch(1), { ...ACKS_ALL, acks: 1, minInsyncReplicas: 1 });
    const read = await replica.log.read(0, 1 << 20, { upTo: 'written' });
    const bytes = await read.slice!.readBytes();
    read.slice!.release();
    expect(bytes.readInt32BE(12)).toBe(3);
  });

  it('refuses acks=-1 with NOT_ENOUGH_REPLICAS and writes nothing while the ISR is below min.insync.replicas', async () => {
    const { replica } = await leader([1]);
    expect(await codeOf(replica.appendAsLeader(batch(1), ACKS_ALL))).toBe('NOT_ENOUGH_REPLICAS');
    expect(replica.log.logEndOffset).toBe(0);
    // acks=1 is taken (and answered after the leader's fsync), but the HW stays: strict min ISR.
    await replica.appendAsLeader(batch(1), { ...ACKS_ALL, acks: 1 });
    expect(replica.log.flushedEndOffset).toBe(1);
    expect(replica.maybeAdvanceHighWatermark(2, false)).toBe(false);
    expect(replica.log.highWatermark).toBe(0);
  });

  it('fails waiting acks=-1 requests with NOT_LEADER_OR_FOLLOWER when it steps down', async () => {
    const { replica } = await leader();
    const waiting = replica.appendAsLeader(batch(1), ACKS_ALL);
    await new Promise((resolve) => setTimeout(resolve, 20));
    replica.stepDown('follower', 2, 4, 'broker 2 leads epoch 4');
    expect(await codeOf(waiting)).toBe('NOT_LEADER_OR_FOLLOWER');
    expect(await codeOf(replica.appendAsLeader(batch(1), ACKS_ALL))).toBe('NOT_LEADER_OR_FOLLOWER');
  });

  it('fails waiting acks=-1 requests with NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrinks below the minimum', async () => {
    const { replica } = await leader([1, 2]);
    const waiting = replica.appendAsLeader(batch(1), ACKS_ALL);
    await new Promise((resolve) => setTimeout(resolve, 20));
    replica.updateLeaderState(state([1]), 1, 2);
    expect(await codeOf(waiting)).toBe('NOT_ENOUGH_REPLICAS_AFTER_APPEND');
  });

  it('answers acks=-1 with REQUEST_TIMED_OUT, never success, when the ISR does not confirm in time', async () => {
    const { replica } = await leader([1, 2]);
    expect(await codeOf(replica.appendAsLeader(batch(1), { ...ACKS_ALL, timeoutMs: 50 }))).toBe('REQUEST_TIMED_OUT');
  });

  it('calls a follower lagging once it has not caught up for the lag time, and caught up again once it fetches the end', async () => {
    const { replica, clock } = await leader();
    await replica.appendAsLeader(batch(2), { ...ACKS_ALL, acks: 1 });
    replica.recordFollowerFetch(2, 2);
    replica.recordFollowerFetch(3, 0);
    clock.advance(10_001);
    // Follower 2 keeps fetching at the log end; follower 3 never got past offset 0.
    replica.recordFollowerFetch(2, 2);
    expect(replica.laggingFollowers(10_000)).toEqual([3]);
    replica.recordFollowerFetch(2, 2);
    replica.recordFollowerFetch(3, 2);
    expect(replica.laggingFollowers(10_000)).toEqual([]);
  });

  it('lets a follower outside the ISR join only at the HW and the start of its epoch (KAFKA-7128)', async () => {
    const { replica } = await leader([1, 2]);
    await replica.appendAsLeader(batch(4), { ...ACKS_ALL, acks: 1 });
    replica.log.leaderEpochCache.assign(4, 4);
    replica.becomeLeader(state([1, 2], 4), 1);
    expect(replica.epochStartOffset).toBe(4);
    replica.recordFollowerFetch(3, 2);
    expect(replica.followersReadyToJoin()).toEqual([]);
    replica.recordFollowerFetch(3, 4);
    expect(replica.followersReadyToJoin()).toEqual([3]);
  });

  it('takes the low watermark over its own log start and every live follower’s, a live one not yet heard from as −1', async () => {
    const { replica } = await leader();
    await replica.appendAsLeader(batch(6), { ...ACKS_ALL, acks: 1 });
    replica.log.resetHighWatermark(6);
    replica.log.incrementLogStartOffset(4);
    const everyone = (): boolean => true;
    expect(replica.lowWatermark(everyone), 'no follower heard from').toBe(-1);
    replica.recordFollowerFetch(2, 6, 4);
    expect(replica.lowWatermark(everyone)).toBe(-1);
    // Broker 3 is down: it does not hold the records back (Kafka counts alive replicas, ISR or not).
    expect(replica.lowWatermark((id) => id !== 3)).toBe(4);
    replica.recordFollowerFetch(3, 6, 2);
    expect(replica.lowWatermark(everyone)).toBe(2);
    replica.recordFollowerFetch(3, 6, 5);
    expect(replica.lowWatermark(everyone), 'never above the leader’s own start').toBe(4);
  });

  it('wakes a DeleteRecords waiter when a follower reports a new log start or the leader steps down, and otherwise after its time', async () => {
    const { replica } = await leader();
    replica.recordFollowerFetch(2, 0, 0);
    const outcome = (promise: Promise<void>): Promise<string> => Promise.race([promise.then(() => 'woken'), new Promise<string>((resolve) => setTimeout(() => resolve('waiting'), 50))]);
    const same = replica.lowWatermarkMayMove(10_000);
    replica.recordFollowerFetch(2, 0, 0);
    expect(await outcome(same), 'the same start again').toBe('waiting');
    replica.recordFollowerFetch(2, 0, 1);
    expect(await outcome(same)).toBe('woken');
    const stepping = replica.lowWatermarkMayMove(10_000);
    replica.stepDown('follower', 2, 4, 'test');
    expect(await outcome(stepping)).toBe('woken');
    expect(await outcome(replica.lowWatermarkMayMove(1))).toBe('woken');
  });
});
