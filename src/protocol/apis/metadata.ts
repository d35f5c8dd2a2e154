/**
 * Metadata (key 3), versions 0–9; v9 is the first flexible version (compact strings and arrays,
 * a TAG_BUFFER after every struct, header v2/v1) and otherwise v8. It is served because the Java
 * consumer trusts leader epochs only from Metadata v9 (MetadataResponse.hasReliableLeaderEpochs),
 * and without them never validates its position with OffsetForLeaderEpoch after a leader change
 * (KIP-320). v10 adds topic ids and is not served.
 *
 *   MetadataRequest  := Topics NULLABLE_ARRAY of { Name STRING }      (nullable v1+)
 *                       AllowAutoTopicCreation BOOLEAN                 (v4+, default true)
 *                       IncludeClusterAuthorizedOperations BOOLEAN     (v8–10)
 *                       IncludeTopicAuthorizedOperations BOOLEAN       (v8+)
 *
 *   MetadataResponse := ThrottleTimeMs INT32                          (v3+)
 *                       Brokers ARRAY of { NodeId INT32, Host STRING, Port INT32,
 *                                          Rack NULLABLE_STRING (v1+) }
 *                       ClusterId NULLABLE_STRING                     (v2+)
 *                       ControllerId INT32                            (v1+, default −1)
 *                       Topics ARRAY of {
 *                         ErrorCode INT16, Name STRING, IsInternal BOOLEAN (v1+),
 *                         Partitions ARRAY of {
 *                           ErrorCode INT16, PartitionIndex INT32, LeaderId INT32,
 *                           LeaderEpoch INT32                         (v7+, default −1)
 *                           ReplicaNodes ARRAY of INT32, IsrNodes ARRAY of INT32,
 *                           OfflineReplicas ARRAY of INT32            (v5+)
 *                         }
 *                         TopicAuthorizedOperations INT32             (v8+, default −2147483648)
 *                       }
 *                       ClusterAuthorizedOperations INT32             (v8+, default −2147483648)
 *
 * "All topics" is an empty Topics array in v0 and a null one in v1+; in v1+ an empty array means
 * "no topics" (brokers only). v0–3 requests behave as AllowAutoTopicCreation = true (§8).
 */
import { array, field, versions, type ApiSchema } from '../schema.js';

/** −2147483648: authorized operations were not requested. */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

export interface MetadataRequestTopic {
  readonly name: string;
}

export interface MetadataRequest {
  /** null (v1+) = all topics; in v0 an empty array means all topics. */
  readonly topics: readonly MetadataRequestTopic[] | null;
  readonly allowAutoTopicCreation: boolean;
  readonly includeClusterAuthorizedOperations: boolean;
  readonly includeTopicAuthorizedOperations: boolean;
}

export interface MetadataResponseBroker {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
  readonly rack: string | null;
}

export interface MetadataResponsePartition {
  readonly errorCode: number;
  readonly partitionIndex: number;
  readonly leaderId: number;
  readonly leaderEpoch: number;
  readonly replicaNodes: readonly number[];
  readonly isrNodes: readonly number[];
  readonly offlineReplicas: readonly number[];
}

export interface MetadataResponseTopic {
  readonly errorCode: number;
  readonly name: string;
  readonly isInternal: boolean;
  readonly partitions: readonly MetadataResponsePartition[];
  readonly topicAuthorizedOperations: number;
}

export interface MetadataResponse {
  readonly throttleTimeMs: number;
  readonly brokers: readonly MetadataResponseBroker[];
  readonly clusterId: string | null;
  readonly controllerId: number;
  readonly topics: readonly MetadataResponseTopic[];
  readonly clusterAuthorizedOperations: number;
}

export const MetadataApi: ApiSchema<MetadataRequest, MetadataResponse> = {
  apiKey: 3,
  name: 'Metadata',
  minVersion: 0,
  maxVersion: 9,
  flexibleVersions: versions('9+'),
  request: [
    field('Topics', array([field('Name', 'string', '0+')]), '0+', { nullable: '1+' }),
    field('AllowAutoTopicCreation', 'bool', '4+', { default: true }),
    field('IncludeClusterAuthorizedOperations', 'bool', '8-10'),
    field('IncludeTopicAuthorizedOperations', 'bool', '8+'),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '3+'),
    field(
      'Brokers',
      array([
        field('NodeId', 'int32', '0+'),
        field('Host', 'string', '0+'),
        field('Port', 'int32', '0+'),
        field('Rack', 'string', '1+', { nullable: '1+', default: null }),
      ]),
      '0+',
    ),
    field('ClusterId', 'string', '2+', { nullable: '2+', default: null }),
    field('ControllerId', 'int32', '1+', { default: -1 }),
    field(
      'Topics',
      array([
        field('ErrorCode', 'int16', '0+'),
        field('Name', 'string', '0+'),
        field('IsInternal', 'bool', '1+'),
        field(
          'Partitions',
          array([
            field('ErrorCode', 'int16', '0+'),
            field('PartitionIndex', 'int32', '0+'),
            field('LeaderId', 'int32', '0+'),
            field('LeaderEpoch', 'int32', '7+', { default: -1 }),
            field('ReplicaNodes', array('int32'), '0+'),
            field('IsrNodes', array('int32'), '0+'),
            field('OfflineReplicas', array('int32'), '5+'),
          ]),
          '0+',
        ),
        field('TopicAuthorizedOperations', 'int32', '8+', { default: AUTHORIZED_OPERATIONS_OMITTED }),
      ]),
      '0+',
    ),
    field('ClusterAuthorizedOperations', 'int32', '8+', { default: AUTHORIZED_OPERATIONS_OMITTED }),
  ],
};
