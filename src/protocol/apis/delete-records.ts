/**
 * DeleteRecords (key 21), versions 0–1 (non-flexible; v2 is flexible and otherwise the same).
 * v1 only changes when a throttled response is sent (KIP-219). v2 is not served: the Java admin
 * clients of Kafka 3.9 and 4.1 speak 0–2 and take v1 from a broker that stops there, and kafkajs
 * and librdkafka speak 0–1 (ARCHITECTURE decision 9).
 *
 *   DeleteRecordsRequest  := Topics ARRAY of {
 *                              Name STRING
 *                              Partitions ARRAY of {
 *                                PartitionIndex INT32
 *                                Offset INT64                          (−1 = the high watermark)
 *                              }
 *                            }
 *                            TimeoutMs INT32
 *
 *   DeleteRecordsResponse := ThrottleTimeMs INT32
 *                            Topics ARRAY of {
 *                              Name STRING
 *                              Partitions ARRAY of {
 *                                PartitionIndex INT32
 *                                LowWatermark INT64                    (−1 on error)
 *                                ErrorCode INT16
 *                              }
 *                            }
 */
import { array, field, type ApiSchema } from '../schema.js';

/** An Offset of −1 deletes everything below the high watermark (DeleteRecordsRequest.HIGH_WATERMARK). */
export const DELETE_TO_HIGH_WATERMARK = -1n;

export interface DeleteRecordsRequestPartition {
  readonly partitionIndex: number;
  readonly offset: bigint;
}

export interface DeleteRecordsRequestTopic {
  readonly name: string;
  readonly partitions: readonly DeleteRecordsRequestPartition[];
}

export interface DeleteRecordsRequest {
  readonly topics: readonly DeleteRecordsRequestTopic[];
  readonly timeoutMs: number;
}

export interface DeleteRecordsResponsePartition {
  readonly partitionIndex: number;
  readonly lowWatermark: bigint;
  readonly errorCode: number;
}

export interface DeleteRecordsResponseTopic {
  readonly name: string;
  readonly partitions: readonly DeleteRecordsResponsePartition[];
}

export interface DeleteRecordsResponse {
  readonly throttleTimeMs: number;
  readonly topics: readonly DeleteRecordsResponseTopic[];
}

export const DeleteRecordsApi: ApiSchema<DeleteRecordsRequest, DeleteRecordsResponse> = {
  apiKey: 21,
  name: 'DeleteRecords',
  minVersion: 0,
  maxVersion: 1,
  request: [
    field('Topics', array([field('Name', 'string', '0+'), field('Partitions', array([field('PartitionIndex', 'int32', '0+'), field('Offset', 'int64', '0+')]), '0+')]), '0+'),
    field('TimeoutMs', 'int32', '0+'),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '0+'),
    field(
      'Topics',
      array([
        field('Name', 'string', '0+'),
        field('Partitions', array([field('PartitionIndex', 'int32', '0+'), field('LowWatermark', 'int64', '0+'), field('ErrorCode', 'int16', '0+')]), '0+'),
      ]),
      '0+',
    ),
  ],
};
