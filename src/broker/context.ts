/** What request handlers share: this broker's logs, its view of the cluster, and its settings. */
import type { Logger } from '../common/logger.js';
import { KafkaErrorCode, KafkaProtocolError } from '../protocol/kafka-errors.js';
import type { LogManager } from '../storage/log-manager.js';
import type { PartitionLog } from '../storage/partition-log.js';
import type { Cluster } from './cluster.js';
import type { BrokerConfig } from './config.js';
import type { FetchWaiters } from './fetch-waiters.js';
import type { BrokerMetrics } from './metrics.js';

export interface BrokerContext {
  readonly brokerId: number;
  readonly clusterId: string;
  readonly config: BrokerConfig;
  readonly logs: LogManager;
  readonly cluster: Cluster;
  readonly waiters: FetchWaiters;
  readonly metrics: BrokerMetrics;
  readonly logger: Logger;
}

export type LocalPartition =
  | { readonly log: PartitionLog; readonly errorCode: 0 }
  | { readonly log: undefined; readonly errorCode: number; readonly errorMessage?: string };

/** The log of a partition this broker leads, or the error code (and why) a client should get instead. */
export async function localPartition(context: BrokerContext, topic: string, partition: number): Promise<LocalPartition> {
  const assignment = context.cluster.topic(topic);
  const owner = assignment?.partitions.get(partition);
  if (owner === undefined) return { log: undefined, errorCode: KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION };
  if (owner !== context.brokerId) return { log: undefined, errorCode: KafkaErrorCode.NOT_LEADER_OR_FOLLOWER };
  const offline = context.logs.offlineReason(topic, partition);
  if (offline !== undefined) {
    // Logged at error when found at start; each request says why too.
    return { log: undefined, errorCode: KafkaErrorCode.KAFKA_STORAGE_ERROR, errorMessage: `partition ${topic}-${partition} is offline: ${offline}` };
  }
  try {
    const log = context.logs.getLog(topic, partition) ?? (await context.logs.getOrCreateLog(topic, partition));
    return { log, errorCode: 0 };
  } catch (error) {
    context.logger.error({ err: error, topic, partition }, 'could not open the partition log');
    const errorCode = error instanceof KafkaProtocolError ? error.kafkaCode : KafkaErrorCode.KAFKA_STORAGE_ERROR;
    return { log: undefined, errorCode, errorMessage: (error as Error).message };
  }
}
