/**
 * Fetch (key 1), versions 4–11 (non-flexible; v12+ is flexible). v4 is the first version whose
 * clients read RecordBatch v2, so older versions are not served. Version ranges below are the
 * message's own (some fields start before v4).
 *
 *   FetchRequest  := ReplicaId INT32, MaxWaitMs INT32, MinBytes INT32
 *                    MaxBytes INT32                                    (v3+, default 0x7fffffff)
 *                    IsolationLevel INT8                               (v4+)
 *                    SessionId INT32                                   (v7+, default 0)
 *                    SessionEpoch INT32                                (v7+, default −1)
 *                    Topics ARRAY of {
 *                      Topic STRING
 *                      Partitions ARRAY of {
 *                        Partition INT32
 *                        CurrentLeaderEpoch INT32                      (v9+, default −1)
 *                        FetchOffset INT64
 *                        LogStartOffset INT64                          (v5+, default −1)
 *                        PartitionMaxBytes INT32
 *                      }
 *                    }
 *                    ForgottenTopicsData ARRAY of { Topic STRING, Partitions ARRAY of INT32 }  (v7+)
 *                    RackId STRING                                     (v11+, default "")
 *
 *   FetchResponse := ThrottleTimeMs INT32                              (v1+)
 *                    ErrorCode INT16                                   (v7+)
 *                    SessionId INT32                                   (v7+, default 0)
 *                    Responses ARRAY of {
 *                      Topic STRING
 *                      Partitions ARRAY of {
 *                        PartitionIndex INT32, ErrorCode INT16, HighWatermark INT64
 *                        LastStableOffset INT64                        (v4+, default −1)
 *                        LogStartOffset INT64                          (v5+, default −1)
 *                        AbortedTransactions NULLABLE_ARRAY of { ProducerId INT64, FirstOffset INT64 }  (v4+)
 *                        PreferredReadReplica INT32                    (v11+, default −1)
 *                        Records RECORDS
 *                      }
 *                    }
 *
 * The broker answers sessionless (SessionId 0) and lists every requested partition (§5). Records
 * in a response may be an ExternalPart: a file range the network layer streams itself.
 */
import { array, field, type ApiSchema } from '../schema.js';
import type { ExternalPart } from '../wire.js';

export interface FetchRequestPartition {
  readonly partition: number;
  readonly currentLeaderEpoch: number;
  readonly fetchOffset: bigint;
  readonly logStartOffset: bigint;
  readonly partitionMaxBytes: number;
}

export interface FetchRequestTopic {
  readonly topic: string;
  readonly partitions: readonly FetchRequestPartition[];
}

export interface FetchForgottenTopic {
  readonly topic: string;
  readonly partitions: readonly number[];
}

export interface FetchRequest {
  readonly replicaId: number;
  readonly maxWaitMs: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly isolationLevel: number;
  readonly sessionId: number;
  readonly sessionEpoch: number;
  readonly topics: readonly FetchRequestTopic[];
  readonly forgottenTopicsData: readonly FetchForgottenTopic[];
  readonly rackId: string;
}

export interface FetchAbortedTransaction {
  readonly producerId: bigint;
  readonly firstOffset: bigint;
}

export interface FetchResponsePartition {
  readonly partitionIndex: number;
  readonly errorCode: number;
  readonly highWatermark: bigint;
  readonly lastStableOffset: bigint;
  readonly logStartOffset: bigint;
  readonly abortedTransactions: readonly FetchAbortedTransaction[] | null;
  readonly preferredReadReplica: number;
  /** Decoded as a Buffer (a view into the message) or null; the broker may pass a file range. */
  readonly records: Buffer | null | ExternalPart;
}

export interface FetchResponseTopic {
  readonly topic: string;
  readonly partitions: readonly FetchResponsePartition[];
}

export interface FetchResponse {
  readonly throttleTimeMs: number;
  readonly errorCode: number;
  readonly sessionId: number;
  readonly responses: readonly FetchResponseTopic[];
}

export const FetchApi: ApiSchema<FetchRequest, FetchResponse> = {
  apiKey: 1,
  name: 'Fetch',
  minVersion: 4,
  maxVersion: 11,
  request: [
    field('ReplicaId', 'int32', '0+'),
    field('MaxWaitMs', 'int32', '0+'),
    field('MinBytes', 'int32', '0+'),
    field('MaxBytes', 'int32', '3+', { default: 0x7fffffff }),
    field('IsolationLevel', 'int8', '4+'),
    field('SessionId', 'int32', '7+', { default: 0 }),
    field('SessionEpoch', 'int32', '7+', { default: -1 }),
    field(
      'Topics',
      array([
        field('Topic', 'string', '0+'),
        field(
          'Partitions',
          array([
            field('Partition', 'int32', '0+'),
            field('CurrentLeaderEpoch', 'int32', '9+', { default: -1 }),
            field('FetchOffset', 'int64', '0+'),
            field('LogStartOffset', 'int64', '5+', { default: -1n }),
            field('PartitionMaxBytes', 'int32', '0+'),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
    field('ForgottenTopicsData', array([field('Topic', 'string', '7+'), field('Partitions', array('int32'), '7+')]), '7+'),
    field('RackId', 'string', '11+', { default: '' }),
  ],
  response: [
    field('ThrottleTimeMs', 'int32', '1+'),
    field('ErrorCode', 'int16', '7+'),
    field('SessionId', 'int32', '7+', { default: 0 }),
    field(
      'Responses',
      array([
        field('Topic', 'string', '0+'),
        field(
          'Partitions',
          array([
            field('PartitionIndex', 'int32', '0+'),
            field('ErrorCode', 'int16', '0+'),
            field('HighWatermark', 'int64', '0+'),
            field('LastStableOffset', 'int64', '4+', { default: -1n }),
            field('LogStartOffset', 'int64', '5+', { default: -1n }),
            field('AbortedTransactions', array([field('ProducerId', 'int64', '4+'), field('FirstOffset', 'int64', '4+')]), '4+', { nullable: '4+' }),
            field('PreferredReadReplica', 'int32', '11+', { default: -1 }),
            field('Records', 'records', '0+', { nullable: '0+' }),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
  ],
};
