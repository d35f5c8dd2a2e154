/**
 * The self-balancing rebalance of the ZooKeeper consumer (the paper's Algorithm 1) and when it
 * runs: watch events debounced into one rebalance, the periodic registry check, retries with
 * backoff, and each attempt's read of the registries, all-or-nothing ownership claims and fetcher
 * starts. Apart from zookeeper-consumer.ts, which keeps registration, session events and the
 * public API; it reaches the consumer only through RebalanceHost.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TributaryError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { brokerIdsPath, consumerIdsPath, consumerPath, ownerPath, ownersPath, topicPath } from '../../coordination/paths.js';
import { hasCode, type CoordinationStore, type Watcher } from '../../coordination/store.js';
import { assignRange, compareThreadIds } from './assign.js';
import type { GroupOffsets } from './group-offsets.js';
import { claimKey, type Claim, type PartitionFetchers } from './partition-fetcher.js';
import type { MessageStream } from './stream.js';

/** What a rebalance needs of its consumer. */
export interface RebalanceHost {
  readonly store: CoordinationStore;
  readonly group: string;
  readonly consumerId: string;
  readonly logger: Logger;
  readonly options: {
    readonly rebalanceBackoffMs?: number;
    readonly rebalanceMaxRetries?: number;
    readonly rebalanceDebounceMs?: number;
  };
  /** The consumer's claims: a rebalance replaces them in place. */
  readonly claims: Map<string, Claim>;
  readonly streams: ReadonlyMap<string, readonly MessageStream[]>;
  readonly offsets: Pick<GroupOffsets, 'storedOffset' | 'startWithoutOffset' | 'commitOwned'>;
  readonly fetchers: Pick<PartitionFetchers, 'start' | 'stopAll'>;
  /** `{ topic: streamCount }`; undefined before `createMessageStreams`. */
  subscription(): Readonly<Record<string, number>> | undefined;
  isClosed(): boolean;
  hasFailed(): boolean;
  /** Runs `fn` under the consumer's lock, which rebalances share with commits and seeks. */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
  /** Fails the consumer loudly: logged, every stream throws, `onError` hears it. */
  fatal(error: Error): void;
  /** Counts a completed rebalance. */
  countRebalance(): void;
}

interface Assignment {
  readonly topic: string;
  readonly partition: number;
  readonly threadId: string;
  readonly streamIndex: number;
}

const SLOW_REBALANCE_MS = 10_000;

export class Rebalancer {
  private readonly store: CoordinationStore;
  private readonly group: string;
  private readonly consumerId: string;
  private readonly logger: Logger;
  private readonly options: RebalanceHost['options'];
  private readonly claims: Map<string, Claim>;
  private readonly streams: ReadonlyMap<string, readonly MessageStream[]>;
  private readonly offsets: RebalanceHost['offsets'];
  private readonly fetchers: RebalanceHost['fetchers'];
  private debounceTimer: NodeJS.Timeout | undefined;
  /** The rebalance about to run was started by the periodic check, not by a watch. */
  private periodicCheck = false;
  private rebalanceWanted = false;
  private rebalanceLoop: Promise<void> | undefined;
  private readonly watcher: Watcher = () => this.scheduleRebalance();

  constructor(private readonly host: RebalanceHost) {
    this.store = host.store;
    this.group = host.group;
    this.consumerId = host.consumerId;
    this.logger = host.logger;
    this.options = host.options;
    this.claims = host.claims;
    this.streams = host.streams;
    this.offsets = host.offsets;
    this.fetchers = host.fetchers;
  }

  /** The first rebalance after registering: runs at once, not debounced. */
  rebalanceNow(): Promise<void> {
    this.rebalanceWanted = true;
    return this.runRebalances();
  }

  /** The periodic registry check: a rebalance unless one is running or scheduled already. */
  scheduleCheck(): void {
    if (this.rebalanceLoop !== undefined || this.debounceTimer !== undefined) return;
    this.periodicCheck = true;
    this.scheduleRebalance();
  }

  /** At close: drops a scheduled rebalance and waits for a running one to end. */
  async stop(): Promise<void> {
    if (this.debounceTimer !== undefined) clearTimeout(this.debounceTimer);
    await this.rebalanceLoop?.catch(() => undefined);
  }

  /** A watch event or a new session: rebalance after a quiet time, so bursts become one (with jitter against the herd). */
  scheduleRebalance(): void {
    if (this.host.isClosed() || this.host.hasFailed() || this.host.subscription() === undefined) return;
    this.rebalanceWanted = true;
    if (this.debounceTimer !== undefined) clearTimeout(this.debounceTimer);
    const debounce = this.options.rebalanceDebounceMs ?? 250;
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = undefined;
      void this.runRebalances();
    }, debounce + Math.floor(Math.random() * (debounce / 2 + 1)));
  }

  /** Runs rebalances while one is wanted; only one loop runs at a time. */
  private runRebalances(): Promise<void> {
    if (this.rebalanceLoop !== undefined) return this.rebalanceLoop;
    // Cleared on a later tick, and only if still ours: a loop with nothing to do finishes at once,
    // and clearing it inside would run before the assignment below and leave a settled loop in
    // place for good (no rebalance would ever run again: the debounce timer of an event a running
    // loop had already served used to do exactly that).
    const loop = this.rebalanceWhileWanted().finally(() => {
      if (this.rebalanceLoop === loop) this.rebalanceLoop = undefined;
    });
    this.rebalanceLoop = loop;
    return loop;
  }

  private async rebalanceWhileWanted(): Promise<void> {
    while (this.rebalanceWanted && !this.host.isClosed() && !this.host.hasFailed()) {
      this.rebalanceWanted = false;
      await this.syncedRebalance();
    }
  }

  private async syncedRebalance(): Promise<void> {
    const retries = this.options.rebalanceMaxRetries ?? 4;
    const backoff = this.options.rebalanceBackoffMs ?? 2000;
    let lastError: unknown;
    const periodic = this.periodicCheck;
    this.periodicCheck = false;
    for (let attempt = 0; attempt <= retries; attempt += 1) {
      if (this.host.isClosed()) return;
      try {
        const started = Date.now();
        const done = await this.host.exclusive(() => this.rebalance(attempt, periodic));
        const took = Date.now() - started;
        // The lock is shared with commits and seeks: a slow one delays the group's rebalance.
        if (took > SLOW_REBALANCE_MS) this.logger.warn({ attempt, milliseconds: took }, 'rebalance attempt was slow (it waits for commits in progress and for fetchers to stop)');
        if (done) {
          this.host.countRebalance();
          return;
        }
        lastError = undefined;
      } catch (error) {
        if (error instanceof TributaryError && error.code === 'NO_COMMITTED_OFFSET') {
          // Configuration, not contention: retrying cannot help.
          this.host.fatal(error);
          return;
        }
        lastError = error;
        this.logger.warn({ err: error, attempt }, 'rebalance attempt failed');
        // Stop and release what we hold, so nobody waits on us while we back off.
        await this.host.exclusive(async () => {
          await this.fetchers.stopAll(this.claims.values());
          await this.offsets.commitOwned(this.claims.values()).catch(() => undefined);
          await this.releaseAll().catch(() => undefined);
        }).catch(() => undefined);
      }
      if (attempt < retries) await sleep(backoff);
      // A watch that fired meanwhile is served by this loop's next attempt.
      this.rebalanceWanted = false;
    }
    this.host.fatal(
      new TributaryError({
        code: 'CONSUMER_REBALANCE_FAILED',
        message: `${this.consumerId} can't rebalance after ${retries + 1} attempts (group ${this.group}); partitions owned by others were not released in time`,
        ...(lastError === undefined ? {} : { cause: lastError }),
        details: { group: this.group, consumerId: this.consumerId, attempts: retries + 1 },
      }),
    );
  }

  /** One attempt of Algorithm 1. True when this consumer owns its whole share afterwards. */
  private async rebalance(attempt: number, periodic = false): Promise<boolean> {
    const wanted = await this.computeAssignment();
    if (wanted === undefined) return true; // our registration is missing: re-registration will rebalance again
    const unchanged =
      wanted.length === this.claims.size &&
      wanted.every((a) => {
        const claim = this.claims.get(claimKey(a.topic, a.partition));
        return claim !== undefined && claim.threadId === a.threadId;
      });
    if (unchanged) {
      this.logger.debug({ attempt }, 'assignment unchanged; keeping ownership');
      return true;
    }
    if (periodic) this.logger.warn({ attempt, owned: [...this.claims.keys()], wanted: wanted.map((a) => `${a.topic}/${a.partition}`) }, 'the periodic registry check found a share no watch event reported; rebalancing');
    // Stop before release; commit before release (while we still own).
    await this.fetchers.stopAll(this.claims.values());
    await this.offsets.commitOwned(this.claims.values());
    await this.releaseAll();

    const created: Assignment[] = [];
    for (const assignment of wanted) {
      const outcome = await this.claimOwnership(assignment);
      if (outcome === 'conflict') {
        this.logger.info({ attempt, topic: assignment.topic, partition: assignment.partition }, 'partition still owned by another consumer; releasing this attempt’s claims and backing off');
        for (const mine of created) await this.deleteOwnerIfOurs(mine.topic, mine.partition, mine.threadId);
        return false;
      }
      created.push(assignment);
    }
    for (const assignment of wanted) {
      const stream = this.streams.get(assignment.topic)?.[assignment.streamIndex];
      if (stream === undefined) continue;
      const stored = await this.offsets.storedOffset(assignment.topic, assignment.partition);
      const start = stored ?? (await this.offsets.startWithoutOffset(assignment.topic, assignment.partition));
      const claim: Claim = {
        topic: assignment.topic,
        partition: assignment.partition,
        threadId: assignment.threadId,
        stream,
        fetchOffset: start,
        pushedEnd: start,
        consumed: start,
        committed: stored,
        active: true,
        fetcher: undefined,
      };
      this.claims.set(claimKey(assignment.topic, assignment.partition), claim);
    }
    for (const claim of this.claims.values()) this.fetchers.start(claim);
    this.logger.info(
      { attempt, owned: wanted.map((a) => `${a.topic}-${a.partition}@${a.threadId}`) },
      'rebalance done',
    );
    return true;
  }

  /** Reads the registries (re-arming the watches) and computes this consumer's share. */
  private async computeAssignment(): Promise<Assignment[] | undefined> {
    const subscription = this.host.subscription() ?? {};
    const ids = (await this.store.children(consumerIdsPath(this.group), this.watcher)) ?? [];
    await this.store.children(brokerIdsPath(), this.watcher);
    if (!ids.includes(this.consumerId)) {
      this.logger.warn('this consumer is not in the consumer registry; waiting for re-registration');
      return undefined;
    }
    const threadsByTopic = new Map<string, string[]>();
    for (const id of ids) {
      const node = await this.store.get(consumerPath(this.group, id));
      if (node === undefined) continue; // left meanwhile; its departure fires the children watch
      let registered: Record<string, unknown>;
      try {
        const parsed = JSON.parse(node.data.toString('utf8')) as { subscription?: Record<string, unknown> };
        registered = parsed.subscription ?? {};
      } catch {
        this.logger.warn({ consumer: id }, 'unreadable consumer registration; ignoring it');
        continue;
      }
      for (const [topic, count] of Object.entries(registered)) {
        if (!(topic in subscription) || typeof count !== 'number' || !Number.isSafeInteger(count)) continue;
        const threads = threadsByTopic.get(topic) ?? [];
        for (let index = 0; index < count; index += 1) threads.push(`${id}-${index}`);
        threadsByTopic.set(topic, threads);
      }
    }
    const result: Assignment[] = [];
    for (const [topic, count] of Object.entries(subscription)) {
      const partitions = await this.topicPartitions(topic);
      const threads = (threadsByTopic.get(topic) ?? []).sort(compareThreadIds);
      for (let index = 0; index < count; index += 1) {
        const threadId = `${this.consumerId}-${index}`;
        for (const partition of assignRange(partitions, threads, threadId)) result.push({ topic, partition, threadId, streamIndex: index });
      }
    }
    return result;
  }

  /** The partitions of a topic from the broker registry, watching the topic node. */
  private async topicPartitions(topic: string): Promise<number[]> {
    const node = await this.store.get(topicPath(topic), this.watcher);
    if (node === undefined) {
      // Not created yet: watch for its creation (exists sets a watch on a missing node).
      if (await this.store.exists(topicPath(topic), this.watcher)) return this.topicPartitions(topic);
      return [];
    }
    try {
      const parsed = JSON.parse(node.data.toString('utf8')) as { partitions?: Record<string, unknown> };
      return Object.keys(parsed.partitions ?? {})
        .map(Number)
        .filter((p) => Number.isSafeInteger(p) && p >= 0)
        .sort((a, b) => a - b);
    } catch (error) {
      throw new TributaryError({ code: 'CORRUPT_REGISTRY', message: `${topicPath(topic)} does not hold a partition assignment`, cause: error });
    }
  }

  /** Creates the ownership node, or reads who owns it: 'claimed' (ours now) or 'conflict'. */
  private async claimOwnership(assignment: Assignment): Promise<'claimed' | 'conflict'> {
    const path = ownerPath(this.group, assignment.topic, assignment.partition);
    await this.store.ensurePath(ownersPath(this.group, assignment.topic));
    for (let tries = 0; tries < 2; tries += 1) {
      try {
        await this.store.create(path, Buffer.from(assignment.threadId), 'ephemeral');
        return 'claimed';
      } catch (error) {
        if (!hasCode(error, 'NODE_EXISTS')) throw error;
      }
      const owner = await this.store.get(path);
      if (owner === undefined) continue; // released meanwhile: try once more
      if (owner.data.toString('utf8') === assignment.threadId) return 'claimed'; // our own (e.g. a create whose answer was lost)
      this.logger.debug({ path, owner: owner.data.toString('utf8') }, 'waiting for the partition ownership to be deleted');
      return 'conflict';
    }
    return 'conflict';
  }

  private async deleteOwnerIfOurs(topic: string, partition: number, threadId: string): Promise<void> {
    const path = ownerPath(this.group, topic, partition);
    const node = await this.store.get(path);
    if (node === undefined || node.data.toString('utf8') !== threadId) return;
    try {
      await this.store.delete(path, node.version);
    } catch (error) {
      if (!hasCode(error, 'NO_NODE') && !hasCode(error, 'BAD_VERSION')) throw error;
    }
  }

  /** Deletes our ownership nodes and forgets the claims (fetchers must be stopped first). */
  async releaseAll(): Promise<void> {
    const claims = [...this.claims.values()];
    for (const claim of claims) {
      claim.active = false;
      claim.stream.purge();
    }
    this.claims.clear();
    for (const claim of claims) await this.deleteOwnerIfOurs(claim.topic, claim.partition, claim.threadId);
  }
}
