/**
 * Reading and editing consumer groups from the offset registry in ZooKeeper (the `tributary
 * groups --zookeeper` tools): members, partition owners, committed offsets and lag of the paper's
 * ZooKeeper groups; resetting their offsets and deleting them while they have no live member.
 * Offsets are the group's next offset to read under /consumers/<group>/offsets/<topic>/<partition>:
 * decimal text as the paper's group consumer writes them, or the JSON values of broker-coordinated
 * groups; both are read (decodeCommittedOffset).
 *
 * A broker-coordinated group (kind "broker") is only read here: its members are known to its
 * coordinator alone, and its offsets are changed through the coordinator (broker-groups.ts), so
 * resetOffsets and deleteGroup refuse one.
 */
import { TributaryError } from '../common/errors.js';
import { decodeCommittedOffset, deleteGroup, listGroupIds, liveZooKeeperMembers, readGroupRecord, type GroupKind } from '../coordination/group-registry.js';
import type { CoordinationStore } from '../coordination/store.js';
import { consumerGroupPath, consumerIdsPath, consumerPath, offsetPath, offsetsPath, ownerPath, ownersPath, topicPath } from '../coordination/paths.js';
import { ClusterClient } from './cluster-client.js';
import { securityProtocolOf, type ClientSecurity } from './security-config.js';
import { bootstrapFromZooKeeper } from './zookeeper-bootstrap.js';
import { chooseResetOffsets, type ResetTarget } from './offset-reset.js';
import { SimpleConsumer } from './simple-consumer.js';

export type { ResetTarget } from './offset-reset.js';

export interface GroupPartition {
  readonly topic: string;
  readonly partition: number;
  readonly owner: string | undefined;
  readonly committed: bigint | undefined;
  readonly logEnd: bigint | undefined;
  readonly lag: bigint | undefined;
}

export interface GroupDescription {
  readonly group: string;
  readonly members: readonly { readonly id: string; readonly subscription: Readonly<Record<string, number>> }[];
  readonly partitions: readonly GroupPartition[];
}

/**
 * What owns a group id in the registry: a ZooKeeper (paper) group, a broker-coordinated group,
 * "none" for a group that only has offsets (written by reset-offsets; either kind may claim it),
 * or "unreadable" when its kind node is corrupt.
 */
export type RegistryGroupKind = GroupKind | 'none' | 'unreadable';

export interface RegistryGroup {
  readonly group: string;
  readonly kind: RegistryGroupKind;
  /** Live members of a ZooKeeper group (ephemeral nodes under /consumers/<group>/ids); [] for the others. */
  readonly liveMembers: readonly string[];
}

export class GroupAdmin {
  /** `security`: TLS and SASL of the broker connections a broker-coordinated group needs. */
  constructor(
    private readonly store: CoordinationStore,
    readonly security?: ClientSecurity,
  ) {}

  async listGroups(): Promise<string[]> {
    return listGroupIds(this.store);
  }

  /** Every group id with its kind (and a ZooKeeper group's live members). */
  async listGroupKinds(): Promise<RegistryGroup[]> {
    const groups: RegistryGroup[] = [];
    for (const group of await this.listGroups()) {
      const kind = await this.kindOf(group).catch(() => 'unreadable' as const);
      groups.push({ group, kind: kind ?? 'none', liveMembers: kind === 'zookeeper' ? await liveZooKeeperMembers(this.store, group) : [] });
    }
    return groups;
  }

  /** The kind of `group`: "none" when it has only offsets, undefined when there is no such group. */
  async kindOf(group: string): Promise<GroupKind | 'none' | undefined> {
    const found = await readGroupRecord(this.store, group);
    if (found !== undefined) return found.record.kind;
    return (await this.store.exists(consumerGroupPath(group))) ? 'none' : undefined;
  }

  async describe(group: string): Promise<GroupDescription> {
    const memberIds = (await this.store.children(consumerIdsPath(group))) ?? [];
    const members = [];
    for (const id of memberIds) {
      const node = await this.store.get(consumerPath(group, id));
      const parsed = node === undefined ? {} : (JSON.parse(node.data.toString('utf8')) as { subscription?: Record<string, number> });
      members.push({ id, subscription: parsed.subscription ?? {} });
    }
    const topics = new Set<string>([
      ...((await this.store.children(offsetsPath(group))) ?? []),
      ...((await this.store.children(ownersPath(group))) ?? []),
      ...members.flatMap((member) => Object.keys(member.subscription)),
    ]);
    const cluster = await this.clusterClient();
    try {
      // An operator's lag view answers promptly: a partition without a leader shows no log end.
      const consumer = cluster === undefined ? undefined : new SimpleConsumer(cluster, { retryTimeoutMs: 5_000 });
      const partitions: GroupPartition[] = [];
      for (const topic of [...topics].sort()) {
        for (const partition of await this.partitionsOf(topic)) {
          const owner = (await this.store.get(ownerPath(group, topic, partition)))?.data.toString('utf8');
          const committed = await this.committed(group, topic, partition);
          const logEnd = await consumer?.listOffset(topic, partition, 'latest').catch(() => undefined);
          const lag = committed !== undefined && logEnd !== undefined ? logEnd - committed : undefined;
          partitions.push({ topic, partition, owner, committed, logEnd, lag });
        }
      }
      return { group, members, partitions };
    } finally {
      cluster?.close();
    }
  }

  /**
   * Sets the group's offsets for `topic`; refused while the group has live members, and for a
   * broker-coordinated group (whose offsets go through its coordinator). Returns the new offsets.
   */
  async resetOffsets(group: string, topic: string, target: ResetTarget): Promise<Map<number, bigint>> {
    await this.refuseBrokerGroup(group, 'reset its offsets');
    const live = await liveZooKeeperMembers(this.store, group);
    if (live.length > 0) {
      throw new TributaryError({
        code: 'GROUP_ACTIVE',
        message: `group ${group} has ${live.length} live members (${live.join(', ')}); stop them before resetting its offsets`,
        details: { group, members: live },
      });
    }
    const partitions = await this.partitionsOf(topic);
    if (partitions.length === 0) throw new TributaryError({ code: 'UNKNOWN_TOPIC_OR_PARTITION', message: `topic ${topic} does not exist` });
    const cluster = await this.clusterClient();
    if (cluster === undefined) throw new TributaryError({ code: 'NO_BROKERS', retriable: true, message: 'no live broker is registered in this ZooKeeper; start one to read log offsets' });
    try {
      const chosen = await chooseResetOffsets(new SimpleConsumer(cluster), topic, partitions, target, (partition) => this.committed(group, topic, partition));
      await this.store.ensurePath(offsetsPath(group, topic));
      for (const [partition, offset] of chosen) {
        const path = offsetPath(group, topic, partition);
        const data = Buffer.from(offset.toString());
        try {
          await this.store.create(path, data, 'persistent');
        } catch (error) {
          if ((error as TributaryError).code !== 'NODE_EXISTS') throw error;
          await this.store.set(path, data);
        }
      }
      return chosen;
    } finally {
      cluster.close();
    }
  }

  /**
   * Deletes a ZooKeeper group's whole tree (members' folders, owners, offsets, kind) so its id can
   * be reused; refused while it has live members, and for a broker-coordinated group (delete that
   * through its coordinator).
   */
  async deleteGroup(group: string): Promise<void> {
    const kind = await this.refuseBrokerGroup(group, 'delete it');
    if (kind === undefined) throw groupNotFound(group);
    const live = await liveZooKeeperMembers(this.store, group);
    if (live.length > 0) {
      throw new TributaryError({
        code: 'GROUP_ACTIVE',
        message: `group ${group} has ${live.length} live members (${live.join(', ')}); stop its members first, then delete it`,
        details: { group, members: live },
      });
    }
    await deleteGroup(this.store, group);
  }

  /** The `host:port` of every broker registered in this ZooKeeper, at the listener of this client's security protocol. */
  async brokerAddresses(): Promise<string[]> {
    try {
      return await bootstrapFromZooKeeper(this.store, securityProtocolOf(this.security));
    } catch (error) {
      if (error instanceof TributaryError && error.code === 'NO_BROKERS_REGISTERED') return [];
      throw error;
    }
  }

  private async refuseBrokerGroup(group: string, what: string): Promise<GroupKind | 'none' | undefined> {
    const kind = await this.kindOf(group);
    if (kind === 'broker') {
      throw new TributaryError({
        code: 'GROUP_KIND_CONFLICT',
        message: `group ${group} is coordinated by the brokers (a Kafka client's group); its coordinator must ${what}: use tributary groups with --bootstrap-server, or kafka-consumer-groups.sh`,
        details: { group, kind },
      });
    }
    return kind;
  }

  private async committed(group: string, topic: string, partition: number): Promise<bigint | undefined> {
    const node = await this.store.get(offsetPath(group, topic, partition));
    const value = node === undefined ? undefined : decodeCommittedOffset(node.data);
    // A negative value is no position (as Kafka's −1 "no offset").
    return value === undefined || value.offset < 0n ? undefined : value.offset;
  }

  private async partitionsOf(topic: string): Promise<number[]> {
    const node = await this.store.get(topicPath(topic));
    if (node === undefined) return [];
    const { partitions } = JSON.parse(node.data.toString('utf8')) as { partitions: Record<string, number> };
    return Object.keys(partitions).map(Number).sort((a, b) => a - b);
  }

  /** A client bootstrapped from the brokers registered in ZooKeeper, or undefined if none is. */
  private async clusterClient(): Promise<ClusterClient | undefined> {
    const bootstrap = await this.brokerAddresses();
    return bootstrap.length === 0 ? undefined : ClusterClient.connect({ bootstrap, clientId: 'tributary-groups', allowAutoTopicCreation: false, ...(this.security === undefined ? {} : { security: this.security }) });
  }
}

export function groupNotFound(group: string): TributaryError {
  return new TributaryError({
    code: 'GROUP_ID_NOT_FOUND',
    message: `consumer group ${group} does not exist; tributary groups list shows the groups there are`,
    details: { group },
  });
}
