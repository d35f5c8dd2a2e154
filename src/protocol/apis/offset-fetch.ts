/**
 * OffsetFetch (key 9), versions 1–5 (non-flexible; v6+ is flexible). v0 (offsets read from
 * ZooKeeper) is not served: Kafka 4 dropped it (KIP-896). v2 adds a top-level ErrorCode and lets
 * Topics be null (= every topic the group has offsets for), v3 adds throttling, v4 only changes
 * when throttling happens, v5 adds CommittedLeaderEpoch.
 *
 *   OffsetFetchRequest  := GroupId STRING
 *                          Topics NULLABLE_ARRAY of {              (nullable v2+: null = all)
 *                            Name STRING
 *                            PartitionIndexes ARRAY of INT32
 *                          }
 *
 *   OffsetFetchResponse := ThrottleTimeMs INT32                    (v3+)
 *                          Topics ARRAY of {
 *                            Name STRING
 *                            Partitions ARRAY of {
 *                              PartitionIndex INT32
 *                              CommittedOffset INT64               (−1: no offset committed)
 *                              CommittedLeaderEpoch INT32          (v5+, default −1)
 *                              Metadata NULLABLE_STRING
 *                              ErrorCode INT16
 *                            }
 *                          }
 *                          ErrorCode INT16                         (v2+, default 0; after Topics)
 *
 * In v1 a group-level error can only be told per partition; v2+ puts it in the top-level
 * ErrorCode, which comes last on the wire. Kafka's ranges end at v7 (v8 moves everything into a
 * Groups array), so the fields are written 0–7 as Kafka has them.
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface OffsetFetchRequestTopic {
  readonly name: string;
  readonly partitionIndexes: readonly number[];
}

export interface OffsetFetchRequest {
  readonly groupId: string;
  /** null (v2+) = every topic with committed offsets. */
  readonly topics: readonly OffsetFetchRequestTopic[] | null;
}

export interface OffsetFetchResponsePartition {
  readonly partitionIndex: number;
  readonly committedOffset: bigint;
  readonly committedLeaderEpoch: number;
  readonly metadata: string | null;
  readonly errorCode: number;
}

export interface OffsetFetchResponseTopic {
  readonly name: string;
  readonly partitions: readonly OffsetFetchResponsePartition[];
}

export interface OffsetFetchResponse {
  readonly throttleTimeMs: number;
  readonly topics: readonly OffsetFetchResponseTopic[];
  /** v2+ only. */
  readonly errorCode: number;
}

export const OffsetFetchApi: ApiSchema<OffsetFetchRequest, OffsetFetchResponse> = {
  apiKey: 9,
  name: 'OffsetFetch',
  minVersion: 1,
  maxVersion: 5,
  request: [
    field('GroupId', 'string', '0-7'),
    field('Topics', array([field('Name', 'string', '0-7'), field('PartitionIndexes', array('int32'), '0-7')]), '0-7', { nullable: '2-7' }),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '3+'),
    field(
      'Topics',
      array([
        field('Name', 'string', '0-7'),
        field(
          'Partitions',
          array([
            field('PartitionIndex', 'int32', '0-7'),
            field('CommittedOffset', 'int64', '0-7'),
            field('CommittedLeaderEpoch', 'int32', '5-7', { default: -1 }),
            field('Metadata', 'string', '0-7', { nullable: '0-7' }),
            field('ErrorCode', 'int16', '0-7'),
          ]),
          '0-7',
        ),
      ]),
      '0-7',
    ),
    field('ErrorCode', 'int16', '2-7', { default: 0 }),
  ],
};
