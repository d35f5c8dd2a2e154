/** What request handlers share: this broker's logs, its view of the cluster, its replicas and its settings. */
import type { Logger } from '../common/logger.js';
import type { LogManager } from '../storage/log-manager.js';
import type { PartitionLog } from '../storage/partition-log.js';
import type { Cluster } from './cluster.js';
import type { BrokerConfig } from './config.js';
import type { FetchWaiters } from './fetch-waiters.js';
import type { BrokerMetrics } from './metrics.js';
import type { PartitionReplica } from './replication/partition-replica.js';
import type { ReplicaManager } from './replication/replica-manager.js';
import type { Authorizer } from './security/authorizer.js';

export interface BrokerContext {
  readonly brokerId: number;
  readonly clusterId: string;
  readonly config: BrokerConfig;
  readonly logs: LogManager;
  readonly cluster: Cluster;
  readonly replicas: ReplicaManager;
  /** Consumers' fetches park here until a high watermark moves. */
  readonly waiters: FetchWaiters;
  /** Followers' fetches park here until a leader appends. */
  readonly replicaWaiters: FetchWaiters;
  readonly metrics: BrokerMetrics;
  readonly logger: Logger;
  /** Checks every request against the ACLs (allows everything with `authorizer=none`). */
  readonly authorizer: Authorizer;
}

export type LocalPartition =
  | { readonly log: PartitionLog; readonly replica: PartitionReplica; readonly errorCode: 0 }
  | { readonly log: undefined; readonly replica: undefined; readonly errorCode: number; readonly errorMessage?: string };

/**
 * The log of a partition this broker leads, or the error code (and why) a client should get
 * instead. `currentLeaderEpoch` (−1: not checked) is the client's idea of the leader epoch
 * (KIP-320): an older one is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH.
 */
export function localPartition(context: BrokerContext, topic: string, partition: number, currentLeaderEpoch = -1): LocalPartition {
  const lookup = context.replicas.leaderFor(topic, partition, currentLeaderEpoch);
  if (lookup.replica === undefined) return { log: undefined, replica: undefined, errorCode: lookup.errorCode, errorMessage: lookup.errorMessage };
  return { log: lookup.replica.log, replica: lookup.replica, errorCode: 0 };
}
