/**
 * Broker-coordinated consumer groups (the groups of kafkajs, librdkafka, Java clients) seen and
 * changed over the Kafka protocol, as kafka-consumer-groups.sh does it: ListGroups on every
 * broker, FindCoordinator, then DescribeGroups, OffsetFetch, OffsetCommit and DeleteGroups at the
 * group's coordinator, and ListOffsets at the partition leaders for the log ends. This is the only
 * way to reach the groups of a standalone broker, whose coordination store lives in its process.
 *
 * Offsets are reset through the coordinator with a "simple" commit (generation −1, member id ""),
 * which it accepts only while the group has no member, so its view of the group stays right and
 * a member that joins meanwhile wins. Nothing here writes the registry directly.
 */
import { TributaryError } from '../common/errors.js';
import { DeleteGroupsApi } from '../protocol/apis/delete-groups.js';
import { DescribeGroupsApi, type DescribeGroupsResponseGroup } from '../protocol/apis/describe-groups.js';
import { FindCoordinatorApi } from '../protocol/apis/find-coordinator.js';
import { ListGroupsApi } from '../protocol/apis/list-groups.js';
import { OffsetCommitApi } from '../protocol/apis/offset-commit.js';
import { OffsetFetchApi } from '../protocol/apis/offset-fetch.js';
import { CONSUMER_PROTOCOL_TYPE, decodeConsumerAssignment, type ConsumerProtocolTopicPartitions } from '../protocol/consumer-protocol.js';
import { KafkaErrorCode, kafkaErrorName } from '../protocol/kafka-errors.js';
import { ClusterClient, sleep, type BrokerMetadata } from './cluster-client.js';
import type { ClientSecurity } from './security-config.js';
import type { KafkaConnection } from './connection.js';
import type { GroupPartition } from './group-admin.js';
import { chooseResetOffsets, type ResetTarget } from './offset-reset.js';
import { SimpleConsumer } from './simple-consumer.js';

const FIND_COORDINATOR_VERSION = 2;
const LIST_GROUPS_VERSION = 2;
const DESCRIBE_GROUPS_VERSION = 4;
const OFFSET_FETCH_VERSION = 5;
const OFFSET_COMMIT_VERSION = 7;
const DELETE_GROUPS_VERSION = 1;
const GROUP_KEY_TYPE = 0;

/** Tries of a request whose coordinator moved, is loading, or was not reachable. */
const COORDINATOR_ATTEMPTS = 8;
const COORDINATOR_BACKOFF_MS = 250;

/** The answers that mean "ask FindCoordinator again, a little later". */
const COORDINATOR_ERRORS: ReadonlySet<number> = new Set([KafkaErrorCode.NOT_COORDINATOR, KafkaErrorCode.COORDINATOR_NOT_AVAILABLE, KafkaErrorCode.COORDINATOR_LOAD_IN_PROGRESS]);
/** Failures of the connection to a coordinator: find it again (it may have stopped). */
const CONNECTION_ERRORS: ReadonlySet<string> = new Set(['CONNECTION_LOST', 'REQUEST_TIMED_OUT', 'BROKER_UNREACHABLE', 'BROKER_NOT_AVAILABLE']);
/** A group may have its offsets changed, or be deleted, only in these states. */
const IDLE_STATES: ReadonlySet<string> = new Set(['Empty', 'Dead']);

export interface BrokerGroupListing {
  readonly group: string;
  readonly protocolType: string;
  /** From DescribeGroups; undefined when the coordinator did not answer. */
  readonly state: string | undefined;
  readonly members: number | undefined;
  readonly coordinator: number;
}

export interface BrokerGroupMember {
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly clientId: string;
  readonly clientHost: string;
  /** The partitions assigned to it, decoded from its assignment bytes; undefined when they could not be. */
  readonly assignment: readonly ConsumerProtocolTopicPartitions[] | undefined;
  /** Why `assignment` is undefined (no assignment yet, another protocol, undecodable bytes). */
  readonly assignmentNote: string | undefined;
}

export interface BrokerGroupDescription {
  readonly group: string;
  readonly state: string;
  readonly protocolType: string;
  /** The chosen assignor (Stable only), e.g. "range" or "roundrobin"; "" otherwise. */
  readonly protocol: string;
  readonly coordinator: BrokerMetadata;
  readonly members: readonly BrokerGroupMember[];
  /** Every partition of each topic the group has offsets for or is assigned; owner is a member id. */
  readonly partitions: readonly GroupPartition[];
}

export interface BrokerGroupList {
  readonly groups: readonly BrokerGroupListing[];
  /** Brokers that did not answer ListGroups: their groups are missing from `groups`. */
  readonly unanswered: readonly { readonly broker: string; readonly reason: string }[];
}

export class BrokerGroupAdmin {
  private readonly coordinators = new Map<string, number>();

  constructor(private readonly cluster: ClusterClient) {}

  /** An admin on its own cluster client (closed by close()). */
  static async connect(bootstrap: readonly string[], security?: ClientSecurity): Promise<BrokerGroupAdmin> {
    const cluster = await ClusterClient.connect({ bootstrap, clientId: 'tributary-groups', allowAutoTopicCreation: false, metadataRetries: 3, ...(security === undefined ? {} : { security }) });
    return new BrokerGroupAdmin(cluster);
  }

  close(): void {
    this.cluster.close();
  }

  /** Every group the brokers coordinate (ListGroups on each broker), with its state. */
  async list(): Promise<BrokerGroupList> {
    await this.cluster.refreshMetadata([]);
    const listed = new Map<string, BrokerGroupListing>();
    const unanswered: { broker: string; reason: string }[] = [];
    for (const broker of [...this.cluster.knownBrokers()].sort((a, b) => a.nodeId - b.nodeId)) {
      const where = `broker ${broker.nodeId} (${broker.host}:${broker.port})`;
      let connection: KafkaConnection;
      let groups: { groupId: string; protocolType: string }[];
      try {
        connection = await this.cluster.connectionTo(broker.nodeId);
        const response = await connection.request(ListGroupsApi, LIST_GROUPS_VERSION, {});
        if (response.errorCode !== KafkaErrorCode.NONE) {
          unanswered.push({ broker: where, reason: kafkaErrorName(response.errorCode) });
          continue;
        }
        groups = [...response.groups];
      } catch (error) {
        unanswered.push({ broker: where, reason: error instanceof Error ? error.message : String(error) });
        continue;
      }
      if (groups.length === 0) continue;
      // The broker that lists a group coordinates it: ask it for their states in one request.
      const states = new Map<string, DescribeGroupsResponseGroup>();
      try {
        const described = await connection.request(DescribeGroupsApi, DESCRIBE_GROUPS_VERSION, { groups: groups.map((group) => group.groupId), includeAuthorizedOperations: false });
        for (const group of described.groups) if (group.errorCode === KafkaErrorCode.NONE) states.set(group.groupId, group);
      } catch {
        // The states stay unknown; the groups are still listed.
      }
      for (const { groupId, protocolType } of groups) {
        let state = states.get(groupId);
        if (state === undefined) state = await this.describeRaw(groupId).catch(() => undefined);
        listed.set(groupId, { group: groupId, protocolType, state: state?.groupState, members: state?.members.length, coordinator: broker.nodeId });
      }
    }
    return { groups: [...listed.values()].sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0)), unanswered };
  }

  /** State, protocol, members with their assignments, and per partition the offsets, lag and owner. */
  async describe(group: string): Promise<BrokerGroupDescription> {
    const { value: described, coordinator } = await this.atCoordinator(group, async (connection, at) => ({ value: await describeAt(connection, group), coordinator: at }));
    const committed = await this.fetchOffsets(group, null);
    if (described.groupState === 'Dead' && described.members.length === 0 && committed.size === 0) throw groupNotFound(group);
    const members = described.members.map((member): BrokerGroupMember => {
      const { assignment, note } = decodeAssignment(described.protocolType, member.memberAssignment);
      return {
        memberId: member.memberId,
        groupInstanceId: member.groupInstanceId,
        clientId: member.clientId,
        clientHost: member.clientHost,
        assignment,
        assignmentNote: note,
      };
    });
    const owners = new Map<string, string>();
    for (const member of members) for (const { topic, partitions } of member.assignment ?? []) for (const partition of partitions) owners.set(`${topic}/${partition}`, member.memberId);
    const known = new Map<string, Set<number>>();
    for (const key of [...committed.keys(), ...owners.keys()]) {
      const at = key.lastIndexOf('/');
      const topic = key.slice(0, at);
      const partitions = known.get(topic) ?? new Set<number>();
      partitions.add(Number(key.slice(at + 1)));
      known.set(topic, partitions);
    }
    const consumer = new SimpleConsumer(this.cluster, { retries: 1 });
    const partitions: GroupPartition[] = [];
    for (const topic of [...known.keys()].sort()) {
      // Every partition of the topic, as for a ZooKeeper group; those of a deleted topic as known.
      const numbers = await this.cluster.partitionsFor(topic).catch(() => [...(known.get(topic) ?? [])].sort((a, b) => a - b));
      for (const partition of numbers) {
        const offset = committed.get(`${topic}/${partition}`);
        const logEnd = await consumer.listOffset(topic, partition, 'latest').catch(() => undefined);
        const lag = offset !== undefined && logEnd !== undefined ? logEnd - offset : undefined;
        partitions.push({ topic, partition, owner: owners.get(`${topic}/${partition}`), committed: offset, logEnd, lag });
      }
    }
    return { group, state: described.groupState, protocolType: described.protocolType, protocol: described.protocolData, coordinator, members, partitions };
  }

  /**
   * Sets the group's offsets for `topic` through its coordinator; refused unless the group is
   * Empty or Dead (it has no member). Returns the new offsets.
   */
  async resetOffsets(group: string, topic: string, target: ResetTarget): Promise<Map<number, bigint>> {
    const described = await this.describeRaw(group);
    if (!IDLE_STATES.has(described.groupState)) throw groupActive(group, described, 'reset its offsets');
    const partitions = await this.partitionsOf(topic);
    const committed = target.kind === 'shift' ? await this.fetchOffsets(group, [{ name: topic, partitionIndexes: partitions }]) : new Map<string, bigint>();
    const chosen = await chooseResetOffsets(new SimpleConsumer(this.cluster), topic, partitions, target, async (partition) => committed.get(`${topic}/${partition}`));
    await this.atCoordinator(group, async (connection) => {
      const response = await connection.request(OffsetCommitApi, OFFSET_COMMIT_VERSION, {
        groupId: group,
        generationIdOrMemberEpoch: -1,
        memberId: '',
        groupInstanceId: null,
        retentionTimeMs: -1n,
        topics: [{ name: topic, partitions: [...chosen].map(([partitionIndex, committedOffset]) => ({ partitionIndex, committedOffset, committedLeaderEpoch: -1, committedMetadata: '' })) }],
      });
      const failed = response.topics.flatMap((answer) => answer.partitions.filter((partition) => partition.errorCode !== KafkaErrorCode.NONE).map((partition) => ({ ...partition, topic: answer.name })));
      const first = failed[0];
      if (first === undefined) return;
      if (COORDINATOR_ERRORS.has(first.errorCode)) throw coordinatorError(group, first.errorCode);
      throw commitRefused(group, topic, first.errorCode, failed.map((partition) => partition.partitionIndex));
    });
    return chosen;
  }

  /** Deletes the group and its offsets at its coordinator; refused while it has members. */
  async delete(group: string): Promise<void> {
    const errorCode = await this.atCoordinator(group, async (connection) => {
      const response = await connection.request(DeleteGroupsApi, DELETE_GROUPS_VERSION, { groupsNames: [group] });
      const code = response.results.find((result) => result.groupId === group)?.errorCode ?? KafkaErrorCode.UNKNOWN_SERVER_ERROR;
      if (COORDINATOR_ERRORS.has(code)) throw coordinatorError(group, code);
      return code;
    });
    if (errorCode === KafkaErrorCode.NONE) return;
    if (errorCode === KafkaErrorCode.GROUP_ID_NOT_FOUND) throw groupNotFound(group);
    if (errorCode === KafkaErrorCode.NON_EMPTY_GROUP) {
      const described = await this.describeRaw(group).catch(() => undefined);
      if (described !== undefined && IDLE_STATES.has(described.groupState)) {
        // Members the coordinator does not know of: the live consumers of a ZooKeeper group.
        throw new TributaryError({
          code: 'GROUP_ACTIVE',
          message: `group ${group} is a ZooKeeper (paper-style) group with live members; stop its members first, then delete it (tributary groups describe --zookeeper lists them)`,
          details: { group, kafkaError: 'NON_EMPTY_GROUP' },
        });
      }
      throw groupActive(group, described, 'delete it', 'NON_EMPTY_GROUP');
    }
    const name = kafkaErrorName(errorCode);
    throw new TributaryError({ code: name, message: `the coordinator of group ${group} refused to delete it: ${name}`, details: { group, errorCode } });
  }

  /** DescribeGroups of one group at its coordinator. */
  private describeRaw(group: string): Promise<DescribeGroupsResponseGroup> {
    return this.atCoordinator(group, (connection) => describeAt(connection, group));
  }

  /** Committed offsets (`topic/partition` → offset) of the given topics, or of all (null). */
  private async fetchOffsets(group: string, topics: { name: string; partitionIndexes: number[] }[] | null): Promise<Map<string, bigint>> {
    return this.atCoordinator(group, async (connection) => {
      const response = await connection.request(OffsetFetchApi, OFFSET_FETCH_VERSION, { groupId: group, topics });
      if (COORDINATOR_ERRORS.has(response.errorCode)) throw coordinatorError(group, response.errorCode);
      if (response.errorCode !== KafkaErrorCode.NONE) throw refused(group, 'OffsetFetch', response.errorCode);
      const offsets = new Map<string, bigint>();
      for (const topic of response.topics) {
        for (const partition of topic.partitions) {
          if (COORDINATOR_ERRORS.has(partition.errorCode)) throw coordinatorError(group, partition.errorCode);
          if (partition.errorCode === KafkaErrorCode.NONE && partition.committedOffset >= 0n) offsets.set(`${topic.name}/${partition.partitionIndex}`, partition.committedOffset);
        }
      }
      return offsets;
    });
  }

  private async partitionsOf(topic: string): Promise<number[]> {
    try {
      return await this.cluster.partitionsFor(topic);
    } catch (error) {
      if (error instanceof TributaryError && error.code === 'UNKNOWN_TOPIC_OR_PARTITION') {
        throw new TributaryError({ code: 'UNKNOWN_TOPIC_OR_PARTITION', message: `topic ${topic} does not exist; tributary topics list shows the topics there are`, details: { topic }, cause: error });
      }
      throw error;
    }
  }

  /**
   * Runs `request` on a connection to the group's coordinator. A coordinator error or a broken
   * connection finds the coordinator again and retries, a bounded number of times.
   */
  private async atCoordinator<T>(group: string, request: (connection: KafkaConnection, coordinator: BrokerMetadata) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        const coordinator = await this.coordinatorOf(group);
        return await request(await this.cluster.connectionTo(coordinator.nodeId), coordinator);
      } catch (error) {
        const again = error instanceof TributaryError && (error.code === 'COORDINATOR_MOVED' || CONNECTION_ERRORS.has(error.code));
        if (!again) throw error;
        this.coordinators.delete(group);
        if (attempt >= COORDINATOR_ATTEMPTS) {
          throw new TributaryError({
            code: 'COORDINATOR_NOT_AVAILABLE',
            retriable: true,
            message: `no coordinator of group ${group} answered after ${attempt} tries (last: ${error.message}); check that the brokers are running, then try again`,
            details: { group },
            cause: error,
          });
        }
        await sleep(COORDINATOR_BACKOFF_MS * attempt);
        await this.cluster.refreshMetadata([]).catch(() => undefined);
      }
    }
  }

  /** FindCoordinator, asked of each known broker until one answers. */
  private async coordinatorOf(group: string): Promise<BrokerMetadata> {
    const cached = this.coordinators.get(group);
    const known = (id: number): BrokerMetadata | undefined => this.cluster.knownBrokers().find((broker) => broker.nodeId === id);
    if (cached !== undefined) {
      const broker = known(cached);
      if (broker !== undefined) return broker;
    }
    let lastError: unknown;
    for (const broker of this.cluster.knownBrokers()) {
      let response;
      try {
        const connection = await this.cluster.connectionTo(broker.nodeId);
        response = await connection.request(FindCoordinatorApi, FIND_COORDINATOR_VERSION, { key: group, keyType: GROUP_KEY_TYPE });
      } catch (error) {
        lastError = error;
        continue;
      }
      if (COORDINATOR_ERRORS.has(response.errorCode)) throw coordinatorError(group, response.errorCode, response.errorMessage);
      if (response.errorCode !== KafkaErrorCode.NONE) throw refused(group, 'FindCoordinator', response.errorCode, response.errorMessage);
      this.coordinators.set(group, response.nodeId);
      const coordinator = known(response.nodeId);
      if (coordinator !== undefined) return coordinator;
      await this.cluster.refreshMetadata([]);
      return known(response.nodeId) ?? { nodeId: response.nodeId, host: response.host, port: response.port, rack: null };
    }
    throw new TributaryError({
      code: 'BROKER_UNREACHABLE',
      retriable: true,
      message: `no broker answered FindCoordinator for group ${group}: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
      cause: lastError,
      details: { group },
    });
  }
}

async function describeAt(connection: KafkaConnection, group: string): Promise<DescribeGroupsResponseGroup> {
  const response = await connection.request(DescribeGroupsApi, DESCRIBE_GROUPS_VERSION, { groups: [group], includeAuthorizedOperations: false });
  const described = response.groups.find((candidate) => candidate.groupId === group);
  if (described === undefined) throw new TributaryError({ code: 'PROTOCOL_ERROR', message: `the coordinator answered DescribeGroups without group ${group}` });
  if (COORDINATOR_ERRORS.has(described.errorCode)) throw coordinatorError(group, described.errorCode);
  if (described.errorCode !== KafkaErrorCode.NONE) throw refused(group, 'DescribeGroups', described.errorCode);
  return described;
}

/** A member's partitions from its assignment bytes; never throws (the bytes are the client's). */
export function decodeAssignment(protocolType: string, bytes: Buffer): { assignment: ConsumerProtocolTopicPartitions[] | undefined; note: string | undefined } {
  if (bytes.length === 0) return { assignment: undefined, note: 'no assignment yet (the group is not Stable)' };
  if (protocolType !== CONSUMER_PROTOCOL_TYPE) return { assignment: undefined, note: `assignment of protocol type "${protocolType}", not a consumer's (${bytes.length} bytes)` };
  try {
    const decoded = decodeConsumerAssignment(bytes);
    return { assignment: decoded.assignedPartitions.map(({ topic, partitions }) => ({ topic, partitions: [...partitions].sort((a, b) => a - b) })), note: undefined };
  } catch {
    return { assignment: undefined, note: `undecodable assignment (${bytes.length} bytes)` };
  }
}

function coordinatorError(group: string, errorCode: number, message?: string | null): TributaryError {
  const name = kafkaErrorName(errorCode);
  return new TributaryError({ code: 'COORDINATOR_MOVED', retriable: true, message: `group ${group}: ${name}${message === undefined || message === null ? '' : ` (${message})`}`, details: { group, errorCode } });
}

function refused(group: string, api: string, errorCode: number, message?: string | null): TributaryError {
  const name = kafkaErrorName(errorCode);
  const hint = errorCode === KafkaErrorCode.INVALID_GROUP_ID ? '; give a non-empty group id' : '';
  return new TributaryError({
    code: name,
    message: `${api} for group ${group} was refused with ${name}${message === undefined || message === null ? '' : ` (${message})`}${hint}`,
    details: { group, errorCode },
  });
}

function commitRefused(group: string, topic: string, errorCode: number, partitions: readonly number[]): TributaryError {
  const name = kafkaErrorName(errorCode);
  const where = `${topic} partitions ${partitions.join(', ')}`;
  const details = { group, topic, partitions, errorCode };
  switch (errorCode) {
    case KafkaErrorCode.UNKNOWN_MEMBER_ID:
    case KafkaErrorCode.ILLEGAL_GENERATION:
    case KafkaErrorCode.REBALANCE_IN_PROGRESS:
      return new TributaryError({ code: 'GROUP_ACTIVE', message: `members joined group ${group} while its offsets were being reset (${name}); stop them, then reset again`, details });
    case KafkaErrorCode.INCONSISTENT_GROUP_PROTOCOL:
      return new TributaryError({
        code: 'GROUP_KIND_CONFLICT',
        message: `group ${group} is a ZooKeeper (paper-style) group, not coordinated by the brokers; reset its offsets with tributary groups reset-offsets --zookeeper`,
        details,
      });
    default:
      return new TributaryError({ code: name, message: `the coordinator of group ${group} refused the new offsets of ${where}: ${name}`, details });
  }
}

function groupActive(group: string, described: DescribeGroupsResponseGroup | undefined, what: string, kafkaError?: string): TributaryError {
  const members = described?.members.map((member) => `${member.memberId} (client ${member.clientId}, host ${member.clientHost})`) ?? [];
  const state = described === undefined ? 'not empty' : `in state ${described.groupState} with ${members.length} live member${members.length === 1 ? '' : 's'}${members.length === 0 ? '' : `: ${members.join(', ')}`}`;
  return new TributaryError({
    code: 'GROUP_ACTIVE',
    message: `group ${group} is ${state}; stop its members first (it must be Empty), then ${what}`,
    details: { group, state: described?.groupState, members: described?.members.map((member) => member.memberId) ?? [], ...(kafkaError === undefined ? {} : { kafkaError }) },
  });
}

function groupNotFound(group: string): TributaryError {
  return new TributaryError({
    code: 'GROUP_ID_NOT_FOUND',
    message: `consumer group ${group} does not exist (its coordinator does not know it and it has no committed offsets); tributary groups list shows the groups there are`,
    details: { group },
  });
}
