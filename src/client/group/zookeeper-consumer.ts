/**
 * The high-level consumer of the paper (§3.2, §3.3): consumers of a group coordinate through
 * ZooKeeper, with no master. Each consumer registers itself (ephemeral
 * `/consumers/<g>/ids/<id>`), watches the broker and consumer registries, and on every change
 * runs Algorithm 1: read the registries, sort the partitions and the consumer threads of each
 * subscribed topic, take its range (assign.ts), claim each partition in the ownership registry
 * (ephemeral `/consumers/<g>/owners/<t>/<p>` = thread id), read the partition's offset from the
 * offset registry (persistent `/consumers/<g>/offsets/<t>/<p>`) and start a fetcher there.
 * Registration, session events, freeze detection and the public API are here; the rebalance is
 * in rebalance.ts, the offsets in group-offsets.ts, the per-partition fetch loops in
 * partition-fetcher.ts.
 *
 * The rules of ARCHITECTURE.md ("ZooKeeper groups") and reliability.md §4.4, as kept here:
 * - Stop before release, commit before release, claim all or nothing: a rebalance stops the
 *   fetchers, commits while still owning, releases, then claims; a claim that meets another
 *   owner deletes exactly the nodes this attempt created, backs off and retries.
 * - An existing ownership node is read before deciding: our own thread id in it is ours.
 * - A commit writes only partitions this consumer owns right now, in one transaction with a
 *   check of the ownership node whose content was just read.
 * - On session expiry the fetchers stop and all ownership is dropped at once; when the new
 *   session is ready the consumer registers again and rebalances.
 * - A process that did not run for most of the session timeout (SIGSTOP, a suspended VM, a long
 *   GC pause or a blocked event loop) may have lost its session without having heard so yet: the
 *   ZooKeeper client learns of an expiry only once it reconnects, and meanwhile another member can
 *   own its partitions. So the consumer watches its own clock, and after such a gap hands out
 *   nothing (the first message it would deliver is dropped and the fetchers pause, as after a
 *   long disconnection) until a ZooKeeper request on the session confirms it is alive. Found by
 *   the ZooKeeper chaos run: consumers resumed after SIGSTOP handed out hundreds of records of
 *   partitions other members owned by then.
 * - Bursts of watch events are debounced into one rebalance (with jitter against the herd).
 * - Level-triggered as well: every `rebalanceCheckIntervalMs` the consumer reads the registries
 *   again and rebalances if its share differs from what it owns. Watches are the fast path; the
 *   check makes a missed watch event (seen in a mirror whose other process stopped: one of its
 *   consumers kept its old share and the released partitions stayed unowned) cost seconds, not
 *   the partitions, until the next membership change.
 * - After `rebalanceMaxRetries` failed attempts the consumer fails loudly: the error is logged,
 *   every stream throws it, and `onError` hears it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { systemClock, type Clock } from '../../common/clock.js';
import { TributaryError } from '../../common/errors.js';
import { createLogger, type Logger } from '../../common/logger.js';
import { claimGroup, groupKindConflict } from '../../coordination/group-registry.js';
import { consumerIdsPath, consumerPath, pathSegment } from '../../coordination/paths.js';
import { hasCode, type CoordinationStore, type SessionEvent } from '../../coordination/store.js';
import { ZooKeeperStore } from '../../coordination/zookeeper-store.js';
import { ClusterClient } from '../cluster-client.js';
import type { ClientSecurity } from '../security-config.js';
import { SimpleConsumer } from '../simple-consumer.js';
import { GroupOffsets, type AutoOffsetReset } from './group-offsets.js';
import { claimKey, haltFetcher, PartitionFetchers, type Claim } from './partition-fetcher.js';
import { Rebalancer } from './rebalance.js';
import { MessageStream } from './stream.js';

export type { Message } from './stream.js';
export { MessageStream } from './stream.js';
export type { AutoOffsetReset } from './group-offsets.js';

export interface ZooKeeperConsumerOptions {
  /** ZooKeeper connect string with the cluster's chroot (`host:port/chroot`), or a store to use (tests). */
  readonly zookeeper: string | CoordinationStore;
  /** Brokers to fetch from (`host:port`), or a cluster client to use. */
  readonly bootstrap: readonly string[] | ClusterClient;
  /** TLS and SASL of the broker connections when `bootstrap` is a list of addresses. */
  readonly security?: ClientSecurity;
  readonly group: string;
  /** Where a partition without a stored offset, or with one outside the log, starts ('none': fail). Default 'largest'. */
  readonly autoOffsetReset?: AutoOffsetReset;
  /** Commit consumed offsets this often; 0 turns auto-commit off. Default 5000 ms. */
  readonly autoCommitIntervalMs?: number;
  /** ZooKeeper session timeout (when `zookeeper` is a connect string). Default 6000 ms. */
  readonly sessionTimeoutMs?: number;
  /** Wait between failed rebalance attempts. Default 2000 ms. */
  readonly rebalanceBackoffMs?: number;
  /** Attempts after the first before the consumer gives up. Default 4. */
  readonly rebalanceMaxRetries?: number;
  /** Quiet time after a watch event before rebalancing, so bursts become one. Default 250 ms. */
  readonly rebalanceDebounceMs?: number;
  /** How often the registries are read again even without a watch event (0: never). Default 10000 ms. */
  readonly rebalanceCheckIntervalMs?: number;
  /** Messages a stream queues before its fetchers wait. Default 1000. */
  readonly queuedMaxMessages?: number;
  /** Long-poll wait of one fetch. Default 500 ms. */
  readonly fetchWaitMaxMs?: number;
  /** Bytes one fetch asks for. Default 1 MiB. */
  readonly fetchMaxBytes?: number;
  /** Default `<group>_<hostname>-<time>-<random>`. */
  readonly consumerId?: string;
  readonly logger?: Logger;
  /** Time as the consumer sees it, to notice that the process did not run for a while; default the system clock. */
  readonly clock?: Clock;
  /** Hears a fatal failure (a rebalance that failed after every retry). */
  readonly onError?: (error: Error) => void;
}

/** How often the consumer notes that its process runs (freeze detection). */
const FREEZE_TICK_MS = 250;

export class ZooKeeperConsumer {
  readonly consumerId: string;
  private readonly simple: SimpleConsumer;
  private readonly offsets: GroupOffsets;
  private readonly fetchers: PartitionFetchers;
  private readonly rebalancer: Rebalancer;
  private readonly logger: Logger;
  private readonly streams = new Map<string, MessageStream[]>();
  private subscription: Readonly<Record<string, number>> | undefined;
  private readonly claims = new Map<string, Claim>();
  private lock: Promise<unknown> = Promise.resolve();
  private checkTimer: NodeJS.Timeout | undefined;
  private commitTimer: NodeJS.Timeout | undefined;
  private disconnectTimer: NodeJS.Timeout | undefined;
  /** Fetchers stopped after a long disconnection; claims kept. */
  private paused = false;
  /** Between a 'disconnected' session event and the next event: no periodic check then. */
  private disconnected = false;
  /** When the process last ran (the freeze tick, or a delivery check); a long gap is a freeze. */
  private lastRan: number;
  private freezeTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private failure: Error | undefined;
  private readonly unsubscribe: () => void;
  /** Rebalances completed (for tests and logs). */
  rebalances = 0;
  /** Times a fetch offset outside the log was moved by autoOffsetReset (each also logged as a warning). */
  offsetResets = 0;

  private constructor(
    private readonly store: CoordinationStore,
    private readonly cluster: ClusterClient,
    private readonly ownsStore: boolean,
    private readonly ownsCluster: boolean,
    private readonly options: ZooKeeperConsumerOptions,
  ) {
    this.consumerId = pathSegment('consumer id', options.consumerId ?? `${options.group}_${hostname()}-${Date.now()}-${randomBytes(4).toString('hex')}`);
    pathSegment('consumer group', options.group);
    this.simple = new SimpleConsumer(cluster);
    this.logger = (options.logger ?? createLogger({ name: 'zookeeper-consumer' })).child({ group: options.group, consumerId: this.consumerId });
    this.offsets = new GroupOffsets(store, this.simple, options.group, options, this.logger);
    this.fetchers = new PartitionFetchers({
      simple: this.simple,
      cluster,
      logger: this.logger,
      group: options.group,
      options,
      offsets: this.offsets,
      isClosed: () => this.closed,
      isPaused: () => this.paused,
      awake: () => this.awake(),
      fatal: (error) => this.fatal(error),
      countOffsetReset: () => {
        this.offsetResets += 1;
      },
    });
    this.rebalancer = new Rebalancer({
      store,
      group: options.group,
      consumerId: this.consumerId,
      logger: this.logger,
      options,
      claims: this.claims,
      streams: this.streams,
      offsets: this.offsets,
      fetchers: this.fetchers,
      subscription: () => this.subscription,
      isClosed: () => this.closed,
      hasFailed: () => this.failure !== undefined,
      exclusive: (fn) => this.exclusive(fn),
      fatal: (error) => this.fatal(error),
      countRebalance: () => {
        this.rebalances += 1;
      },
    });
    this.unsubscribe = store.onSessionEvent((event) => this.onSessionEvent(event));
    this.lastRan = this.now();
  }

  /** Connects to ZooKeeper and the brokers. Nothing is registered until `createMessageStreams`. */
  static async connect(options: ZooKeeperConsumerOptions): Promise<ZooKeeperConsumer> {
    const ownsStore = typeof options.zookeeper === 'string';
    const store =
      typeof options.zookeeper === 'string'
        ? await ZooKeeperStore.connect(options.zookeeper, { sessionTimeoutMs: options.sessionTimeoutMs ?? 6000 })
        : options.zookeeper;
    let cluster: ClusterClient;
    try {
      cluster = options.bootstrap instanceof ClusterClient ? options.bootstrap : await ClusterClient.connect({ bootstrap: options.bootstrap, ...(options.security === undefined ? {} : { security: options.security }) });
    } catch (error) {
      if (ownsStore) await store.close();
      throw error;
    }
    return new ZooKeeperConsumer(store, cluster, ownsStore, !(options.bootstrap instanceof ClusterClient), options);
  }

  private get group(): string {
    return this.options.group;
  }

  /**
   * Subscribes to `{ topic: streamCount }` (once per consumer) and returns the streams per topic.
   * Resolves after the first rebalance attempt has been made; messages of the topic are spread
   * over the group's streams, and every group gets the whole topic.
   */
  async createMessageStreams(topicCounts: Readonly<Record<string, number>>): Promise<Record<string, MessageStream[]>> {
    this.assertOpen('createMessageStreams');
    if (this.subscription !== undefined) {
      throw new TributaryError({ code: 'ILLEGAL_STATE', message: 'createMessageStreams was already called on this consumer; create another consumer for other topics' });
    }
    const capacity = this.options.queuedMaxMessages ?? 1000;
    const result: Record<string, MessageStream[]> = {};
    for (const [topic, count] of Object.entries(topicCounts)) {
      pathSegment('topic', topic);
      if (!Number.isSafeInteger(count) || count < 1) {
        throw new TributaryError({ code: 'CONFIG_INVALID', message: `stream count for topic ${topic} must be a positive integer, got ${String(count)}` });
      }
      const streams = Array.from({ length: count }, (_, index) => new MessageStream(topic, index, capacity));
      this.streams.set(topic, streams);
      result[topic] = streams;
    }
    this.subscription = { ...topicCounts };
    await this.exclusive(() => this.register());
    this.lastRan = this.now();
    this.freezeTimer = setInterval(() => void this.awake(), Math.max(10, Math.min(FREEZE_TICK_MS, Math.floor(this.freezeLimitMs() / 4))));
    this.freezeTimer.unref();
    const interval = this.options.autoCommitIntervalMs ?? 5000;
    if (interval > 0) {
      this.commitTimer = setInterval(() => {
        this.commitOffsets().catch((error: unknown) => this.logger.warn({ err: error }, 'auto-commit failed'));
      }, interval);
      this.commitTimer.unref();
    }
    await this.rebalancer.rebalanceNow();
    const checkInterval = this.options.rebalanceCheckIntervalMs ?? 10_000;
    if (checkInterval > 0) {
      this.checkTimer = setInterval(() => {
        // Not while the connection is down: a failed read would release the partitions (the
        // disconnection rules above decide what happens then).
        if (this.disconnected || this.paused) return;
        this.rebalancer.scheduleCheck();
      }, checkInterval);
      this.checkTimer.unref();
    }
    return result;
  }

  /** Writes the consumed offset of every owned partition that moved since its last commit. */
  async commitOffsets(): Promise<void> {
    if (this.closed) return;
    await this.exclusive(() => this.offsets.commitOwned(this.claims.values()));
  }

  /**
   * Moves an owned partition to `offset`, or to the first record at or after `timestamp` (the log
   * end when there is none). The next message of that partition comes from there; the position
   * is committed with the next commit. A partition this consumer does not own fails with
   * PARTITION_NOT_OWNED.
   */
  async seek(topic: string, partition: number, position: bigint | number | { readonly timestamp: number }): Promise<bigint> {
    this.assertOpen('seek');
    return this.exclusive(async () => {
      const claim = this.claims.get(claimKey(topic, partition));
      if (claim === undefined) {
        throw new TributaryError({
          code: 'PARTITION_NOT_OWNED',
          message: `${topic}-${partition} is not owned by consumer ${this.consumerId} of group ${this.group} right now; seek a partition its streams are reading`,
          details: { topic, partition },
        });
      }
      let offset: bigint;
      if (typeof position === 'object') {
        offset = await this.simple.listOffset(topic, partition, { timestamp: position.timestamp });
        if (offset < 0n) offset = await this.simple.listOffset(topic, partition, 'latest');
      } else {
        offset = BigInt(position);
      }
      await this.fetchers.stop(claim);
      // Queued messages from before the seek are stale: a fresh claim object replaces the old one.
      claim.active = false;
      claim.stream.purge();
      const fresh: Claim = { ...claim, fetchOffset: offset, pushedEnd: offset, consumed: offset, active: true, fetcher: undefined };
      this.claims.set(claimKey(topic, partition), fresh);
      this.fetchers.start(fresh);
      return offset;
    });
  }

  /** Commits, stops fetching, releases ownership, deregisters and ends the streams. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.commitTimer !== undefined) clearInterval(this.commitTimer);
    if (this.checkTimer !== undefined) clearInterval(this.checkTimer);
    if (this.disconnectTimer !== undefined) clearTimeout(this.disconnectTimer);
    if (this.freezeTimer !== undefined) clearInterval(this.freezeTimer);
    await this.rebalancer.stop();
    await this.exclusive(async () => {
      await this.fetchers.stopAll(this.claims.values());
      try {
        await this.offsets.commitOwned(this.claims.values());
        await this.rebalancer.releaseAll();
        if (this.subscription !== undefined) await this.store.delete(consumerPath(this.group, this.consumerId)).catch((error: unknown) => {
          if (!hasCode(error, 'NO_NODE')) throw error;
        });
      } catch (error) {
        this.logger.warn({ err: error }, 'could not commit or release cleanly at close; the session end removes the ephemerals');
      }
    });
    for (const streams of this.streams.values()) for (const stream of streams) stream.close();
    this.unsubscribe();
    if (this.ownsStore) await this.store.close();
    if (this.ownsCluster) this.cluster.close();
  }

  /** The partitions this consumer owns now, as `topic/partition` → thread id. */
  ownership(): Map<string, string> {
    return new Map([...this.claims].map(([name, claim]) => [name, claim.threadId]));
  }

  // ---- registration and session events ----

  private async register(): Promise<void> {
    // One id, one kind of group: a group the brokers coordinate (kafkajs, Java) is refused, not mixed.
    const owner = await claimGroup(this.store, this.group, { kind: 'zookeeper', protocolType: '', emptySince: null });
    if (owner.record.kind !== 'zookeeper') throw groupKindConflict(this.group, owner.record.kind);
    await this.store.ensurePath(consumerIdsPath(this.group));
    const data = Buffer.from(JSON.stringify({ version: 1, subscription: this.subscription, pattern: 'static', at: Date.now() }));
    const path = consumerPath(this.group, this.consumerId);
    try {
      await this.store.create(path, data, 'ephemeral');
    } catch (error) {
      // After a lost connection the create may have happened: an existing node of this session is ours.
      if (!hasCode(error, 'NODE_EXISTS')) throw error;
      this.logger.info({ path }, 'consumer registration already exists; keeping it');
    }
    this.logger.info({ subscription: this.subscription }, 'registered in the consumer registry');
  }

  /**
   * Registration after a session expiry. The new session may meet a ZooKeeper without quorum (an
   * ensemble leader election) or a dropped connection: retriable failures are tried again, as a
   * failed rebalance is, before the consumer fails loudly. (It used to fail for good at the first
   * lost connection: a consumer alive but out of its group.)
   */
  private async registerAgain(): Promise<void> {
    const retries = this.options.rebalanceMaxRetries ?? 4;
    const backoff = this.options.rebalanceBackoffMs ?? 2000;
    for (let attempt = 0; ; attempt += 1) {
      try {
        await this.register();
        return;
      } catch (error) {
        if (this.closed || !(error instanceof TributaryError && error.retriable) || attempt >= retries) throw error;
        this.logger.warn({ err: error, attempt }, 'could not register again yet; retrying');
        await sleep(backoff);
      }
    }
  }

  private onSessionEvent(event: SessionEvent): void {
    if (this.closed) return;
    this.disconnected = event === 'disconnected';
    if (event === 'disconnected') {
      // The session may expire while we cannot hear it: stop handing out messages before another
      // member can have taken our partitions (reliability.md §4.4, item 4).
      const timeout = this.options.sessionTimeoutMs ?? 6000;
      this.disconnectTimer ??= setTimeout(() => this.pauseFetching(), Math.floor((timeout * 2) / 3));
      this.disconnectTimer.unref();
      return;
    }
    if (this.disconnectTimer !== undefined) clearTimeout(this.disconnectTimer);
    this.disconnectTimer = undefined;
    if (event === 'connected' && this.paused) {
      this.resumeFetching('ZooKeeper connection back within the session: fetching again');
      return;
    }
    this.paused = false;
    if (event === 'expired') {
      // The ephemerals are gone: another consumer may own our partitions already. Stop at once.
      this.logger.warn('ZooKeeper session expired: stopping fetchers and dropping all ownership');
      this.dropAllClaims();
    } else if (event === 'reconnected-new-session' && this.subscription !== undefined) {
      void this.exclusive(() => this.registerAgain())
        .then(() => this.rebalancer.scheduleRebalance())
        .catch((error: unknown) => this.fatal(new TributaryError({ code: 'CONSUMER_REGISTRATION_FAILED', message: `consumer ${this.consumerId} could not register again after its session expired`, cause: error })));
    }
  }

  private resumeFetching(reason: string): void {
    if (!this.paused) return;
    this.paused = false;
    this.logger.info(reason);
    void this.exclusive(async () => {
      for (const claim of this.claims.values()) this.fetchers.start(claim);
    });
  }

  private now(): number {
    return (this.options.clock ?? systemClock).now();
  }

  /** The longest the consumer may go unheard before it stops handing out messages (as after a disconnection). */
  private freezeLimitMs(): number {
    return Math.floor(((this.options.sessionTimeoutMs ?? 6000) * 2) / 3);
  }

  /**
   * False when the process has not run for longer than the freeze limit (it was stopped, or its
   * event loop blocked): then the fetchers pause, queued messages are dropped, and a request on
   * the session decides whether they may start again. Called by a timer and before every
   * delivery, since after a SIGCONT either may run first.
   */
  private awake(): boolean {
    const now = this.now();
    const gap = now - this.lastRan;
    // Set first: pausing purges the streams, which asks the messages' current() again.
    this.lastRan = now;
    if (gap <= this.freezeLimitMs() || this.closed || this.subscription === undefined) return true;
    this.logger.warn({ milliseconds: gap, limitMs: this.freezeLimitMs() }, 'this process did not run for most of the session timeout (paused, or its event loop blocked): the session may have expired; handing out nothing until ZooKeeper confirms it');
    this.pauseFetching('did not run');
    void this.confirmSession();
    return false;
  }

  /**
   * After a freeze: any request that succeeds on the session proves it alive (and renews it); our
   * registration being there proves it is the session we registered with. An expired session
   * fails the request instead, and the session events take over (drop everything, register again).
   */
  private async confirmSession(): Promise<void> {
    try {
      const registered = await this.store.exists(consumerPath(this.group, this.consumerId));
      if (registered && !this.disconnected) this.resumeFetching('ZooKeeper confirmed the session after the freeze: fetching again');
    } catch (error) {
      this.logger.info({ err: error }, 'could not confirm the session after the freeze');
      // Expired: the session events take over. A lost connection: 'connected' resumes. Anything
      // else retriable (no quorum yet) is asked again, or the fetchers would stay paused for good.
      if (error instanceof TributaryError && error.retriable && this.paused && !this.closed) setTimeout(() => void this.confirmSession(), 500).unref();
    }
  }

  /**
   * Stops the fetchers and drops the queued messages, keeping the claims: fetching resumes from
   * the consumed offsets if the session turns out to be alive (the connection comes back within
   * it, or a request on it succeeds after a freeze).
   */
  private pauseFetching(why: 'disconnected' | 'did not run' = 'disconnected'): void {
    if (why === 'disconnected') this.disconnectTimer = undefined;
    if (this.closed || this.claims.size === 0) return;
    if (why === 'disconnected') this.logger.warn('disconnected from ZooKeeper for most of the session timeout: pausing the fetchers');
    this.paused = true;
    for (const [name, claim] of [...this.claims]) {
      claim.active = false;
      if (claim.fetcher !== undefined) haltFetcher(claim.fetcher);
      claim.stream.purge();
      this.claims.set(name, { ...claim, fetchOffset: claim.consumed, pushedEnd: claim.consumed, active: true, fetcher: undefined });
    }
  }

  /** Forgets every claim without touching ZooKeeper (the session that held them is gone). */
  private dropAllClaims(): void {
    for (const claim of this.claims.values()) {
      claim.active = false;
      if (claim.fetcher !== undefined) haltFetcher(claim.fetcher);
      claim.stream.purge();
    }
    this.claims.clear();
  }

  // ---- helpers ----

  /** Runs `fn` with no other rebalance, commit or seek in progress. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.lock.then(fn, fn);
    this.lock = result.catch(() => undefined);
    return result;
  }

  private fatal(error: Error): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    if (this.checkTimer !== undefined) clearInterval(this.checkTimer);
    this.logger.error({ err: error }, 'consumer failed');
    this.dropAllClaims();
    for (const streams of this.streams.values()) for (const stream of streams) stream.fail(error);
    this.options.onError?.(error);
  }

  private assertOpen(operation: string): void {
    if (this.closed) throw new TributaryError({ code: 'CLOSED', message: `${operation}: the consumer is closed` });
    if (this.failure !== undefined) throw this.failure;
  }
}
