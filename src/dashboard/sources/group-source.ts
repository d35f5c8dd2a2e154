/**
 * Consumer-group lag from ZooKeeper (--zookeeper): every group under /consumers, its live members
 * and, per partition, the committed offset, the log end and the lag, as `tributary groups
 * describe` shows them. One ZooKeeper session for the dashboard's life, made on first use and
 * made again after a failure (an expired session is gone for good).
 */
import type { ClientSecurity } from '../../client/security-config.js';
import { GroupAdmin, type GroupPartition } from '../../client/group-admin.js';
import type { Logger } from '../../common/logger.js';
import { ZooKeeperStore } from '../../coordination/zookeeper-store.js';

export interface PartitionLag {
  readonly topic: string;
  readonly partition: number;
  readonly owner: string | null;
  /** Offsets as decimal strings: they are 64-bit, JSON numbers are not. */
  readonly committed: string | null;
  readonly logEnd: string | null;
  readonly lag: string | null;
}

export interface GroupLag {
  readonly group: string;
  readonly members: readonly string[];
  /** Sum over the partitions whose lag is known; null when none is. */
  readonly totalLag: string | null;
  /** Partitions whose lag is unknown (no committed offset, or no broker answered). */
  readonly unknownLag: number;
  readonly partitions: readonly PartitionLag[];
}

const CONNECT_TIMEOUT_MS = 10_000;

export class GroupSource {
  private store: Promise<ZooKeeperStore> | undefined;

  constructor(
    private readonly connectString: string,
    private readonly logger: Logger,
    /** TLS and SASL of the broker connections that read log ends. */
    private readonly security?: ClientSecurity,
  ) {}

  describe(): string {
    return `ZooKeeper ${this.connectString}`;
  }

  async groups(): Promise<GroupLag[]> {
    const store = await this.connect();
    try {
      const admin = new GroupAdmin(store, this.security);
      const groups: GroupLag[] = [];
      for (const group of await admin.listGroups()) {
        const description = await admin.describe(group);
        const partitions = description.partitions.map(toLag);
        const known = description.partitions.flatMap((partition) => (partition.lag === undefined ? [] : [partition.lag]));
        groups.push({
          group,
          members: description.members.map((member) => member.id),
          totalLag: known.length === 0 ? null : known.reduce((sum, lag) => sum + lag, 0n).toString(),
          unknownLag: partitions.length - known.length,
          partitions,
        });
      }
      return groups;
    } catch (error) {
      await this.reset();
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.reset();
  }

  private connect(): Promise<ZooKeeperStore> {
    if (this.store !== undefined) return this.store;
    const attempt = ZooKeeperStore.connect(this.connectString, { connectTimeoutMs: CONNECT_TIMEOUT_MS, logger: this.logger });
    // A failed connect is forgotten (unless a newer one replaced it), so the next request tries again.
    attempt.catch(() => {
      if (this.store === attempt) this.store = undefined;
    });
    this.store = attempt;
    return attempt;
  }

  private async reset(): Promise<void> {
    const store = this.store;
    this.store = undefined;
    await store?.then((opened) => opened.close()).catch(() => undefined);
  }
}

function toLag(partition: GroupPartition): PartitionLag {
  const text = (value: bigint | undefined): string | null => (value === undefined ? null : value.toString());
  return { topic: partition.topic, partition: partition.partition, owner: partition.owner ?? null, committed: text(partition.committed), logEnd: text(partition.logEnd), lag: text(partition.lag) };
}
