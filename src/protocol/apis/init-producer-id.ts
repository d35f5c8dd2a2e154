/**
 * InitProducerId (key 22), versions 0–1 (non-flexible; v2+ is flexible).
 *
 *   InitProducerIdRequest  := TransactionalId NULLABLE_STRING, TransactionTimeoutMs INT32
 *   InitProducerIdResponse := ThrottleTimeMs INT32, ErrorCode INT16, ProducerId INT64, ProducerEpoch INT16
 *
 * v1 only changes quota throttling (KIP-219), not the bytes. An idempotent producer sends a null
 * TransactionalId and gets a fresh producer id with epoch 0; a transactional one needs a
 * transaction coordinator, which Tributary does not serve.
 */
import { field, type ApiSchema } from '../schema.js';

export interface InitProducerIdRequest {
  readonly transactionalId: string | null;
  readonly transactionTimeoutMs: number;
}

export interface InitProducerIdResponse {
  readonly throttleTimeMs: number;
  readonly errorCode: number;
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

export const InitProducerIdApi: ApiSchema<InitProducerIdRequest, InitProducerIdResponse> = {
  apiKey: 22,
  name: 'InitProducerId',
  minVersion: 0,
  maxVersion: 1,
  request: [field('TransactionalId', 'string', '0+', { nullable: '0+' }), field('TransactionTimeoutMs', 'int32', '0+')],
  response: [
    field('ThrottleTimeMs', 'int32', '0+'),
    field('ErrorCode', 'int16', '0+'),
    field('ProducerId', 'int64', '0+'),
    field('ProducerEpoch', 'int16', '0+'),
  ],
};
