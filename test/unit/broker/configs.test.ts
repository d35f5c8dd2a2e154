/**
 * DescribeConfigs, AlterConfigs and IncrementalAlterConfigs served by two in-process brokers that
 * share one in-process coordination store (a two-broker cluster without ZooKeeper): what is
 * described, what a change does to the running logs of both brokers, and that a refused change
 * leaves everything as it was.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import { parseBrokerConfig } from '../../../src/broker/config.js';
import { KafkaConnection } from '../../../src/client/connection.js';
import { createLogger } from '../../../src/common/logger.js';
import { MemoryCoordination } from '../../../src/coordination/memory-store.js';
import { topicConfigPath } from '../../../src/coordination/paths.js';
import { AlterConfigsApi } from '../../../src/protocol/apis/alter-configs.js';
import { CreateTopicsApi } from '../../../src/protocol/apis/create-topics.js';
import { CONFIG_SOURCE, CONFIG_TYPE, DescribeConfigsApi, type DescribeConfigsEntry } from '../../../src/protocol/apis/describe-configs.js';
import { CONFIG_OPERATION, IncrementalAlterConfigsApi, type IncrementalAlterableConfig } from '../../../src/protocol/apis/incremental-alter-configs.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { TOPIC_CONFIG_NAMES } from '../../../src/storage/log-config.js';

const TOPIC = 2;
const BROKER = 4;

const coordination = new MemoryCoordination();
const brokers: Broker[] = [];
let first: KafkaConnection;
let second: KafkaConnection;

beforeAll(async () => {
  for (const id of [1, 2]) {
    brokers.push(
      await Broker.start({
        id,
        listen: { host: '127.0.0.1', port: 0 },
        dataDir: mkdtempSync(join(tmpdir(), `tributary-configs-${id}-`)),
        // Broker 1 sets log.retention.ms, so its topics' retention.ms is a STATIC_BROKER_CONFIG.
        config: parseBrokerConfig(id === 1 ? { 'log.retention.ms': '86400000' } : {}, 'test settings'),
        store: coordination.session(),
        logger: createLogger({ name: `broker-${id}`, level: 'silent' }),
        clusterId: 'configs-test',
      }),
    );
  }
  first = await KafkaConnection.open('127.0.0.1', brokers[0]!.port, { clientId: 'configs-test' });
  second = await KafkaConnection.open('127.0.0.1', brokers[1]!.port, { clientId: 'configs-test' });
  const created = await first.request(CreateTopicsApi, 4, {
    topics: [
      { name: 'spread', numPartitions: 4, replicationFactor: 1, assignments: [], configs: [{ name: 'segment.bytes', value: '1048576' }] },
      { name: 'plain', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] },
    ],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  expect(created.topics.map((topic) => topic.errorCode)).toEqual([0, 0]);
  // Every partition has its log open on its broker (round-robin puts two on each).
  for (const [index, broker] of brokers.entries()) {
    await waitFor(() => broker.logManager.allLogs().filter((log) => log.topic === 'spread').length === 2, `broker ${index + 1} opens its spread logs`);
  }
});

afterAll(async () => {
  first?.close();
  second?.close();
  for (const broker of brokers) await broker.stop();
});

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i += 1) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`gave up waiting until ${what}`);
}

async function describeTopic(connection: KafkaConnection, topic: string, keys: string[] | null = null, version = 3): Promise<Map<string, DescribeConfigsEntry>> {
  const response = await connection.request(DescribeConfigsApi, version, {
    resources: [{ resourceType: TOPIC, resourceName: topic, configurationKeys: keys }],
    includeSynonyms: true,
    includeDocumentation: true,
  });
  const [result] = response.results;
  expect(result?.errorCode, result?.errorMessage ?? '').toBe(0);
  return new Map((result?.configs ?? []).map((entry) => [entry.name, entry]));
}

async function incremental(topic: string, configs: IncrementalAlterableConfig[], validateOnly = false): Promise<{ errorCode: number; errorMessage: string | null }> {
  const response = await first.request(IncrementalAlterConfigsApi, 0, { resources: [{ resourceType: TOPIC, resourceName: topic, configs }], validateOnly });
  const [result] = response.responses;
  expect(result).toMatchObject({ resourceType: TOPIC, resourceName: topic });
  return { errorCode: result?.errorCode ?? -2, errorMessage: result?.errorMessage ?? null };
}

function logsOf(topic: string): { broker: number; retentionMs: number; segmentBytes: number }[] {
  return brokers.flatMap((broker) => broker.logManager.allLogs().filter((log) => log.topic === topic).map((log) => ({ broker: broker.id, retentionMs: log.config.retentionMs, segmentBytes: log.config.segmentBytes })));
}

async function storedConfigs(topic: string): Promise<{ version: number; configs: unknown } | undefined> {
  const node = await coordination.session().get(topicConfigPath(topic));
  return node === undefined ? undefined : { version: node.version, configs: JSON.parse(node.data.toString('utf8')) as unknown };
}

describe('DescribeConfigs', () => {
  it('lists every honoured topic config with its value, source, synonyms, type and documentation', async () => {
    const configs = await describeTopic(first, 'spread');
    expect([...configs.keys()]).toEqual(TOPIC_CONFIG_NAMES);
    expect(configs.get('segment.bytes')).toEqual({
      name: 'segment.bytes',
      value: '1048576',
      readOnly: false,
      configSource: CONFIG_SOURCE.DYNAMIC_TOPIC_CONFIG,
      isSensitive: false,
      synonyms: [
        { name: 'segment.bytes', value: '1048576', source: CONFIG_SOURCE.DYNAMIC_TOPIC_CONFIG },
        { name: 'log.segment.bytes', value: '1073741824', source: CONFIG_SOURCE.DEFAULT_CONFIG },
      ],
      configType: CONFIG_TYPE.INT,
      documentation: expect.stringContaining('segment') as unknown,
    });
    // Broker 1 sets log.retention.ms; broker 2 does not: each answers with its own settings.
    expect(configs.get('retention.ms')).toMatchObject({
      value: '86400000',
      configSource: CONFIG_SOURCE.STATIC_BROKER_CONFIG,
      configType: CONFIG_TYPE.LONG,
      synonyms: [
        { name: 'log.retention.ms', value: '86400000', source: CONFIG_SOURCE.STATIC_BROKER_CONFIG },
        { name: 'log.retention.ms', value: '604800000', source: CONFIG_SOURCE.DEFAULT_CONFIG },
      ],
    });
    expect((await describeTopic(second, 'spread')).get('retention.ms')).toMatchObject({ value: '604800000', configSource: CONFIG_SOURCE.DEFAULT_CONFIG });
    expect(configs.get('message.timestamp.before.max.ms')?.value).toBe('9223372036854775807');
    expect(configs.get('cleanup.policy')).toMatchObject({ value: 'delete', configType: CONFIG_TYPE.LIST });
  });

  it('honours configuration_keys, leaves out synonyms and documentation unless asked, and answers v1', async () => {
    const response = await first.request(DescribeConfigsApi, 1, {
      resources: [{ resourceType: TOPIC, resourceName: 'plain', configurationKeys: ['retention.bytes', 'no.such.config'] }],
      includeSynonyms: false,
      includeDocumentation: false,
    });
    expect(response.results[0]?.configs).toEqual([
      { name: 'retention.bytes', value: '-1', readOnly: false, configSource: CONFIG_SOURCE.DEFAULT_CONFIG, isSensitive: false, synonyms: [], configType: 0, documentation: null },
    ]);
  });

  it('answers UNKNOWN_TOPIC_OR_PARTITION for a missing topic, per resource', async () => {
    const response = await first.request(DescribeConfigsApi, 3, {
      resources: [
        { resourceType: TOPIC, resourceName: 'missing', configurationKeys: null },
        { resourceType: TOPIC, resourceName: 'plain', configurationKeys: ['retention.ms'] },
      ],
      includeSynonyms: false,
      includeDocumentation: false,
    });
    expect(response.results.map((result) => [result.resourceName, result.errorCode, result.configs.length])).toEqual([
      ['missing', KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0],
      ['plain', 0, 1],
    ]);
  });

  it('describes its own broker settings as read-only, and sends other brokers elsewhere', async () => {
    const response = await first.request(DescribeConfigsApi, 3, {
      resources: [
        { resourceType: BROKER, resourceName: '1', configurationKeys: ['log.retention.ms', 'num.partitions'] },
        { resourceType: BROKER, resourceName: '2', configurationKeys: null },
      ],
      includeSynonyms: true,
      includeDocumentation: false,
    });
    const [own, other] = response.results;
    expect(own?.errorCode).toBe(0);
    expect(own?.configs.map(({ name, value, readOnly, configSource }) => ({ name, value, readOnly, configSource }))).toEqual([
      { name: 'num.partitions', value: '1', readOnly: true, configSource: CONFIG_SOURCE.DEFAULT_CONFIG },
      { name: 'log.retention.ms', value: '86400000', readOnly: true, configSource: CONFIG_SOURCE.STATIC_BROKER_CONFIG },
    ]);
    expect(other).toMatchObject({ errorCode: KafkaErrorCode.INVALID_REQUEST, configs: [] });
  });
});

describe('IncrementalAlterConfigs', () => {
  it('SET and DELETE change the override on the coordination store and the running logs of both brokers', async () => {
    expect(await incremental('spread', [{ name: 'retention.ms', configOperation: CONFIG_OPERATION.SET, value: '3600000' }])).toEqual({ errorCode: 0, errorMessage: null });
    expect((await storedConfigs('spread'))?.configs).toEqual({ config: { 'segment.bytes': '1048576', 'retention.ms': '3600000' } });
    await waitFor(() => logsOf('spread').every((log) => log.retentionMs === 3_600_000), 'every spread log has retention.ms 3600000');
    expect(new Set(logsOf('spread').map((log) => log.broker))).toEqual(new Set([1, 2]));
    // The broker that did not take the request describes the new value too.
    expect((await describeTopic(second, 'spread')).get('retention.ms')).toMatchObject({ value: '3600000', configSource: CONFIG_SOURCE.DYNAMIC_TOPIC_CONFIG });

    expect(await incremental('spread', [{ name: 'retention.ms', configOperation: CONFIG_OPERATION.DELETE, value: null }])).toEqual({ errorCode: 0, errorMessage: null });
    // Back to each broker's own default: broker 1 sets log.retention.ms, broker 2 does not.
    await waitFor(() => logsOf('spread').every((log) => log.retentionMs === (log.broker === 1 ? 86_400_000 : 604_800_000)), 'retention.ms falls back to the broker settings');
    expect(logsOf('spread').every((log) => log.segmentBytes === 1_048_576)).toBe(true);
  });

  it('refuses an unknown name or a bad value with INVALID_CONFIG naming it, and changes nothing', async () => {
    const before = await storedConfigs('spread');
    const unknown = await incremental('spread', [
      { name: 'retention.ms', configOperation: CONFIG_OPERATION.SET, value: '1000' },
      { name: 'retention.mss', configOperation: CONFIG_OPERATION.SET, value: '1000' },
    ]);
    expect(unknown.errorCode).toBe(KafkaErrorCode.INVALID_CONFIG);
    expect(unknown.errorMessage).toContain('unknown topic config retention.mss');
    expect(unknown.errorMessage).toContain('retention.ms, segment.bytes');

    const bad = await incremental('spread', [{ name: 'segment.bytes', configOperation: CONFIG_OPERATION.SET, value: '12' }]);
    expect(bad).toEqual({ errorCode: KafkaErrorCode.INVALID_CONFIG, errorMessage: expect.stringContaining('invalid value "12" for topic config segment.bytes: expected an integer from 14 to 2147483647') as unknown });
    for (const value of ['', 'ten', '1e3', '0x10']) {
      expect((await incremental('spread', [{ name: 'retention.ms', configOperation: CONFIG_OPERATION.SET, value }])).errorCode, value).toBe(KafkaErrorCode.INVALID_CONFIG);
    }
    expect((await incremental('spread', [{ name: 'cleanup.policy', configOperation: CONFIG_OPERATION.SET, value: 'shred' }])).errorMessage).toContain('invalid value "shred" for topic config cleanup.policy');

    expect(await storedConfigs('spread')).toEqual(before);
    expect(logsOf('spread').every((log) => log.segmentBytes === 1_048_576 && log.retentionMs !== 1000)).toBe(true);
  });

  it('APPEND and SUBTRACT work on the list config only', async () => {
    const onLong = await incremental('plain', [{ name: 'retention.ms', configOperation: CONFIG_OPERATION.APPEND, value: '5' }]);
    expect(onLong).toEqual({ errorCode: KafkaErrorCode.INVALID_CONFIG, errorMessage: 'APPEND applies to list configs only, and topic config retention.ms is a LONG: use SET or DELETE' });
    expect(await incremental('plain', [{ name: 'cleanup.policy', configOperation: CONFIG_OPERATION.APPEND, value: 'delete' }])).toEqual({ errorCode: 0, errorMessage: null });
    expect((await storedConfigs('plain'))?.configs).toEqual({ config: { 'cleanup.policy': 'delete' } });
    expect(await incremental('plain', [{ name: 'cleanup.policy', configOperation: CONFIG_OPERATION.APPEND, value: 'compact' }])).toEqual({ errorCode: 0, errorMessage: null });
    expect((await storedConfigs('plain'))?.configs).toEqual({ config: { 'cleanup.policy': 'delete,compact' } });
    expect(await incremental('plain', [{ name: 'cleanup.policy', configOperation: CONFIG_OPERATION.SUBTRACT, value: 'compact' }])).toEqual({ errorCode: 0, errorMessage: null });
    // Taking "delete" away leaves no policy, which is not one Tributary has.
    expect((await incremental('plain', [{ name: 'cleanup.policy', configOperation: CONFIG_OPERATION.SUBTRACT, value: 'delete' }])).errorCode).toBe(KafkaErrorCode.INVALID_CONFIG);
  });

  it('validate_only checks without writing', async () => {
    const before = await storedConfigs('plain');
    expect(await incremental('plain', [{ name: 'retention.ms', configOperation: CONFIG_OPERATION.SET, value: '1000' }], true)).toEqual({ errorCode: 0, errorMessage: null });
    expect((await incremental('plain', [{ name: 'retention.ms', configOperation: CONFIG_OPERATION.SET, value: '-5' }], true)).errorCode).toBe(KafkaErrorCode.INVALID_CONFIG);
    expect(await storedConfigs('plain')).toEqual(before);
  });

  it('answers UNKNOWN_TOPIC_OR_PARTITION for a missing topic and refuses broker configs as static', async () => {
    expect((await incremental('missing', [{ name: 'retention.ms', configOperation: CONFIG_OPERATION.SET, value: '1000' }])).errorCode).toBe(KafkaErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    expect(await storedConfigs('missing')).toBeUndefined();
    const response = await first.request(IncrementalAlterConfigsApi, 0, {
      resources: [{ resourceType: BROKER, resourceName: '1', configs: [{ name: 'log.retention.ms', configOperation: CONFIG_OPERATION.SET, value: '1' }] }],
      validateOnly: false,
    });
    expect(response.responses[0]).toMatchObject({ errorCode: KafkaErrorCode.POLICY_VIOLATION, errorMessage: expect.stringContaining('broker configs are static') as unknown });
  });
});

describe('AlterConfigs', () => {
  it('replaces the whole override set', async () => {
    const set = (configs: { name: string; value: string | null }[]) =>
      first.request(AlterConfigsApi, 1, { resources: [{ resourceType: TOPIC, resourceName: 'spread', configs }], validateOnly: false });
    expect((await set([{ name: 'retention.bytes', value: '1048576' }])).responses[0]).toMatchObject({ errorCode: 0, errorMessage: null, resourceName: 'spread' });
    // segment.bytes was not listed, so it is gone.
    expect((await storedConfigs('spread'))?.configs).toEqual({ config: { 'retention.bytes': '1048576' } });
    await waitFor(() => logsOf('spread').every((log) => log.segmentBytes === 1_073_741_824), 'segment.bytes back to the default');

    const refused = (await set([{ name: 'retention.bytes', value: '5' }, { name: 'flush.ms', value: 'soon' }])).responses[0];
    expect(refused).toMatchObject({ errorCode: KafkaErrorCode.INVALID_CONFIG, errorMessage: expect.stringContaining('invalid value "soon" for topic config flush.ms') as unknown });
    expect((await storedConfigs('spread'))?.configs).toEqual({ config: { 'retention.bytes': '1048576' } });
  });
});
