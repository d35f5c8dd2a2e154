/**
 * `tributary groups` on a cluster (a broker process on real ZooKeeper) holding both kinds of
 * group: a broker-coordinated group made by a real kafkajs consumer, and a ZooKeeper group made
 * by Tributary's own ZooKeeperConsumer. Both ways in are used: --zookeeper (the registry) and
 * --bootstrap-server (the Kafka protocol).
 */
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { ZooKeeperConsumer } from '../../../src/client/group/zookeeper-consumer.js';
import { Producer } from '../../../src/client/producer.js';
import { ZooKeeperStore } from '../../../src/coordination/zookeeper-store.js';
import { openRun } from '../../services/run-dir.js';
import { waitUntil } from '../../services/process.js';
import { startBrokerProcess } from '../../support/brokers.js';
import { runTributary, type CommandResult } from '../../support/cli.js';
import { services, zookeeperAddress } from '../services.js';

const tributary = (...args: string[]): Promise<CommandResult> => runTributary(args);

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe('tributary groups on a cluster with both kinds of group', () => {
  // About 15 CLI processes: several seconds each on a loaded 2-core machine.
  it('lists, describes, resets and deletes a kafkajs group and a ZooKeeper group', { timeout: 180_000 }, async () => {
    const zookeeper = `${zookeeperAddress().connectString}/broker-groups-${process.pid}-${randomBytes(3).toString('hex')}`;
    const broker = await startBrokerProcess({ run: openRun(services().runDir), id: 1, zookeeper, settings: { 'group.initial.rebalance.delay.ms': '0' } });
    cleanups.push(() => broker.stop());
    const bootstrap = broker.bootstrap;
    const kafka = new Kafka({ brokers: [bootstrap], clientId: 'shop-app', logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    await admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 2 }], waitForLeaders: true });
    const producer = await Producer.connect({ bootstrap: [bootstrap], acks: -1 });
    cleanups.push(() => producer.close());
    const produce = async (count: number): Promise<void> => {
      for (const partition of [0, 1]) await producer.send('orders', Array.from({ length: count }, (_, i) => ({ partition, value: Buffer.from(`${partition}-${i}`) })));
    };
    await produce(10);

    // A broker group: a kafkajs consumer reads all 20 records, commits, then pauses.
    const seen: { partition: number; offset: bigint }[] = [];
    const startShop = async (): Promise<Consumer> => {
      const consumer = kafka.consumer({ groupId: 'shop', heartbeatInterval: 500 });
      await consumer.connect();
      await consumer.subscribe({ topic: 'orders', fromBeginning: true });
      await consumer.run({
        autoCommitThreshold: 1,
        eachMessage: async ({ partition, message }) => void seen.push({ partition, offset: BigInt(message.offset) }),
      });
      return consumer;
    };
    const committed = async (): Promise<string[]> => (await admin.fetchOffsets({ groupId: 'shop', topics: ['orders'] }))[0]?.partitions.map((p) => p.offset).sort() ?? [];
    let shop = await startShop();
    cleanups.push(() => shop.disconnect());
    await waitUntil(async () => seen.length === 20 && (await committed()).join() === '10,10', { what: 'the kafkajs group to consume and commit 20 records', timeoutMs: 30_000 });
    shop.pause([{ topic: 'orders' }]);
    await produce(5); // lag 5 per partition while the member is live

    // A ZooKeeper group: Tributary's own group consumer, one live member.
    const paper = await ZooKeeperConsumer.connect({ zookeeper, bootstrap: [bootstrap], group: 'paper', autoOffsetReset: 'smallest', autoCommitIntervalMs: 0 });
    cleanups.push(() => paper.close());
    await paper.createMessageStreams({ orders: 1 });

    // Read-only commands, run side by side (each is a process start of a few seconds).
    const [fromRegistry, fromBrokers, paperDescribed, ...shopDescribed] = await Promise.all([
      tributary('groups', 'list', '--zookeeper', zookeeper),
      tributary('groups', 'list', '--bootstrap-server', bootstrap),
      tributary('groups', 'describe', '--zookeeper', zookeeper, '--group', 'paper'),
      tributary('groups', 'describe', '--bootstrap-server', bootstrap, '--group', 'shop'),
      tributary('groups', 'describe', '--zookeeper', zookeeper, '--group', 'shop'),
    ]);
    expect(fromRegistry.status, fromRegistry.stderr).toBe(0);
    expect(fromRegistry.stdout).toMatch(/^group\s+kind\s+state$/m);
    expect(fromRegistry.stdout).toMatch(/^paper\s+zookeeper\s+1 live member$/m);
    expect(fromRegistry.stdout).toMatch(/^shop\s+broker\s+Stable, 1 member$/m);
    expect(fromBrokers.status, fromBrokers.stderr).toBe(0);
    expect(fromBrokers.stdout.trim().split('\n').slice(1)).toEqual([expect.stringMatching(/^shop\s+broker\s+Stable, 1 member$/)]);
    for (const described of shopDescribed) {
      expect(described.status, described.stderr).toBe(0);
      expect(described.stdout).toMatch(/^group shop: broker-coordinated, state Stable, protocol consumer \(\w+\), coordinator broker 1 \(127\.0\.0\.1:\d+\), 1 member$/m);
      const member = /^ {2}member (shop-app-\S+) {2}client shop-app {2}host \/127\.0\.0\.1 {2}assigned orders\[0,1\]$/m.exec(described.stdout);
      expect(member, described.stdout).not.toBeNull();
      const memberId = member?.[1] ?? '';
      expect(described.stdout).toContain(`orders                  0          10          15          5         ${memberId}\n`);
      expect(described.stdout).toContain(`orders                  1          10          15          5         ${memberId}\n`);
    }
    expect(paperDescribed.status, paperDescribed.stderr).toBe(0);
    expect(paperDescribed.stdout).toMatch(/^group paper: ZooKeeper group, 1 live member$/m);
    expect(paperDescribed.stdout).toContain(`  member ${paper.consumerId} {"orders":1}`);

    // A live broker group keeps its offsets and its id, whichever way in.
    const [notDeleted, ...refusals] = await Promise.all([
      tributary('groups', 'delete', '--bootstrap-server', bootstrap, '--group', 'shop'),
      tributary('groups', 'reset-offsets', '--bootstrap-server', bootstrap, '--group', 'shop', '--topic', 'orders', '--to-offset', '3'),
      tributary('groups', 'reset-offsets', '--zookeeper', zookeeper, '--group', 'shop', '--topic', 'orders', '--to-offset', '3'),
    ]);
    for (const refused of refusals) {
      expect(refused.status).toBe(1);
      expect(refused.stderr).toMatch(/group shop is in state Stable with 1 live member: shop-app-\S+ \(client shop-app, host \/127\.0\.0\.1\); stop its members first \(it must be Empty\), then reset its offsets \[GROUP_ACTIVE\]/);
    }
    expect(notDeleted.status).toBe(1);
    expect(notDeleted.stderr).toContain('stop its members first (it must be Empty), then delete it [GROUP_ACTIVE]');
    expect(await committed()).toEqual(['10', '10']);

    // Stopped (kafkajs leaves the group): the reset goes through the coordinator.
    await shop.disconnect();
    const reset = await tributary('groups', 'reset-offsets', '--bootstrap-server', bootstrap, '--group', 'shop', '--topic', 'orders', '--to-offset', '3');
    expect(reset.status, reset.stderr).toBe(0);
    expect(reset.stdout.trim().split('\n')).toEqual(['orders 0 3', 'orders 1 3']);
    const store = await ZooKeeperStore.connect(zookeeper);
    cleanups.push(() => store.close());
    // Written by the coordinator (its JSON form, with a commit time), not as ZooKeeper decimal text.
    const stored = JSON.parse((await store.get('/consumers/shop/offsets/orders/0'))?.data.toString() ?? 'null') as { offset: string; commitTimestamp: number };
    expect(stored.offset).toBe('3');
    expect(typeof stored.commitTimestamp).toBe('number');
    const shifted = await tributary('groups', 'reset-offsets', '--zookeeper', zookeeper, '--group', 'shop', '--topic', 'orders', '--shift-by', '-1');
    expect(shifted.status, shifted.stderr).toBe(0);
    expect(shifted.stdout.trim().split('\n')).toEqual(['orders 0 2', 'orders 1 2']);
    const empty = await tributary('groups', 'describe', '--bootstrap-server', bootstrap, '--group', 'shop');
    expect(empty.stdout).toMatch(/^group shop: broker-coordinated, state Empty, protocol consumer, coordinator broker 1 .*, 0 members$/m);
    expect(empty.stdout).toMatch(/^orders\s+0\s+2\s+15\s+13\s+-$/m);

    // The group's next member starts where the reset put it.
    seen.length = 0;
    shop = await startShop();
    await waitUntil(async () => seen.length >= 26, { what: 'the kafkajs group to consume from the reset offsets', timeoutMs: 30_000 });
    await shop.disconnect();
    for (const partition of [0, 1]) {
      expect(seen.filter((record) => record.partition === partition).map((record) => Number(record.offset))).toEqual(Array.from({ length: 13 }, (_, i) => 2 + i));
    }

    // Deleting the broker group through its coordinator, found from the registry.
    const deleted = await tributary('groups', 'delete', '--zookeeper', zookeeper, '--group', 'shop');
    expect(deleted.status, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe('deleted group shop\n');
    expect(await store.exists('/consumers/shop')).toBe(false);
    const [again, paperLive, paperLiveAtBroker] = await Promise.all([
      tributary('groups', 'delete', '--bootstrap-server', bootstrap, '--group', 'shop'),
      tributary('groups', 'delete', '--zookeeper', zookeeper, '--group', 'paper'),
      tributary('groups', 'delete', '--bootstrap-server', bootstrap, '--group', 'paper'),
    ]);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('consumer group shop does not exist');
    expect(again.stderr).toContain('[GROUP_ID_NOT_FOUND]');

    // The ZooKeeper group: deleted only once its member is gone.
    expect(paperLive.status).toBe(1);
    expect(paperLive.stderr).toContain(`group paper has 1 live members (${paper.consumerId}); stop its members first, then delete it [GROUP_ACTIVE]`);
    // The coordinator refuses it too (NON_EMPTY_GROUP), though it knows none of its members.
    expect(paperLiveAtBroker.status).toBe(1);
    expect(paperLiveAtBroker.stderr).toContain('group paper is a ZooKeeper (paper-style) group with live members; stop its members first, then delete it');
    await paper.close();
    const paperDeleted = await tributary('groups', 'delete', '--zookeeper', zookeeper, '--group', 'paper');
    expect(paperDeleted.status, paperDeleted.stderr).toBe(0);
    expect(await store.exists('/consumers/paper')).toBe(false);
    const none = await tributary('groups', 'list', '--zookeeper', zookeeper);
    expect(none.stdout.trim()).toBe('group  kind  state');
  });
});
