/**
 * This broker's replica of one partition, and what its role asks of it (replication.md §5.5–5.6).
 *
 * Leader of epoch E:
 * - stamps E into every batch it appends, and refuses acks=−1 while the ISR is below
 *   min.insync.replicas (NOT_ENOUGH_REPLICAS, nothing written);
 * - tracks each follower's fetch offset, counted only from fetches that name epoch E. A follower
 *   fetches again only after fsyncing what it got, so its fetch offset is its durable log end;
 * - moves the high watermark to the minimum of its own fsynced end and the fetch offsets of the
 *   ISR, and only while the ISR has at least min.insync.replicas members (strict min ISR, the
 *   KIP-966 rule): the HW means "fsynced on every in-sync replica";
 * - answers acks=−1 once the HW passes the batch, acks=1 once its own fsync does;
 * - shrinks the ISR of followers not caught up for replica.lag.time.max.ms and expands it with
 *   followers that reached the HW and the start of epoch E (KAFKA-7128), each by a write
 *   conditional on the state node's version (the caller does the write);
 * - tracks each follower's log start from the same fetches, for DeleteRecords' low watermark:
 *   the lowest log start of this leader and every live follower (Kafka's lowWatermarkIfLeader).
 *
 * Follower: fetches from the leader in a replica fetcher, after truncating by leader epoch.
 *
 * The leader's methods are synchronous where Produce needs them to be: appends must be numbered
 * in the order requests arrive.
 */
import type { Clock } from '../../common/clock.js';
import { KafkaProtocolError } from '../../protocol/kafka-errors.js';
import type { PartitionState } from '../../coordination/partition-state.js';
import type { AppendResult, PartitionLog } from '../../storage/partition-log.js';
import { HighWatermarkWaiters } from './high-watermark-waiters.js';

export type ReplicaRole =
  /** Leads epoch `leaderEpoch`. */
  | 'leader'
  /** Follows `leaderId` in epoch `leaderEpoch` (leader −1: the partition is offline, nothing to follow). */
  | 'follower'
  /**
   * Named leader by a state written before this broker's restart (or while its coordination
   * session was lost): it neither leads nor follows until the controller elects anew.
   */
  | 'fenced'
  /** No state yet. */
  | 'unknown';

interface FollowerProgress {
  /** The follower's durable log end, from its last fetch in the current epoch. */
  fetchOffset: number;
  /** When it last asked for an offset at or past this leader's log end at that moment. */
  lastCaughtUpAt: number;
  /** When its previous fetch came, and this leader's log end then (Kafka's lastFetchLeaderLogEndOffset). */
  lastFetchAt: number;
  logEndAtLastFetch: number;
  /** The follower's log start, from its last fetch in the current epoch (−1: not told yet). */
  logStartOffset: number;
}

export interface LeaderAppendOptions {
  readonly acks: -1 | 0 | 1;
  readonly allowZstd: boolean;
  /** The produce request's timeout: how long acks=−1 may wait for the ISR. */
  readonly timeoutMs: number;
  readonly minInsyncReplicas: number;
}

export class PartitionReplica {
  role: ReplicaRole = 'unknown';
  leaderId = -1;
  leaderEpoch = -1;
  /** The state node's version this replica last applied (conditional writes name it). */
  stateVersion = -1;
  state: PartitionState | undefined;
  /** The offset where this leader's epoch begins (its log end when it took over). */
  epochStartOffset = 0;
  private readonly followers = new Map<number, FollowerProgress>();
  private readonly waiters: HighWatermarkWaiters;
  /** Serializes role changes, truncation and follower appends (never leader appends). */
  private exclusive: Promise<void> = Promise.resolve();
  /** An ISR change of this leader's is being written. */
  isrWriteInFlight = false;
  private becameLeaderAt = 0;
  /** DeleteRecords requests waiting for the low watermark: woken when a follower's log start or this replica's role changes. */
  private readonly lowWatermarkWatchers = new Set<() => void>();

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly log: PartitionLog,
    public replicas: readonly number[],
    private readonly brokerId: number,
    private readonly clock: Clock,
  ) {
    this.waiters = new HighWatermarkWaiters(`${topic}-${partition}`);
  }

  get name(): string {
    return `${this.topic}-${this.partition}`;
  }

  /** More than one replica: the HW is the ISR's, not the log's own fsynced end. */
  get replicated(): boolean {
    return this.replicas.length > 1;
  }

  get isr(): readonly number[] {
    return this.state?.isr ?? [];
  }

  /** Runs `task` after every earlier exclusive task of this replica (role changes, fetch appends, truncation). */
  withExclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.exclusive.then(task, task);
    this.exclusive = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Becomes leader of `state.leaderEpoch` (the caller holds the exclusive turn and recorded the epoch start). */
  becomeLeader(state: PartitionState, version: number): void {
    this.state = state;
    this.stateVersion = version;
    this.role = 'leader';
    this.leaderId = this.brokerId;
    this.leaderEpoch = state.leaderEpoch;
    // Where the epoch began: the cache entry the manager recorded (or found, when this broker
    // leads the same epoch again after its coordination session came back).
    const entry = this.log.leaderEpochCache.entries().find((candidate) => candidate.epoch === state.leaderEpoch);
    this.epochStartOffset = entry?.startOffset ?? this.log.logEndOffset;
    this.becameLeaderAt = this.clock.now();
    // Progress from an earlier epoch says nothing about this one: every follower starts unknown,
    // with the lag timeout to show up before it is dropped from the ISR.
    this.followers.clear();
    if (this.replicated) this.log.setHighWatermarkMode('replicated');
  }

  /** Stops leading (a newer epoch, another leader, a deleted topic): parked acks=−1 requests fail. */
  stepDown(role: Exclude<ReplicaRole, 'leader'>, leaderId: number, leaderEpoch: number, reason: string): void {
    const wasLeader = this.role === 'leader';
    this.role = role;
    this.leaderId = leaderId;
    this.leaderEpoch = leaderEpoch;
    this.followers.clear();
    this.wakeLowWatermarkWatchers();
    if (wasLeader) this.waiters.failAll('NOT_LEADER_OR_FOLLOWER', `${this.name} is no longer led by this broker (${reason}); retry on the new leader`);
    if (this.replicated) this.log.setHighWatermarkMode('replicated');
  }

  /** Keeps a newer version of the state in which this broker is still leader in the same epoch (ISR changes). */
  updateLeaderState(state: PartitionState, version: number, minInsyncReplicas: number): void {
    this.state = state;
    this.stateVersion = version;
    if (state.isr.length < minInsyncReplicas && this.replicated) {
      this.waiters.failAll(
        'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
        `the in-sync replicas of ${this.name} are now ${state.isr.length}, below min.insync.replicas ${minInsyncReplicas}; the batch is in the leader's log and may still become visible`,
      );
    }
    for (const id of [...this.followers.keys()]) if (!this.replicas.includes(id)) this.followers.delete(id);
  }

  /**
   * Produce on this leader: checks, stamps the epoch and appends before its first await (appends
   * are numbered in call order); then waits for what `acks` asks.
   */
  appendAsLeader(batch: Buffer, options: LeaderAppendOptions): Promise<AppendResult> {
    if (this.role !== 'leader') {
      return Promise.reject(new KafkaProtocolError('NOT_LEADER_OR_FOLLOWER', `this broker does not lead ${this.name}${this.leaderId >= 0 ? `; broker ${this.leaderId} does` : ''}`));
    }
    const isrSize = this.isr.length;
    if (options.acks === -1 && isrSize < options.minInsyncReplicas) {
      return Promise.reject(
        new KafkaProtocolError(
          'NOT_ENOUGH_REPLICAS',
          `${this.name} has ${isrSize} in-sync replicas (${this.isr.join(', ')}), fewer than min.insync.replicas ${options.minInsyncReplicas}; nothing was written — retry once the replicas are back`,
        ),
      );
    }
    const replicated = this.replicated;
    const appended = this.log.append(batch, { waitForFlush: options.acks === -1 && !replicated, allowZstd: options.allowZstd, leaderEpoch: this.leaderEpoch });
    if (!replicated || options.acks === 0) return appended;
    return appended.then(async (result) => {
      const endOffset = result.lastOffset + 1;
      if (options.acks === 1) {
        // acks=1 on a replicated partition: after the leader's own fsync (replication.md §5.1 G4).
        while (this.log.flushedEndOffset < endOffset) await this.log.flush();
        return result;
      }
      if (this.log.highWatermark >= endOffset) return result;
      const released = this.waiters.wait(endOffset, options.timeoutMs);
      // The leader's share of the HW: fsync now rather than at the next flush.ms tick.
      void this.log.flush().catch(() => {});
      await released;
      return result;
    });
  }

  /**
   * A follower's fetch in this leader's epoch: records its durable log end and whether it is
   * caught up (Kafka's Replica.updateFetchState), and its log start (Fetch v5+; −1 when not
   * told), which DeleteRecords waits on.
   */
  recordFollowerFetch(followerId: number, fetchOffset: number, logStartOffset = -1): void {
    const now = this.clock.now();
    const logEnd = this.log.logEndOffset;
    const progress = this.followers.get(followerId) ?? { fetchOffset: -1, lastCaughtUpAt: this.becameLeaderAt, lastFetchAt: 0, logEndAtLastFetch: -1, logStartOffset: -1 };
    if (fetchOffset >= logEnd) progress.lastCaughtUpAt = now;
    else if (fetchOffset >= progress.logEndAtLastFetch && progress.logEndAtLastFetch >= 0) progress.lastCaughtUpAt = Math.max(progress.lastCaughtUpAt, progress.lastFetchAt);
    progress.fetchOffset = fetchOffset;
    progress.lastFetchAt = now;
    progress.logEndAtLastFetch = logEnd;
    const startMoved = progress.logStartOffset !== logStartOffset;
    progress.logStartOffset = logStartOffset;
    this.followers.set(followerId, progress);
    if (startMoved) this.wakeLowWatermarkWatchers();
  }

  /**
   * DeleteRecords' low watermark (Kafka's Partition.lowWatermarkIfLeader): the lowest log start of
   * this leader's log and of every follower `isAlive` says is up — in the ISR or not, as Kafka
   * counts them. A live follower that has not fetched in this epoch counts as −1: records are
   * not known deleted on it. A partition with one replica has its own log start.
   */
  lowWatermark(isAlive: (brokerId: number) => boolean): number {
    let lowest = this.log.logStartOffset;
    for (const id of this.replicas) {
      if (id === this.brokerId || !isAlive(id)) continue;
      lowest = Math.min(lowest, this.followers.get(id)?.logStartOffset ?? -1);
    }
    return lowest;
  }

  /**
   * Resolves when the low watermark may have moved — a follower's fetch reported a new log start,
   * or this replica's role changed — or after `ms` (a follower that stopped counts once the broker
   * is known dead, which nothing here is told of). The caller computes it again either way.
   */
  lowWatermarkMayMove(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.lowWatermarkWatchers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, Math.max(0, ms));
      this.lowWatermarkWatchers.add(wake);
    });
  }

  private wakeLowWatermarkWatchers(): void {
    for (const wake of [...this.lowWatermarkWatchers]) wake();
  }

  /** The follower's fetch offset in this epoch, −1 before its first fetch. */
  followerFetchOffset(followerId: number): number {
    return this.followers.get(followerId)?.fetchOffset ?? -1;
  }

  /**
   * Moves the HW to the minimum fsynced end over the ISR, if every ISR follower has fetched in
   * this epoch and the ISR is at least `minInsyncReplicas`; releases acks=−1 requests below it.
   */
  maybeAdvanceHighWatermark(minInsyncReplicas: number, visibleOnAppend: boolean): boolean {
    if (this.role !== 'leader' || !this.replicated) return false;
    const isr = this.isr;
    if (isr.length < minInsyncReplicas) return false;
    let highWatermark = visibleOnAppend ? this.log.writtenEndOffset : this.log.flushedEndOffset;
    for (const id of isr) {
      if (id === this.brokerId) continue;
      const progress = this.followers.get(id);
      if (progress === undefined || progress.fetchOffset < 0) return false;
      highWatermark = Math.min(highWatermark, progress.fetchOffset);
    }
    const moved = this.log.updateHighWatermark(highWatermark);
    this.waiters.release(this.log.highWatermark);
    return moved;
  }

  /** ISR members that have not caught up within `lagMs` (never the leader itself). */
  laggingFollowers(lagMs: number): number[] {
    const now = this.clock.now();
    return this.isr.filter((id) => {
      if (id === this.brokerId) return false;
      const caughtUpAt = this.followers.get(id)?.lastCaughtUpAt ?? this.becameLeaderAt;
      return now - caughtUpAt > lagMs;
    });
  }

  /**
   * Followers outside the ISR that may join it now: caught up to the HW and to the start of this
   * epoch (a follower at a stale HW could otherwise join, be elected and miss committed records).
   */
  followersReadyToJoin(): number[] {
    const highWatermark = this.log.highWatermark;
    const ready: number[] = [];
    for (const [id, progress] of this.followers) {
      if (this.isr.includes(id) || !this.replicas.includes(id)) continue;
      if (progress.fetchOffset >= highWatermark && progress.fetchOffset >= this.epochStartOffset) ready.push(id);
    }
    return ready;
  }

  /** How far each follower is behind this leader's log end (the replica lag metric). */
  followerLag(): Map<number, number> {
    const lag = new Map<number, number>();
    const end = this.log.logEndOffset;
    for (const id of this.replicas) {
      if (id === this.brokerId) continue;
      const progress = this.followers.get(id);
      lag.set(id, progress === undefined || progress.fetchOffset < 0 ? end : Math.max(0, end - progress.fetchOffset));
    }
    return lag;
  }

  /** Fails everything parked (the log is going away). */
  close(reason: string): void {
    this.wakeLowWatermarkWatchers();
    this.waiters.failAll('NOT_LEADER_OR_FOLLOWER', `${this.name} is no longer served by this broker (${reason})`);
  }
}
