/** `tributary topics create|list|describe|alter|delete|delete-records`: topic administration over the Kafka protocol. */
import { readFileSync } from 'node:fs';
import { TributaryError } from '../../common/errors.js';
import { ClusterClient, parseAddress } from '../../client/cluster-client.js';
import { KafkaConnection } from '../../client/connection.js';
import { CreatePartitionsApi } from '../../protocol/apis/create-partitions.js';
import { CreateTopicsApi } from '../../protocol/apis/create-topics.js';
import { DeleteTopicsApi } from '../../protocol/apis/delete-topics.js';
import { CONFIG_RESOURCE_TYPE, CONFIG_SOURCE, DescribeConfigsApi } from '../../protocol/apis/describe-configs.js';
import { CONFIG_OPERATION, IncrementalAlterConfigsApi, type IncrementalAlterableConfig } from '../../protocol/apis/incremental-alter-configs.js';
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ListOffsetsApi } from '../../protocol/apis/list-offsets.js';
import { MetadataApi, type MetadataResponse } from '../../protocol/apis/metadata.js';
import { KafkaErrorCode, kafkaErrorName } from '../../protocol/kafka-errors.js';
import { deleteRecords, type RecordsToDelete } from '../../client/records-admin.js';
import { securityOption, type ClientSecurity } from '../../client/security-config.js';
import { commandSecurity } from '../command-security.js';
import type { CommandIo } from '../not-implemented.js';

/** Every command here takes --command-config (client security properties). */
interface Reach {
  readonly bootstrapServer: string;
  readonly commandConfig?: string;
}

async function withBootstrap<T>(bootstrap: string, security: ClientSecurity | undefined, run: (connection: KafkaConnection) => Promise<T>): Promise<T> {
  const { host, port } = parseAddress(bootstrap);
  const connection = await KafkaConnection.open(host, port, { clientId: 'tributary-topics', ...securityOption(security) });
  try {
    return await run(connection);
  } finally {
    connection.close();
  }
}

function fail(message: string): never {
  throw new TributaryError({ code: 'COMMAND_FAILED', message });
}

/** `--config key=value` flags as name/value pairs. */
function parseConfigFlags(entries: readonly string[]): { name: string; value: string }[] {
  return entries.map((entry) => {
    const at = entry.indexOf('=');
    if (at <= 0) fail(`--config takes key=value, not "${entry}"`);
    return { name: entry.slice(0, at), value: entry.slice(at + 1) };
  });
}

export async function createTopic(
  io: CommandIo,
  options: Reach & { topic: string; partitions: number; replicationFactor?: number; config: readonly string[] },
): Promise<void> {
  const configs = parseConfigFlags(options.config);
  const replicationFactor = options.replicationFactor ?? -1;
  if (!Number.isInteger(replicationFactor) || replicationFactor === 0 || replicationFactor < -1) fail(`--replication-factor takes a whole number of at least 1, not ${String(options.replicationFactor)}`);
  await withBootstrap(options.bootstrapServer, commandSecurity(options.commandConfig), async (connection) => {
    const response = await connection.request(CreateTopicsApi, 4, {
      topics: [{ name: options.topic, numPartitions: options.partitions, replicationFactor, assignments: [], configs }],
      timeoutMs: 30_000,
      validateOnly: false,
    });
    const result = response.topics[0];
    if (result === undefined) fail('the broker returned no result');
    if (result.errorCode !== 0) fail(`could not create topic ${options.topic}: ${kafkaErrorName(result.errorCode)}${result.errorMessage === null ? '' : ` — ${result.errorMessage}`}`);
    io.writeOut(`created topic ${options.topic} with ${options.partitions} partitions${options.replicationFactor === undefined ? '' : ` of ${options.replicationFactor} replicas`}\n`);
  });
}

export interface AlterTopicOptions extends Reach {
  readonly topic: string;
  readonly partitions?: number;
  /** `name=value` overrides to set. */
  readonly config: readonly string[];
  /** Override names to remove (back to the broker's default). */
  readonly deleteConfig: readonly string[];
}

/**
 * Grows the partition count and/or changes config overrides. Configs go first, through
 * IncrementalAlterConfigs as kafka-configs.sh sends them: the broker checks them all and applies
 * all or none, so a refused config leaves the partition count alone too.
 */
export async function alterTopic(io: CommandIo, options: AlterTopicOptions): Promise<void> {
  const changes: IncrementalAlterableConfig[] = [
    ...parseConfigFlags(options.config).map(({ name, value }) => ({ name, configOperation: CONFIG_OPERATION.SET, value })),
    ...options.deleteConfig.map((name) => ({ name, configOperation: CONFIG_OPERATION.DELETE, value: null })),
  ];
  if (options.partitions === undefined && changes.length === 0) fail('nothing to alter: give --partitions <n>, --config name=value or --delete-config name');
  await withBootstrap(options.bootstrapServer, commandSecurity(options.commandConfig), async (connection) => {
    if (changes.length > 0) {
      const response = await connection.request(IncrementalAlterConfigsApi, 0, {
        resources: [{ resourceType: CONFIG_RESOURCE_TYPE.TOPIC, resourceName: options.topic, configs: changes }],
        validateOnly: false,
      });
      const result = response.responses[0];
      if (result === undefined) fail('the broker returned no result');
      if (result.errorCode !== 0) fail(`could not change the configs of ${options.topic}: ${kafkaErrorName(result.errorCode)}${result.errorMessage === null ? '' : ` — ${result.errorMessage}`}`);
      const described = changes.map((change) => (change.value === null ? `removed ${change.name}` : `set ${change.name}=${change.value}`));
      io.writeOut(`topic ${options.topic}: ${described.join(', ')}\n`);
    }
    if (options.partitions === undefined) return;
    const response = await connection.request(CreatePartitionsApi, 1, {
      topics: [{ name: options.topic, count: options.partitions, assignments: null }],
      timeoutMs: 30_000,
      validateOnly: false,
    });
    const result = response.results[0];
    if (result === undefined) fail('the broker returned no result');
    if (result.errorCode !== 0) fail(`could not add partitions to ${options.topic}: ${kafkaErrorName(result.errorCode)}${result.errorMessage === null ? '' : ` — ${result.errorMessage}`}`);
    io.writeOut(`topic ${options.topic} now has ${options.partitions} partitions\n`);
  });
}

export async function deleteTopic(io: CommandIo, options: Reach & { topic: string }): Promise<void> {
  await withBootstrap(options.bootstrapServer, commandSecurity(options.commandConfig), async (connection) => {
    const response = await connection.request(DeleteTopicsApi, 3, { topicNames: [options.topic], timeoutMs: 30_000 });
    const result = response.responses[0];
    if (result === undefined) fail('the broker returned no result');
    if (result.errorCode !== 0) fail(`could not delete topic ${options.topic}: ${kafkaErrorName(result.errorCode)}`);
    io.writeOut(`deleted topic ${options.topic}\n`);
  });
}

export interface DeleteRecordsOptions extends Reach {
  readonly topic?: string;
  /** One partition of `topic`; absent: every partition of it. */
  readonly partition?: number;
  /** Records below this offset go; −1 = the high watermark (everything readable). */
  readonly offset?: string;
  /** kafka-delete-records' `--offset-json-file`: {"partitions":[{"topic","partition","offset"}],"version":1}. */
  readonly offsetJsonFile?: string;
  readonly timeoutMs?: number;
}

/**
 * Deletes the records below an offset (DeleteRecords, as kafka-delete-records.sh does): the
 * partitions' log start moves there, on every live replica, and segments below it are removed.
 * Prints each partition's new log start (low watermark); fails if any partition failed.
 */
export async function deleteRecordsOfTopic(io: CommandIo, options: DeleteRecordsOptions): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 0) fail(`--timeout-ms takes a whole number of milliseconds, not ${String(options.timeoutMs)}`);
  const cluster = await ClusterClient.connect({
    bootstrap: options.bootstrapServer.split(','),
    clientId: 'tributary-topics',
    allowAutoTopicCreation: false,
    metadataRetries: 2,
    // The brokers may wait up to the timeout for their followers before answering.
    requestTimeoutMs: timeoutMs + 15_000,
    ...securityOption(commandSecurity(options.commandConfig)),
  });
  try {
    const wanted = await recordsToDelete(cluster, options);
    const outcomes = await deleteRecords(cluster, wanted, { timeoutMs });
    let failed = 0;
    for (const outcome of outcomes) {
      if ('lowWatermark' in outcome) {
        io.writeOut(`${outcome.topic} partition ${outcome.partition}: records below ${outcome.lowWatermark} deleted (log start ${outcome.lowWatermark})\n`);
      } else {
        failed += 1;
        io.writeErr(`${outcome.error.message}\n`);
      }
    }
    if (failed > 0) fail(`${failed} of ${outcomes.length} partitions failed`);
  } finally {
    cluster.close();
  }
}

/** What to delete, from --topic/--partition/--offset or from the JSON file. */
async function recordsToDelete(cluster: ClusterClient, options: DeleteRecordsOptions): Promise<RecordsToDelete[]> {
  if (options.offsetJsonFile !== undefined) {
    if (options.topic !== undefined || options.partition !== undefined || options.offset !== undefined) fail('give either --offset-json-file, or --topic with --offset (and --partition), not both');
    return parseOffsetJson(readFileSync(options.offsetJsonFile, 'utf8'), options.offsetJsonFile);
  }
  if (options.topic === undefined || options.offset === undefined) fail('give --topic and --offset (and --partition, or every partition is trimmed), or --offset-json-file');
  const offset = parseOffset(options.offset, '--offset');
  if (options.partition !== undefined) {
    if (!Number.isInteger(options.partition) || options.partition < 0) fail(`--partition takes a partition number, not ${String(options.partition)}`);
    return [{ topic: options.topic, partition: options.partition, offset }];
  }
  const topic = options.topic;
  return (await cluster.partitionsFor(topic)).map((partition) => ({ topic, partition, offset }));
}

function parseOffset(text: string, where: string): bigint {
  if (!/^(-1|\d+)$/.test(text.trim())) fail(`${where} takes an offset (records below it are deleted) or -1 for the high watermark, not "${text}"`);
  return BigInt(text.trim());
}

/** kafka-delete-records' file: {"partitions":[{"topic":"t","partition":0,"offset":5}],"version":1}. */
export function parseOffsetJson(text: string, source: string): RecordsToDelete[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    fail(`${source} is not JSON: ${(error as Error).message}`);
  }
  const partitions = (parsed as { partitions?: unknown } | null)?.partitions;
  if (!Array.isArray(partitions) || partitions.length === 0) fail(`${source} must hold {"partitions":[{"topic":"t","partition":0,"offset":5}, …],"version":1}`);
  const seen = new Set<string>();
  return partitions.map((entry: unknown, index) => {
    const { topic, partition, offset } = (entry ?? {}) as { topic?: unknown; partition?: unknown; offset?: unknown };
    if (typeof topic !== 'string' || topic === '' || !Number.isInteger(partition) || (partition as number) < 0 || !Number.isSafeInteger(offset) || (offset as number) < -1) {
      fail(`${source}: partitions[${index}] needs "topic" (a name), "partition" (≥ 0) and "offset" (≥ 0, or -1 for the high watermark)`);
    }
    const key = `${topic}-${String(partition)}`;
    // As kafka-delete-records: one offset per partition.
    if (seen.has(key)) fail(`${source}: partition ${String(partition)} of topic ${topic} is listed twice`);
    seen.add(key);
    return { topic, partition: partition as number, offset: BigInt(offset as number) };
  });
}

async function metadata(connection: KafkaConnection, topics: string[] | null): Promise<MetadataResponse> {
  return connection.request(MetadataApi, 8, {
    topics: topics === null ? null : topics.map((name) => ({ name })),
    allowAutoTopicCreation: false,
    includeClusterAuthorizedOperations: false,
    includeTopicAuthorizedOperations: false,
  });
}

export async function listTopics(io: CommandIo, options: Reach): Promise<void> {
  await withBootstrap(options.bootstrapServer, commandSecurity(options.commandConfig), async (connection) => {
    const response = await metadata(connection, null);
    for (const topic of [...response.topics].sort((a, b) => a.name.localeCompare(b.name))) io.writeOut(`${topic.name}\n`);
  });
}

export async function describeTopic(io: CommandIo, options: Reach & { topic: string }): Promise<void> {
  const security = commandSecurity(options.commandConfig);
  await withBootstrap(options.bootstrapServer, security, async (connection) => {
    const response = await metadata(connection, [options.topic]);
    const topic = response.topics[0];
    if (topic === undefined || topic.errorCode !== 0) fail(`topic ${options.topic}: ${kafkaErrorName(topic?.errorCode ?? KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}`);
    const brokers = new Map(response.brokers.map((broker) => [broker.nodeId, broker]));
    const replicationFactor = topic.partitions[0]?.replicaNodes.length ?? 0;
    const controller = response.controllerId >= 0 ? `; controller broker ${response.controllerId}` : '';
    io.writeOut(`topic ${topic.name}: ${topic.partitions.length} partitions, replication factor ${replicationFactor}${controller}\n`);
    io.writeOut(`${'partition'.padEnd(10)}${'leader'.padEnd(24)}${'epoch'.padEnd(7)}${'replicas'.padEnd(14)}${'isr'.padEnd(14)}${'log start'.padEnd(12)}${'log end'.padEnd(12)}status\n`);
    for (const partition of [...topic.partitions].sort((a, b) => a.partitionIndex - b.partitionIndex)) {
      const broker = brokers.get(partition.leaderId);
      let start = '-';
      let end = '-';
      if (partition.errorCode === 0 && broker !== undefined) {
        const offsets = await withBootstrap(`${broker.host}:${broker.port}`, security, async (leader) => {
          const ask = (timestamp: bigint) =>
            leader.request(ListOffsetsApi, 5, {
              replicaId: -1,
              isolationLevel: 0,
              topics: [{ name: topic.name, partitions: [{ partitionIndex: partition.partitionIndex, currentLeaderEpoch: -1, timestamp }] }],
            });
          const [earliest, latest] = await Promise.all([ask(EARLIEST_TIMESTAMP), ask(LATEST_TIMESTAMP)]);
          return [earliest.topics[0]?.partitions[0]?.offset ?? -1n, latest.topics[0]?.partitions[0]?.offset ?? -1n];
        });
        start = String(offsets[0]);
        end = String(offsets[1]);
      }
      const leader = broker === undefined ? 'none' : `${partition.leaderId} ${broker.host}:${broker.port}`;
      const offline = partition.offlineReplicas.length > 0 ? ` (down: ${partition.offlineReplicas.join(',')})` : '';
      const underReplicated = partition.errorCode === 0 && partition.isrNodes.length < partition.replicaNodes.length ? 'under-replicated' : 'ok';
      const status = partition.errorCode === 0 ? underReplicated : kafkaErrorName(partition.errorCode);
      io.writeOut(
        `${String(partition.partitionIndex).padEnd(10)}${leader.padEnd(24)}${String(partition.leaderEpoch).padEnd(7)}${partition.replicaNodes.join(',').padEnd(14)}${partition.isrNodes.join(',').padEnd(14)}${start.padEnd(12)}${end.padEnd(12)}${status}${offline}\n`,
      );
    }
    await writeTopicConfigs(io, connection, topic.name);
  });
}

const SOURCE_WORDS: Readonly<Record<number, string>> = {
  [CONFIG_SOURCE.DYNAMIC_TOPIC_CONFIG]: 'topic override',
  [CONFIG_SOURCE.STATIC_BROKER_CONFIG]: 'broker setting',
  [CONFIG_SOURCE.DEFAULT_CONFIG]: 'default',
};

/** The topic's configs with their values and where each comes from (DescribeConfigs v3). */
async function writeTopicConfigs(io: CommandIo, connection: KafkaConnection, topic: string): Promise<void> {
  const response = await connection.request(DescribeConfigsApi, 3, {
    resources: [{ resourceType: CONFIG_RESOURCE_TYPE.TOPIC, resourceName: topic, configurationKeys: null }],
    includeSynonyms: false,
    includeDocumentation: false,
  });
  const result = response.results[0];
  if (result === undefined) fail('the broker returned no configs');
  if (result.errorCode !== 0) fail(`configs of topic ${topic}: ${kafkaErrorName(result.errorCode)}${result.errorMessage === null ? '' : ` — ${result.errorMessage}`}`);
  io.writeOut(`\n${'config'.padEnd(34)}${'value'.padEnd(22)}source\n`);
  for (const entry of result.configs) {
    io.writeOut(`${entry.name.padEnd(34)}${String(entry.value).padEnd(22)}${SOURCE_WORDS[entry.configSource] ?? `source ${entry.configSource}`}\n`);
  }
}
