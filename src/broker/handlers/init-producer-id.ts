/**
 * InitProducerId for idempotent producers: a null transactional id gets a fresh producer id
 * (never reused: coordination/producer-ids.ts) and epoch 0, every time (Kafka "blindly accepts").
 *
 * A transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53). Tributary has no
 * transaction coordinator, and the Java producer treats 53 as fatal: `initTransactions()` throws
 * TransactionalIdAuthorizationException at once. COORDINATOR_NOT_AVAILABLE would be retried
 * until max.block.ms (60 s by default) and end in a bare timeout that names no cause. The
 * transaction APIs themselves are never advertised.
 *
 * An idempotent producer needs IDEMPOTENT_WRITE on the cluster, or WRITE on at least one topic
 * (Kafka 2.8+, KIP-679); else CLUSTER_AUTHORIZATION_FAILED and no producer id is used up.
 */
import { isRetriable } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { InitProducerIdApi, type InitProducerIdRequest, type InitProducerIdResponse } from '../../protocol/apis/init-producer-id.js';
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import type { ProducerIdAllocator } from '../../coordination/producer-ids.js';
import type { ApiHandler } from '../router.js';
import { AclOperation, CLUSTER_RESOURCE_NAME, ResourceType } from '../security/acl.js';
import type { Authorizer } from '../security/authorizer.js';

const NO_PRODUCER = { producerId: -1n, producerEpoch: -1 } as const;

export function initProducerIdHandler(producerIds: ProducerIdAllocator, logger: Logger, authorizer: Authorizer): ApiHandler<InitProducerIdRequest, InitProducerIdResponse> {
  return {
    api: InitProducerIdApi,
    async handle(request, _version, context) {
      if (request.transactionalId !== null) {
        logger.warn({ transactionalId: request.transactionalId, clientId: context.header.clientId }, 'transactional producer refused: Tributary serves idempotent producers only');
        return { throttleTimeMs: 0, errorCode: KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ...NO_PRODUCER };
      }
      const { identity } = context;
      const mayProduce =
        authorizer.authorize(identity, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME) || authorizer.authorizeAny(identity, AclOperation.WRITE, ResourceType.TOPIC);
      if (!mayProduce) return { throttleTimeMs: 0, errorCode: KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED, ...NO_PRODUCER };
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
