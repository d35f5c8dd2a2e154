/**
 * ListOffsets (key 2), versions 1–5 (non-flexible; v6+ is flexible). v0 (MaxNumOffsets in the
 * request, OldStyleOffsets in the response) is not served: no client needs it (§6).
 *
 *   ListOffsetsRequest  := ReplicaId INT32
 *                          IsolationLevel INT8                         (v2+)
 *                          Topics ARRAY of {
 *                            Name STRING
 *                            Partitions ARRAY of {
 *                              PartitionIndex INT32
 *                              CurrentLeaderEpoch INT32                (v4+, default −1)
 *                              Timestamp INT64                         (−1 latest, −2 earliest)
 *                            }
 *                          }
 *
 *   ListOffsetsResponse := ThrottleTimeMs INT32                        (v2+)
 *                          Topics ARRAY of {
 *                            Name STRING
 *                            Partitions ARRAY of {
 *                              PartitionIndex INT32, ErrorCode INT16
 *                              Timestamp INT64                         (v1+, default −1)
 *                              Offset INT64                            (v1+, default −1)
 *                              LeaderEpoch INT32                       (v4+, default −1)
 *                            }
 *                          }
 */
import { array, field, type ApiSchema } from '../schema.js';

export const LATEST_TIMESTAMP = -1n;
export const EARLIEST_TIMESTAMP = -2n;

export interface ListOffsetsRequestPartition {
  readonly partitionIndex: number;
  readonly currentLeaderEpoch: number;
  readonly timestamp: bigint;
}

export interface ListOffsetsRequestTopic {
  readonly name: string;
  readonly partitions: readonly ListOffsetsRequestPartition[];
}

export interface ListOffsetsRequest {
  readonly replicaId: number;
  readonly isolationLevel: number;
  readonly topics: readonly ListOffsetsRequestTopic[];
}

export interface ListOffsetsResponsePartition {
  readonly partitionIndex: number;
  readonly errorCode: number;
  readonly timestamp: bigint;
  readonly offset: bigint;
  readonly leaderEpoch: number;
}

export interface ListOffsetsResponseTopic {
  readonly name: string;
  readonly partitions: readonly ListOffsetsResponsePartition[];
}

export interface ListOffsetsResponse {
  readonly throttleTimeMs: number;
  readonly topics: readonly ListOffsetsResponseTopic[];
}

export const ListOffsetsApi: ApiSchema<ListOffsetsRequest, ListOffsetsResponse> = {
  apiKey: 2,
  name: 'ListOffsets',
  minVersion: 1,
  maxVersion: 5,
  request: [
    field('ReplicaId', 'int32', '0+'),
    field('IsolationLevel', 'int8', '2+'),
    field(
      'Topics',
      array([
        field('Name', 'string', '0+'),
        field(
          'Partitions',
          array([field('PartitionIndex', 'int32', '0+'), field('CurrentLeaderEpoch', 'int32', '4+', { default: -1 }), field('Timestamp', 'int64', '0+')]),
          '0+',
        ),
      ]),
      '0+',
    ),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '2+'),
    field(
      'Topics',
      array([
        field('Name', 'string', '0+'),
        field(
          'Partitions',
          array([
            field('PartitionIndex', 'int32', '0+'),
            field('ErrorCode', 'int16', '0+'),
            field('Timestamp', 'int64', '1+', { default: -1n }),
            field('Offset', 'int64', '1+', { default: -1n }),
            field('LeaderEpoch', 'int32', '4+', { default: -1 }),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
  ],
};
