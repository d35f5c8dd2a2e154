/**
 * The ZooKeeper consumer on a compacted topic, cleaned by the broker's own cleaner: it hands out
 * every kept record once, in order, steps over removed offsets by batches (no fetch lands inside a
 * batch whose tail was removed), and says of each message from where the partition held nothing
 * before it (`from`), which the mirror writes into the target (origin-header.ts).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ClusterClient } from '../../../../src/client/cluster-client.js';
import { ZooKeeperConsumer, type Message } from '../../../../src/client/group/zookeeper-consumer.js';
import { Producer } from '../../../../src/client/producer.js';
import { SimpleConsumer, type FetchResult } from '../../../../src/client/simple-consumer.js';
import { createLogger } from '../../../../src/common/logger.js';
import { MemoryCoordination } from '../../../../src/coordination/memory-store.js';
import { topicPath } from '../../../../src/coordination/paths.js';
import { startInProcessBroker, type InProcessBroker } from '../../../support/brokers.js';
import { cleanToFixedPoint, createCompactedTopic, keptAfterCleaning } from '../../../support/compacted-topic.js';

const logger = createLogger({ name: 'test', level: 'silent' });
let broker: InProcessBroker;

beforeAll(async () => {
  broker = await startInProcessBroker({ 'log.flush.interval.messages': '1', 'log.cleaner.backoff.ms': '3600000' });
});
afterAll(async () => {
  await broker?.stop();
});

describe('ZooKeeperConsumer on a compacted topic', () => {
  it('hands out every kept record once, fetching by batches over the removed offsets, each message naming the gap before it', async () => {
    const topic = 'compacted-zk';
    await createCompactedTopic(broker.bootstrap, topic, 1, { 'segment.bytes': '400' });
    // 12 batches: most keep their first records (keys of their own) and lose their last (a key every batch rewrites); every third loses all.
    const written: { offset: number; key: string; value: string }[] = [];
    const producer = await Producer.connect({ bootstrap: [broker.bootstrap], logger });
    try {
      for (let round = 0; round < 12; round += 1) {
        const keys = round % 3 === 2 ? ['hot-a', 'hot-b'] : [`own-${round}-0`, `own-${round}-1`, 'hot-a'];
        const batch = keys.map((key, index) => ({ key, value: `v${round}-${index}` }));
        const sent = await producer.send(topic, batch.map((record) => ({ partition: 0, key: Buffer.from(record.key), value: Buffer.from(record.value) })));
        sent.forEach((metadata, index) => written.push({ offset: Number(metadata.offset), ...batch[index]! }));
      }
    } finally {
      await producer.close();
    }
    const tail = await cleanToFixedPoint(broker.broker, topic, 0, written.length);
    const kept = keptAfterCleaning(written, tail);
    expect(kept.length).toBeLessThan(written.length - 5);

    const fetches: { offset: bigint; result: FetchResult }[] = [];
    const { fetch } = SimpleConsumer.prototype as { fetch: (this: SimpleConsumer, ...args: Parameters<SimpleConsumer['fetch']>) => Promise<FetchResult> };
    const spy = vi.spyOn(SimpleConsumer.prototype, 'fetch').mockImplementation(async function (this: SimpleConsumer, ...args) {
      const result = await fetch.apply(this, args);
      if (args[0] === topic) fetches.push({ offset: args[2], result });
      return result;
    });
    const tree = new MemoryCoordination();
    const admin = tree.session();
    await admin.ensurePath('/brokers/topics');
    await admin.create(topicPath(topic), Buffer.from(JSON.stringify({ partitions: { '0': 0 } })), 'persistent');
    const cluster = await ClusterClient.connect({ bootstrap: [broker.bootstrap] });
    const consumer = await ZooKeeperConsumer.connect({ zookeeper: tree.session(), bootstrap: cluster, group: 'g', autoOffsetReset: 'smallest', autoCommitIntervalMs: 0, fetchWaitMaxMs: 50, logger });
    try {
      const received: Message[] = [];
      const stream = (await consumer.createMessageStreams({ [topic]: 1 }))[topic]?.[0];
      if (stream === undefined) throw new Error('no stream');
      void (async () => {
        for await (const message of stream) received.push(message);
      })();
      await expect.poll(() => received.length, { timeout: 10_000 }).toBe(kept.length);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(received.map((m) => [Number(m.offset), m.key?.toString(), m.value?.toString()])).toEqual(kept.map((r) => [r.offset, r.key, r.value]));
      // Each message's gap starts one past the message before it (the first: where the claim started, the log start).
      expect(received.map((m) => Number(m.from))).toEqual(kept.map((_, index) => (index === 0 ? 0 : kept[index - 1]!.offset + 1)));
      // Only a fetch at the end of the log comes back empty: none lands inside a batch whose tail was removed.
      const empty = fetches.filter(({ offset, result }) => result.records.length === 0 && offset < result.highWatermark);
      expect(empty.map(({ offset }) => offset)).toEqual([]);
    } finally {
      spy.mockRestore();
      await consumer.close();
      cluster.close();
    }
  });
});
