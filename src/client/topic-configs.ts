/**
 * A topic's configs as its cluster reports them (DescribeConfigs v3), for clients that adapt to a
 * topic: the audit reads cleanup.policy to tell compaction from loss.
 */
import { TributaryError } from '../common/errors.js';
import { CONFIG_RESOURCE_TYPE, DescribeConfigsApi } from '../protocol/apis/describe-configs.js';
import { KafkaErrorCode, kafkaErrorName } from '../protocol/kafka-errors.js';
import type { ClusterClient } from './cluster-client.js';

/**
 * The values of `names` for `topic` (all its configs when `names` is undefined); undefined when
 * the topic does not exist on the cluster.
 */
export async function describeTopicConfigs(cluster: ClusterClient, topic: string, names?: readonly string[]): Promise<Map<string, string | null> | undefined> {
  const broker = cluster.knownBrokers()[0];
  if (broker === undefined) throw new TributaryError({ code: 'BROKER_NOT_AVAILABLE', retriable: true, message: `cannot read the configs of ${topic}: no broker is known` });
  const connection = await cluster.connectionTo(broker.nodeId);
  const response = await connection.request(DescribeConfigsApi, 3, {
    resources: [{ resourceType: CONFIG_RESOURCE_TYPE.TOPIC, resourceName: topic, configurationKeys: names === undefined ? null : [...names] }],
    includeSynonyms: false,
    includeDocumentation: false,
  });
  const result = response.results[0];
  if (result?.errorCode === KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION) return undefined;
  if (result === undefined || result.errorCode !== 0) {
    const reason = result === undefined ? 'no result' : `${kafkaErrorName(result.errorCode)}${result.errorMessage === null ? '' : ` — ${result.errorMessage}`}`;
    throw new TributaryError({ code: 'DESCRIBE_CONFIGS_FAILED', message: `cannot read the configs of ${topic}: ${reason}`, details: { topic } });
  }
  return new Map(result.configs.map((entry) => [entry.name, entry.value]));
}

/** Whether the topic's cleanup.policy includes compact (false when the topic does not exist). */
export async function isCompactedTopic(cluster: ClusterClient, topic: string): Promise<boolean> {
  const policy = (await describeTopicConfigs(cluster, topic, ['cleanup.policy']))?.get('cleanup.policy') ?? 'delete';
  return policy.split(',').includes('compact');
}
