/**
 * InitProducerId for idempotent producers: a null transactional id gets a fresh producer id
 * (never reused: coordination/producer-ids.ts) and epoch 0, every time (Kafka "blindly accepts").
 *
 * A transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53). Tributary has no
 * transaction coordinator, and the Java producer treats 53 as fatal: `initTransactions()` throws
 * TransactionalIdAuthorizationException at once. COORDINATOR_NOT_AVAILABLE would be retried
 * until max.block.ms (60 s by default) and end in a bare timeout that names no cause. The
 * transaction APIs themselves are never advertised.
 */
import { isRetriable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { InitProducerIdApi, type InitProducerIdRequest, type InitProducerIdResponse } from '../../protocol/apis/init-producer-id.js';
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import type { ProducerIdAllocator } from '../../coordination/producer-ids.js';
import type { ApiHandler } from '../router.js';

const NO_PRODUCER = { producerId: -1n, producerEpoch: -1 } as const;

export function initProducerIdHandler(producerIds: ProducerIdAllocator, logger: Logger): ApiHandler<InitProducerIdRequest, InitProducerIdResponse> {
  return {
    api: InitProducerIdApi,
    async handle(request, _version, context) {
      if (request.transactionalId !== null) {
        logger.warn({ transactionalId: request.transactionalId, clientId: context.header.clientId }, 'transactional producer refused: Tributary serves idempotent producers only');
        return { throttleTimeMs: 0, errorCode: KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ...NO_PRODUCER };
      }
      try {
        return { throttleTimeMs: 0, errorCode: KafkaErrorCode.NONE, producerId: await producerIds.nextProducerId(), producerEpoch: 0 };
      } catch (error) {
        logger.error({ err: error, clientId: context.header.clientId }, 'could not allocate a producer id');
        // REQUEST_TIMED_OUT is retriable for every client (the Java producer re-sends); a
        // permanent failure gets a fatal code so the producer stops instead of looping.
        const errorCode = isRetriable(error) ? KafkaErrorCode.REQUEST_TIMED_OUT : KafkaErrorCode.UNKNOWN_SERVER_ERROR;
        return { throttleTimeMs: 0, errorCode, ...NO_PRODUCER };
      }
    },
  };
}
