/**
 * A follower's fetcher: one per leader broker, for every partition this broker follows there
 * (replication.md §5.6; Kafka's ReplicaFetcherThread).
 *
 * A partition joins needing truncation. The fetcher asks the leader, with OffsetForLeaderEpoch
 * v3 (ReplicaId = this broker, CurrentLeaderEpoch = the epoch it follows), where this replica's
 * latest epoch ends in the leader's log, and cuts its own log there (follower-truncation.ts),
 * durably, before the first fetch. Then it loops: one long-poll Fetch v11 (ReplicaId = this
 * broker) for all its partitions; the batches are appended as the leader wrote them; every log
 * that got data is fsynced; only then comes the next Fetch. The fetch offset a leader sees is
 * therefore this replica's durable log end, and the leader's high watermark means "fsynced on
 * every in-sync replica". The follower's own HW is min(its fsynced end, the leader's HW). Its log
 * start follows the leader's (moved by DeleteRecords or retention there), never past its own HW;
 * each Fetch tells the leader that start, for DeleteRecords' low watermark.
 *
 * Errors: a fenced or unknown epoch, or a leader that no longer leads, parks the partition until
 * its state changes (the replica manager then re-adds it under the new epoch); an offset below
 * the leader's log start restarts the log there; above the leader's end means the logs diverged
 * and truncation runs again. A lost connection is retried after a backoff, reading the leader's
 * address afresh.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../../common/clock.js';
import { TributaryError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { KafkaConnection } from '../../client/connection.js';
import { FetchApi, type FetchRequestTopic } from '../../protocol/apis/fetch.js';
import { OffsetForLeaderEpochApi } from '../../protocol/apis/offset-for-leader-epoch.js';
import { KafkaErrorCode, kafkaErrorName } from '../../protocol/kafka-errors.js';
import { truncationFor } from './follower-truncation.js';
import type { PartitionReplica } from './partition-replica.js';
import type { ClientSecurity } from '../../client/security-config.js';

export interface ReplicaFetcherSettings {
  readonly maxWaitMs: number;
  /** Per partition (replica.fetch.max.bytes). */
  readonly partitionMaxBytes: number;
  /** Per response (replica.fetch.response.max.bytes). */
  readonly responseMaxBytes: number;
  readonly backoffMs: number;
}

export interface ReplicaFetcherHost {
  readonly brokerId: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Where the leader listens now (it may have restarted elsewhere). */
  brokerAddress(brokerId: number): { host: string; port: number } | undefined;
  /** TLS and SASL towards the leader's inter-broker listener. */
  readonly security?: ClientSecurity;
  /** A follower's log got data and was fsynced (its HW may have moved too). */
  followerProgressed?(replica: PartitionReplica): void;
}

/** One followed partition; replaced (not mutated) when the epoch changes, so stale answers are dropped. */
interface Followed {
  readonly replica: PartitionReplica;
  readonly leaderEpoch: number;
  needsTruncation: boolean;
  backoffUntil: number;
}

/** What the leader said of a partition that answered without error. */
interface LeaderAnswer {
  readonly entry: Followed;
  readonly leaderHighWatermark: number;
  readonly leaderLogStart: number;
}

const FETCH_VERSION = 11;
const OFFSET_FOR_LEADER_EPOCH_VERSION = 3;

export class ReplicaFetcher {
  private readonly partitions = new Map<string, Followed>();
  private connection: KafkaConnection | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly logger: Logger;

  constructor(
    readonly leaderId: number,
    private readonly host: ReplicaFetcherHost,
    private readonly settings: ReplicaFetcherSettings,
  ) {
    this.logger = host.logger.child({ component: 'replica-fetcher', leader: leaderId });
  }

  get size(): number {
    return this.partitions.size;
  }

  /** Follows `replica` in `leaderEpoch`, truncating first. Replaces an earlier entry of the partition. */
  add(replica: PartitionReplica, leaderEpoch: number): void {
    this.partitions.set(replica.name, { replica, leaderEpoch, needsTruncation: true, backoffUntil: 0 });
    if (this.running === undefined && !this.stopped) this.running = this.run();
    this.wake?.();
  }

  /** Stops fetching `name`; an answer already on its way for it is dropped. */
  remove(name: string): void {
    this.partitions.delete(name);
  }

  has(name: string): boolean {
    return this.partitions.has(name);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.partitions.clear();
    this.connection?.close();
    this.wake?.();
    await this.running;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (this.partitions.size === 0) {
        await this.idle(5_000);
        continue;
      }
      try {
        const connection = await this.connect();
        await this.truncatePending(connection);
        await this.fetchOnce(connection);
      } catch (error) {
        if (this.stopped) break;
        this.logger.warn({ err: error, partitions: this.partitions.size }, `fetching from broker ${this.leaderId} failed; retrying in ${this.settings.backoffMs} ms`);
        this.connection?.close();
        this.connection = undefined;
        await this.idle(this.settings.backoffMs);
      }
    }
    this.connection?.close();
    this.connection = undefined;
  }

  /** Waits up to `ms`, or until a partition is added or the fetcher stops. */
  private async idle(ms: number): Promise<void> {
    const controller = new AbortController();
    this.wake = () => controller.abort();
    try {
      await sleep(ms, undefined, { signal: controller.signal });
    } catch {
      // Woken early.
    } finally {
      this.wake = undefined;
    }
  }

  private async connect(): Promise<KafkaConnection> {
    if (this.connection !== undefined) return this.connection;
    const address = this.host.brokerAddress(this.leaderId);
    if (address === undefined) throw new Error(`leader ${this.leaderId} is not registered, or has no inter-broker listener`);
    this.connection = await KafkaConnection.open(address.host, address.port, {
      clientId: `tributary-replica-fetcher-${this.host.brokerId}`,
      requestTimeoutMs: Math.max(30_000, this.settings.maxWaitMs * 4),
      // The inter-broker listener's TLS and SASL, as the broker config names them.
      ...(this.host.security === undefined ? {} : { security: this.host.security }),
    });
    return this.connection;
  }

  /** OffsetForLeaderEpoch for every partition that just joined, then the cut (replication.md §5.6 steps 1–3). */
  private async truncatePending(connection: KafkaConnection): Promise<void> {
    const now = this.host.clock.now();
    const pending = [...this.partitions.values()].filter((entry) => entry.needsTruncation && entry.backoffUntil <= now);
    if (pending.length === 0) return;
    const asking: Followed[] = [];
    for (const entry of pending) {
      const log = entry.replica.log;
      // An empty log has nothing to cut; it fetches from the leader's start.
      if (log.logEndOffset <= log.logStartOffset) entry.needsTruncation = false;
      else asking.push(entry);
    }
    if (asking.length === 0) return;
    const byTopic = new Map<string, Followed[]>();
    for (const entry of asking) byTopic.set(entry.replica.topic, [...(byTopic.get(entry.replica.topic) ?? []), entry]);
    const response = await connection.request(OffsetForLeaderEpochApi, OFFSET_FOR_LEADER_EPOCH_VERSION, {
      replicaId: this.host.brokerId,
      topics: [...byTopic].map(([topic, entries]) => ({
        topic,
        partitions: entries.map((entry) => ({ partition: entry.replica.partition, currentLeaderEpoch: entry.leaderEpoch, leaderEpoch: entry.replica.log.leaderEpochCache.latestEpoch() })),
      })),
    });
    for (const topic of response.topics) {
      for (const answer of topic.partitions) {
        const entry = asking.find((candidate) => candidate.replica.topic === topic.topic && candidate.replica.partition === answer.partition);
        if (entry === undefined || this.partitions.get(entry.replica.name) !== entry) continue;
        if (answer.errorCode !== KafkaErrorCode.NONE) {
          this.parkOnError(entry, answer.errorCode, 'OffsetForLeaderEpoch');
          continue;
        }
        await entry.replica.withExclusive(async () => {
          if (this.partitions.get(entry.replica.name) !== entry) return;
          const log = entry.replica.log;
          const decision = truncationFor(
            { entries: log.leaderEpochCache.entries(), logEndOffset: log.logEndOffset, logStartOffset: log.logStartOffset },
            { epoch: answer.leaderEpoch, endOffset: Number(answer.endOffset) },
          );
          const before = log.logEndOffset;
          if (decision.kind === 'restart-from-leader-start') {
            this.logger.warn({ partition: entry.replica.name, leaderEpoch: entry.leaderEpoch, requested: log.leaderEpochCache.latestEpoch() }, 'the leader has no epoch as old as this replica’s; dropping the local log and fetching from the leader’s start');
            await log.truncateFullyAndStartAt(log.logStartOffset);
          } else if (decision.offset < before) {
            await log.truncateTo(decision.offset);
            this.logger.info({ partition: entry.replica.name, leaderEpoch: entry.leaderEpoch, from: before, to: log.logEndOffset, leaderAnswer: { epoch: answer.leaderEpoch, endOffset: Number(answer.endOffset) } }, 'truncated by leader epoch before following');
          }
          entry.needsTruncation = false;
        });
      }
    }
  }

  /** One Fetch for every partition ready to fetch; appends, fsyncs, then moves the follower HWs. */
  private async fetchOnce(connection: KafkaConnection): Promise<void> {
    const now = this.host.clock.now();
    const ready = [...this.partitions.values()].filter((entry) => !entry.needsTruncation && entry.backoffUntil <= now);
    if (ready.length === 0) {
      const soonest = Math.min(...[...this.partitions.values()].map((entry) => entry.backoffUntil));
      await this.idle(Math.min(Math.max(soonest - now, 10), this.settings.backoffMs));
      return;
    }
    const byTopic = new Map<string, Followed[]>();
    for (const entry of ready) byTopic.set(entry.replica.topic, [...(byTopic.get(entry.replica.topic) ?? []), entry]);
    const sent = new Map<string, { entry: Followed; fetchOffset: number }>();
    const topics: FetchRequestTopic[] = [...byTopic].map(([topic, entries]) => ({
      topic,
      partitions: entries.map((entry) => {
        const log = entry.replica.log;
        sent.set(entry.replica.name, { entry, fetchOffset: log.logEndOffset });
        return {
          partition: entry.replica.partition,
          currentLeaderEpoch: entry.leaderEpoch,
          fetchOffset: BigInt(log.logEndOffset),
          logStartOffset: BigInt(log.logStartOffset),
          partitionMaxBytes: this.settings.partitionMaxBytes,
        };
      }),
    }));
    const response = await connection.request(FetchApi, FETCH_VERSION, {
      replicaId: this.host.brokerId,
      maxWaitMs: this.settings.maxWaitMs,
      minBytes: 1,
      maxBytes: this.settings.responseMaxBytes,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics,
      forgottenTopicsData: [],
      rackId: '',
    });
    const appended: LeaderAnswer[] = [];
    const heard: LeaderAnswer[] = [];
    for (const topic of response.responses) {
      for (const answer of topic.partitions) {
        const name = `${topic.topic}-${answer.partitionIndex}`;
        const request = sent.get(name);
        if (request === undefined) continue;
        const { entry, fetchOffset } = request;
        if (this.partitions.get(name) !== entry) continue;
        const log = entry.replica.log;
        if (answer.errorCode === KafkaErrorCode.OFFSET_OUT_OF_RANGE) {
          const leaderStart = Number(answer.logStartOffset);
          if (leaderStart > fetchOffset) {
            await entry.replica.withExclusive(async () => {
              if (this.partitions.get(name) !== entry) return;
              this.logger.warn({ partition: name, fetchOffset, leaderLogStart: leaderStart }, 'this replica is behind the leader’s log start (retention); restarting its log there');
              await log.truncateFullyAndStartAt(leaderStart);
            });
          } else {
            // Past the leader's end: the logs diverged after all. Truncate by epoch again.
            entry.needsTruncation = true;
          }
          continue;
        }
        if (answer.errorCode !== KafkaErrorCode.NONE) {
          this.parkOnError(entry, answer.errorCode, 'Fetch');
          continue;
        }
        const leaderHighWatermark = Number(answer.highWatermark);
        const leaderLogStart = Number(answer.logStartOffset);
        const records = answer.records;
        if (Buffer.isBuffer(records) && records.length > 0) {
          const result = await entry.replica
            .withExclusive(async () => {
              if (this.partitions.get(name) !== entry || log.logEndOffset !== fetchOffset) return undefined;
              return log.appendAsFollower(records);
            })
            .catch((error: unknown) => this.refused(entry, fetchOffset, records, error));
          if (result !== undefined) appended.push({ entry, leaderHighWatermark, leaderLogStart });
          else heard.push({ entry, leaderHighWatermark, leaderLogStart });
        } else {
          heard.push({ entry, leaderHighWatermark, leaderLogStart });
        }
      }
    }
    // fsync before the next Fetch: the next fetch offset must be durable.
    await Promise.all(appended.map(({ entry }) => entry.replica.withExclusive(() => entry.replica.log.flush())));
    for (const { entry, leaderHighWatermark, leaderLogStart } of [...appended, ...heard]) {
      const log = entry.replica.log;
      log.updateHighWatermark(Math.min(log.flushedEndOffset, leaderHighWatermark));
      if (leaderLogStart > log.logStartOffset) await this.followLogStart(entry, leaderLogStart);
      this.host.followerProgressed?.(entry.replica);
    }
  }

  /**
   * Raises this replica's log start to the leader's (Kafka's ReplicaFetcherThread does the same
   * after each fetch), so records deleted there are deleted here too and a failover cannot bring
   * them back. Never past this replica's own high watermark, which the log refuses: a start above
   * what it holds is reached by the OFFSET_OUT_OF_RANGE restart instead. A failure (the checkpoint
   * could not be written) is logged; the next fetch tries again.
   */
  private async followLogStart(entry: Followed, leaderLogStart: number): Promise<void> {
    await entry.replica.withExclusive(async () => {
      if (this.partitions.get(entry.replica.name) !== entry) return;
      const log = entry.replica.log;
      try {
        log.incrementLogStartOffset(Math.min(leaderLogStart, log.highWatermark));
      } catch (error) {
        this.logger.warn({ err: error, partition: entry.replica.name, leaderLogStart, logStartOffset: log.logStartOffset }, 'could not move the log start to the leader’s; trying again after the next fetch');
      }
    });
  }

  /**
   * The follower's log refused what the leader sent (one partition's trouble never stops the
   * others'). A first batch starting below the fetch offset means this replica's log ends inside
   * one of the leader's batches: the logs diverged in a way truncation by epoch did not see, so
   * the replica cuts back to the leader's batch boundary and copies from there. Anything else
   * parks the partition for a backoff.
   */
  private async refused(entry: Followed, fetchOffset: number, records: Buffer, error: unknown): Promise<undefined> {
    const log = entry.replica.log;
    const firstBase = records.length >= 8 ? Number(records.readBigInt64BE(0)) : -1;
    if (error instanceof TributaryError && error.code === 'REPLICA_OFFSET_MISMATCH' && firstBase >= log.logStartOffset && firstBase < fetchOffset) {
      this.logger.warn({ partition: entry.replica.name, fetchOffset, leaderBatchStart: firstBase }, 'this replica’s log ends inside a batch of the leader’s: cutting back to the leader’s batch boundary');
      await entry.replica.withExclusive(async () => {
        if (this.partitions.get(entry.replica.name) === entry && log.logEndOffset === fetchOffset) await log.truncateTo(firstBase);
      });
      return undefined;
    }
    entry.backoffUntil = this.host.clock.now() + this.settings.backoffMs;
    this.logger.error({ err: error, partition: entry.replica.name, fetchOffset }, 'could not append what the leader sent; retrying after a backoff');
    return undefined;
  }

  private parkOnError(entry: Followed, errorCode: number, api: string): void {
    entry.backoffUntil = this.host.clock.now() + this.settings.backoffMs;
    // FENCED_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER: this replica's state is behind or ahead of the
    // leader's; the state change that follows re-adds the partition. Until then, ask again slowly.
    this.logger.info({ partition: entry.replica.name, leaderEpoch: entry.leaderEpoch, error: kafkaErrorName(errorCode), api }, 'the leader refused this replica; waiting for its state to change');
  }
}
