/**
 * A broker joins and a topic grows a partition on it: the ZooKeeper consumer group sees the
 * topic's registry change, rebalances, and consumes the new partition.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ZooKeeperConsumer } from '../../../src/client/group/zookeeper-consumer.js';
import type { Message } from '../../../src/client/group/stream.js';
import { Producer } from '../../../src/client/producer.js';
import { createLogger } from '../../../src/common/logger.js';
import { openRun } from '../../services/run-dir.js';
import { startBrokerProcess } from '../../support/brokers.js';
import { runTributary } from '../../support/cli.js';
import { services, zookeeperAddress } from '../services.js';

const tributary = (...args: string[]): ReturnType<typeof runTributary> => runTributary(args);

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

async function produceTo(bootstrap: string, partition: number, values: string[]): Promise<void> {
  const producer = await Producer.connect({ bootstrap: [bootstrap], acks: -1 });
  try {
    await producer.send('grow', values.map((value) => ({ partition, value: Buffer.from(value) })));
  } finally {
    await producer.close();
  }
}

describe('a new partition on a new broker', () => {
  it('triggers a rebalance, and the group consumes the new partition', { timeout: 180_000 }, async () => {
    const run = openRun(services().runDir);
    const zookeeper = `${zookeeperAddress().connectString}/grow-${process.pid}-${randomBytes(3).toString('hex')}`;
    const first = await startBrokerProcess({ run, id: 1, zookeeper });
    cleanups.push(() => first.stop());
    expect((await tributary('topics', 'create', '--bootstrap-server', first.bootstrap, '--topic', 'grow', '--partitions', '2')).status).toBe(0);
    await produceTo(first.bootstrap, 0, ['p0-a']);
    await produceTo(first.bootstrap, 1, ['p1-a']);

    const consumer = await ZooKeeperConsumer.connect({
      zookeeper,
      bootstrap: [first.bootstrap],
      group: 'growing',
      autoOffsetReset: 'smallest',
      rebalanceBackoffMs: 500,
      logger: createLogger({ name: 'new-partition-test', level: 'warn' }),
    });
    cleanups.push(() => consumer.close());
    const [stream] = (await consumer.createMessageStreams({ grow: 1 }))['grow'] ?? [];
    if (stream === undefined) throw new Error('no stream');
    const seen: Message[] = [];
    const reading = (async () => {
      for await (const message of stream) seen.push(message);
    })().catch(() => undefined);
    await expect.poll(() => seen.map((m) => m.value?.toString()).sort(), { timeout: 60_000 }).toEqual(['p0-a', 'p1-a']);

    const second = await startBrokerProcess({ run, id: 2, zookeeper });
    cleanups.push(() => second.stop());
    const altered = await tributary('topics', 'alter', '--bootstrap-server', first.bootstrap, '--topic', 'grow', '--partitions', '3');
    expect(altered.status, altered.output).toBe(0);
    const described = await tributary('topics', 'describe', '--bootstrap-server', second.bootstrap, '--topic', 'grow');
    expect(described.output).toMatch(/^2\s+2 127\.0\.0\.1:/m); // partition 2 lives on the new broker

    await produceTo(second.bootstrap, 2, ['p2-a', 'p2-b']);
    await expect.poll(() => seen.filter((m) => m.partition === 2).map((m) => m.value?.toString()), { timeout: 60_000 }).toEqual(['p2-a', 'p2-b']);
    await consumer.close();
    await reading;
  });
});
