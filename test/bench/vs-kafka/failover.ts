/**
 * Failover time: how long after a partition leader is SIGKILLed the first acks=-1 write is
 * acknowledged by the new leader, measured identically on both systems by a small producer.
 *
 * The producer (ProduceProbe) sends one 200-byte record per Produce v8 request (acks=-1, no
 * idempotence, one request at a time, a new one every `intervalMs`, ~50/s) to the broker the last
 * Metadata named leader of the partition, over its own connection to each broker, and notes
 * which broker answered what and when. On a connection error or a partition error it asks the
 * brokers for Metadata again (each in turn, every attempt), as a client does, without the
 * back-off of a real client's retries: the measure is the brokers' failover, give or take one
 * interval, not a client's retry schedule.
 *
 * Timeline of one measure: the probe runs until the leader has acknowledged `warmupAcks` writes;
 * then the leader's process group gets SIGKILL (t = 0). The figure is the time from t = 0 to the
 * first successful answer from another broker. Beside it: when the probe's Metadata first named
 * the new leader (the election as a client sees it; the rest is the new leader getting its
 * follower and committing), and how many attempts failed in between, by error.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { KafkaConnection } from '../../../src/client/connection.js';
import { MetadataApi } from '../../../src/protocol/apis/metadata.js';
import { ProduceApi } from '../../../src/protocol/apis/produce.js';
import { kafkaErrorName } from '../../../src/protocol/kafka-errors.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { LOOPBACK } from '../../services/network.js';
import { VALUE_BYTES } from './clients.js';

export interface ProbeBroker {
  readonly id: number;
  readonly port: number;
}

interface Attempt {
  /** performance.now() when the answer (or the failure) came. */
  readonly at: number;
  readonly broker: number;
  /** 'ok' or an error name. */
  readonly outcome: string;
}

export interface FailoverResult {
  /** SIGKILL → first acknowledged write from another broker. */
  readonly ms: number;
  readonly newLeader: number;
  /** SIGKILL → the probe's Metadata first naming another leader (undefined if it never saw it before the write). */
  readonly leaderSeenMs: number | undefined;
  /** Attempts that failed between the kill and the first success, by error. */
  readonly failures: Readonly<Record<string, number>>;
  /** Acknowledged writes before the kill. */
  readonly acksBeforeKill: number;
}

const PRODUCE_VERSION = 8;

/** One producer of single-record acks=-1 writes to the partition's leader; see the header. */
export class ProduceProbe {
  readonly attempts: Attempt[] = [];
  /** performance.now() and leader of each Metadata answer that named a new leader. */
  readonly leaderChanges: { readonly at: number; readonly leader: number; readonly epoch: number; readonly observedBy: number }[] = [];
  private readonly connections = new Map<number, Promise<KafkaConnection>>();
  private leader: number | undefined;
  private running = true;
  private readonly loop: Promise<void>;
  private readonly value = Buffer.alloc(VALUE_BYTES, 0x61);
  private nextMetadataBroker = 0;

  constructor(
    private readonly brokers: readonly ProbeBroker[],
    private readonly topic: string,
    private readonly intervalMs = 20,
    private readonly requestTimeoutMs = 15_000,
  ) {
    this.loop = this.run();
  }

  /** Acknowledged writes so far from `broker` (any broker when undefined) after `since`. */
  acks(options: { broker?: number; since?: number } = {}): number {
    return this.attempts.filter((a) => a.outcome === 'ok' && (options.broker === undefined || a.broker === options.broker) && a.at > (options.since ?? -Infinity)).length;
  }

  currentLeader(): number | undefined {
    return this.leader;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    const open = await Promise.allSettled(this.connections.values());
    for (const connection of open) if (connection.status === 'fulfilled') connection.value.close();
    this.connections.clear();
  }

  private connection(broker: ProbeBroker): Promise<KafkaConnection> {
    let connection = this.connections.get(broker.id);
    if (connection === undefined) {
      connection = KafkaConnection.open(LOOPBACK, broker.port, { clientId: 'bench-failover-probe', connectTimeoutMs: 2_000, requestTimeoutMs: this.requestTimeoutMs });
      // A connection that failed to open is forgotten at once; the next attempt opens a new one.
      const opening = connection;
      opening.catch(() => {
        if (this.connections.get(broker.id) === opening) this.connections.delete(broker.id);
      });
      this.connections.set(broker.id, opening);
    }
    return connection;
  }

  private drop(brokerId: number): void {
    const connection = this.connections.get(brokerId);
    this.connections.delete(brokerId);
    void connection?.then((open) => open.close(), () => undefined);
  }

  private async run(): Promise<void> {
    while (this.running) {
      const started = performance.now();
      if (this.leader === undefined) await this.refreshLeader();
      const leader = this.leader;
      if (leader !== undefined) await this.produce(leader);
      const wait = this.intervalMs - (performance.now() - started);
      if (wait > 0) await sleep(wait);
    }
  }

  /** Asks the brokers in turn (starting after the last one asked) until one names a leader. */
  private async refreshLeader(): Promise<void> {
    for (let tried = 0; tried < this.brokers.length && this.running; tried += 1) {
      const broker = this.brokers[this.nextMetadataBroker % this.brokers.length] as ProbeBroker;
      this.nextMetadataBroker += 1;
      try {
        const response = await (await this.connection(broker)).request(MetadataApi, 8, {
          topics: [{ name: this.topic }], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false,
        });
        const partition = response.topics.find((t) => t.name === this.topic)?.partitions.find((p) => p.partitionIndex === 0);
        if (partition === undefined || partition.leaderId < 0) continue;
        const previous = this.leaderChanges.at(-1);
        if (previous === undefined || previous.leader !== partition.leaderId) {
          this.leaderChanges.push({ at: performance.now(), leader: partition.leaderId, epoch: partition.leaderEpoch, observedBy: broker.id });
        }
        this.leader = partition.leaderId;
        return;
      } catch {
        this.drop(broker.id);
      }
    }
  }

  private async produce(leaderId: number): Promise<void> {
    const broker = this.brokers.find((b) => b.id === leaderId);
    if (broker === undefined) {
      this.leader = undefined;
      return;
    }
    let outcome: string;
    try {
      const connection = await this.connection(broker);
      const response = await connection.request(ProduceApi, PRODUCE_VERSION, {
        transactionalId: null,
        acks: -1,
        timeoutMs: this.requestTimeoutMs - 1000,
        topicData: [{ name: this.topic, partitionData: [{ index: 0, records: encodeRecordBatch([{ value: this.value }], { baseTimestamp: Date.now() }) }] }],
      });
      const errorCode = response.responses[0]?.partitionResponses[0]?.errorCode ?? -1;
      outcome = errorCode === 0 ? 'ok' : kafkaErrorName(errorCode);
    } catch (error) {
      outcome = (error as { code?: string }).code ?? 'CONNECTION_ERROR';
      this.drop(leaderId);
    }
    this.attempts.push({ at: performance.now(), broker: leaderId, outcome });
    if (outcome !== 'ok') this.leader = undefined;
  }
}

/**
 * Runs the probe against `topic` (whose leader must be `leader`), SIGKILLs the leader once it has
 * acknowledged `warmupAcks` writes (`kill` does it and resolves once the process is gone), and
 * returns the failover figure. Fails when no other broker acknowledges a write within `timeoutMs`.
 */
export async function measureFailover(brokers: readonly ProbeBroker[], topic: string, leader: number, kill: () => Promise<void>,
  options: { readonly warmupAcks?: number; readonly timeoutMs?: number; readonly intervalMs?: number } = {}): Promise<FailoverResult> {
  const probe = new ProduceProbe(brokers, topic, options.intervalMs ?? 20);
  try {
    const warmupAcks = options.warmupAcks ?? 50;
    const warmupDeadline = performance.now() + 60_000;
    while (probe.acks({ broker: leader }) < warmupAcks) {
      if (performance.now() > warmupDeadline) {
        throw new Error(`failover probe: only ${probe.acks({ broker: leader })} of ${warmupAcks} writes acknowledged by leader ${leader} in 60 s (leader seen: ${String(probe.currentLeader())}; last outcomes: ${probe.attempts.slice(-5).map((a) => `${a.broker}:${a.outcome}`).join(', ')})`);
      }
      await sleep(20);
    }
    const acksBeforeKill = probe.acks();
    const killedAt = performance.now();
    await kill();
    const deadline = killedAt + (options.timeoutMs ?? 120_000);
    let first: Attempt | undefined;
    while (first === undefined) {
      first = probe.attempts.find((a) => a.at > killedAt && a.outcome === 'ok' && a.broker !== leader);
      if (first !== undefined) break;
      if (performance.now() > deadline) {
        throw new Error(`failover probe: no write acknowledged by another broker ${Math.round((deadline - killedAt) / 1000)} s after killing leader ${leader} (last outcomes: ${probe.attempts.slice(-5).map((a) => `${a.broker}:${a.outcome}`).join(', ')})`);
      }
      await sleep(5);
    }
    const failures: Record<string, number> = {};
    for (const attempt of probe.attempts) {
      if (attempt.at <= killedAt || attempt.at >= first.at || attempt.outcome === 'ok') continue;
      const key = `${attempt.outcome} from ${attempt.broker === leader ? 'the killed leader' : `broker ${attempt.broker}`}`;
      failures[key] = (failures[key] ?? 0) + 1;
    }
    const seen = probe.leaderChanges.find((change) => change.at > killedAt && change.leader !== leader);
    return {
      ms: first.at - killedAt,
      newLeader: first.broker,
      leaderSeenMs: seen === undefined ? undefined : seen.at - killedAt,
      failures,
      acksBeforeKill,
    };
  } finally {
    await probe.stop();
  }
}
