/**
 * The replicas this broker holds, and their roles, as the partition states in the coordination
 * store assign them (replication.md §5.3–5.6).
 *
 * Each state change of a local partition is applied in the partition's exclusive turn:
 * - leader = this broker, under this process's incarnation, in a newer epoch: record (epoch, log
 *   end) durably in the leader-epoch cache, stop following, lead;
 * - leader = this broker under an earlier incarnation (a state from before this process started):
 *   fenced, neither leading nor following, until the controller elects anew;
 * - another leader (or none): stop leading (parked acks=−1 requests fail), and follow it through
 *   the fetcher of that broker, truncating by leader epoch first.
 *
 * As leader it records followers' fetches, moves high watermarks, and shrinks and expands the
 * ISR with writes conditional on the state node's version. A write that finds a newer version
 * re-reads the state and acts on it: a new leader or epoch means stepping down; the same leader
 * and epoch means computing again with the newer ISR (the KAFKA-2729 lesson: never skip silently).
 *
 * When the coordination session expires, every leader here is fenced at once: the controller may
 * elect others while this broker cannot see it. The states read on the new session decide again.
 *
 * A transition that fails (an I/O error recording the epoch, anything unexpected) is tried again
 * with backoff from the state cached by then (transition-retry.ts), not only at the controller's
 * next write, which may never come while the partition is stuck.
 */
import type { Clock } from '../../common/clock.js';
import { TributaryError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { encodePartitionState, decodePartitionState, type PartitionState } from '../../coordination/partition-state.js';
import { partitionStatePath } from '../../coordination/paths.js';
import type { CoordinationStore } from '../../coordination/store.js';
import { KafkaErrorCode, type KafkaErrorName } from '../../protocol/kafka-errors.js';
import type { LogManager } from '../../storage/log-manager.js';
import type { AppendResult, PartitionLog } from '../../storage/partition-log.js';
import { partitionKey, type Cluster, type PartitionKey, type PartitionStateEntry } from '../cluster.js';
import type { FetchWaiters } from '../fetch-waiters.js';
import type { ReplicationMetrics } from './replication-metrics.js';
import { PartitionReplica } from './partition-replica.js';
import { ReplicaFetcher, type ReplicaFetcherSettings } from './replica-fetcher.js';
import { DEFAULT_TRANSITION_RETRY, TransitionRetries, type TransitionRetrySettings } from './transition-retry.js';
import { endpointOn } from '../broker-endpoints.js';
import type { ClientSecurity } from '../../client/security-config.js';

export interface ReplicaManagerOptions {
  readonly brokerId: number;
  readonly cluster: Cluster;
  readonly store: CoordinationStore;
  readonly logs: LogManager;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: ReplicationMetrics;
  /** Follower fetches park here and wake when a leader appends (not when its HW moves). */
  readonly replicaWaiters: FetchWaiters;
  readonly replicaLagTimeMaxMs: number;
  readonly fetcher: ReplicaFetcherSettings;
  /** The listener followers connect to on each leader (inter.broker.listener.name); PLAINTEXT when absent. */
  readonly interBrokerListener?: string;
  /** TLS and SASL of the followers' connections, for a secured inter-broker listener. */
  readonly interBrokerSecurity?: ClientSecurity;
  /**
   * The coordination session timeout: a process frozen for 2/3 of it (SIGSTOP, a long pause) may
   * have lost its session and its leaderships without hearing it yet (replication.md §5.3 step 5).
   */
  readonly sessionTimeoutMs: number;
  /** How a failed role transition is retried (DEFAULT_TRANSITION_RETRY when absent; tests shorten it). */
  readonly transitionRetry?: TransitionRetrySettings;
  /** Jitter's source for those retries (tests pin it). */
  readonly random?: () => number;
}

/** How often the event loop's liveness is sampled, to notice a freeze. */
const STALL_CHECK_MS = 100;

/** What a request to a partition gets: its replica here, or the error code and why. */
export type LeaderLookup =
  | { readonly replica: PartitionReplica; readonly errorCode: 0 }
  | { readonly replica: undefined; readonly errorCode: number; readonly errorMessage: string };

export class ReplicaManager {
  private readonly replicas = new Map<string, PartitionReplica>();
  private readonly fetchers = new Map<number, ReplicaFetcher>();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly logger: Logger;
  private readonly retries: TransitionRetries;
  private stopped = false;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly options: ReplicaManagerOptions) {
    this.logger = options.logger.child({ component: 'replica-manager' });
    this.retries = new TransitionRetries(options.transitionRetry ?? DEFAULT_TRANSITION_RETRY, {
      clock: options.clock,
      logger: this.logger,
      failures: options.metrics.transitionFailures,
      ...(options.random === undefined ? {} : { random: options.random }),
    });
  }

  start(): void {
    const { replicaLagTimeMaxMs } = this.options;
    const every = (ms: number, task: () => void): void => {
      const timer = setInterval(() => {
        try {
          task();
        } catch (error) {
          this.logger.error({ err: error }, 'a replication task failed');
        }
      }, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(Math.max(100, Math.floor(replicaLagTimeMaxMs / 2)), () => this.shrinkLaggingIsrs());
    every(1_000, () => this.updateGauges());
    // Timers run before I/O in each turn of the event loop: after a freeze, this check runs before
    // any request that waited meanwhile, so a leader deposed while frozen takes none of them.
    let lastTick = this.options.clock.now();
    const stallMs = Math.floor((this.options.sessionTimeoutMs * 2) / 3);
    every(STALL_CHECK_MS, () => {
      const now = this.options.clock.now();
      const gap = now - lastTick;
      lastTick = now;
      if (gap > stallMs) void this.afterStall(gap);
    });
    this.unsubscribe = this.options.store.onSessionEvent((event) => {
      if (event === 'expired') this.fenceAllLeaders('the coordination session expired');
    });
  }

  /**
   * The process was frozen for `gap` ms, two thirds of the session timeout or more: another broker
   * may lead its partitions now. Stops leading at once, then reads each partition's state from the
   * coordination store itself (not the cache, which may be just as stale) and acts on it.
   */
  private async afterStall(gap: number): Promise<void> {
    const fenced = [...this.replicas.values()].filter((replica) => replica.role === 'leader');
    if (fenced.length === 0) return;
    this.fenceAllLeaders(`this process was frozen for ${gap} ms, over 2/3 of the ${this.options.sessionTimeoutMs} ms session timeout`);
    for (const replica of fenced) {
      const path = partitionStatePath(replica.topic, replica.partition);
      for (let attempt = 0; attempt < 20 && !this.stopped; attempt += 1) {
        try {
          const node = await this.options.store.get(path);
          if (node !== undefined) this.options.cluster.noteState(replica.topic, replica.partition, { state: decodePartitionState(node.data, path), version: node.version });
          await this.apply(replica, true);
          break;
        } catch (error) {
          // A session being replaced: the states read on the new one decide (the cluster reloads them).
          this.logger.warn({ err: error, partition: replica.name }, 'could not read a partition state after a freeze; trying again');
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    for (const timer of this.timers) clearInterval(timer);
    this.retries.stop();
    await Promise.all([...this.fetchers.values()].map((fetcher) => fetcher.stop()));
    this.fetchers.clear();
    for (const replica of this.replicas.values()) replica.close('the broker is stopping');
  }

  /** The replica of a partition, if this broker holds one. */
  replica(topic: string, partition: number): PartitionReplica | undefined {
    return this.replicas.get(`${topic}-${partition}`);
  }

  allReplicas(): PartitionReplica[] {
    return [...this.replicas.values()];
  }

  /** Partitions whose last role transition failed, with their retry pending; and the timers of those retries. */
  failingTransitions(): { partitions: number; pendingTimers: number } {
    return { partitions: this.retries.size, pendingTimers: this.retries.pendingTimers };
  }

  /**
   * Brings the replicas in line with the assignments and states: creates the replicas of local
   * partitions whose logs exist, drops those no longer local, and applies every state (again:
   * after a new session, a state may be unchanged but this broker's fencing must be lifted).
   */
  async sync(): Promise<void> {
    const { cluster, logs } = this.options;
    const local = new Set<string>();
    for (const { topic, partition, replicas } of cluster.localPartitions()) {
      const name = `${topic}-${partition}`;
      local.add(name);
      const log = logs.getLog(topic, partition);
      if (log === undefined) continue; // offline, or not created yet: the broker's log sync comes back here
      let replica = this.replicas.get(name);
      if (replica === undefined) {
        replica = this.createReplica(topic, partition, log, replicas);
      } else {
        replica.replicas = replicas;
      }
      await this.apply(replica, true);
    }
    for (const [name, replica] of this.replicas) {
      if (local.has(name)) continue;
      this.replicas.delete(name);
      this.retries.cancel(name);
      this.fetcherOf(replica.leaderId)?.remove(name);
      replica.close('its topic was deleted or it was moved');
    }
  }

  /** Applies changed states of local partitions. */
  async statesChanged(partitions: readonly PartitionKey[]): Promise<void> {
    await Promise.all(
      partitions.map(async ({ topic, partition }) => {
        const replica = this.replicas.get(`${topic}-${partition}`);
        if (replica !== undefined) await this.apply(replica, false);
      }),
    );
  }

  /** Resolves once no local partition waits on the controller to replace a state from before this process (bounded). */
  async settled(timeoutMs: number): Promise<boolean> {
    const deadline = this.options.clock.now() + timeoutMs;
    while (!this.stopped) {
      const waiting = [...this.replicas.values()].filter((replica) => replica.role === 'fenced' || (replica.role === 'unknown' && this.options.cluster.partitionState(replica.topic, replica.partition) !== undefined));
      if (waiting.length === 0) return true;
      if (this.options.clock.now() >= deadline) {
        this.logger.warn({ partitions: waiting.slice(0, 10).map((replica) => replica.name), count: waiting.length }, 'partitions still wait for the controller to elect their leader; serving the others');
        return false;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return false;
  }

  /**
   * Resolves once every partition of `topic` that the states name this broker leader of is led
   * here (its log open, its epoch recorded), or after `timeoutMs`: CreateTopics answers then, so
   * a client's first produce to this broker finds its leader ready.
   */
  async leadershipTaken(topic: string, timeoutMs: number): Promise<boolean> {
    const { cluster, brokerId } = this.options;
    const deadline = this.options.clock.now() + timeoutMs;
    for (;;) {
      const partitions = [...(cluster.topic(topic)?.partitions.keys() ?? [])];
      const waiting = partitions.filter((partition) => {
        const state = cluster.partitionState(topic, partition)?.state;
        if (state === undefined || state.leader !== brokerId) return false;
        const replica = this.replica(topic, partition);
        return replica === undefined || replica.role !== 'leader' || replica.leaderEpoch < state.leaderEpoch;
      });
      if (waiting.length === 0) return true;
      if (this.stopped || this.options.clock.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  // ---- requests -------------------------------------------------------------------------

  /**
   * The replica a client request may use on this leader: checks the partition is here, this
   * broker leads it, and the client's CurrentLeaderEpoch (−1 = unchecked) is this leader's
   * (KIP-320: older → FENCED_LEADER_EPOCH, newer → UNKNOWN_LEADER_EPOCH).
   */
  leaderFor(topic: string, partition: number, currentLeaderEpoch = -1): LeaderLookup {
    const replica = this.replicas.get(`${topic}-${partition}`);
    if (replica === undefined) {
      const assignment = this.options.cluster.topic(topic);
      const replicas = assignment?.partitions.get(partition);
      if (replicas === undefined) return failure('UNKNOWN_TOPIC_OR_PARTITION', `this broker does not know partition ${topic}-${partition}`);
      const offline = this.options.logs.offlineReason(topic, partition);
      if (offline !== undefined && replicas.includes(this.options.brokerId)) return failure('KAFKA_STORAGE_ERROR', `partition ${topic}-${partition} is offline: ${offline}`);
      const leader = this.options.cluster.partitionState(topic, partition)?.state.leader ?? -1;
      return failure('NOT_LEADER_OR_FOLLOWER', leader >= 0 ? `broker ${leader} leads ${topic}-${partition}, not this one` : `${topic}-${partition} has no leader now`);
    }
    if (currentLeaderEpoch >= 0 && replica.leaderEpoch >= 0) {
      if (currentLeaderEpoch < replica.leaderEpoch) return failure('FENCED_LEADER_EPOCH', `leader epoch ${currentLeaderEpoch} of ${replica.name} is old; the current one is ${replica.leaderEpoch}: refresh metadata`);
      if (currentLeaderEpoch > replica.leaderEpoch) return failure('UNKNOWN_LEADER_EPOCH', `leader epoch ${currentLeaderEpoch} of ${replica.name} is newer than this broker knows (${replica.leaderEpoch}); retry shortly`);
    }
    if (replica.role !== 'leader') {
      return failure('NOT_LEADER_OR_FOLLOWER', replica.leaderId >= 0 && replica.leaderId !== this.options.brokerId ? `broker ${replica.leaderId} leads ${replica.name}, not this one` : `${replica.name} has no leader now`);
    }
    return { replica, errorCode: 0 };
  }

  /**
   * Produce on a leader. Everything up to the log's append is synchronous (appends are numbered
   * in request order); the promise settles when the acks level is met.
   */
  append(replica: PartitionReplica, batch: Buffer, acks: -1 | 0 | 1, allowZstd: boolean, timeoutMs: number): Promise<AppendResult> {
    return replica.appendAsLeader(batch, { acks, allowZstd, timeoutMs, minInsyncReplicas: replica.log.config.minInsyncReplicas });
  }

  /**
   * A follower's Fetch for one partition: validates it, records its fetch offset (its durable
   * log end) and log start (−1: not told), grows the ISR or moves the HW when that allows.
   * Returns the leader's replica, whose log the handler then reads up to its written end.
   */
  followerFetch(topic: string, partition: number, followerId: number, fetchOffset: number, logStartOffset: number, currentLeaderEpoch: number): LeaderLookup {
    const lookup = this.leaderFor(topic, partition, currentLeaderEpoch);
    if (lookup.replica === undefined) return lookup;
    const replica = lookup.replica;
    if (!replica.replicas.includes(followerId) || followerId === this.options.brokerId) {
      return failure('NOT_LEADER_OR_FOLLOWER', `broker ${followerId} is not a replica of ${replica.name} (replicas ${replica.replicas.join(', ')})`);
    }
    if (currentLeaderEpoch < 0) return failure('FENCED_LEADER_EPOCH', `a replica fetch of ${replica.name} must name the leader epoch`);
    if (fetchOffset <= replica.log.logEndOffset) {
      replica.recordFollowerFetch(followerId, fetchOffset, logStartOffset);
      this.maybeExpandIsr(replica);
      this.advanceHighWatermark(replica);
    }
    return lookup;
  }

  /** DeleteRecords' low watermark of a partition this broker leads: over its log and every live broker's replica. */
  lowWatermark(replica: PartitionReplica): number {
    return replica.lowWatermark((brokerId) => this.options.cluster.isLive(brokerId));
  }

  /** The end of `leaderEpoch` in this leader's log (OffsetForLeaderEpoch, KIP-279). */
  endOffsetForEpoch(replica: PartitionReplica, leaderEpoch: number): { epoch: number; endOffset: number } {
    return replica.log.leaderEpochCache.endOffsetFor(leaderEpoch, replica.log.logEndOffset);
  }

  // ---- log events ----------------------------------------------------------------------

  /** A log's fsync completed: a leader's share of the HW moved. */
  onFlushed(log: PartitionLog): void {
    const replica = this.replicas.get(log.name);
    if (replica?.role === 'leader') this.advanceHighWatermark(replica);
  }

  /** New bytes in a log: parked follower fetches of it wake. */
  onAppended(log: PartitionLog): void {
    this.options.replicaWaiters.notify(log.topic, log.partition);
  }

  // ---- roles ---------------------------------------------------------------------------

  private createReplica(topic: string, partition: number, log: PartitionLog, replicas: readonly number[]): PartitionReplica {
    const replica = new PartitionReplica(topic, partition, log, replicas, this.options.brokerId, this.options.clock);
    if (replica.replicated) {
      // The HW a replica starts from is the one it checkpointed: its log may hold records the
      // others never got, which must not be exposed before they are (replication.md §5.3 step 1).
      log.setHighWatermarkMode('replicated');
      const checkpointed = this.options.logs.highWatermarkCheckpoint(topic, partition);
      log.resetHighWatermark(Math.min(checkpointed ?? log.logStartOffset, log.logEndOffset));
    }
    this.replicas.set(replica.name, replica);
    return replica;
  }

  /**
   * Applies the cached state of `replica`'s partition (when newer than the applied one, or always
   * when `again`). A failure is retried after a backoff with `again`: the state cached by then,
   * perhaps newer, is applied, so a retry never resurrects a superseded state.
   */
  private apply(replica: PartitionReplica, again: boolean): Promise<void> {
    return replica.withExclusive(async () => {
      if (this.stopped || this.replicas.get(replica.name) !== replica) {
        // A retry of a replica that is gone (stop and removal cancel theirs; this is the one in flight).
        if (this.replicas.get(replica.name) !== replica) this.retries.cancel(replica.name);
        return;
      }
      const entry = this.options.cluster.partitionState(replica.topic, replica.partition);
      if (entry === undefined) {
        this.retries.cancel(replica.name); // no state to take (yet): the one that comes is applied
        return;
      }
      if (!again && entry.version <= replica.stateVersion) return;
      try {
        await this.transition(replica, entry);
      } catch (error) {
        if (this.stopped || this.replicas.get(replica.name) !== replica) return;
        this.retries.failed({ partition: replica.name, role: this.roleOf(entry.state), directory: replica.log.directory }, error, () => void this.apply(replica, true));
        return;
      }
      this.retries.succeeded(replica.name);
    });
  }

  /** The role a state gives this broker, in words (logs and errors). */
  private roleOf(state: PartitionState): string {
    if (state.leader === this.options.brokerId) return `leader of epoch ${state.leaderEpoch}`;
    return state.leader >= 0 ? `follower of broker ${state.leader} in epoch ${state.leaderEpoch}` : `a replica waiting for a leader (epoch ${state.leaderEpoch})`;
  }

  private async transition(replica: PartitionReplica, { state, version }: PartitionStateEntry): Promise<void> {
    const me = this.options.brokerId;
    if (state.leaderEpoch < replica.leaderEpoch) return; // an older picture than the one applied
    if (state.leader === me) {
      if (state.leaderIncarnation !== '' && state.leaderIncarnation !== this.options.cluster.incarnation) {
        if (replica.role !== 'fenced') {
          this.stopFollowing(replica);
          replica.stepDown('fenced', -1, state.leaderEpoch, 'a state from before this broker restarted names it leader');
          this.logger.info({ partition: replica.name, leaderEpoch: state.leaderEpoch }, 'not leading on a state written before this broker started; waiting for the controller to elect anew');
        }
        return;
      }
      if (replica.role === 'leader' && replica.leaderEpoch === state.leaderEpoch) {
        replica.updateLeaderState(state, version, replica.log.config.minInsyncReplicas);
        this.advanceHighWatermark(replica);
        return;
      }
      this.stopFollowing(replica);
      const log = replica.log;
      // Durable before the first batch of the epoch: a follower asking where this epoch began
      // must get the same answer after any crash (PR #5678: the new leader caches (E, LEO)).
      log.leaderEpochCache.assign(state.leaderEpoch, log.logEndOffset);
      replica.becomeLeader(state, version);
      this.options.metrics.leaderElections.inc();
      this.logger.info({ partition: replica.name, leaderEpoch: state.leaderEpoch, isr: state.isr, logEndOffset: log.logEndOffset, highWatermark: log.highWatermark }, 'leading');
      this.advanceHighWatermark(replica);
      return;
    }
    // Already following this leader in this epoch, fetcher included: an attempt that failed halfway
    // (role set, fetcher not added) must not pass for done when it is retried.
    const following = state.leader < 0 || this.fetcherOf(state.leader)?.has(replica.name) === true;
    if (replica.role === 'follower' && replica.leaderId === state.leader && replica.leaderEpoch === state.leaderEpoch && following) {
      replica.state = state;
      replica.stateVersion = version;
      return;
    }
    const wasLeader = replica.role === 'leader';
    this.stopFollowing(replica);
    replica.stepDown('follower', state.leader, state.leaderEpoch, state.leader >= 0 ? `broker ${state.leader} leads epoch ${state.leaderEpoch}` : 'no replica can lead now');
    replica.state = state;
    replica.stateVersion = version;
    if (state.leader >= 0) this.fetcherFor(state.leader).add(replica, state.leaderEpoch);
    this.logger.info({ partition: replica.name, leader: state.leader, leaderEpoch: state.leaderEpoch, wasLeader, logEndOffset: replica.log.logEndOffset }, state.leader >= 0 ? 'following' : 'the partition has no leader; waiting');
  }

  private stopFollowing(replica: PartitionReplica): void {
    for (const fetcher of this.fetchers.values()) fetcher.remove(replica.name);
  }

  private fetcherOf(leaderId: number): ReplicaFetcher | undefined {
    return this.fetchers.get(leaderId);
  }

  private fetcherFor(leaderId: number): ReplicaFetcher {
    let fetcher = this.fetchers.get(leaderId);
    if (fetcher === undefined) {
      const { cluster } = this.options;
      fetcher = new ReplicaFetcher(
        leaderId,
        {
          brokerId: this.options.brokerId,
          clock: this.options.clock,
          logger: this.options.logger,
          brokerAddress: (id) => {
            const broker = cluster.broker(id);
            // A leader without the inter-broker listener (a misconfigured cluster) cannot be followed: retried with backoff.
            const endpoint = broker === undefined ? undefined : endpointOn(broker, this.options.interBrokerListener ?? 'PLAINTEXT');
            return endpoint === undefined ? undefined : { host: endpoint.host, port: endpoint.port };
          },
          ...(this.options.interBrokerSecurity === undefined ? {} : { security: this.options.interBrokerSecurity }),
        },
        this.options.fetcher,
      );
      this.fetchers.set(leaderId, fetcher);
    }
    return fetcher;
  }

  /** Every leader here stops serving until the states read on a new session say otherwise. */
  private fenceAllLeaders(reason: string): void {
    let fenced = 0;
    for (const replica of this.replicas.values()) {
      if (replica.role !== 'leader') continue;
      replica.stepDown('fenced', -1, replica.leaderEpoch, reason);
      // Applied again in full once the new session has read the states.
      replica.stateVersion = -1;
      fenced += 1;
    }
    if (fenced > 0) this.logger.warn({ partitions: fenced, reason }, 'stopped leading until the coordination store is read again');
  }

  // ---- high watermark and ISR -------------------------------------------------------------

  private advanceHighWatermark(replica: PartitionReplica): void {
    replica.maybeAdvanceHighWatermark(replica.log.config.minInsyncReplicas, replica.log.config.visibleOnAppend);
  }

  private maybeExpandIsr(replica: PartitionReplica): void {
    if (replica.isrWriteInFlight || replica.state === undefined) return;
    const joining = replica.followersReadyToJoin().filter((id) => this.options.cluster.isLive(id));
    if (joining.length === 0) return;
    const isr = replica.replicas.filter((id) => replica.isr.includes(id) || joining.includes(id));
    const storage: Record<string, string> = { ...replica.state.replicaStorage };
    for (const id of joining) {
      const storageId = this.options.cluster.broker(id)?.storageId;
      if (storageId !== undefined) storage[String(id)] = storageId;
    }
    void this.writeIsr(replica, isr, storage, 'expand');
  }

  private shrinkLaggingIsrs(): void {
    if (this.stopped) return;
    for (const replica of this.replicas.values()) {
      if (replica.role !== 'leader' || replica.isrWriteInFlight || replica.state === undefined) continue;
      const lagging = replica.laggingFollowers(this.options.replicaLagTimeMaxMs);
      if (lagging.length === 0) continue;
      const isr = replica.isr.filter((id) => !lagging.includes(id));
      const storage: Record<string, string> = {};
      for (const [id, storageId] of Object.entries(replica.state.replicaStorage)) if (isr.includes(Number(id))) storage[id] = storageId;
      this.logger.warn({ partition: replica.name, lagging, lagMs: this.options.replicaLagTimeMaxMs, lag: Object.fromEntries(replica.followerLag()) }, 'followers did not catch up in time; removing them from the ISR');
      void this.writeIsr(replica, isr, storage, 'shrink');
    }
  }

  /**
   * Writes a new ISR for a partition this broker leads, conditional on the state version it last
   * applied. A newer version is read and applied (stepping down if another leader or epoch came);
   * the ISR is then decided again at the next fetch or check.
   */
  private async writeIsr(replica: PartitionReplica, isr: number[], replicaStorage: Record<string, string>, kind: 'expand' | 'shrink'): Promise<void> {
    const current = replica.state;
    if (current === undefined || replica.role !== 'leader') return;
    replica.isrWriteInFlight = true;
    const path = partitionStatePath(replica.topic, replica.partition);
    const next: PartitionState = { ...current, isr, replicaStorage };
    try {
      const version = await this.options.store.set(path, encodePartitionState(next), replica.stateVersion);
      if (replica.role === 'leader' && replica.leaderEpoch === next.leaderEpoch) {
        replica.updateLeaderState(next, version, replica.log.config.minInsyncReplicas);
        (kind === 'expand' ? this.options.metrics.isrExpands : this.options.metrics.isrShrinks).inc();
        this.logger.info({ partition: replica.name, isr, leaderEpoch: next.leaderEpoch, highWatermark: replica.log.highWatermark }, kind === 'expand' ? 'ISR expanded' : 'ISR shrank');
      }
      this.options.cluster.noteState(replica.topic, replica.partition, { state: next, version });
      this.advanceHighWatermark(replica);
    } catch (error) {
      const code = error instanceof TributaryError ? error.code : undefined;
      if (code === 'BAD_VERSION') {
        // Someone else wrote the state (the controller, or a newer leader): act on what is there.
        const node = await this.options.store.get(path).catch(() => undefined);
        if (node !== undefined) {
          this.options.cluster.noteState(replica.topic, replica.partition, { state: decodePartitionState(node.data, path), version: node.version });
          await this.apply(replica, false);
        }
      } else if (code !== 'NO_NODE') {
        this.logger.warn({ err: error, partition: replica.name, isr }, 'could not write the ISR change; trying again at the next check');
      }
    } finally {
      replica.isrWriteInFlight = false;
    }
  }

  private updateGauges(): void {
    let underReplicated = 0;
    let leaders = 0;
    const { metrics } = this.options;
    for (const replica of this.replicas.values()) {
      if (replica.role !== 'leader') continue;
      leaders += 1;
      if (replica.isr.length < replica.replicas.length) underReplicated += 1;
      for (const [follower, lag] of replica.followerLag()) metrics.replicaLag.set({ topic: replica.topic, partition: String(replica.partition), follower: String(follower) }, lag);
    }
    metrics.underReplicatedPartitions.set(underReplicated);
    metrics.leaderPartitions.set(leaders);
    metrics.transitionsFailing.set(this.retries.size);
  }
}

function failure(code: KafkaErrorName, errorMessage: string): LeaderLookup {
  return { replica: undefined, errorCode: KafkaErrorCode[code], errorMessage };
}

export { partitionKey };
