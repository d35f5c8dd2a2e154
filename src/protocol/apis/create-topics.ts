/**
 * CreateTopics (key 19), versions 0–4 (non-flexible; v5+ is flexible). v4 has the v3 layout; it
 * only lets NumPartitions / ReplicationFactor be −1 without manual assignments (KIP-464).
 *
 *   CreateTopicsRequest  := Topics ARRAY of {
 *                             Name STRING
 *                             NumPartitions INT32                      (−1 = broker default)
 *                             ReplicationFactor INT16                  (−1 = broker default)
 *                             Assignments ARRAY of { PartitionIndex INT32, BrokerIds ARRAY of INT32 }
 *                             Configs ARRAY of { Name STRING, Value NULLABLE_STRING }
 *                           }
 *                           TimeoutMs INT32                            (default 60000)
 *                           ValidateOnly BOOLEAN                       (v1+)
 *
 *   CreateTopicsResponse := ThrottleTimeMs INT32                       (v2+)
 *                           Topics ARRAY of {
 *                             Name STRING, ErrorCode INT16
 *                             ErrorMessage NULLABLE_STRING             (v1+)
 *                           }
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface CreatableReplicaAssignment {
  readonly partitionIndex: number;
  readonly brokerIds: readonly number[];
}

export interface CreatableTopicConfig {
  readonly name: string;
  readonly value: string | null;
}

export interface CreatableTopic {
  readonly name: string;
  readonly numPartitions: number;
  readonly replicationFactor: number;
  readonly assignments: readonly CreatableReplicaAssignment[];
  readonly configs: readonly CreatableTopicConfig[];
}

export interface CreateTopicsRequest {
  readonly topics: readonly CreatableTopic[];
  readonly timeoutMs: number;
  readonly validateOnly: boolean;
}

export interface CreatableTopicResult {
  readonly name: string;
  readonly errorCode: number;
  readonly errorMessage: string | null;
}

export interface CreateTopicsResponse {
  readonly throttleTimeMs: number;
  readonly topics: readonly CreatableTopicResult[];
}

export const CreateTopicsApi: ApiSchema<CreateTopicsRequest, CreateTopicsResponse> = {
  apiKey: 19,
  name: 'CreateTopics',
  minVersion: 0,
  maxVersion: 4,
  request: [
    field(
      'Topics',
      array([
        field('Name', 'string', '0+'),
        field('NumPartitions', 'int32', '0+'),
        field('ReplicationFactor', 'int16', '0+'),
        field('Assignments', array([field('PartitionIndex', 'int32', '0+'), field('BrokerIds', array('int32'), '0+')]), '0+'),
        field('Configs', array([field('Name', 'string', '0+'), field('Value', 'string', '0+', { nullable: '0+' })]), '0+'),
      ]),
      '0+',
    ),
    field('TimeoutMs', 'int32', '0+', { default: 60000 }),
    field('ValidateOnly', 'bool', '1+'),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '2+'),
    field('Topics', array([field('Name', 'string', '0+'), field('ErrorCode', 'int16', '0+'), field('ErrorMessage', 'string', '1+', { nullable: '0+' })]), '0+'),
  ],
};
