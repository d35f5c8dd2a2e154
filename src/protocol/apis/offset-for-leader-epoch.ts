/**
 * OffsetForLeaderEpoch (key 23), versions 0–3 (non-flexible; v4+ is flexible). A follower asks
 * the leader where each of its epochs ended, to learn how far to truncate after a leader change
 * (KIP-101/279); a consumer asks to check that its position survived one (KIP-320).
 *
 *   OffsetForLeaderEpochRequest  := ReplicaId INT32                   (v3+, default −2)
 *                                   Topics ARRAY of {
 *                                     Topic STRING
 *                                     Partitions ARRAY of {
 *                                       Partition INT32
 *                                       CurrentLeaderEpoch INT32       (v2+, default −1)
 *                                       LeaderEpoch INT32
 *                                     }
 *                                   }
 *
 *   OffsetForLeaderEpochResponse := ThrottleTimeMs INT32              (v2+)
 *                                   Topics ARRAY of {
 *                                     Topic STRING
 *                                     Partitions ARRAY of {
 *                                       ErrorCode INT16, Partition INT32
 *                                       LeaderEpoch INT32              (v1+, default −1)
 *                                       EndOffset INT64                (default −1)
 *                                     }
 *                                   }
 *
 * Field names and version ranges are those of Kafka's OffsetForLeaderEpochRequest.json and
 * OffsetForLeaderEpochResponse.json. v1 is v0 with LeaderEpoch in the response; v3 is v2 with
 * ReplicaId in the request. Kafka 4.0 stopped serving v0–1; they are served here because the
 * codec costs nothing more and pre-KIP-320 followers speak them.
 */
import { array, field, type ApiSchema } from '../schema.js';

/** ReplicaId of a request that is neither a follower nor a consumer (Kafka's "debug" default, v0–2). */
export const DEBUG_REPLICA_ID = -2;
/** LeaderEpoch answered when the requested epoch is unknown (and CurrentLeaderEpoch when none is sent). */
export const UNDEFINED_EPOCH = -1;
/** EndOffset answered when the requested epoch is unknown, or with an error. */
export const UNDEFINED_EPOCH_OFFSET = -1n;

export interface OffsetForLeaderEpochRequestPartition {
  readonly partition: number;
  /** The requester's idea of the current leader epoch, for fencing (−1: not checked). */
  readonly currentLeaderEpoch: number;
  /** The epoch whose end offset is wanted. */
  readonly leaderEpoch: number;
}

export interface OffsetForLeaderEpochRequestTopic {
  readonly topic: string;
  readonly partitions: readonly OffsetForLeaderEpochRequestPartition[];
}

export interface OffsetForLeaderEpochRequest {
  /** The follower's broker id, −1 for a consumer, −2 before v3 (the field did not exist). */
  readonly replicaId: number;
  readonly topics: readonly OffsetForLeaderEpochRequestTopic[];
}

export interface OffsetForLeaderEpochResponsePartition {
  readonly errorCode: number;
  readonly partition: number;
  /** The largest epoch not above the requested one that the leader knows (−1 before v1). */
  readonly leaderEpoch: number;
  /** The first offset after that epoch: the next epoch's start offset, or the log end offset. */
  readonly endOffset: bigint;
}

export interface OffsetForLeaderEpochResponseTopic {
  readonly topic: string;
  readonly partitions: readonly OffsetForLeaderEpochResponsePartition[];
}

export interface OffsetForLeaderEpochResponse {
  readonly throttleTimeMs: number;
  readonly topics: readonly OffsetForLeaderEpochResponseTopic[];
}

export const OffsetForLeaderEpochApi: ApiSchema<OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse> = {
  apiKey: 23,
  name: 'OffsetForLeaderEpoch',
  minVersion: 0,
  maxVersion: 3,
  request: [
    field('ReplicaId', 'int32', '3+', { default: DEBUG_REPLICA_ID }),
    field(
      'Topics',
      array([
        field('Topic', 'string', '0+'),
        field(
          'Partitions',
          array([
            field('Partition', 'int32', '0+'),
            field('CurrentLeaderEpoch', 'int32', '2+', { default: UNDEFINED_EPOCH }),
            field('LeaderEpoch', 'int32', '0+'),
          ]),
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
        field('Topic', 'string', '0+'),
        field(
          'Partitions',
          array([
            field('ErrorCode', 'int16', '0+'),
            field('Partition', 'int32', '0+'),
            field('LeaderEpoch', 'int32', '1+', { default: UNDEFINED_EPOCH }),
            field('EndOffset', 'int64', '0+', { default: UNDEFINED_EPOCH_OFFSET }),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
  ],
};
