/**
 * The offline cluster as the mirror sees it: one producer (acks=-1) for every source, and topic
 * creation over the Kafka API (CreateTopics) with the source's partition count and compaction
 * settings when a mirrored topic is missing. Topics are never auto-created by producing, which would give them the
 * broker's default partition count.
 *
 * The producer retries retriable failures (leader moved, broker down, timeouts) without limit, in
 * order per partition: a mirror waits for its target rather than dropping records. A failure the
 * target will never accept (a record too large, say) rejects the send, and the mirror stops.
 */
import { securityOption, type ClientSecurity } from '../client/security-config.js';
import { ClusterClient } from '../client/cluster-client.js';
import { Producer, type ProducerRecord, type RecordMetadata } from '../client/producer.js';
import { SimpleConsumer } from '../client/simple-consumer.js';
import { TributaryError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { CreateTopicsApi, type CreatableTopicResult } from '../protocol/apis/create-topics.js';
import { KafkaErrorCode, kafkaErrorName } from '../protocol/kafka-errors.js';
import type { TargetPartitionReader } from './resume-point.js';

const CREATE_TOPICS_VERSION = 4;

/** The topic configs a mirrored topic is created with, when the source topic sets them. */
export const MIRRORED_TOPIC_CONFIGS = ['cleanup.policy', 'min.compaction.lag.ms', 'max.compaction.lag.ms', 'delete.retention.ms', 'min.cleanable.dirty.ratio'] as const;
/** Bytes per read of the resume search: a few hundred records of the usual size. */
const RESUME_READ_BYTES = 256 * 1024;

export class MirrorTarget {
  private readonly creating = new Map<string, Promise<number>>();
  private readonly reader: SimpleConsumer;

  private constructor(
    private readonly cluster: ClusterClient,
    private readonly producer: Producer,
    private readonly logger: Logger,
  ) {
    this.reader = new SimpleConsumer(cluster);
  }

  static async connect(options: { readonly bootstrap: readonly string[]; readonly logger: Logger; readonly security?: ClientSecurity }): Promise<MirrorTarget> {
    const cluster = await ClusterClient.connect({ bootstrap: options.bootstrap, clientId: 'tributary-mirror', allowAutoTopicCreation: false, logger: options.logger, ...securityOption(options.security) });
    try {
      const producer = new Producer(cluster, { acks: -1, retries: 2 ** 31 - 1, retryBackoffMaxMs: 1000, logger: options.logger }, true);
      return new MirrorTarget(cluster, producer, options.logger);
    } catch (error) {
      cluster.close();
      throw error;
    }
  }

  /**
   * Creates `topic` with `partitions` partitions and `configs` unless it exists; resolves with the
   * target's partition count (which differs when the topic existed with another count). An
   * existing topic keeps its configs.
   */
  ensureTopic(topic: string, partitions: number, configs: Readonly<Record<string, string>> = {}): Promise<number> {
    let pending = this.creating.get(topic);
    if (pending === undefined) {
      pending = this.createIfMissing(topic, partitions, configs);
      this.creating.set(topic, pending);
      pending.catch(() => this.creating.delete(topic)); // a failure may be tried again
    }
    return pending;
  }

  /** The target's partition count of a topic, from the producer's metadata. */
  async partitionCount(topic: string): Promise<number> {
    return (await this.cluster.topicMetadata(topic)).partitions.length;
  }

  /** Resolves once the target acknowledged every record (acks=-1). */
  send(topic: string, records: readonly ProducerRecord[]): Promise<RecordMetadata[]> {
    return this.producer.send(topic, records);
  }

  /** Reads of one target partition, for the resume search. */
  partitionReader(topic: string, partition: number): TargetPartitionReader {
    return {
      bounds: async () => ({ start: await this.reader.listOffset(topic, partition, 'earliest'), end: await this.reader.listOffset(topic, partition, 'latest') }),
      read: async (from) => {
        const { records, nextOffset } = await this.reader.fetch(topic, partition, from, { maxBytes: RESUME_READ_BYTES });
        return { records, nextOffset };
      },
    };
  }

  /** Delivers what was accepted, then closes the producer and its connections. */
  close(): Promise<void> {
    return this.producer.close();
  }

  private async createIfMissing(topic: string, partitions: number, configs: Readonly<Record<string, string>>): Promise<number> {
    const result = await this.requestCreate(topic, partitions, configs);
    const errorCode = result?.errorCode ?? KafkaErrorCode.UNKNOWN_SERVER_ERROR;
    if (errorCode === 0) {
      this.logger.info({ topic, partitions, configs }, 'created the topic in the offline cluster');
    } else if (errorCode !== KafkaErrorCode.TOPIC_ALREADY_EXISTS) {
      throw new TributaryError({
        code: 'MIRROR_TOPIC_CREATE_FAILED',
        message: `cannot create ${topic} with ${partitions} partitions in the offline cluster: ${kafkaErrorName(errorCode)}${result?.errorMessage ? ` — ${result.errorMessage}` : ''}`,
        details: { topic, partitions, errorCode },
      });
    }
    await this.cluster.refreshMetadata([topic]);
    const count = await this.partitionCount(topic);
    if (count !== partitions) {
      this.logger.warn({ topic, source: partitions, target: count }, 'the offline topic has another partition count than the source: records are placed by key');
    }
    return count;
  }

  /** CreateTopics on the first known broker that answers (any broker of our clusters can create). */
  private async requestCreate(topic: string, partitions: number, configs: Readonly<Record<string, string>>): Promise<CreatableTopicResult | undefined> {
    let lastError: unknown;
    for (const broker of this.cluster.knownBrokers()) {
      try {
        const connection = await this.cluster.connectionTo(broker.nodeId);
        const response = await connection.request(CreateTopicsApi, CREATE_TOPICS_VERSION, {
          topics: [{ name: topic, numPartitions: partitions, replicationFactor: -1, assignments: [], configs: Object.entries(configs).map(([name, value]) => ({ name, value })) }],
          timeoutMs: 30_000,
          validateOnly: false,
        });
        return response.topics[0];
      } catch (error) {
        lastError = error;
      }
    }
    throw new TributaryError({
      code: 'BROKER_NOT_AVAILABLE',
      retriable: true,
      message: `cannot create ${topic} in the offline cluster: no known broker answered CreateTopics`,
      ...(lastError === undefined ? {} : { cause: lastError }),
      details: { topic, brokers: this.cluster.knownBrokers().map((broker) => broker.nodeId) },
    });
  }
}
