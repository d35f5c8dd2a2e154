/**
 * What the loader reads from the cluster, behind a small interface so plan and extract decisions
 * can be tested with an in-process fake; `KafkaLoadSource` is the real one (ClusterClient +
 * SimpleConsumer). Offsets are numbers here: safe integers, checked at this boundary.
 */
import { securityOption, type ClientSecurity } from '../../client/security-config.js';
import { ClusterClient } from '../../client/cluster-client.js';
import { FAILOVER_RETRY_TIMEOUT_MS, SimpleConsumer } from '../../client/simple-consumer.js';
import { TributaryError } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { MetadataApi } from '../../protocol/apis/metadata.js';
import type { TopicSelector } from '../load-types.js';

export interface SourceRecord {
  readonly offset: number;
  /** The record's timestamp, ms since the epoch (−1 when the producer gave none). */
  readonly timestamp: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
}

export interface SourceBatch {
  /** Records at or after the requested offset, in offset order. */
  readonly records: readonly SourceRecord[];
  /** Where to fetch next. */
  readonly nextOffset: number;
  readonly logStart: number;
  readonly highWatermark: number;
}

export interface PartitionBounds {
  readonly logStart: number;
  readonly highWatermark: number;
}

export interface LoadSource {
  /** The topics the selector names that exist now, sorted. A listed topic that does not exist fails. */
  topics(selector: TopicSelector): Promise<string[]>;
  partitions(topic: string): Promise<number[]>;
  bounds(topic: string, partition: number): Promise<PartitionBounds>;
  fetch(topic: string, partition: number, offset: number, maxBytes: number): Promise<SourceBatch>;
  close(): void;
}

/**
 * How long the loader waits for a partition's high watermark to come back up to an offset it
 * knows was committed (the end of its plan, the next offset of the last manifest) before it
 * believes the log was truncated. Right after a failover the new leader serves its own high
 * watermark, which can be behind the old leader's until its followers have fetched from it (about
 * replica.fetch.wait.max.ms; up to replica.lag.time.max.ms when one of them is gone and must
 * leave the ISR first): the client's failover budget covers that.
 */
export const HIGH_WATERMARK_WAIT_MS = FAILOVER_RETRY_TIMEOUT_MS;

/** The pause before the `attempt`-th (0-based) look again at a high watermark that is behind: 100 ms doubling to 1 s. */
export function highWatermarkBackoff(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 1_000)));
}

function toNumber(value: bigint, what: string): number {
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new TributaryError({ code: 'PROTOCOL_ERROR', message: `${what} ${value} is outside the offsets the loader handles (0 to 2^53-1)` });
  }
  return Number(value);
}

export class KafkaLoadSource implements LoadSource {
  private readonly consumer: SimpleConsumer;

  private constructor(private readonly cluster: ClusterClient) {
    this.consumer = new SimpleConsumer(cluster);
  }

  /** `security`: TLS and SASL of the connections (loadClientSecurity of the load's source). */
  static async connect(bootstrap: readonly string[], logger?: Logger, security?: ClientSecurity): Promise<KafkaLoadSource> {
    // The loader only reads: asking for a missing topic must not create it.
    const cluster = await ClusterClient.connect({ bootstrap, clientId: 'tributary-etl', allowAutoTopicCreation: false, ...(logger === undefined ? {} : { logger }), ...securityOption(security) });
    return new KafkaLoadSource(cluster);
  }

  async topics(selector: TopicSelector): Promise<string[]> {
    if (selector.kind === 'list') {
      for (const topic of selector.names) await this.cluster.topicMetadata(topic);
      return [...selector.names].sort();
    }
    const broker = this.cluster.knownBrokers()[0];
    if (broker === undefined) throw new TributaryError({ code: 'BROKER_NOT_AVAILABLE', retriable: true, message: 'the cluster named no brokers; cannot list its topics' });
    const connection = await this.cluster.connectionTo(broker.nodeId);
    const response = await connection.request(MetadataApi, 8, {
      topics: null,
      allowAutoTopicCreation: false,
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false,
    });
    return response.topics
      .filter((topic) => topic.errorCode === 0 && !topic.isInternal && selector.pattern.test(topic.name))
      .map((topic) => topic.name)
      .sort();
  }

  partitions(topic: string): Promise<number[]> {
    return this.cluster.partitionsFor(topic);
  }

  async bounds(topic: string, partition: number): Promise<PartitionBounds> {
    const [logStart, highWatermark] = await Promise.all([
      this.consumer.listOffset(topic, partition, 'earliest'),
      this.consumer.listOffset(topic, partition, 'latest'),
    ]);
    return { logStart: toNumber(logStart, 'log start offset'), highWatermark: toNumber(highWatermark, 'high watermark') };
  }

  async fetch(topic: string, partition: number, offset: number, maxBytes: number): Promise<SourceBatch> {
    const result = await this.consumer.fetch(topic, partition, BigInt(offset), { maxBytes });
    return {
      records: result.records.map((record) => ({ offset: toNumber(record.offset, 'record offset'), timestamp: record.timestamp, key: record.key, value: record.value })),
      nextOffset: toNumber(result.nextOffset, 'next offset'),
      logStart: toNumber(result.logStartOffset, 'log start offset'),
      highWatermark: toNumber(result.highWatermark, 'high watermark'),
    };
  }

  close(): void {
    this.cluster.close();
  }
}
