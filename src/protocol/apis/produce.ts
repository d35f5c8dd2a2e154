/**
 * Produce (key 0), versions 0–8 (non-flexible; v9+ is flexible).
 *
 *   ProduceRequest  := TransactionalId NULLABLE_STRING                (v3+)
 *                      Acks INT16
 *                      TimeoutMs INT32
 *                      TopicData ARRAY of {
 *                        Name STRING
 *                        PartitionData ARRAY of { Index INT32, Records RECORDS }
 *                      }
 *
 *   ProduceResponse := Responses ARRAY of {
 *                        Name STRING
 *                        PartitionResponses ARRAY of {
 *                          Index INT32, ErrorCode INT16, BaseOffset INT64,
 *                          LogAppendTimeMs INT64                       (v2+, default −1)
 *                          LogStartOffset INT64                        (v5+, default −1)
 *                          RecordErrors ARRAY of { BatchIndex INT32,
 *                                                  BatchIndexErrorMessage NULLABLE_STRING }  (v8+)
 *                          ErrorMessage NULLABLE_STRING                (v8+)
 *                        }
 *                      }
 *                      ThrottleTimeMs INT32                            (v1+; after Responses)
 *
 * v0–2 carry a legacy MessageSet (magic 0/1) in Records; v3+ carry RecordBatch v2 (§4). A request
 * with Acks = 0 gets no response at all (§2).
 */
import { array, field, type ApiSchema } from '../schema.js';

export interface ProducePartitionData {
  readonly index: number;
  readonly records: Buffer | null;
}

export interface ProduceTopicData {
  readonly name: string;
  readonly partitionData: readonly ProducePartitionData[];
}

export interface ProduceRequest {
  readonly transactionalId: string | null;
  readonly acks: number;
  readonly timeoutMs: number;
  readonly topicData: readonly ProduceTopicData[];
}

export interface ProduceRecordError {
  readonly batchIndex: number;
  readonly batchIndexErrorMessage: string | null;
}

export interface ProducePartitionResponse {
  readonly index: number;
  readonly errorCode: number;
  readonly baseOffset: bigint;
  readonly logAppendTimeMs: bigint;
  readonly logStartOffset: bigint;
  readonly recordErrors: readonly ProduceRecordError[];
  readonly errorMessage: string | null;
}

export interface ProduceTopicResponse {
  readonly name: string;
  readonly partitionResponses: readonly ProducePartitionResponse[];
}

export interface ProduceResponse {
  readonly responses: readonly ProduceTopicResponse[];
  readonly throttleTimeMs: number;
}

export const ProduceApi: ApiSchema<ProduceRequest, ProduceResponse> = {
  apiKey: 0,
  name: 'Produce',
  minVersion: 0,
  maxVersion: 8,
  request: [
    field('TransactionalId', 'string', '3+', { nullable: '0+', default: null }),
    field('Acks', 'int16', '0+'),
    field('TimeoutMs', 'int32', '0+'),
    field(
      'TopicData',
      array([field('Name', 'string', '0+'), field('PartitionData', array([field('Index', 'int32', '0+'), field('Records', 'records', '0+', { nullable: '0+' })]), '0+')]),
      '0+',
    ),
  ],
  response: [
    field(
      'Responses',
      array([
        field('Name', 'string', '0+'),
        field(
          'PartitionResponses',
          array([
            field('Index', 'int32', '0+'),
            field('ErrorCode', 'int16', '0+'),
            field('BaseOffset', 'int64', '0+'),
            field('LogAppendTimeMs', 'int64', '2+', { default: -1n }),
            field('LogStartOffset', 'int64', '5+', { default: -1n }),
            field('RecordErrors', array([field('BatchIndex', 'int32', '8+'), field('BatchIndexErrorMessage', 'string', '8+', { nullable: '8+', default: null })]), '8+'),
            field('ErrorMessage', 'string', '8+', { nullable: '8+', default: null }),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
    field('ThrottleTimeMs', 'int32', '1+'),
  ],
};
