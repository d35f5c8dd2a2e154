/**
 * FindCoordinator v0–2: which broker coordinates a consumer group (key type 0). Every broker
 * gives the same answer, computed from the live broker registry (group/coordinator-placement.ts),
 * so when a coordinator dies its groups move to the broker that now ranks first for them.
 *
 * Why librdkafka needs it advertised even without groups: it enables LZ4 and its group consumer
 * only when the broker advertises FindCoordinator (kafka-protocol.md §3.1).
 *
 * A transaction coordinator (key type 1) is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as
 * InitProducerId refuses transactional ids: the Java producer asks FindCoordinator first, and a
 * fatal code makes `initTransactions()` fail at once, naming the cause, where a retriable one
 * would wait out max.block.ms.
 */
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import { FindCoordinatorApi, type FindCoordinatorRequest, type FindCoordinatorResponse } from '../../protocol/apis/find-coordinator.js';
import type { Cluster } from '../cluster.js';
import type { GroupCoordinator } from '../group/group-coordinator.js';
import type { ApiHandler } from '../router.js';

const GROUP_KEY_TYPE = 0;
const TRANSACTION_KEY_TYPE = 1;

export function findCoordinatorHandler(coordinator: GroupCoordinator, cluster: Cluster): ApiHandler<FindCoordinatorRequest, FindCoordinatorResponse> {
  const refuse = (errorCode: number, errorMessage: string): FindCoordinatorResponse => ({ throttleTimeMs: 0, errorCode, errorMessage, nodeId: -1, host: '', port: -1 });
  return {
    api: FindCoordinatorApi,
    async handle(request, _version, context) {
      if (request.keyType === TRANSACTION_KEY_TYPE) {
        return refuse(
          KafkaErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
          `no transaction coordinator for "${request.key}": Tributary serves idempotent producers, not transactions; drop transactional.id`,
        );
      }
      if (request.keyType !== GROUP_KEY_TYPE) return refuse(KafkaErrorCode.INVALID_REQUEST, `unknown coordinator key type ${request.keyType}: 0 is a consumer group`);
      if (request.key === '') return refuse(KafkaErrorCode.INVALID_GROUP_ID, 'the group id is empty');
      const brokerId = coordinator.coordinatorOf(request.key);
      // Its address on the listener this request came in on (a coordinator without it cannot be reached from here).
      const broker = brokerId === undefined ? undefined : cluster.liveBrokersOn(context.identity.listenerName).find((candidate) => candidate.id === brokerId);
      if (broker === undefined) return refuse(KafkaErrorCode.COORDINATOR_NOT_AVAILABLE, `no live broker can coordinate group "${request.key}" right now; retry`);
      return { throttleTimeMs: 0, errorCode: KafkaErrorCode.NONE, errorMessage: null, nodeId: broker.id, host: broker.host, port: broker.port };
    },
  };
}
