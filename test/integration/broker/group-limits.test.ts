/**
 * The group coordinator's limits, in raw requests against one standalone broker (settings below):
 * session timeouts outside the bounds (INVALID_SESSION_TIMEOUT), commit metadata over
 * offset.metadata.max.bytes (OFFSET_METADATA_TOO_LARGE), a group past group.max.size
 * (GROUP_MAX_SIZE_REACHED), an empty group id (INVALID_GROUP_ID), MEMBER_ID_REQUIRED only for
 * JoinGroup v4+ without an instance id, and a flood of 10,000 unknown-member JoinGroup v4: each
 * answered MEMBER_ID_REQUIRED with an id of its own, and every one of those pending ids forgotten
 * once its session timeout has passed.
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FindCoordinatorApi } from '../../../src/protocol/apis/find-coordinator.js';
import { HeartbeatApi } from '../../../src/protocol/apis/heartbeat.js';
import { JoinGroupApi, type JoinGroupRequest, type JoinGroupResponse } from '../../../src/protocol/apis/join-group.js';
import { LeaveGroupApi } from '../../../src/protocol/apis/leave-group.js';
import { SyncGroupApi } from '../../../src/protocol/apis/sync-group.js';
import { encodeConsumerAssignment, encodeConsumerSubscription } from '../../../src/protocol/consumer-protocol.js';
import { KafkaErrorCode as E } from '../../../src/protocol/kafka-errors.js';
import { startInProcessBroker, type InProcessBroker } from '../../support/brokers.js';
import { Conversation, decodeResponse, requestFrame } from '../../support/conversation.js';
import { commitOffsets, describeGroup, fetchOffsets, simpleCommit, withConversation } from '../../support/group-requests.js';

const TOPIC = 'limits';
const MIN_SESSION_MS = 1000;
const MAX_SESSION_MS = 20_000;
const MAX_SIZE = 2;
const MAX_METADATA = 16;

let broker: InProcessBroker;

beforeAll(async () => {
  broker = await startInProcessBroker({
    'group.initial.rebalance.delay.ms': '0',
    'group.min.session.timeout.ms': String(MIN_SESSION_MS),
    'group.max.session.timeout.ms': String(MAX_SESSION_MS),
    'group.max.size': String(MAX_SIZE),
    'offset.metadata.max.bytes': String(MAX_METADATA),
  });
  const admin = new Kafka({ clientId: 'limits', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 2 }], waitForLeaders: true });
  await admin.disconnect();
});

afterAll(async () => {
  await broker?.stop();
  // Nothing here made the broker log an error.
  expect(broker?.logLines.filter((line) => Number(line['level']) >= 50) ?? []).toEqual([]);
});

function joinRequest(group: string, overrides: Partial<JoinGroupRequest> = {}): JoinGroupRequest {
  return {
    groupId: group,
    sessionTimeoutMs: 6000,
    rebalanceTimeoutMs: 10_000,
    memberId: '',
    groupInstanceId: null,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: encodeConsumerSubscription({ topics: [TOPIC] }) }],
    ...overrides,
  };
}

/** One JoinGroup on a connection of its own (a parked join holds its connection). */
function join(version: number, request: JoinGroupRequest, timeoutMs = 30_000): Promise<JoinGroupResponse> {
  return withConversation(broker.bootstrap, async (conversation) => {
    const correlationId = conversation.nextCorrelationId();
    conversation.send(requestFrame(JoinGroupApi, version, correlationId, request));
    return decodeResponse(JoinGroupApi, version, await conversation.response(timeoutMs), correlationId);
  });
}

function sync(group: string, generationId: number, memberId: string, assignments: { memberId: string; assignment: Buffer }[] = []) {
  return withConversation(broker.bootstrap, (conversation) => conversation.request(SyncGroupApi, 3, { groupId: group, generationId, memberId, groupInstanceId: null, assignments }));
}

function heartbeat(group: string, generationId: number, memberId: string) {
  return withConversation(broker.bootstrap, (conversation) => conversation.request(HeartbeatApi, 3, { groupId: group, generationId, memberId, groupInstanceId: null }));
}

describe('group coordinator limits', () => {
  it('answers INVALID_SESSION_TIMEOUT (26) to session timeouts outside group.min/max.session.timeout.ms, and takes the bounds themselves', async () => {
    for (const version of [3, 5]) {
      expect((await join(version, joinRequest('bounds', { sessionTimeoutMs: MIN_SESSION_MS - 1 }))).errorCode).toBe(E.INVALID_SESSION_TIMEOUT);
      expect((await join(version, joinRequest('bounds', { sessionTimeoutMs: MAX_SESSION_MS + 1 }))).errorCode).toBe(E.INVALID_SESSION_TIMEOUT);
    }
    // At the bounds the join goes on: a v5 member without an id is given one.
    expect((await join(5, joinRequest('bounds', { sessionTimeoutMs: MIN_SESSION_MS }))).errorCode).toBe(E.MEMBER_ID_REQUIRED);
    expect((await join(5, joinRequest('bounds', { sessionTimeoutMs: MAX_SESSION_MS }))).errorCode).toBe(E.MEMBER_ID_REQUIRED);
  });

  it('answers OFFSET_METADATA_TOO_LARGE (12) to a partition whose metadata is over offset.metadata.max.bytes, and stores the others', async () => {
    const tooLong = 'x'.repeat(MAX_METADATA + 1);
    const atLimit = 'y'.repeat(MAX_METADATA);
    const commit = simpleCommit('metadata', TOPIC, [
      { partition: 0, offset: 3n, leaderEpoch: 1, metadata: tooLong },
      { partition: 1, offset: 4n, leaderEpoch: 1, metadata: atLimit },
    ]);
    expect(await commitOffsets(broker.bootstrap, commit)).toEqual([E.OFFSET_METADATA_TOO_LARGE, E.NONE]);
    const fetched = await fetchOffsets(broker.bootstrap, 'metadata', [{ name: TOPIC, partitionIndexes: [0, 1] }]);
    expect(fetched.topics[0]?.partitions).toEqual([
      { partitionIndex: 0, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: E.NONE },
      { partitionIndex: 1, committedOffset: 4n, committedLeaderEpoch: 1, metadata: atLimit, errorCode: E.NONE },
    ]);
  });

  it('answers GROUP_MAX_SIZE_REACHED (81) to a member joining a group of group.max.size members', async () => {
    const group = 'full';
    const a = await join(3, joinRequest(group, { rebalanceTimeoutMs: 20_000 }));
    expect(a).toMatchObject({ errorCode: E.NONE, generationId: 1, leader: a.memberId });
    const assignment = encodeConsumerAssignment({ assignedPartitions: [{ topic: TOPIC, partitions: [0, 1] }] });
    expect((await sync(group, 1, a.memberId, [{ memberId: a.memberId, assignment }])).errorCode).toBe(E.NONE);

    // B joins (parked until A rejoins); A hears of the rebalance and rejoins; both are in generation 2.
    const bJoin = join(3, joinRequest(group, { rebalanceTimeoutMs: 20_000 }));
    await expect.poll(async () => (await heartbeat(group, 1, a.memberId)).errorCode, { timeout: 10_000 }).toBe(E.REBALANCE_IN_PROGRESS);
    const aAgain = await join(3, joinRequest(group, { memberId: a.memberId, rebalanceTimeoutMs: 20_000 }));
    const b = await bJoin;
    expect([aAgain.errorCode, aAgain.generationId, b.errorCode, b.generationId]).toEqual([E.NONE, 2, E.NONE, 2]);

    // The group holds MAX_SIZE members now: a third is refused, by either JoinGroup path.
    expect(MAX_SIZE).toBe(2);
    for (const version of [3, 5]) {
      const c = await join(version, joinRequest(group));
      expect([c.errorCode, c.memberId], `JoinGroup v${version}`).toEqual([E.GROUP_MAX_SIZE_REACHED, '']);
    }
    // The two members are unharmed: they sync and the group is Stable with both.
    const bSync = sync(group, 2, b.memberId);
    const aSync = await sync(group, 2, a.memberId, [
      { memberId: a.memberId, assignment: encodeConsumerAssignment({ assignedPartitions: [{ topic: TOPIC, partitions: [0] }] }) },
      { memberId: b.memberId, assignment: encodeConsumerAssignment({ assignedPartitions: [{ topic: TOPIC, partitions: [1] }] }) },
    ]);
    expect([aSync.errorCode, (await bSync).errorCode]).toEqual([E.NONE, E.NONE]);
    const described = await describeGroup(broker.bootstrap, group);
    expect(described.state).toBe('Stable');
    expect(described.members.map((member) => member.partitions)).toEqual(expect.arrayContaining([[`${TOPIC}/0`], [`${TOPIC}/1`]]));
    expect(described.members).toHaveLength(2);
  });

  it('answers INVALID_GROUP_ID (24) to membership requests and FindCoordinator with an empty group id', async () => {
    for (const version of [0, 3, 4, 5]) expect((await join(version, joinRequest(''))).errorCode, `JoinGroup v${version}`).toBe(E.INVALID_GROUP_ID);
    expect((await sync('', 1, 'member')).errorCode).toBe(E.INVALID_GROUP_ID);
    expect((await heartbeat('', 1, 'member')).errorCode).toBe(E.INVALID_GROUP_ID);
    const left = await withConversation(broker.bootstrap, (conversation) => conversation.request(LeaveGroupApi, 3, { groupId: '', memberId: '', members: [{ memberId: 'member', groupInstanceId: null }] }));
    expect(left.errorCode).toBe(E.INVALID_GROUP_ID);
    const found = await withConversation(broker.bootstrap, (conversation) => conversation.request(FindCoordinatorApi, 2, { key: '', keyType: 0 }));
    expect(found.errorCode).toBe(E.INVALID_GROUP_ID);
  });

  it('answers MEMBER_ID_REQUIRED (79) only to JoinGroup v4+ without an instance id; v3 and static members join at once', async () => {
    for (const version of [4, 5]) {
      const group = `required-v${version}`;
      const first = await join(version, joinRequest(group));
      expect(first.errorCode).toBe(E.MEMBER_ID_REQUIRED);
      expect(first.memberId).toMatch(/^issue-16-[0-9a-f-]{36}$/);
      const second = await join(version, joinRequest(group, { memberId: first.memberId }));
      expect(second).toMatchObject({ errorCode: E.NONE, generationId: 1, memberId: first.memberId, leader: first.memberId });
    }
    const v3 = await join(3, joinRequest('direct-v3'));
    expect(v3).toMatchObject({ errorCode: E.NONE, generationId: 1 });
    expect(v3.memberId).toMatch(/^issue-16-[0-9a-f-]{36}$/);
    const staticMember = await join(5, joinRequest('direct-static', { groupInstanceId: 'instance-1' }));
    expect(staticMember).toMatchObject({ errorCode: E.NONE, generationId: 1 });
  });

  it('answers each of 10,000 unknown-member JoinGroup v4 with MEMBER_ID_REQUIRED and an id of its own, and forgets those ids after their session timeout', { timeout: 120_000 }, async () => {
    const group = 'flood';
    const FLOOD = 10_000;
    const CONNECTIONS = 4;
    const request = joinRequest(group, { sessionTimeoutMs: MIN_SESSION_MS });
    // Pipelined: each connection sends its share at once, then reads the answers in order.
    const answers = await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        const conversation = await Conversation.open(broker.broker.port);
        try {
          const ids = Array.from({ length: FLOOD / CONNECTIONS }, () => conversation.nextCorrelationId());
          conversation.send(Buffer.concat(ids.map((correlationId) => requestFrame(JoinGroupApi, 4, correlationId, request))));
          const responses: JoinGroupResponse[] = [];
          for (const correlationId of ids) responses.push(decodeResponse(JoinGroupApi, 4, await conversation.response(60_000), correlationId));
          return responses;
        } finally {
          conversation.close();
        }
      }),
    );
    const responses = answers.flat();
    expect(responses).toHaveLength(FLOOD);
    expect(responses.filter((response) => response.errorCode !== E.MEMBER_ID_REQUIRED)).toEqual([]);
    const memberIds = responses.map((response) => response.memberId);
    expect(new Set(memberIds).size).toBe(FLOOD);

    // A real member's join completes only when the group has no pending member left (Kafka's
    // hasAllMembersJoined), or after its rebalance timeout, here far longer than the wait: its
    // answer shows the pending ids have expired, and that none of them became a member.
    const real = await join(3, joinRequest(group, { rebalanceTimeoutMs: 600_000, sessionTimeoutMs: MAX_SESSION_MS }), 60_000);
    expect(real).toMatchObject({ errorCode: E.NONE, generationId: 1, leader: real.memberId });
    expect(real.members.map((member) => member.memberId)).toEqual([real.memberId]);

    // So a member coming back with one of those ids is unknown now.
    for (const memberId of [memberIds[0], memberIds[FLOOD / 2], memberIds[FLOOD - 1]]) {
      const late = await join(4, joinRequest(group, { memberId: memberId ?? '', sessionTimeoutMs: MIN_SESSION_MS }));
      expect([late.errorCode, late.memberId]).toEqual([E.UNKNOWN_MEMBER_ID, memberId]);
    }
  });
});
