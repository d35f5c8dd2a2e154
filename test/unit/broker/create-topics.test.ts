/**
 * CreateTopics on an in-process broker: an existing topic answers TOPIC_ALREADY_EXISTS before
 * anything else in the request is judged, as Kafka does. `kafka-topics --create --if-not-exists`,
 * Kafka Connect and Kafka Streams take only that code for "already there"; a config error on an
 * existing topic (INVALID_CONFIG) made them fail.
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
import { CreateTopicsApi, type CreatableTopic } from '../../../src/protocol/apis/create-topics.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';

let broker: Broker;
let connection: KafkaConnection;

beforeAll(async () => {
  broker = await Broker.start({
    id: 1,
    listen: { host: '127.0.0.1', port: 0 },
    dataDir: mkdtempSync(join(tmpdir(), 'tributary-create-topics-')),
    config: parseBrokerConfig({}, 'test settings'),
    store: new MemoryCoordination().session(),
    logger: createLogger({ name: 'broker-1', level: 'silent' }),
    clusterId: 'create-topics-test',
  });
  connection = await KafkaConnection.open('127.0.0.1', broker.port, { clientId: 'create-topics-test' });
});

afterAll(async () => {
  connection?.close();
  await broker?.stop();
});

async function create(topic: Partial<CreatableTopic> & { name: string }, validateOnly = false): Promise<{ errorCode: number; errorMessage: string | null }> {
  const response = await connection.request(CreateTopicsApi, 4, {
    topics: [{ numPartitions: 1, replicationFactor: 1, assignments: [], configs: [], ...topic }],
    timeoutMs: 10_000,
    validateOnly,
  });
  const [result] = response.topics;
  return { errorCode: result?.errorCode ?? -2, errorMessage: result?.errorMessage ?? null };
}

describe('CreateTopics on an existing topic', () => {
  it('answers TOPIC_ALREADY_EXISTS before validating configs, counts and the replication factor', async () => {
    expect(await create({ name: 'existing' })).toEqual({ errorCode: 0, errorMessage: null });
    const exists = { errorCode: KafkaErrorCode.TOPIC_ALREADY_EXISTS, errorMessage: 'topic existing already exists' };
    // A config value no version of the broker accepts (with or without compaction).
    expect(await create({ name: 'existing', configs: [{ name: 'retention.ms', value: 'soon' }] })).toEqual(exists);
    expect(await create({ name: 'existing', configs: [{ name: 'no.such.config', value: '1' }] })).toEqual(exists);
    expect(await create({ name: 'existing', numPartitions: 0 })).toEqual(exists);
    expect(await create({ name: 'existing', replicationFactor: 5 })).toEqual(exists);
    expect(await create({ name: 'existing', configs: [{ name: 'retention.ms', value: 'soon' }] }, true)).toEqual(exists);
  });

  it('still refuses a bad config of a topic that does not exist with INVALID_CONFIG', async () => {
    const refused = await create({ name: 'fresh', configs: [{ name: 'retention.ms', value: 'soon' }] });
    expect(refused.errorCode).toBe(KafkaErrorCode.INVALID_CONFIG);
    expect(broker.logManager.allLogs().some((log) => log.topic === 'fresh')).toBe(false);
  });
});
