/**
 * OffsetCommit (key 8), versions 2–7 (non-flexible; v8+ is flexible). v0 (ZooKeeper-stored
 * offsets) and v1 (a per-partition CommitTimestamp) are not served: Kafka 4 dropped them (KIP-896).
 * v3 adds throttling, v4 only changes when throttling happens, v5 drops RetentionTimeMs (the
 * broker's offsets.retention.minutes decides), v6 adds CommittedLeaderEpoch, v7 adds static
 * membership (KIP-345).
 *
 *   OffsetCommitRequest  := GroupId STRING
 *                           GenerationIdOrMemberEpoch INT32        (default −1)
 *                           MemberId STRING
 *                           GroupInstanceId NULLABLE_STRING        (v7+, default null)
 *                           RetentionTimeMs INT64                  (v2–4, default −1: broker default)
 *                           Topics ARRAY of {
 *                             Name STRING
 *                             Partitions ARRAY of {
 *                               PartitionIndex INT32
 *                               CommittedOffset INT64
 *                               CommittedLeaderEpoch INT32         (v6+, default −1)
 *                               CommittedMetadata NULLABLE_STRING
 *                             }
 *                           }
 *
 *   OffsetCommitResponse := ThrottleTimeMs INT32                   (v3+)
 *                           Topics ARRAY of {
 *                             Name STRING
 *                             Partitions ARRAY of { PartitionIndex INT32, ErrorCode INT16 }
 *                           }
 *
 * Kafka named the generation GenerationId until KIP-848 renamed it GenerationIdOrMemberEpoch;
 * the bytes are the same. A commit with generation −1 and MemberId "" is a "simple" commit (no
 * membership), valid only against a group that has no members (or does not exist yet).
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface OffsetCommitRequestPartition {
  readonly partitionIndex: number;
  readonly committedOffset: bigint;
  readonly committedLeaderEpoch: number;
  readonly committedMetadata: string | null;
}

export interface OffsetCommitRequestTopic {
  readonly name: string;
  readonly partitions: readonly OffsetCommitRequestPartition[];
}

export interface OffsetCommitRequest {
  readonly groupId: string;
  readonly generationIdOrMemberEpoch: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  /** v2–4 only; −1 = the broker's retention. */
  readonly retentionTimeMs: bigint;
  readonly topics: readonly OffsetCommitRequestTopic[];
}

export interface OffsetCommitResponsePartition {
  readonly partitionIndex: number;
  readonly errorCode: number;
}

export interface OffsetCommitResponseTopic {
  readonly name: string;
  readonly partitions: readonly OffsetCommitResponsePartition[];
}

export interface OffsetCommitResponse {
  readonly throttleTimeMs: number;
  readonly topics: readonly OffsetCommitResponseTopic[];
}

export const OffsetCommitApi: ApiSchema<OffsetCommitRequest, OffsetCommitResponse> = {
  apiKey: 8,
  name: 'OffsetCommit',
  minVersion: 2,
  maxVersion: 7,
  request: [
    field('GroupId', 'string', '0+'),
    field('GenerationIdOrMemberEpoch', 'int32', '1+', { default: -1 }),
    field('MemberId', 'string', '1+'),
    field('GroupInstanceId', 'string', '7+', { nullable: '7+', default: null }),
    field('RetentionTimeMs', 'int64', '2-4', { default: -1n }),
    field(
      'Topics',
      array([
        field('Name', 'string', '0+'),
        field(
          'Partitions',
          array([
            field('PartitionIndex', 'int32', '0+'),
            field('CommittedOffset', 'int64', '0+'),
            field('CommittedLeaderEpoch', 'int32', '6+', { default: -1 }),
            field('CommittedMetadata', 'string', '0+', { nullable: '0+' }),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '3+'),
    field('Topics', array([field('Name', 'string', '0+'), field('Partitions', array([field('PartitionIndex', 'int32', '0+'), field('ErrorCode', 'int16', '0+')]), '0+')]), '0+'),
  ],
};
