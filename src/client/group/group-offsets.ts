/**
 * The ZooKeeper consumer's side of the offset registry (persistent `/consumers/<g>/offsets/<t>/<p>`):
 * where an owned partition starts (its stored offset, or where autoOffsetReset says) and the
 * commit of what the application consumed, fenced by the ownership node. Apart from
 * zookeeper-consumer.ts so the rebalance and the fetchers can use it without the consumer.
 */
import { TributaryError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { decodeCommittedOffset } from '../../coordination/group-registry.js';
import { offsetPath, offsetsPath, ownerPath } from '../../coordination/paths.js';
import { hasCode, type CoordinationStore, type TransactionOp } from '../../coordination/store.js';
import type { SimpleConsumer } from '../simple-consumer.js';

/**
 * Where a partition starts when the group has no offset for it, or its offset is outside the log
 * (retention deleted the segments below it, or the log was cut back): the log start, the log end,
 * or 'none': fail loudly (the consumer stops, its streams throw) rather than move silently.
 */
export type AutoOffsetReset = 'smallest' | 'largest' | 'none';

/** What a commit reads of an owned partition, and the committed offset it updates. */
export interface CommittablePartition {
  readonly topic: string;
  readonly partition: number;
  readonly threadId: string;
  readonly active: boolean;
  readonly consumed: bigint;
  committed: bigint | undefined;
}

export class GroupOffsets {
  constructor(
    private readonly store: CoordinationStore,
    private readonly simple: SimpleConsumer,
    private readonly group: string,
    private readonly options: { readonly autoOffsetReset?: AutoOffsetReset },
    private readonly logger: Logger,
  ) {}

  async storedOffset(topic: string, partition: number): Promise<bigint | undefined> {
    const node = await this.store.get(offsetPath(this.group, topic, partition));
    if (node === undefined) return undefined;
    const value = decodeCommittedOffset(node.data);
    if (value === undefined || value.offset < 0n) {
      this.logger.warn({ topic, partition, text: node.data.toString('utf8') }, 'stored offset is not a number; using auto.offset.reset');
      return undefined;
    }
    return value.offset;
  }

  async resetOffset(topic: string, partition: number): Promise<bigint> {
    const reset = this.options.autoOffsetReset ?? 'largest';
    return this.simple.listOffset(topic, partition, reset === 'smallest' ? 'earliest' : 'latest');
  }

  /** A partition the group never committed: where autoOffsetReset says, or NO_COMMITTED_OFFSET with 'none'. */
  async startWithoutOffset(topic: string, partition: number): Promise<bigint> {
    const reset = this.options.autoOffsetReset ?? 'largest';
    if (reset === 'none') {
      throw new TributaryError({
        code: 'NO_COMMITTED_OFFSET',
        message: `group ${this.group} has no committed offset for ${topic}-${partition} and autoOffsetReset is 'none'; commit one (tributary groups reset-offsets) or choose 'smallest' or 'largest'`,
        details: { group: this.group, topic, partition },
      });
    }
    const start = await this.resetOffset(topic, partition);
    this.logger.info({ topic, partition, autoOffsetReset: reset, offset: start.toString() }, 'no committed offset; starting where autoOffsetReset says');
    return start;
  }

  /** Commits every owned partition whose consumed offset moved, each fenced by its ownership node. */
  async commitOwned(owned: Iterable<CommittablePartition>): Promise<void> {
    for (const claim of [...owned]) {
      if (!claim.active || claim.committed === claim.consumed) continue;
      const consumed = claim.consumed;
      const owner = ownerPath(this.group, claim.topic, claim.partition);
      const node = await this.store.get(owner);
      if (node === undefined || node.data.toString('utf8') !== claim.threadId) {
        this.logger.warn({ topic: claim.topic, partition: claim.partition }, 'not committing: this consumer no longer owns the partition');
        continue;
      }
      const path = offsetPath(this.group, claim.topic, claim.partition);
      const data = Buffer.from(consumed.toString());
      const check: TransactionOp = { op: 'check', path: owner, expectedVersion: node.version };
      if (await this.store.exists(path)) {
        await this.store.transaction([check, { op: 'set', path, data }]);
      } else {
        await this.store.ensurePath(offsetsPath(this.group, claim.topic));
        try {
          await this.store.transaction([check, { op: 'create', path, data, mode: 'persistent' }]);
        } catch (error) {
          if (!hasCode(error, 'NODE_EXISTS')) throw error;
          await this.store.transaction([check, { op: 'set', path, data }]);
        }
      }
      claim.committed = consumed;
    }
  }
}
