/**
 * The ZooKeeper consumer's autoOffsetReset when the group's offset is outside the log (retention
 * deleted the segments below it, or the log was cut back): 'smallest' and 'largest' move it and
 * say so (a warning naming the offsets, and the `offsetResets` count); 'none' fails loudly with an
 * error naming the topic, the partition, the offset and the log start, and so does a partition
 * the group never committed. Before 'none' existed a consumer could only ever reset (issue #22,
 * chaos suite `consumers`, scenario off-retention).
 */
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClusterClient } from '../../../../src/client/cluster-client.js';
import { ZooKeeperConsumer, type Message } from '../../../../src/client/group/zookeeper-consumer.js';
import { Producer } from '../../../../src/client/producer.js';
import { TributaryError } from '../../../../src/common/errors.js';
import { createLogger } from '../../../../src/common/logger.js';
import { MemoryCoordination } from '../../../../src/coordination/memory-store.js';
import { offsetPath, offsetsPath, topicPath } from '../../../../src/coordination/paths.js';
import { startInProcessBroker, type InProcessBroker } from '../../../support/brokers.js';

let broker: InProcessBroker;
const open: ZooKeeperConsumer[] = [];
const clients: ClusterClient[] = [];

beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': '1', 'log.flush.interval.messages': '1' });
});
afterAll(async () => {
  await broker.stop();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((consumer) => consumer.close()));
  for (const client of clients.splice(0)) client.close();
});

let topics = 0;
/** A one-partition topic with 20 records, registered in a fresh tree, and the group's offset there (if given). */
async function setup(committed: bigint | undefined): Promise<{ topic: string; tree: MemoryCoordination }> {
  topics += 1;
  const topic = `reset-${topics}`;
  const tree = new MemoryCoordination();
  const admin = tree.session();
  await admin.ensurePath('/brokers/topics');
  await admin.create(topicPath(topic), Buffer.from(JSON.stringify({ partitions: { '0': 0 } })), 'persistent');
  if (committed !== undefined) {
    await admin.ensurePath(offsetsPath('g', topic));
    await admin.create(offsetPath('g', topic, 0), Buffer.from(committed.toString()), 'persistent');
  }
  const producer = await Producer.connect({ bootstrap: [broker.bootstrap], logger: createLogger({ name: 'test', level: 'silent' }) });
  try {
    await producer.send(topic, Array.from({ length: 20 }, (_, i) => ({ partition: 0, key: null, value: Buffer.from(`v${i}`) })));
  } finally {
    await producer.close();
  }
  return { topic, tree };
}

async function start(tree: MemoryCoordination, topic: string, reset: 'smallest' | 'largest' | 'none', lines: Record<string, unknown>[]): Promise<{ consumer: ZooKeeperConsumer; received: Message[]; failures: Error[] }> {
  const cluster = await ClusterClient.connect({ bootstrap: [broker.bootstrap] });
  clients.push(cluster);
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').trim().split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const failures: Error[] = [];
  const consumer = await ZooKeeperConsumer.connect({
    zookeeper: tree.session(),
    bootstrap: cluster,
    group: 'g',
    autoOffsetReset: reset,
    autoCommitIntervalMs: 0,
    rebalanceBackoffMs: 50,
    rebalanceDebounceMs: 20,
    fetchWaitMaxMs: 50,
    logger: createLogger({ name: 'test', level: 'info', destination }),
    onError: (error) => failures.push(error),
  });
  open.push(consumer);
  const received: Message[] = [];
  for (const stream of (await consumer.createMessageStreams({ [topic]: 1 }))[topic] ?? []) {
    void (async () => {
      try {
        for await (const message of stream) received.push(message);
      } catch (error) {
        failures.push(error as Error);
      }
    })();
  }
  return { consumer, received, failures };
}

describe('ZooKeeperConsumer autoOffsetReset for an offset outside the log', () => {
  it("'smallest' moves it to the log start and says so", async () => {
    const { topic, tree } = await setup(500n);
    const lines: Record<string, unknown>[] = [];
    const { consumer, received } = await start(tree, topic, 'smallest', lines);
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(20);
    expect(received[0]?.offset).toBe(0n);
    expect(consumer.offsetResets).toBe(1);
    const warning = lines.find((line) => String(line['msg']).includes('outside the log'));
    expect(warning?.['msg']).toBe(`offset 500 of ${topic}-0 is outside the log (log start 0, high watermark 20); autoOffsetReset=smallest moved it to 0`);
  });

  it("'largest' moves it to the log end and says so", async () => {
    const { topic, tree } = await setup(500n);
    const lines: Record<string, unknown>[] = [];
    const { consumer } = await start(tree, topic, 'largest', lines);
    await expect.poll(() => consumer.offsetResets, { timeout: 10_000 }).toBe(1);
    expect(lines.some((line) => String(line['msg']).endsWith('autoOffsetReset=largest moved it to 20'))).toBe(true);
  });

  it("'none' fails loudly, naming the topic, the partition, the offset and the log start", async () => {
    const { topic, tree } = await setup(500n);
    const { received, failures } = await start(tree, topic, 'none', []);
    await expect.poll(() => failures.length, { timeout: 10_000 }).toBe(2); // onError, and the stream throws
    const error = failures[0];
    expect(error).toBeInstanceOf(TributaryError);
    expect((error as TributaryError).code).toBe('OFFSET_OUT_OF_RANGE');
    expect(error?.message).toContain(`${topic}-0: offset 500 of group g is outside the log (log start 0, high watermark 20), and autoOffsetReset is 'none'`);
    expect(failures[1]).toBe(error);
    expect(received).toEqual([]);
  });

  it("'none' fails loudly for a partition the group never committed", async () => {
    const { topic, tree } = await setup(undefined);
    const { failures } = await start(tree, topic, 'none', []);
    await expect.poll(() => failures.length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect((failures[0] as TributaryError).code).toBe('NO_COMMITTED_OFFSET');
    expect(failures[0]?.message).toContain(`no committed offset for ${topic}-0`);
  });
});
