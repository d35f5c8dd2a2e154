/**
 * CreatePartitions (key 37), versions 0–1 (non-flexible): grow a topic's partition count.
 *
 *   CreatePartitionsRequest  := Topics ARRAY of { Name STRING, Count INT32,
 *                                 Assignments NULLABLE_ARRAY of { BrokerIds ARRAY of INT32 } },
 *                               TimeoutMs INT32, ValidateOnly BOOLEAN
 *   CreatePartitionsResponse := ThrottleTimeMs INT32,
 *                               Results ARRAY of { Name STRING, ErrorCode INT16, ErrorMessage NULLABLE_STRING }
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface CreatePartitionsAssignment {
  readonly brokerIds: readonly number[];
}

export interface CreatePartitionsTopic {
  readonly name: string;
  /** The new total number of partitions. */
  readonly count: number;
  readonly assignments: readonly CreatePartitionsAssignment[] | null;
}

export interface CreatePartitionsRequest {
  readonly topics: readonly CreatePartitionsTopic[];
  readonly timeoutMs: number;
  readonly validateOnly: boolean;
}

export interface CreatePartitionsResult {
  readonly name: string;
  readonly errorCode: number;
  readonly errorMessage: string | null;
}

export interface CreatePartitionsResponse {
  readonly throttleTimeMs: number;
  readonly results: readonly CreatePartitionsResult[];
}

export const CreatePartitionsApi: ApiSchema<CreatePartitionsRequest, CreatePartitionsResponse> = {
  apiKey: 37,
  name: 'CreatePartitions',
  minVersion: 0,
  maxVersion: 1,
  request: [
    field(
      'Topics',
      array([
        field('Name', 'string', '0+'),
        field('Count', 'int32', '0+'),
        field('Assignments', array([field('BrokerIds', array('int32'), '0+')]), '0+', { nullable: '0+', default: null }),
      ]),
      '0+',
    ),
    field('TimeoutMs', 'int32', '0+'),
    field('ValidateOnly', 'bool', '0+'),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '0+'),
    field('Results', array([field('Name', 'string', '0+'), field('ErrorCode', 'int16', '0+'), field('ErrorMessage', 'string', '0+', { nullable: '0+', default: null })]), '0+'),
  ],
};
