/**
 * Compacted topics for the tests of our own readers (the ZooKeeper consumer, the mirror, the
 * loader): create one with small segments on a broker, and clean a partition of an in-process
 * broker to a fixed point with the broker's own cleaner, so the test knows exactly which records
 * compaction removed (the latest record of each key below the uncleanable tail stays, everything
 * from the tail on stays).
 */
import { expect } from 'vitest';
import { parseAddress } from '../../src/client/cluster-client.js';
import { KafkaConnection } from '../../src/client/connection.js';
import type { Broker } from '../../src/broker/broker.js';
import { CreateTopicsApi } from '../../src/protocol/apis/create-topics.js';
import { CONFIG_RESOURCE_TYPE, DescribeConfigsApi } from '../../src/protocol/apis/describe-configs.js';
import { waitUntil } from '../services/process.js';

/** Creates `topic` with cleanup.policy=compact and small segments (plus `configs`). */
export async function createCompactedTopic(bootstrap: string, topic: string, partitions: number, configs: Readonly<Record<string, string>> = {}): Promise<void> {
  const { host, port } = parseAddress(bootstrap);
  const connection = await KafkaConnection.open(host, port, { clientId: 'compacted-topic-test' });
  try {
    const all = { 'cleanup.policy': 'compact', 'segment.bytes': '1000', 'min.cleanable.dirty.ratio': '0.01', ...configs };
    const response = await connection.request(CreateTopicsApi, 4, {
      topics: [{ name: topic, numPartitions: partitions, replicationFactor: -1, assignments: [], configs: Object.entries(all).map(([name, value]) => ({ name, value })) }],
      timeoutMs: 30_000,
      validateOnly: false,
    });
    expect(response.topics[0]?.errorCode, `create compacted topic ${topic}`).toBe(0);
  } finally {
    connection.close();
  }
}

/** The topic's configs as DescribeConfigs reports them (name → value). */
export async function topicConfigs(bootstrap: string, topic: string): Promise<Map<string, string | null>> {
  const { host, port } = parseAddress(bootstrap);
  const connection = await KafkaConnection.open(host, port, { clientId: 'compacted-topic-test' });
  try {
    const response = await connection.request(DescribeConfigsApi, 3, {
      resources: [{ resourceType: CONFIG_RESOURCE_TYPE.TOPIC, resourceName: topic, configurationKeys: null }],
      includeSynonyms: false,
      includeDocumentation: false,
    });
    const result = response.results[0];
    expect(result?.errorCode, `configs of ${topic}`).toBe(0);
    return new Map((result?.configs ?? []).map((entry) => [entry.name, entry.value]));
  } finally {
    connection.close();
  }
}

/**
 * Cleans a partition of an in-process broker until the cleaner finds nothing more to do, once
 * every one of `written` offsets is readable; returns where the cleaned part ends (the
 * uncleanable tail: nothing from it on was removed).
 */
export async function cleanToFixedPoint(broker: Broker, topic: string, partition: number, written: number): Promise<number> {
  const log = broker.logManager.getLog(topic, partition);
  if (log === undefined) throw new Error(`no log ${topic}-${partition}`);
  await waitUntil(async () => log.highWatermark >= written, { what: `${topic}-${partition}: ${written} offsets readable`, timeoutMs: 30_000 });
  for (let pass = 0; pass < 20 && (await broker.logManager.cleaner.cleanLogNow(log)) !== undefined; pass += 1);
  return log.cleanableView(Date.now()).firstUncleanable;
}

/** What a reader of the partition sees after cleaning to `tail`: the latest record of each key below it, and everything from it on. */
export function keptAfterCleaning<T extends { readonly offset: number; readonly key: string }>(written: readonly T[], tail: number): T[] {
  const latest = new Map<string, T>();
  for (const record of written) if (record.offset < tail) latest.set(record.key, record);
  return [...latest.values(), ...written.filter((record) => record.offset >= tail)].sort((a, b) => a.offset - b.offset);
}
