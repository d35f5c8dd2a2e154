/**
 * The ACL matrix: a broker with authorizer=acl over real ZooKeeper, requests routed as three
 * principals — User:admin (a super user), User:alice (given ACLs along the way) and User:bob
 * (never given any). For each API, bob is refused with Kafka's exact code and the broker's state
 * is unchanged (read back as admin); alice, once she has the ACL Kafka requires, is served.
 * Then: deny beats allow, prefixed and wildcard patterns, implied operations, and ACLs added and
 * removed in ZooKeeper by `tributary acls` (a child process) reaching the broker through its watch.
 *
 * Until listeners authenticate (issue #21, SASL), identities are given to the router directly.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import { parseBrokerConfig } from '../../../src/broker/config.js';
import { AclOperation, AclPermission, CLUSTER_RESOURCE_NAME, PatternType, ResourceType, type AclBinding } from '../../../src/broker/security/acl.js';
import { createLogger } from '../../../src/common/logger.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import {
  AlterConfigsApi,
  CreateAclsApi,
  CreatePartitionsApi,
  CreateTopicsApi,
  DeleteAclsApi,
  DeleteGroupsApi,
  DeleteRecordsApi,
  DeleteTopicsApi,
  DescribeAclsApi,
  DescribeConfigsApi,
  DescribeGroupsApi,
  FetchApi,
  FindCoordinatorApi,
  HeartbeatApi,
  IncrementalAlterConfigsApi,
  InitProducerIdApi,
  JoinGroupApi,
  LeaveGroupApi,
  ListGroupsApi,
  ListOffsetsApi,
  MetadataApi,
  OffsetCommitApi,
  OffsetFetchApi,
  OffsetForLeaderEpochApi,
  ProduceApi,
  SyncGroupApi,
} from '../../../src/protocol/apis/index.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { LOOPBACK } from '../../services/network.js';
import { runTributary } from '../../support/cli.js';
import { identityOf, RoutedClient } from '../../support/routed-requests.js';
import { zookeeperAddress } from '../services.js';

const TOPIC_AUTHORIZATION_FAILED = KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED;
const GROUP_AUTHORIZATION_FAILED = KafkaErrorCode.GROUP_AUTHORIZATION_FAILED;
const CLUSTER_AUTHORIZATION_FAILED = KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED;
const TOPIC_RESOURCE = 2;
const BROKER_RESOURCE = 4;

const chroot = `/acl-matrix-${randomBytes(3).toString('hex')}`;
let broker: Broker;
let store: ZooKeeperStore;
let admin: RoutedClient;
let alice: RoutedClient;
let bob: RoutedClient;

beforeAll(async () => {
  const connect = `${zookeeperAddress().connectString}${chroot}`;
  store = await ZooKeeperStore.connect(connect);
  broker = await Broker.start({
    id: 1,
    listen: { host: LOOPBACK, port: 0 },
    dataDir: mkdtempSync(join(tmpdir(), 'tributary-acl-matrix-')),
    config: parseBrokerConfig({ authorizer: 'acl', 'super.users': 'User:admin', 'group.initial.rebalance.delay.ms': '0' }, 'test settings'),
    store: await ZooKeeperStore.connect(connect),
    logger: createLogger({ name: 'acl-matrix', level: 'silent' }),
    clusterId: 'acl-matrix',
  });
  admin = new RoutedClient(broker.requestRouter, identityOf('User:admin'));
  alice = new RoutedClient(broker.requestRouter, identityOf('User:alice'));
  bob = new RoutedClient(broker.requestRouter, identityOf('User:bob'));
  const created = await admin.request(CreateTopicsApi, 4, {
    topics: ['orders', 'secret', 'doomed', 'logs-a', 'other'].map((name) => ({ name, numPartitions: name === 'orders' ? 2 : 1, replicationFactor: 1, assignments: [], configs: [] })),
    timeoutMs: 10_000,
    validateOnly: false,
  });
  expect(created.topics.map((topic) => topic.errorCode)).toEqual([0, 0, 0, 0, 0]);
  expect(await produce(admin, 'orders', 0)).toEqual([0]);
}, 120_000);

afterAll(async () => {
  await broker?.stop();
  await store?.deleteRecursive(chroot).catch(() => {});
  await store?.close();
});

function allow(resourceType: ResourceType, resourceName: string, operation: AclOperation, principal = 'User:alice', patternType: AclBinding['patternType'] = PatternType.LITERAL): AclBinding {
  return { resourceType, resourceName, patternType, principal, host: '*', operation, permission: AclPermission.ALLOW };
}

function deny(resourceType: ResourceType, resourceName: string, operation: AclOperation, principal = 'User:alice'): AclBinding {
  return { ...allow(resourceType, resourceName, operation, principal), permission: AclPermission.DENY };
}

/** Stores ACLs through CreateAcls as the super user (the broker has read them back when it answers). */
async function grant(...bindings: AclBinding[]): Promise<void> {
  const answer = await admin.request(CreateAclsApi, 1, {
    creations: bindings.map((binding) => ({ ...binding, resourcePatternType: binding.patternType, permissionType: binding.permission })),
  });
  expect(answer.results.map((result) => result.errorCode)).toEqual(bindings.map(() => 0));
}

async function produce(client: RoutedClient, topic: string, partition: number): Promise<number[]> {
  const answer = await client.request(ProduceApi, 8, {
    transactionalId: null,
    acks: -1,
    timeoutMs: 10_000,
    topicData: [{ name: topic, partitionData: [{ index: partition, records: encodeRecordBatch([{ value: Buffer.from(`from ${client.identity.principal}`) }]) }] }],
  });
  return answer.responses.flatMap((response) => response.partitionResponses.map((p) => p.errorCode));
}

async function endOffset(topic: string, partition: number): Promise<bigint> {
  const answer = await admin.request(ListOffsetsApi, 5, { replicaId: -1, isolationLevel: 0, topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp: -1n }] }] });
  return answer.topics[0]!.partitions[0]!.offset;
}

async function fetchCodes(client: RoutedClient, topic: string): Promise<{ errorCode: number; bytes: number }[]> {
  const answer = await client.request(FetchApi, 11, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1_048_576,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [{ topic, partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: 0n, logStartOffset: -1n, partitionMaxBytes: 1_048_576 }] }],
    forgottenTopicsData: [],
    rackId: '',
  });
  return answer.responses.flatMap((response) => response.partitions.map((p) => ({ errorCode: p.errorCode, bytes: p.records === null ? 0 : (p.records as Buffer).length })));
}

async function topicNames(client: RoutedClient): Promise<string[]> {
  const answer = await client.request(MetadataApi, 8, { topics: null, allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false });
  return answer.topics.map((topic) => topic.name).sort();
}

async function partitionCount(topic: string): Promise<number> {
  const answer = await admin.request(MetadataApi, 8, { topics: [{ name: topic }], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false });
  return answer.topics[0]?.errorCode === 0 ? answer.topics[0].partitions.length : 0;
}

async function retentionOf(topic: string): Promise<string | null | undefined> {
  const answer = await admin.request(DescribeConfigsApi, 3, { resources: [{ resourceType: TOPIC_RESOURCE, resourceName: topic, configurationKeys: ['retention.ms'] }], includeSynonyms: false, includeDocumentation: false });
  return answer.results[0]?.configs[0]?.value;
}

async function groupState(group: string): Promise<string> {
  const answer = await admin.request(DescribeGroupsApi, 4, { groups: [group], includeAuthorizedOperations: false });
  return answer.groups[0]!.groupState;
}

async function aclCount(): Promise<number> {
  const answer = await admin.request(DescribeAclsApi, 1, { resourceTypeFilter: 1, resourceNameFilter: null, patternTypeFilter: 1, principalFilter: null, hostFilter: null, operation: 1, permissionType: 1 });
  return answer.resources.reduce((sum, resource) => sum + resource.acls.length, 0);
}

function erinAt(host: string): RoutedClient {
  return new RoutedClient(broker.requestRouter, identityOf('User:erin', host));
}

function joinRequest(group: string) {
  return { groupId: group, sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 10_000, memberId: '', groupInstanceId: null, protocolType: 'acl-test', protocols: [{ name: 'only', metadata: Buffer.from('m') }] };
}

describe('ACL matrix', () => {
  it('Produce: WRITE on the topic, else TOPIC_AUTHORIZATION_FAILED and nothing appended', async () => {
    const before = await endOffset('orders', 1);
    expect(await produce(bob, 'orders', 1)).toEqual([TOPIC_AUTHORIZATION_FAILED]);
    expect(await produce(alice, 'orders', 1)).toEqual([TOPIC_AUTHORIZATION_FAILED]);
    expect(await endOffset('orders', 1)).toBe(before);
    await grant(allow(ResourceType.TOPIC, 'orders', AclOperation.WRITE));
    expect(await produce(alice, 'orders', 1)).toEqual([0]);
    expect(await produce(bob, 'orders', 1)).toEqual([TOPIC_AUTHORIZATION_FAILED]);
    expect(await endOffset('orders', 1)).toBe(before + 1n);
  });

  it('Fetch: READ on the topic (WRITE is not enough)', async () => {
    expect(await fetchCodes(bob, 'orders')).toEqual([{ errorCode: TOPIC_AUTHORIZATION_FAILED, bytes: 0 }]);
    expect(await fetchCodes(alice, 'orders')).toEqual([{ errorCode: TOPIC_AUTHORIZATION_FAILED, bytes: 0 }]);
    await grant(allow(ResourceType.TOPIC, 'orders', AclOperation.READ));
    const [served] = await fetchCodes(alice, 'orders');
    expect(served?.errorCode).toBe(0);
    expect(served?.bytes).toBeGreaterThan(0);
  });

  it('Fetch as a follower (ReplicaId ≥ 0): CLUSTER_ACTION on the cluster', async () => {
    const follower = async (client: RoutedClient): Promise<number[]> => {
      const answer = await client.request(FetchApi, 11, {
        replicaId: 7,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1_048_576,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [{ topic: 'orders', partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: 0n, logStartOffset: -1n, partitionMaxBytes: 1_048_576 }] }],
        forgottenTopicsData: [],
        rackId: '',
      });
      return answer.responses.flatMap((response) => response.partitions.map((p) => p.errorCode));
    };
    // alice may READ orders, but a replica's fetch needs the cluster permission.
    expect(await follower(alice)).toEqual([TOPIC_AUTHORIZATION_FAILED]);
    expect(await follower(bob)).toEqual([TOPIC_AUTHORIZATION_FAILED]);
  });

  it('ListOffsets and OffsetForLeaderEpoch: DESCRIBE on the topic, implied by READ', async () => {
    const listOffsets = async (client: RoutedClient): Promise<number> =>
      (await client.request(ListOffsetsApi, 5, { replicaId: -1, isolationLevel: 0, topics: [{ name: 'orders', partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }] }] })).topics[0]!.partitions[0]!
        .errorCode;
    const epochs = async (client: RoutedClient): Promise<number> =>
      (await client.request(OffsetForLeaderEpochApi, 3, { replicaId: -1, topics: [{ topic: 'orders', partitions: [{ partition: 0, currentLeaderEpoch: -1, leaderEpoch: 0 }] }] })).topics[0]!.partitions[0]!.errorCode;
    expect(await listOffsets(bob)).toBe(TOPIC_AUTHORIZATION_FAILED);
    expect(await epochs(bob)).toBe(TOPIC_AUTHORIZATION_FAILED);
    expect(await listOffsets(alice)).toBe(0);
    expect(await epochs(alice)).toBe(0);
  });

  it('Metadata: lists only topics the principal may DESCRIBE; a named one is TOPIC_AUTHORIZATION_FAILED', async () => {
    expect(await topicNames(bob)).toEqual([]);
    expect(await topicNames(alice)).toEqual(['orders']);
    expect(await topicNames(admin)).toEqual(['doomed', 'logs-a', 'orders', 'other', 'secret']);
    const named = await bob.request(MetadataApi, 8, { topics: [{ name: 'orders' }], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false });
    expect(named.topics.map((topic) => [topic.name, topic.errorCode, topic.partitions.length])).toEqual([['orders', TOPIC_AUTHORIZATION_FAILED, 0]]);
  });

  it('Metadata auto-creation: DESCRIBE is not enough, CREATE on the topic (or cluster) is needed', async () => {
    const ask = (client: RoutedClient, name: string) =>
      client.request(MetadataApi, 8, { topics: [{ name }], allowAutoTopicCreation: true, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false });
    expect((await ask(bob, 'auto-x')).topics[0]?.errorCode).toBe(TOPIC_AUTHORIZATION_FAILED);
    await grant(allow(ResourceType.TOPIC, 'auto-x', AclOperation.DESCRIBE));
    expect((await ask(alice, 'auto-x')).topics[0]?.errorCode).toBe(TOPIC_AUTHORIZATION_FAILED);
    expect(await partitionCount('auto-x')).toBe(0);
    await grant(allow(ResourceType.TOPIC, 'auto-x', AclOperation.CREATE));
    expect((await ask(alice, 'auto-x')).topics[0]?.errorCode).toBe(0);
    expect(await partitionCount('auto-x')).toBe(1);
  });

  it('CreateTopics, CreatePartitions, DeleteTopics: CREATE, ALTER, DELETE on the topic', async () => {
    const create = async (client: RoutedClient, name: string): Promise<number> =>
      (await client.request(CreateTopicsApi, 4, { topics: [{ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 10_000, validateOnly: false })).topics[0]!.errorCode;
    const grow = async (client: RoutedClient, name: string, count: number): Promise<number> =>
      (await client.request(CreatePartitionsApi, 1, { topics: [{ name, count, assignments: null }], timeoutMs: 10_000, validateOnly: false })).results[0]!.errorCode;
    const remove = async (client: RoutedClient, name: string): Promise<number> => (await client.request(DeleteTopicsApi, 3, { topicNames: [name], timeoutMs: 10_000 })).responses[0]!.errorCode;

    expect(await create(bob, 'alice-new')).toBe(TOPIC_AUTHORIZATION_FAILED);
    expect(await partitionCount('alice-new')).toBe(0);
    expect(await grow(bob, 'orders', 3)).toBe(TOPIC_AUTHORIZATION_FAILED);
    expect(await grow(alice, 'orders', 3)).toBe(TOPIC_AUTHORIZATION_FAILED);
    expect(await partitionCount('orders')).toBe(2);
    expect(await remove(bob, 'doomed')).toBe(TOPIC_AUTHORIZATION_FAILED);
    expect(await remove(bob, 'no-such-topic')).toBe(TOPIC_AUTHORIZATION_FAILED); // as Kafka: authorization first
    expect(await partitionCount('doomed')).toBe(1);

    await grant(allow(ResourceType.TOPIC, 'alice-new', AclOperation.CREATE), allow(ResourceType.TOPIC, 'orders', AclOperation.ALTER), allow(ResourceType.TOPIC, 'doomed', AclOperation.DELETE));
    expect(await create(alice, 'alice-new')).toBe(0);
    expect(await grow(alice, 'orders', 3)).toBe(0);
    expect(await remove(alice, 'doomed')).toBe(0);
    expect(await partitionCount('alice-new')).toBe(1);
    expect(await partitionCount('orders')).toBe(3);
  });

  it('DeleteRecords: DELETE on the topic (DESCRIBE is not enough), else TOPIC_AUTHORIZATION_FAILED and the log start unchanged', async () => {
    // A topic of its own: the ACLs granted here must not reach the other tests' topics.
    const created = await admin.request(CreateTopicsApi, 4, { topics: [{ name: 'trimmed', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 10_000, validateOnly: false });
    expect(created.topics[0]?.errorCode).toBe(0);
    expect(await produce(admin, 'trimmed', 0)).toEqual([0]);
    expect(await produce(admin, 'trimmed', 0)).toEqual([0]);
    const deleteRecords = async (client: RoutedClient, topic: string): Promise<[number, bigint]> => {
      const answer = await client.request(DeleteRecordsApi, 1, { topics: [{ name: topic, partitions: [{ partitionIndex: 0, offset: 1n }] }], timeoutMs: 10_000 });
      const result = answer.topics[0]!.partitions[0]!;
      return [result.errorCode, result.lowWatermark];
    };
    const earliest = async (): Promise<bigint> =>
      (await admin.request(ListOffsetsApi, 5, { replicaId: -1, isolationLevel: 0, topics: [{ name: 'trimmed', partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -2n }] }] })).topics[0]!.partitions[0]!.offset;
    expect(await deleteRecords(bob, 'trimmed')).toEqual([TOPIC_AUTHORIZATION_FAILED, -1n]);
    expect(await deleteRecords(bob, 'no-such-topic')).toEqual([TOPIC_AUTHORIZATION_FAILED, -1n]); // as Kafka: authorization first
    await grant(allow(ResourceType.TOPIC, 'trimmed', AclOperation.DESCRIBE));
    expect(await deleteRecords(alice, 'trimmed')).toEqual([TOPIC_AUTHORIZATION_FAILED, -1n]);
    expect(await earliest()).toBe(0n);
    await grant(allow(ResourceType.TOPIC, 'trimmed', AclOperation.DELETE));
    expect(await deleteRecords(alice, 'trimmed')).toEqual([0, 1n]);
    expect(await deleteRecords(bob, 'trimmed')).toEqual([TOPIC_AUTHORIZATION_FAILED, -1n]);
    expect(await earliest()).toBe(1n);
  });

  it('DescribeConfigs / AlterConfigs / IncrementalAlterConfigs: DESCRIBE_CONFIGS and ALTER_CONFIGS, on the topic or the cluster', async () => {
    const describeCodes = async (client: RoutedClient): Promise<number[]> =>
      (
        await client.request(DescribeConfigsApi, 3, {
          resources: [
            { resourceType: TOPIC_RESOURCE, resourceName: 'orders', configurationKeys: null },
            { resourceType: BROKER_RESOURCE, resourceName: '1', configurationKeys: null },
          ],
          includeSynonyms: false,
          includeDocumentation: false,
        })
      ).results.map((result) => result.errorCode);
    const alter = async (client: RoutedClient, value: string): Promise<number> =>
      (await client.request(AlterConfigsApi, 1, { resources: [{ resourceType: TOPIC_RESOURCE, resourceName: 'orders', configs: [{ name: 'retention.ms', value }] }], validateOnly: false })).responses[0]!.errorCode;
    const alterIncrementally = async (client: RoutedClient, value: string): Promise<number> =>
      (await client.request(IncrementalAlterConfigsApi, 0, { resources: [{ resourceType: TOPIC_RESOURCE, resourceName: 'orders', configs: [{ name: 'retention.ms', configOperation: 0, value }] }], validateOnly: false }))
        .responses[0]!.errorCode;

    expect(await describeCodes(bob)).toEqual([TOPIC_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED]);
    const before = await retentionOf('orders');
    expect(await alter(bob, '1000')).toBe(TOPIC_AUTHORIZATION_FAILED);
    expect(await alterIncrementally(bob, '1000')).toBe(TOPIC_AUTHORIZATION_FAILED);
    expect(await retentionOf('orders')).toBe(before);

    // ALTER_CONFIGS implies DESCRIBE_CONFIGS on the same resource.
    await grant(allow(ResourceType.TOPIC, 'orders', AclOperation.ALTER_CONFIGS), allow(ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, AclOperation.DESCRIBE_CONFIGS));
    expect(await describeCodes(alice)).toEqual([0, 0]);
    expect(await alter(alice, '7200000')).toBe(0);
    expect(await alterIncrementally(alice, '3600000')).toBe(0);
    expect(await retentionOf('orders')).toBe('3600000');
  });

  it('InitProducerId: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic; else CLUSTER_AUTHORIZATION_FAILED', async () => {
    const init = async (client: RoutedClient): Promise<number> => (await client.request(InitProducerIdApi, 1, { transactionalId: null, transactionTimeoutMs: 60_000 })).errorCode;
    expect(await init(bob)).toBe(CLUSTER_AUTHORIZATION_FAILED);
    expect(await init(alice)).toBe(0); // WRITE on orders (Kafka 2.8+)
    const carol = new RoutedClient(broker.requestRouter, identityOf('User:carol'));
    expect(await init(carol)).toBe(CLUSTER_AUTHORIZATION_FAILED);
    await grant(allow(ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, AclOperation.IDEMPOTENT_WRITE, 'User:carol'));
    expect(await init(carol)).toBe(0);
  });

  it('group APIs: FindCoordinator DESCRIBE, Join/Sync/Heartbeat/Leave READ, DescribeGroups DESCRIBE, DeleteGroups DELETE', async () => {
    const find = async (client: RoutedClient): Promise<number> => (await client.request(FindCoordinatorApi, 2, { key: 'billing', keyType: 0 })).errorCode;
    expect(await find(bob)).toBe(GROUP_AUTHORIZATION_FAILED);
    const refusedJoin = await bob.request(JoinGroupApi, 3, joinRequest('billing'));
    expect(refusedJoin.errorCode).toBe(GROUP_AUTHORIZATION_FAILED);
    expect(await groupState('billing')).toBe('Dead'); // no group was made
    expect((await bob.request(SyncGroupApi, 3, { groupId: 'billing', generationId: 1, memberId: 'm', groupInstanceId: null, assignments: [] })).errorCode).toBe(GROUP_AUTHORIZATION_FAILED);
    expect((await bob.request(HeartbeatApi, 3, { groupId: 'billing', generationId: 1, memberId: 'm', groupInstanceId: null })).errorCode).toBe(GROUP_AUTHORIZATION_FAILED);
    expect((await bob.request(LeaveGroupApi, 3, { groupId: 'billing', memberId: '', members: [{ memberId: 'm', groupInstanceId: null }] })).errorCode).toBe(GROUP_AUTHORIZATION_FAILED);

    await grant(allow(ResourceType.GROUP, 'billing', AclOperation.READ));
    expect(await find(alice)).toBe(0); // READ implies DESCRIBE
    const joined = await alice.request(JoinGroupApi, 3, joinRequest('billing'));
    expect(joined.errorCode).toBe(0);
    const synced = await alice.request(SyncGroupApi, 3, { groupId: 'billing', generationId: joined.generationId, memberId: joined.memberId, groupInstanceId: null, assignments: [{ memberId: joined.memberId, assignment: Buffer.from('a') }] });
    expect(synced.errorCode).toBe(0);
    expect((await alice.request(HeartbeatApi, 3, { groupId: 'billing', generationId: joined.generationId, memberId: joined.memberId, groupInstanceId: null })).errorCode).toBe(0);
    // A member's heartbeat as bob (say, a stolen member id) is still refused.
    expect((await bob.request(HeartbeatApi, 3, { groupId: 'billing', generationId: joined.generationId, memberId: joined.memberId, groupInstanceId: null })).errorCode).toBe(GROUP_AUTHORIZATION_FAILED);

    // OffsetCommit: READ on the group and on each topic; the refused topic is left out.
    const commit = await alice.request(OffsetCommitApi, 7, {
      groupId: 'billing',
      generationIdOrMemberEpoch: joined.generationId,
      memberId: joined.memberId,
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: [
        { name: 'orders', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }] },
        { name: 'secret', partitions: [{ partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, committedMetadata: null }] },
      ],
    });
    expect(commit.topics.map((topic) => [topic.name, topic.partitions[0]!.errorCode])).toEqual([
      ['orders', 0],
      ['secret', TOPIC_AUTHORIZATION_FAILED],
    ]);
    const bobCommit = await bob.request(OffsetCommitApi, 7, {
      groupId: 'billing',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: [{ name: 'orders', partitions: [{ partitionIndex: 1, committedOffset: 9n, committedLeaderEpoch: -1, committedMetadata: null }] }],
    });
    expect(bobCommit.topics[0]!.partitions[0]!.errorCode).toBe(GROUP_AUTHORIZATION_FAILED);

    // OffsetFetch: DESCRIBE on the group; all topics → only those the principal may DESCRIBE.
    expect((await bob.request(OffsetFetchApi, 5, { groupId: 'billing', topics: null })).errorCode).toBe(GROUP_AUTHORIZATION_FAILED);
    const fetched = await alice.request(OffsetFetchApi, 5, { groupId: 'billing', topics: null });
    expect(fetched.topics.map((topic) => [topic.name, topic.partitions.map((p) => p.committedOffset)])).toEqual([['orders', [1n]]]);
    const named = await alice.request(OffsetFetchApi, 5, { groupId: 'billing', topics: [{ name: 'secret', partitionIndexes: [0] }] });
    expect(named.topics[0]!.partitions[0]!.errorCode).toBe(TOPIC_AUTHORIZATION_FAILED);

    // DescribeGroups and ListGroups.
    expect((await bob.request(DescribeGroupsApi, 4, { groups: ['billing'], includeAuthorizedOperations: false })).groups[0]!.errorCode).toBe(GROUP_AUTHORIZATION_FAILED);
    const described = (await alice.request(DescribeGroupsApi, 4, { groups: ['billing'], includeAuthorizedOperations: true })).groups[0]!;
    expect([described.errorCode, described.groupState, described.authorizedOperations]).toEqual([0, 'Stable', (1 << AclOperation.READ) | (1 << AclOperation.DESCRIBE)]);
    expect((await bob.request(ListGroupsApi, 2, {})).groups).toEqual([]);
    expect((await alice.request(ListGroupsApi, 2, {})).groups.map((group) => group.groupId)).toEqual(['billing']);

    // Leave, then DeleteGroups: DELETE on the group.
    expect((await alice.request(LeaveGroupApi, 3, { groupId: 'billing', memberId: '', members: [{ memberId: joined.memberId, groupInstanceId: null }] })).errorCode).toBe(0);
    const remove = async (client: RoutedClient): Promise<number> => (await client.request(DeleteGroupsApi, 1, { groupsNames: ['billing'] })).results[0]!.errorCode;
    expect(await remove(bob)).toBe(GROUP_AUTHORIZATION_FAILED);
    expect(await remove(alice)).toBe(GROUP_AUTHORIZATION_FAILED);
    expect(await groupState('billing')).toBe('Empty');
    await grant(allow(ResourceType.GROUP, 'billing', AclOperation.DELETE));
    expect(await remove(alice)).toBe(0);
    expect(await groupState('billing')).toBe('Dead');
  });

  it('DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls ALTER; nothing changes when refused', async () => {
    const count = await aclCount();
    const filter = { resourceTypeFilter: 1, resourceNameFilter: null, patternTypeFilter: 1, principalFilter: null, hostFilter: null, operation: 1, permissionType: 1 };
    const described = await bob.request(DescribeAclsApi, 1, filter);
    expect([described.errorCode, described.resources]).toEqual([CLUSTER_AUTHORIZATION_FAILED, []]);
    const created = await bob.request(CreateAclsApi, 1, { creations: [{ resourceType: 2, resourceName: 'orders', resourcePatternType: 3, principal: 'User:bob', host: '*', operation: 2, permissionType: 3 }] });
    expect(created.results.map((result) => result.errorCode)).toEqual([CLUSTER_AUTHORIZATION_FAILED]);
    const deleted = await bob.request(DeleteAclsApi, 1, { filters: [filter] });
    expect(deleted.filterResults.map((result) => [result.errorCode, result.matchingAcls.length])).toEqual([[CLUSTER_AUTHORIZATION_FAILED, 0]]);
    expect(await aclCount()).toBe(count);
    expect(await produce(bob, 'orders', 0)).toEqual([TOPIC_AUTHORIZATION_FAILED]); // bob's ACL was not created

    await grant(allow(ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, AclOperation.ALTER));
    // ALTER implies DESCRIBE: alice may now list, add and remove ACLs.
    expect((await alice.request(DescribeAclsApi, 1, filter)).errorCode).toBe(0);
    const mine = await alice.request(CreateAclsApi, 1, { creations: [{ resourceType: 2, resourceName: 'other', resourcePatternType: 3, principal: 'User:dave', host: '*', operation: 3, permissionType: 3 }] });
    expect(mine.results[0]!.errorCode).toBe(0);
    const removed = await alice.request(DeleteAclsApi, 1, { filters: [{ ...filter, principalFilter: 'User:dave' }] });
    expect(removed.filterResults[0]!.matchingAcls.map((acl) => [acl.resourceName, acl.principal, acl.operation])).toEqual([['other', 'User:dave', 3]]);
  });

  it('deny beats allow: a DENY on the topic refuses what an ALLOW on * (or ALL) grants', async () => {
    await grant(allow(ResourceType.TOPIC, '*', AclOperation.ALL, 'User:erin'));
    const erin = new RoutedClient(broker.requestRouter, identityOf('User:erin'));
    expect(await produce(erin, 'secret', 0)).toEqual([0]);
    await grant(deny(ResourceType.TOPIC, 'secret', AclOperation.WRITE, 'User:erin'));
    expect(await produce(erin, 'secret', 0)).toEqual([TOPIC_AUTHORIZATION_FAILED]);
    expect(await produce(erin, 'other', 0)).toEqual([0]);
    // A DENY of WRITE does not deny DESCRIBE, which READ (under ALL) still implies.
    expect(await topicNames(erin)).toContain('secret');
    // A deny for every principal (User:*) from one host applies to erin there only.
    await grant({ ...deny(ResourceType.TOPIC, 'other', AclOperation.ALL, 'User:*'), host: '10.0.0.9' });
    expect(await produce(erinAt('10.0.0.9'), 'other', 0)).toEqual([TOPIC_AUTHORIZATION_FAILED]);
    expect(await produce(erin, 'other', 0)).toEqual([0]);
  });

  it('prefixed patterns: an ACL on the prefix logs- covers logs-a and nothing else', async () => {
    const frank = new RoutedClient(broker.requestRouter, identityOf('User:frank'));
    await grant(allow(ResourceType.TOPIC, 'logs-', AclOperation.WRITE, 'User:frank', PatternType.PREFIXED));
    expect(await produce(frank, 'logs-a', 0)).toEqual([0]);
    expect(await produce(frank, 'other', 0)).toEqual([TOPIC_AUTHORIZATION_FAILED]);
    expect(await topicNames(frank)).toEqual(['logs-a']); // WRITE implies DESCRIBE
  });

  it('an ACL written to ZooKeeper by tributary acls (another process) reaches the broker through its watch', async () => {
    const grace = new RoutedClient(broker.requestRouter, identityOf('User:grace'));
    expect(await topicNames(grace)).toEqual([]);
    const zookeeper = `${zookeeperAddress().connectString}${chroot}`;
    const added = await runTributary(['acls', 'add', '--zookeeper', zookeeper, '--allow-principal', 'User:grace', '--operation', 'Describe', '--topic', 'other']);
    expect(added.status, added.output).toBe(0);
    expect(added.stdout).toContain('(principal=User:grace, host=*, operation=DESCRIBE, permissionType=ALLOW)');
    // The stored node is Kafka's JSON at Kafka's path.
    const node = await store.get('/kafka-acl/Topic/other');
    const json = JSON.parse(node!.data.toString()) as { version: number; acls: unknown[] };
    expect(json.version).toBe(1);
    expect(json.acls).toContainEqual({ principal: 'User:grace', permissionType: 'Allow', operation: 'Describe', host: '*' });
    for (let attempt = 0; attempt < 200 && (await topicNames(grace)).length === 0; attempt += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await topicNames(grace)).toEqual(['other']);
    const listed = await runTributary(['acls', 'list', '--zookeeper', zookeeper, '--principal', 'User:grace']);
    expect([listed.status, listed.stdout]).toEqual([
      0,
      'Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=other, patternType=LITERAL)`:\n\t(principal=User:grace, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n',
    ]);
    const removed = await runTributary(['acls', 'remove', '--zookeeper', zookeeper, '--allow-principal', 'User:grace', '--topic', 'other']);
    expect(removed.status, removed.output).toBe(0);
    for (let attempt = 0; attempt < 200 && (await topicNames(grace)).length > 0; attempt += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await topicNames(grace)).toEqual([]);
    // The other ACLs of the topic stay: only grace's entry was removed.
    expect(await produce(erinAt('10.0.0.9'), 'other', 0)).toEqual([TOPIC_AUTHORIZATION_FAILED]);
  });
});
