import { describe, expect, it } from 'vitest';
import { GroupCoordinator, type GroupSettings, type JoinRequest, type Scheduler } from '../../../src/broker/group/group-coordinator.js';
import type { TimerHandle } from '../../../src/broker/group/group.js';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { readGroupRecord, readOffsets } from '../../../src/coordination/group-registry.js';
import { consumerIdsPath } from '../../../src/coordination/paths.js';
import { KafkaErrorCode as E } from '../../../src/protocol/kafka-errors.js';

/** Timers that fire only when the test moves time. */
class ManualScheduler implements Scheduler {
  private time = 1_000_000;
  private tasks: { at: number; task: () => void; cancelled: boolean }[] = [];
  now(): number {
    return this.time;
  }
  schedule(milliseconds: number, task: () => void): TimerHandle {
    const entry = { at: this.time + milliseconds, task, cancelled: false };
    this.tasks.push(entry);
    return { cancel: () => (entry.cancelled = true) };
  }
  async advance(milliseconds: number): Promise<void> {
    await flush(); // requests already sent reach their timers first
    const until = this.time + milliseconds;
    for (;;) {
      const due = this.tasks.filter((entry) => !entry.cancelled && entry.at <= until).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      due.cancelled = true;
      this.time = due.at;
      due.task();
      await flush();
    }
    this.time = until;
    await flush();
  }
}

async function flush(): Promise<void> {
  for (let i = 0; i < 20; i += 1) await Promise.resolve();
  await new Promise((resolve) => setImmediate(resolve));
}

const SETTINGS: GroupSettings = {
  minSessionTimeoutMs: 6000,
  maxSessionTimeoutMs: 1_800_000,
  initialRebalanceDelayMs: 0,
  maxSize: 1000,
  maxMetadataBytes: 4096,
  retentionMs: 7 * 24 * 3_600_000,
  retentionCheckIntervalMs: 600_000,
};

function setup(settings: Partial<GroupSettings> = {}, live: number[] = [0]) {
  const tree = new MemoryCoordination({ logger: createLogger({ name: 'test', level: 'silent' }) });
  const store = tree.session();
  const scheduler = new ManualScheduler();
  const brokers = { live };
  const coordinator = new GroupCoordinator({
    brokerId: 0,
    store,
    settings: { ...SETTINGS, ...settings },
    liveBrokerIds: () => brokers.live,
    partitionExists: (topic, partition) => topic !== 'missing' && partition < 12,
    logger: createLogger({ name: 'test', level: 'silent' }),
    scheduler,
  });
  return { coordinator, store, scheduler, brokers };
}

function joinRequest(overrides: Partial<JoinRequest> = {}): JoinRequest {
  return {
    groupId: 'g',
    memberId: '',
    groupInstanceId: null,
    requireKnownMemberId: false,
    clientId: 'client',
    clientHost: '/127.0.0.1',
    rebalanceTimeoutMs: 60_000,
    sessionTimeoutMs: 10_000,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: Buffer.from('m') }],
    ...overrides,
  };
}

describe('GroupCoordinator', () => {
  it('runs one member through join, sync and heartbeat to Stable', async () => {
    const { coordinator } = setup();
    const join = await coordinator.join(joinRequest());
    expect(join.errorCode).toBe(E.NONE);
    expect(join.generationId).toBe(1);
    expect(join.leader).toBe(join.memberId);
    expect(join.protocolName).toBe('range');
    expect(join.members.map((member) => member.memberId)).toEqual([join.memberId]);
    const sync = await coordinator.sync({ groupId: 'g', generationId: 1, memberId: join.memberId, groupInstanceId: null, assignments: [{ memberId: join.memberId, assignment: Buffer.from('a0') }] });
    expect(sync).toEqual({ errorCode: E.NONE, assignment: Buffer.from('a0') });
    expect((await coordinator.describe('g')).state).toBe('Stable');
    expect(await coordinator.heartbeat({ groupId: 'g', memberId: join.memberId, groupInstanceId: null, generationId: 1 })).toBe(E.NONE);
    expect(await coordinator.heartbeat({ groupId: 'g', memberId: join.memberId, groupInstanceId: null, generationId: 0 })).toBe(E.ILLEGAL_GENERATION);
    expect(await coordinator.heartbeat({ groupId: 'g', memberId: 'nobody', groupInstanceId: null, generationId: 1 })).toBe(E.UNKNOWN_MEMBER_ID);
  });

  it('answers MEMBER_ID_REQUIRED only for v4+ joins without an instance id, with the id to come back with', async () => {
    const { coordinator } = setup();
    const first = await coordinator.join(joinRequest({ requireKnownMemberId: true, clientId: 'kafkajs' }));
    expect(first.errorCode).toBe(E.MEMBER_ID_REQUIRED);
    expect(first.memberId).toMatch(/^kafkajs-[0-9a-f-]{36}$/);
    const second = await coordinator.join(joinRequest({ requireKnownMemberId: true, memberId: first.memberId }));
    expect(second).toMatchObject({ errorCode: E.NONE, memberId: first.memberId, generationId: 1 });
    const staticJoin = await coordinator.join(joinRequest({ groupId: 'h', requireKnownMemberId: true, groupInstanceId: 'i-1' }));
    expect(staticJoin.errorCode).toBe(E.NONE);
  });

  it('waits for every known member to rejoin, then gives only the leader the member list', async () => {
    const { coordinator } = setup();
    const a = await coordinator.join(joinRequest({ clientId: 'a' }));
    await coordinator.sync({ groupId: 'g', generationId: 1, memberId: a.memberId, groupInstanceId: null, assignments: [] });
    const bJoin = coordinator.join(joinRequest({ clientId: 'b' }));
    await flush();
    expect((await coordinator.describe('g')).state).toBe('PreparingRebalance');
    expect(await coordinator.heartbeat({ groupId: 'g', memberId: a.memberId, groupInstanceId: null, generationId: 1 })).toBe(E.REBALANCE_IN_PROGRESS);
    const aRejoin = await coordinator.join(joinRequest({ clientId: 'a', memberId: a.memberId }));
    const b = await bJoin;
    expect(aRejoin.generationId).toBe(2);
    expect(b.generationId).toBe(2);
    expect(aRejoin.leader).toBe(a.memberId);
    expect(aRejoin.members).toHaveLength(2);
    expect(b.members).toEqual([]);
    // The follower's sync waits for the leader's assignment; the leader's answers both.
    const bSync = coordinator.sync({ groupId: 'g', generationId: 2, memberId: b.memberId, groupInstanceId: null, assignments: [] });
    await flush();
    expect(await coordinator.heartbeat({ groupId: 'g', memberId: b.memberId, groupInstanceId: null, generationId: 2 })).toBe(E.NONE);
    const aSync = await coordinator.sync({
      groupId: 'g',
      generationId: 2,
      memberId: a.memberId,
      groupInstanceId: null,
      assignments: [
        { memberId: a.memberId, assignment: Buffer.from('A') },
        { memberId: b.memberId, assignment: Buffer.from('B') },
      ],
    });
    expect(aSync.assignment).toEqual(Buffer.from('A'));
    expect((await bSync).assignment).toEqual(Buffer.from('B'));
    const description = await coordinator.describe('g');
    expect(description).toMatchObject({ state: 'Stable', protocolType: 'consumer', protocol: 'range' });
    expect(description.members.map((member) => member.assignment.toString())).toEqual(['A', 'B']);
  });

  it('removes members that do not rejoin within the rebalance timeout', async () => {
    const { coordinator, scheduler } = setup();
    const a = await coordinator.join(joinRequest({ clientId: 'a', rebalanceTimeoutMs: 20_000, sessionTimeoutMs: 60_000 }));
    await coordinator.sync({ groupId: 'g', generationId: 1, memberId: a.memberId, groupInstanceId: null, assignments: [] });
    const b = coordinator.join(joinRequest({ clientId: 'b', rebalanceTimeoutMs: 20_000, sessionTimeoutMs: 60_000 }));
    await scheduler.advance(19_000);
    expect((await coordinator.describe('g')).state).toBe('PreparingRebalance');
    await scheduler.advance(1_000);
    const result = await b;
    expect(result).toMatchObject({ errorCode: E.NONE, generationId: 2, leader: result.memberId });
    expect((await coordinator.describe('g')).members.map((member) => member.memberId)).toEqual([result.memberId]);
    expect(await coordinator.heartbeat({ groupId: 'g', memberId: a.memberId, groupInstanceId: null, generationId: 2 })).toBe(E.UNKNOWN_MEMBER_ID);
  });

  it('expires a member whose heartbeats stop, and the group rebalances without it', async () => {
    const { coordinator, scheduler } = setup();
    const a = await coordinator.join(joinRequest({ clientId: 'a' }));
    await coordinator.sync({ groupId: 'g', generationId: 1, memberId: a.memberId, groupInstanceId: null, assignments: [] });
    await scheduler.advance(9_000);
    expect(await coordinator.heartbeat({ groupId: 'g', memberId: a.memberId, groupInstanceId: null, generationId: 1 })).toBe(E.NONE);
    await scheduler.advance(9_000);
    expect((await coordinator.describe('g')).state).toBe('Stable');
    await scheduler.advance(1_001);
    const description = await coordinator.describe('g');
    expect(description.state).toBe('Empty');
    expect(description.members).toEqual([]);
  });

  it('keeps the rebalance open for the initial delay while new members keep arriving', async () => {
    const { coordinator, scheduler } = setup({ initialRebalanceDelayMs: 3000 });
    const a = coordinator.join(joinRequest({ clientId: 'a' }));
    await scheduler.advance(2000);
    const b = coordinator.join(joinRequest({ clientId: 'b' }));
    await scheduler.advance(1000);
    expect((await coordinator.describe('g')).state).toBe('PreparingRebalance');
    await scheduler.advance(3000);
    const [ra, rb] = await Promise.all([a, b]);
    expect(ra.generationId).toBe(1);
    expect(rb.generationId).toBe(1);
    expect(ra.members.length + rb.members.length).toBe(2);
  });

  it('selects the protocol most members vote for, and refuses members with no common protocol', async () => {
    const { coordinator, scheduler } = setup({ initialRebalanceDelayMs: 10 });
    const range = { name: 'range', metadata: Buffer.alloc(0) };
    const roundrobin = { name: 'roundrobin', metadata: Buffer.alloc(0) };
    const joins = [
      coordinator.join(joinRequest({ protocols: [range, roundrobin] })),
      coordinator.join(joinRequest({ protocols: [roundrobin, range] })),
      coordinator.join(joinRequest({ protocols: [roundrobin] })),
    ];
    // Members kept arriving during the first 10 ms window, so it is extended once more.
    await scheduler.advance(20);
    const results = await Promise.all(joins);
    expect(new Set(results.map((result) => result.protocolName))).toEqual(new Set(['roundrobin']));
    const odd = await coordinator.join(joinRequest({ protocols: [{ name: 'sticky', metadata: Buffer.alloc(0) }] }));
    expect(odd.errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL);
    const otherType = await coordinator.join(joinRequest({ protocolType: 'connect' }));
    expect(otherType.errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL);
  });

  it('refuses bad group ids, session timeouts out of bounds and a full group with Kafka codes', async () => {
    const { coordinator } = setup({ maxSize: 1 });
    expect((await coordinator.join(joinRequest({ groupId: '' }))).errorCode).toBe(E.INVALID_GROUP_ID);
    expect((await coordinator.join(joinRequest({ sessionTimeoutMs: 5999 }))).errorCode).toBe(E.INVALID_SESSION_TIMEOUT);
    expect((await coordinator.join(joinRequest({ sessionTimeoutMs: 1_800_001 }))).errorCode).toBe(E.INVALID_SESSION_TIMEOUT);
    const a = await coordinator.join(joinRequest());
    await coordinator.sync({ groupId: 'g', generationId: 1, memberId: a.memberId, groupInstanceId: null, assignments: [] });
    expect((await coordinator.join(joinRequest())).errorCode).toBe(E.GROUP_MAX_SIZE_REACHED);
    expect(await coordinator.heartbeat({ groupId: '', memberId: a.memberId, groupInstanceId: null, generationId: 1 })).toBe(E.INVALID_GROUP_ID);
  });

  it('forgets pending member ids that never come back, so a flood of joins cannot grow memory', async () => {
    const { coordinator, scheduler } = setup();
    const ids = [];
    for (let i = 0; i < 200; i += 1) ids.push((await coordinator.join(joinRequest({ requireKnownMemberId: true }))).memberId);
    await scheduler.advance(10_001);
    const late = await coordinator.join(joinRequest({ requireKnownMemberId: true, memberId: ids[0] ?? '' }));
    expect(late.errorCode).toBe(E.UNKNOWN_MEMBER_ID);
  });

  it('lets a static member restart without a rebalance and fences its old member id', async () => {
    const { coordinator } = setup();
    const first = await coordinator.join(joinRequest({ groupInstanceId: 'host-1' }));
    const second = coordinator.join(joinRequest({ groupInstanceId: 'host-2' }));
    await flush();
    const firstAgain = await coordinator.join(joinRequest({ groupInstanceId: 'host-1', memberId: first.memberId }));
    const secondResult = await second;
    const generation = firstAgain.generationId;
    const leader = firstAgain.leader === firstAgain.memberId ? firstAgain : secondResult;
    await coordinator.sync({
      groupId: 'g',
      generationId: generation,
      memberId: leader.memberId,
      groupInstanceId: leader === firstAgain ? 'host-1' : 'host-2',
      assignments: [
        { memberId: firstAgain.memberId, assignment: Buffer.from('one') },
        { memberId: secondResult.memberId, assignment: Buffer.from('two') },
      ],
    });
    // host-2 restarts: a new member id, the same generation, the assignment it had.
    const restarted = await coordinator.join(joinRequest({ groupInstanceId: 'host-2' }));
    expect(restarted.errorCode).toBe(E.NONE);
    expect(restarted.memberId).not.toBe(secondResult.memberId);
    expect(restarted.generationId).toBe(generation);
    expect(restarted.leader).not.toBe(restarted.memberId);
    const sync = await coordinator.sync({ groupId: 'g', generationId: generation, memberId: restarted.memberId, groupInstanceId: 'host-2', assignments: [] });
    expect(sync.assignment).toEqual(Buffer.from('two'));
    expect((await coordinator.describe('g')).state).toBe('Stable');
    expect(await coordinator.heartbeat({ groupId: 'g', memberId: secondResult.memberId, groupInstanceId: 'host-2', generationId: generation })).toBe(E.FENCED_INSTANCE_ID);
    expect(await coordinator.heartbeat({ groupId: 'g', memberId: 'x', groupInstanceId: 'host-9', generationId: generation })).toBe(E.UNKNOWN_MEMBER_ID);
  });

  it('removes members on LeaveGroup, one result per member, static members by instance id', async () => {
    const { coordinator } = setup();
    const a = await coordinator.join(joinRequest({ groupInstanceId: 'host-1' }));
    await coordinator.sync({ groupId: 'g', generationId: 1, memberId: a.memberId, groupInstanceId: 'host-1', assignments: [] });
    const result = await coordinator.leave('g', [
      { memberId: '', groupInstanceId: 'host-1' },
      { memberId: 'ghost', groupInstanceId: null },
    ]);
    expect(result.errorCode).toBe(E.NONE);
    expect(result.members.map((member) => member.errorCode)).toEqual([E.NONE, E.UNKNOWN_MEMBER_ID]);
    expect((await coordinator.describe('g')).state).toBe('Empty');
    expect((await coordinator.leave('unknown-group', [{ memberId: 'm', groupInstanceId: null }])).members[0]?.errorCode).toBe(E.UNKNOWN_MEMBER_ID);
  });

  it('commits with generation -1 into an Empty or unknown group, refuses them into an active one', async () => {
    const { coordinator, store } = setup();
    const commit = (overrides: object = {}) =>
      coordinator.commitOffsets({
        groupId: 'g',
        generationId: -1,
        memberId: '',
        groupInstanceId: null,
        retentionTimeMs: -1,
        offsets: [{ topic: 't', partition: 0, offset: 42n, leaderEpoch: 7, metadata: 'ünïcode ✓ {"k":1}' }],
        ...overrides,
      });
    expect(await commit()).toEqual([E.NONE]);
    const fetched = await coordinator.fetchOffsets('g', [{ topic: 't', partitions: [0, 1] }]);
    expect(fetched.offsets).toEqual([
      { topic: 't', partition: 0, offset: 42n, leaderEpoch: 7, metadata: 'ünïcode ✓ {"k":1}', errorCode: 0 },
      { topic: 't', partition: 1, offset: -1n, leaderEpoch: -1, metadata: '', errorCode: 0 },
    ]);
    expect((await coordinator.fetchOffsets('g', null)).offsets.map((entry) => entry.offset)).toEqual([42n]);
    expect((await readOffsets(store, 'g'))[0]?.value.offset).toBe(42n);
    const a = await coordinator.join(joinRequest());
    expect(await commit()).toEqual([E.UNKNOWN_MEMBER_ID]);
    expect(await commit({ generationId: 1, memberId: a.memberId })).toEqual([E.REBALANCE_IN_PROGRESS]);
    await coordinator.sync({ groupId: 'g', generationId: 1, memberId: a.memberId, groupInstanceId: null, assignments: [] });
    expect(await commit({ generationId: 1, memberId: a.memberId })).toEqual([E.NONE]);
    expect(await commit({ generationId: 0, memberId: a.memberId })).toEqual([E.ILLEGAL_GENERATION]);
    expect(await commit({ generationId: 3, memberId: 'unknown-member' })).toEqual([E.UNKNOWN_MEMBER_ID]);
    expect(await coordinator.commitOffsets({ groupId: 'fresh', generationId: 4, memberId: 'm', groupInstanceId: null, retentionTimeMs: -1, offsets: [{ topic: 't', partition: 0, offset: 1n, leaderEpoch: -1, metadata: null }] })).toEqual([E.ILLEGAL_GENERATION]);
  });

  it('refuses oversized metadata and unknown partitions per partition, storing the rest', async () => {
    const { coordinator } = setup();
    const errors = await coordinator.commitOffsets({
      groupId: 'g',
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1,
      offsets: [
        { topic: 't', partition: 0, offset: 1n, leaderEpoch: -1, metadata: 'x'.repeat(4097) },
        { topic: 'missing', partition: 0, offset: 1n, leaderEpoch: -1, metadata: null },
        { topic: 't', partition: 1, offset: 5n, leaderEpoch: -1, metadata: 'x'.repeat(4096) },
      ],
    });
    expect(errors).toEqual([E.OFFSET_METADATA_TOO_LARGE, E.UNKNOWN_TOPIC_OR_PARTITION, E.NONE]);
    const fetched = await coordinator.fetchOffsets('g', null);
    expect(fetched.offsets.map((entry) => [entry.partition, entry.offset])).toEqual([[1, 5n]]);
  });

  it('answers NOT_COORDINATOR for a group that hashes to another broker, and drops groups that move away', async () => {
    const { coordinator, brokers } = setup({}, [0, 1, 2]);
    const groups = Array.from({ length: 30 }, (_, i) => `group-${i}`);
    const mine = groups.filter((group) => coordinator.coordinatorOf(group) === 0);
    const theirs = groups.filter((group) => coordinator.coordinatorOf(group) !== 0);
    expect(mine.length).toBeGreaterThan(0);
    expect(theirs.length).toBeGreaterThan(0);
    expect((await coordinator.join(joinRequest({ groupId: theirs[0] ?? '' }))).errorCode).toBe(E.NOT_COORDINATOR);
    const member = await coordinator.join(joinRequest({ groupId: mine[0] ?? '' }));
    expect(member.errorCode).toBe(E.NONE);
    // Broker 0 dies from the others' view and comes back lower in the order: simulate the move.
    brokers.live = [1, 2];
    coordinator.brokersChanged();
    expect(await coordinator.heartbeat({ groupId: mine[0] ?? '', memberId: member.memberId, groupInstanceId: null, generationId: 1 })).toBe(E.NOT_COORDINATOR);
    // Placement is stable: only groups of the broker that left move.
    const before = new Map(groups.map((group) => [group, setup({}, [0, 1, 2]).coordinator.coordinatorOf(group)]));
    const after = setup({}, [0, 2]).coordinator;
    for (const group of groups) if (before.get(group) !== 1) expect(after.coordinatorOf(group)).toBe(before.get(group));
  });

  it('refuses a group id that a ZooKeeper (paper-style) group holds', async () => {
    const { coordinator, store } = setup();
    await store.ensurePath(consumerIdsPath('paper'));
    await store.create(`${consumerIdsPath('paper')}/consumer-1`, Buffer.from('{}'), 'ephemeral');
    expect((await coordinator.join(joinRequest({ groupId: 'paper' }))).errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL);
    expect(await coordinator.commitOffsets({ groupId: 'paper', generationId: -1, memberId: '', groupInstanceId: null, retentionTimeMs: -1, offsets: [{ topic: 't', partition: 0, offset: 1n, leaderEpoch: -1, metadata: null }] })).toEqual([E.INCONSISTENT_GROUP_PROTOCOL]);
    expect(await coordinator.deleteGroup('paper')).toBe(E.NON_EMPTY_GROUP);
    expect((await readGroupRecord(store, 'paper'))?.record.kind).toBe('zookeeper');
  });

  it('lists and deletes groups: Empty only, NON_EMPTY_GROUP while members are in it', async () => {
    const { coordinator } = setup();
    const a = await coordinator.join(joinRequest());
    await coordinator.commitOffsets({ groupId: 'simple', generationId: -1, memberId: '', groupInstanceId: null, retentionTimeMs: -1, offsets: [{ topic: 't', partition: 0, offset: 1n, leaderEpoch: -1, metadata: null }] });
    expect(await coordinator.list()).toEqual([
      { groupId: 'g', protocolType: 'consumer', state: 'CompletingRebalance' },
      { groupId: 'simple', protocolType: '', state: 'Empty' },
    ]);
    expect(await coordinator.deleteGroup('g')).toBe(E.NON_EMPTY_GROUP);
    await coordinator.leave('g', [{ memberId: a.memberId, groupInstanceId: null }]);
    expect(await coordinator.deleteGroup('g')).toBe(E.NONE);
    expect(await coordinator.deleteGroup('g')).toBe(E.GROUP_ID_NOT_FOUND);
    expect((await coordinator.describe('g')).state).toBe('Dead');
  });

  it('removes offsets once the group has been empty for the retention, and keeps those of groups in use', async () => {
    const { coordinator, scheduler, store } = setup({ retentionMs: 60_000, retentionCheckIntervalMs: 1000 });
    const commit = (groupId: string, generationId = -1, memberId = '') =>
      coordinator.commitOffsets({ groupId, generationId, memberId, groupInstanceId: null, retentionTimeMs: -1, offsets: [{ topic: 't', partition: 0, offset: 9n, leaderEpoch: -1, metadata: null }] });
    const a = await coordinator.join(joinRequest({ groupId: 'active', sessionTimeoutMs: 600_000 }));
    await coordinator.sync({ groupId: 'active', generationId: 1, memberId: a.memberId, groupInstanceId: null, assignments: [] });
    expect(await commit('active', 1, a.memberId)).toEqual([E.NONE]);
    const b = await coordinator.join(joinRequest({ groupId: 'left' }));
    await coordinator.sync({ groupId: 'left', generationId: 1, memberId: b.memberId, groupInstanceId: null, assignments: [] });
    expect(await commit('left', 1, b.memberId)).toEqual([E.NONE]);
    await coordinator.leave('left', [{ memberId: b.memberId, groupInstanceId: null }]);
    await scheduler.advance(1000);
    await coordinator.expireOffsets();
    expect(await readOffsets(store, 'left')).toHaveLength(1);
    for (let i = 0; i < 120; i += 1) {
      await scheduler.advance(1000);
      await coordinator.heartbeat({ groupId: 'active', memberId: a.memberId, groupInstanceId: null, generationId: 1 });
    }
    await coordinator.expireOffsets();
    expect(await readOffsets(store, 'left')).toHaveLength(0);
    expect(await readOffsets(store, 'active')).toHaveLength(1);
  });

  it('counts retention from when it took over for a group whose members were at a coordinator that is gone', async () => {
    const retention = { retentionMs: 60_000, retentionCheckIntervalMs: 1000 };
    const { coordinator, scheduler, store } = setup(retention);
    const a = await coordinator.join(joinRequest({ sessionTimeoutMs: 600_000 }));
    await coordinator.sync({ groupId: 'g', generationId: 1, memberId: a.memberId, groupInstanceId: null, assignments: [] });
    expect(await coordinator.commitOffsets({ groupId: 'g', generationId: 1, memberId: a.memberId, groupInstanceId: null, retentionTimeMs: -1, offsets: [{ topic: 't', partition: 0, offset: 9n, leaderEpoch: -1, metadata: null }] })).toEqual([E.NONE]);
    await flush();
    expect((await readGroupRecord(store, 'g'))?.record.emptySince).toBeNull();
    // The coordinator is SIGKILLed (nothing more is written) and the members never come back: the
    // broker that takes the group over (or the same one, restarted) finds it "in use" in the
    // registry, with nobody in it. Its offsets must still expire, counted from the takeover.
    const successor = new GroupCoordinator({
      brokerId: 0,
      store,
      settings: { ...SETTINGS, ...retention },
      liveBrokerIds: () => [0],
      partitionExists: () => true,
      logger: createLogger({ name: 'test', level: 'silent' }),
      scheduler,
    });
    await successor.expireOffsets();
    await flush();
    expect(await readOffsets(store, 'g')).toHaveLength(1);
    await scheduler.advance(60_000);
    await successor.expireOffsets();
    expect(await readOffsets(store, 'g')).toHaveLength(0);
    expect(await readGroupRecord(store, 'g')).toBeUndefined();
  });
});
