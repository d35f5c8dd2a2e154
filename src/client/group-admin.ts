/**
 * Reading and editing ZooKeeper consumer groups from outside (the `tributary groups` tools):
 * members, partition owners, committed offsets and lag; resetting a group's offsets while it has
 * no live member. Offsets are the group's next offset to read, stored as decimal text under
 * /consumers/<group>/offsets/<topic>/<partition>, as the group consumer writes them.
 */
import { TributaryError } from '../common/errors.js';
import type { CoordinationStore } from '../coordination/store.js';
import { brokerIdsPath, brokerPath, consumerIdsPath, consumerPath, consumersPath, offsetPath, offsetsPath, ownerPath, ownersPath, topicPath } from '../coordination/paths.js';
import { ClusterClient } from './cluster-client.js';
import { SimpleConsumer } from './simple-consumer.js';

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

export type ResetTarget =
  | { readonly kind: 'earliest' }
  | { readonly kind: 'latest' }
  | { readonly kind: 'offset'; readonly offset: bigint }
  | { readonly kind: 'datetime'; readonly timestamp: number }
  | { readonly kind: 'shift'; readonly by: bigint };

export class GroupAdmin {
  constructor(private readonly store: CoordinationStore) {}

  async listGroups(): Promise<string[]> {
    return ((await this.store.children(consumersPath())) ?? []).sort();
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
      const consumer = cluster === undefined ? undefined : new SimpleConsumer(cluster);
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

  /** Sets the group's offsets for `topic`; refused while the group has live members. Returns the new offsets. */
  async resetOffsets(group: string, topic: string, target: ResetTarget): Promise<Map<number, bigint>> {
    const live = (await this.store.children(consumerIdsPath(group))) ?? [];
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
      const consumer = new SimpleConsumer(cluster);
      const chosen = new Map<number, bigint>();
      for (const partition of partitions) {
        const earliest = await consumer.listOffset(topic, partition, 'earliest');
        const latest = await consumer.listOffset(topic, partition, 'latest');
        let offset: bigint;
        switch (target.kind) {
          case 'earliest':
            offset = earliest;
            break;
          case 'latest':
            offset = latest;
            break;
          case 'offset':
            offset = target.offset;
            break;
          case 'datetime': {
            const found = await consumer.listOffset(topic, partition, { timestamp: target.timestamp });
            offset = found < 0n ? latest : found;
            break;
          }
          case 'shift':
            offset = ((await this.committed(group, topic, partition)) ?? latest) + target.by;
            break;
        }
        // Stay inside what the log holds: an offset outside it would only bounce off the reset policy.
        chosen.set(partition, offset < earliest ? earliest : offset > latest ? latest : offset);
      }
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

  private async committed(group: string, topic: string, partition: number): Promise<bigint | undefined> {
    const text = (await this.store.get(offsetPath(group, topic, partition)))?.data.toString('utf8').trim();
    return text !== undefined && /^\d+$/.test(text) ? BigInt(text) : undefined;
  }

  private async partitionsOf(topic: string): Promise<number[]> {
    const node = await this.store.get(topicPath(topic));
    if (node === undefined) return [];
    const { partitions } = JSON.parse(node.data.toString('utf8')) as { partitions: Record<string, number> };
    return Object.keys(partitions).map(Number).sort((a, b) => a - b);
  }

  /** A client bootstrapped from the brokers registered in ZooKeeper, or undefined if none is. */
  private async clusterClient(): Promise<ClusterClient | undefined> {
    const ids = (await this.store.children(brokerIdsPath())) ?? [];
    const bootstrap: string[] = [];
    for (const id of ids) {
      const node = await this.store.get(brokerPath(Number(id)));
      if (node === undefined) continue;
      const { host, port } = JSON.parse(node.data.toString('utf8')) as { host: string; port: number };
      bootstrap.push(`${host}:${port}`);
    }
    return bootstrap.length === 0 ? undefined : ClusterClient.connect({ bootstrap, clientId: 'tributary-groups', allowAutoTopicCreation: false });
  }
}
