/**
 * Getting a producer id for the idempotent producer: InitProducerId (key 22) with a null
 * transactional id, to any broker (no coordinator is involved), after checking with ApiVersions
 * that the broker serves it at a version this client speaks (0–1).
 */
import { TributaryError, isRetriable } from '../../common/errors.js';
import { ApiVersionsApi } from '../../protocol/apis/api-versions.js';
import { InitProducerIdApi } from '../../protocol/apis/init-producer-id.js';
import { KafkaErrorCode, kafkaErrorName } from '../../protocol/kafka-errors.js';
import type { ClusterClient } from '../cluster-client.js';
import type { ProducerIdAndEpoch } from './producer-sequences.js';

const MAX_INIT_PRODUCER_ID_VERSION = 1;
/** What the Java idempotent producer sends: no transaction, so no timeout. */
const NO_TRANSACTION_TIMEOUT_MS = 2_147_483_647;
/** InitProducerId errors that go away by themselves (the broker is still loading, or busy). */
const RETRIABLE_INIT_ERRORS: ReadonlySet<number> = new Set([14, KafkaErrorCode.COORDINATOR_NOT_AVAILABLE, 16, 51]);

/**
 * One InitProducerId, trying the known brokers in turn until one answers. Fails with a
 * non-retriable UNSUPPORTED_VERSION when a broker does not serve it: waiting will not help.
 */
export async function requestProducerId(cluster: ClusterClient): Promise<ProducerIdAndEpoch> {
  const brokers = cluster.knownBrokers();
  const failures: string[] = [];
  let lastError: unknown;
  for (const broker of brokers) {
    const address = `${broker.host}:${broker.port}`;
    try {
      const connection = await cluster.connectionTo(broker.nodeId);
      const { apiKeys } = await connection.request(ApiVersionsApi, 0, {});
      const range = apiKeys.find((entry) => entry.apiKey === InitProducerIdApi.apiKey);
      if (range === undefined || range.minVersion > MAX_INIT_PRODUCER_ID_VERSION) {
        throw new TributaryError({
          code: 'UNSUPPORTED_VERSION',
          message:
            range === undefined
              ? `broker ${broker.nodeId} (${address}) does not serve InitProducerId (API key 22), which the idempotent producer needs: upgrade the broker, or create the producer with idempotent: false`
              : `broker ${broker.nodeId} (${address}) serves InitProducerId only from v${range.minVersion}, and this client speaks v0–v${MAX_INIT_PRODUCER_ID_VERSION}: create the producer with idempotent: false`,
          details: { brokerId: broker.nodeId, apiKey: InitProducerIdApi.apiKey },
        });
      }
      const version = Math.min(MAX_INIT_PRODUCER_ID_VERSION, range.maxVersion);
      const answer = await connection.request(InitProducerIdApi, version, { transactionalId: null, transactionTimeoutMs: NO_TRANSACTION_TIMEOUT_MS });
      if (answer.errorCode === KafkaErrorCode.NONE) return { producerId: answer.producerId, epoch: answer.producerEpoch };
      const name = kafkaErrorName(answer.errorCode);
      throw new TributaryError({
        code: name,
        retriable: RETRIABLE_INIT_ERRORS.has(answer.errorCode),
        message: `broker ${broker.nodeId} (${address}) refused InitProducerId with ${name}${name === 'CLUSTER_AUTHORIZATION_FAILED' ? ': this client needs IdempotentWrite on the cluster, or create the producer with idempotent: false' : ''}`,
        details: { brokerId: broker.nodeId, kafkaCode: answer.errorCode },
      });
    } catch (error) {
      if (!isRetriable(error)) throw error;
      lastError = error;
      failures.push(`${address} (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  throw new TributaryError({
    code: lastError instanceof TributaryError ? lastError.code : 'BROKER_UNREACHABLE',
    retriable: true,
    message: `no broker gave the idempotent producer a producer id: ${failures.join('; ') || 'no brokers known'}`,
    cause: lastError,
  });
}
