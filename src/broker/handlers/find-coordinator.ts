/**
 * FindCoordinator: consumer-group coordination for standard clients arrives with issue #5, so
 * every lookup answers COORDINATOR_NOT_AVAILABLE (retriable) and group consumers wait.
 *
 * Why serve it at all: librdkafka enables LZ4 and its group-coordinator feature only when the
 * broker advertises FindCoordinator v0 (kafka-protocol.md §3.1); without it `kcat -z lz4`
 * silently sends uncompressed batches.
 *
 * A transaction coordinator (key type 1) is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as
 * InitProducerId refuses transactional ids: the Java producer asks FindCoordinator first, and a
 * fatal code makes `initTransactions()` fail at once, naming the cause, where a retriable one
 * would wait out max.block.ms.
 */
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import { FindCoordinatorApi, type FindCoordinatorRequest, type FindCoordinatorResponse } from '../../protocol/apis/find-coordinator.js';
import type { ApiHandler } from '../router.js';

const TRANSACTION_KEY_TYPE = 1;

export function findCoordinatorHandler(): ApiHandler<FindCoordinatorRequest, FindCoordinatorResponse> {
  return {
    api: FindCoordinatorApi,
    async handle(request) {
      if (request.keyType === TRANSACTION_KEY_TYPE) {
        return {
          throttleTimeMs: 0,
          errorCode: KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
          errorMessage: `no transaction coordinator for "${request.key}": Tributary serves idempotent producers, not transactions; drop transactional.id`,
          nodeId: -1,
          host: '',
          port: -1,
        };
      }
      return {
        throttleTimeMs: 0,
        errorCode: KafkaErrorCode.COORDINATOR_NOT_AVAILABLE,
        errorMessage: `no group coordinator for "${request.key}" yet: Tributary serves consumer groups through ZooKeeper (the paper's consumers); broker-side groups are not implemented yet`,
        nodeId: -1,
        host: '',
        port: -1,
      };
    },
  };
}
