/**
 * FindCoordinator: consumer-group coordination for standard clients arrives with issue #5, so
 * every lookup answers COORDINATOR_NOT_AVAILABLE (retriable) and group consumers wait.
 *
 * Why serve it at all: librdkafka enables LZ4 and its group-coordinator feature only when the
 * broker advertises FindCoordinator v0 (kafka-protocol.md §3.1); without it `kcat -z lz4`
 * silently sends uncompressed batches.
 */
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import { FindCoordinatorApi, type FindCoordinatorRequest, type FindCoordinatorResponse } from '../../protocol/apis/find-coordinator.js';
import type { ApiHandler } from '../router.js';

export function findCoordinatorHandler(): ApiHandler<FindCoordinatorRequest, FindCoordinatorResponse> {
  return {
    api: FindCoordinatorApi,
    async handle(request) {
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
