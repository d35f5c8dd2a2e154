/**
 * The ZooKeeper consumer against an in-process broker and the in-process coordination store
 * (the same CoordinationStore contract as ZooKeeper): assignment, offsets, seek, session expiry.
 * Multi-process behaviour on real ZooKeeper is in test/integration/client/consumer-group.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClusterClient } from '../../../../src/client/cluster-client.js';
import { ZooKeeperConsumer, type Message, type MessageStream } from '../../../../src/client/group/zookeeper-consumer.js';
import { Producer } from '../../../../src/client/producer.js';
import { createLogger } from '../../../../src/common/logger.js';
import { MemoryCoordination, type MemoryCoordinationStore } from '../../../../src/coordination/memory-store.js';
import { consumerIdsPath, consumerPath, offsetPath, ownerPath, topicPath } from '../../../../src/coordination/paths.js';
import { coordinationError } from '../../../../src/coordination/store.js';
import { startInProcessBroker, type InProcessBroker } from '../../../support/brokers.js';

const PARTITIONS = 4;
let broker: InProcessBroker;
let tree: MemoryCoordination;
const open: ZooKeeperConsumer[] = [];
const clients: ClusterClient[] = [];
const logger = createLogger({ name: 'test', level: 'silent' });

beforeAll(async () => {
  broker = await startInProcessBroker({ 'num.partitions': String(PARTITIONS), 'log.flush.interval.messages': '1' });
});
afterAll(async () => {
  await broker.stop();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((consumer) => consumer.close()));
  for (const client of clients.splice(0)) client.close();
});

let topicCount = 0;
/** A topic on the broker with records, and its registration in a fresh coordination tree. */
async function setup(records: number): Promise<{ topic: string; placed: Map<string, string> }> {
  topicCount += 1;
  const topic = `events-${topicCount}`;
  tree = new MemoryCoordination();
  const admin = tree.session();
  const partitions = Object.fromEntries(Array.from({ length: PARTITIONS }, (_, p) => [String(p), 0]));
  await admin.ensurePath('/brokers/topics');
  await admin.create(topicPath(topic), Buffer.from(JSON.stringify({ partitions })), 'persistent');
  const producer = await Producer.connect({ bootstrap: [broker.bootstrap], logger });
  const placed = new Map<string, string>();
  try {
    const sent = await producer.send(topic, Array.from({ length: records }, (_, i) => ({ key: Buffer.from(`k${i % 7}`), value: Buffer.from(`v${i}`) })));
    sent.forEach((m, i) => placed.set(`${m.partition}/${m.offset}`, `v${i}`));
  } finally {
    await producer.close();
  }
  return { topic, placed };
}

async function consumer(group: string, overrides: Partial<Parameters<typeof ZooKeeperConsumer.connect>[0]> = {}): Promise<{ consumer: ZooKeeperConsumer; store: MemoryCoordinationStore }> {
  const store = tree.session();
  const cluster = await ClusterClient.connect({ bootstrap: [broker.bootstrap] });
  clients.push(cluster);
  const created = await ZooKeeperConsumer.connect({
    zookeeper: store,
    bootstrap: cluster,
    group,
    autoOffsetReset: 'smallest',
    autoCommitIntervalMs: 0,
    rebalanceBackoffMs: 50,
    rebalanceMaxRetries: 20,
    rebalanceDebounceMs: 20,
    fetchWaitMaxMs: 50,
    logger,
    ...overrides,
  });
  open.push(created);
  return { consumer: created, store };
}

/** Reads from the streams in the background into `into`. */
function drain(streams: readonly MessageStream[], into: Message[]): void {
  for (const stream of streams) {
    void (async () => {
      for await (const message of stream) into.push(message);
    })();
  }
}

const positions = (messages: readonly Message[]): Set<string> => new Set(messages.map((m) => `${m.partition}/${m.offset}`));

describe('ZooKeeperConsumer', () => {
  it('spreads the partitions over the streams of a group and delivers every record in partition order', async () => {
    const { topic, placed } = await setup(60);
    const a = await consumer('g');
    const b = await consumer('g');
    const received: Message[] = [];
    drain((await a.consumer.createMessageStreams({ [topic]: 2 }))[topic] ?? [], received);
    drain((await b.consumer.createMessageStreams({ [topic]: 1 }))[topic] ?? [], received);
    await expect.poll(() => a.consumer.ownership().size + b.consumer.ownership().size, { timeout: 10_000 }).toBe(PARTITIONS);
    const owners = new Set([...a.consumer.ownership().keys(), ...b.consumer.ownership().keys()]);
    expect(owners.size).toBe(PARTITIONS);
    await expect.poll(() => positions(received).size, { timeout: 10_000 }).toBe(60);
    for (const message of received) expect(message.value?.toString()).toBe(placed.get(`${message.partition}/${message.offset}`));
    for (let p = 0; p < PARTITIONS; p += 1) {
      const offsets = received.filter((m) => m.partition === p).map((m) => m.offset);
      expect(offsets).toEqual([...offsets].sort((x, y) => (x < y ? -1 : 1)));
    }
    // Thread ids are <consumerId>-<stream>; the registry holds both consumers.
    expect(await tree.session().children(consumerIdsPath('g'))).toEqual([a.consumer.consumerId, b.consumer.consumerId].sort());
  });

  it('commits consumed offsets on demand and on close, and a new member resumes from them', async () => {
    const { topic } = await setup(40);
    const first = await consumer('resume');
    const received: Message[] = [];
    drain((await first.consumer.createMessageStreams({ [topic]: 1 }))[topic] ?? [], received);
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(40);
    await first.consumer.commitOffsets();
    const store = tree.session();
    let total = 0n;
    for (let p = 0; p < PARTITIONS; p += 1) {
      const node = await store.get(offsetPath('resume', topic, p));
      total += BigInt(node?.data.toString() ?? '0');
    }
    expect(total).toBe(40n);
    await first.consumer.close();
    expect(await store.children(consumerIdsPath('resume'))).toEqual([]);
    expect(await store.exists(ownerPath('resume', topic, 0))).toBe(false);

    const second = await consumer('resume');
    const again: Message[] = [];
    drain((await second.consumer.createMessageStreams({ [topic]: 1 }))[topic] ?? [], again);
    await expect.poll(() => second.consumer.ownership().size, { timeout: 10_000 }).toBe(PARTITIONS);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(again).toEqual([]);
  });

  it('starts a new group at the log end with largest', async () => {
    const { topic } = await setup(10);
    const late = await consumer('late', { autoOffsetReset: 'largest' });
    const received: Message[] = [];
    drain((await late.consumer.createMessageStreams({ [topic]: 1 }))[topic] ?? [], received);
    await expect.poll(() => late.consumer.ownership().size, { timeout: 10_000 }).toBe(PARTITIONS);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(received).toEqual([]);
  });

  it('seeks an owned partition by offset and by timestamp, and refuses one it does not own', async () => {
    const { topic, placed } = await setup(40);
    const only = await consumer('seeker');
    const received: Message[] = [];
    drain((await only.consumer.createMessageStreams({ [topic]: 1 }))[topic] ?? [], received);
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(40);
    const partition = received[0]!.partition;
    const count = [...placed.keys()].filter((k) => k.startsWith(`${partition}/`)).length;
    received.length = 0;
    expect(await only.consumer.seek(topic, partition, 1n)).toBe(1n);
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(count - 1);
    expect(received.map((m) => m.offset)[0]).toBe(1n);
    received.length = 0;
    expect(await only.consumer.seek(topic, partition, { timestamp: 0 })).toBe(0n);
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(count);
    await expect(only.consumer.seek(topic, 99, 0n)).rejects.toMatchObject({ code: 'PARTITION_NOT_OWNED' });
  });

  it('after a session expiry drops ownership, registers again and takes its partitions back', async () => {
    const { topic } = await setup(20);
    const member = await consumer('expiring');
    const received: Message[] = [];
    drain((await member.consumer.createMessageStreams({ [topic]: 1 }))[topic] ?? [], received);
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(20);
    await member.consumer.commitOffsets();
    await member.store.expireSession();
    await expect.poll(async () => (await tree.session().children(consumerIdsPath('expiring')))?.length, { timeout: 10_000 }).toBe(1);
    await expect.poll(() => member.consumer.ownership().size, { timeout: 10_000 }).toBe(PARTITIONS);
    for (let p = 0; p < PARTITIONS; p += 1) expect(await tree.session().exists(ownerPath('expiring', topic, p))).toBe(true);
    // Committed before the expiry: nothing is read twice.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(received.length).toBe(20);
  });

  it('fails loudly when a partition stays owned by someone else', async () => {
    const { topic } = await setup(1);
    const squatter = tree.session();
    await squatter.ensurePath(`/consumers/stuck/owners/${topic}`);
    await squatter.create(ownerPath('stuck', topic, 0), Buffer.from('someone-else-0'), 'ephemeral');
    const errors: Error[] = [];
    const member = await consumer('stuck', { rebalanceMaxRetries: 2, onError: (error) => errors.push(error) });
    const streams = (await member.consumer.createMessageStreams({ [topic]: 1 }))[topic] ?? [];
    expect(errors.map((e) => (e as { code?: string }).code)).toEqual(['CONSUMER_REBALANCE_FAILED']);
    await expect(streams[0]![Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: 'CONSUMER_REBALANCE_FAILED' });
    // Nothing of this attempt is left claimed.
    expect(await squatter.exists(ownerPath('stuck', topic, 1))).toBe(false);
  });

  it('takes its new share at the periodic registry check when no watch event reports a member (level-triggered)', async () => {
    const { topic } = await setup(0);
    // A store that arms no watch: only the periodic check can tell this consumer about others.
    const session = tree.session();
    const deaf = new Proxy(session, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property);
        if (typeof value !== 'function') return value;
        if (property === 'children' || property === 'get' || property === 'exists') return (path: string) => (value as (path: string) => unknown).call(target, path);
        return (value as (...args: unknown[]) => unknown).bind(target);
      },
    });
    const cluster = await ClusterClient.connect({ bootstrap: [broker.bootstrap] });
    clients.push(cluster);
    const first = await ZooKeeperConsumer.connect({
      zookeeper: deaf, bootstrap: cluster, group: 'deaf', autoOffsetReset: 'smallest', autoCommitIntervalMs: 0,
      rebalanceBackoffMs: 50, rebalanceMaxRetries: 40, rebalanceDebounceMs: 20, rebalanceCheckIntervalMs: 100, fetchWaitMaxMs: 50, logger,
    });
    open.push(first);
    await first.createMessageStreams({ [topic]: 1 });
    expect(first.ownership().size).toBe(PARTITIONS);
    const { consumer: second } = await consumer('deaf');
    await second.createMessageStreams({ [topic]: 1 });
    await expect.poll(() => [first.ownership().size, second.ownership().size], { timeout: 10_000, interval: 50 }).toEqual([PARTITIONS / 2, PARTITIONS / 2]);
  });

  it('keeps rebalancing on watch events after a debounced event was already served by a running rebalance', async () => {
    const { topic } = await setup(0);
    const other = tree.session();
    const phantom = consumerPath('late-timer', 'phantom');
    const registration = Buffer.from(JSON.stringify({ version: 1, subscription: { [topic]: 1 }, pattern: 'static' }));
    // A member joins while the first rebalance claims its first partition: the loop serves that
    // event at once, and the event's debounce timer fires later with nothing left to do.
    const session = tree.session();
    let joined = false;
    const store = new Proxy(session, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property);
        if (typeof value !== 'function') return value;
        if (property !== 'create') return (value as (...args: unknown[]) => unknown).bind(target);
        return async (path: string, ...rest: unknown[]) => {
          if (!joined && path.includes('/owners/')) {
            joined = true;
            await other.create(phantom, registration, 'ephemeral');
          }
          return (value as (...args: unknown[]) => unknown).call(target, path, ...rest);
        };
      },
    });
    const cluster = await ClusterClient.connect({ bootstrap: [broker.bootstrap] });
    clients.push(cluster);
    const member = await ZooKeeperConsumer.connect({
      zookeeper: store, bootstrap: cluster, group: 'late-timer', autoOffsetReset: 'smallest', autoCommitIntervalMs: 0,
      rebalanceBackoffMs: 50, rebalanceMaxRetries: 40, rebalanceDebounceMs: 300, rebalanceCheckIntervalMs: 0, fetchWaitMaxMs: 50, logger,
    });
    open.push(member);
    await member.createMessageStreams({ [topic]: 1 });
    expect(joined).toBe(true);
    expect(member.ownership().size).toBe(PARTITIONS / 2);
    // Let the stale debounce timer fire, then the member leaves: its partitions must be taken.
    await new Promise((resolve) => setTimeout(resolve, 600));
    await other.delete(phantom);
    await expect.poll(() => member.ownership().size, { timeout: 10_000, interval: 50 }).toBe(PARTITIONS);
  }, 20_000);
  it('hands out nothing after its process did not run for most of the session timeout, until ZooKeeper confirms the session', async () => {
    // A SIGSTOP (or a blocked event loop) seen from inside: the clock jumps. The member cannot
    // know yet whether its session expired and another member took its partitions, so the
    // records fetched after the jump wait for a request on the session (held here) to succeed.
    const { topic } = await setup(20);
    const session = tree.session();
    let hold: Promise<void> | undefined;
    let release: () => void = () => {};
    let held = 0;
    const store = new Proxy(session, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property);
        if (typeof value !== 'function') return value;
        if (property !== 'exists') return (value as (...args: unknown[]) => unknown).bind(target);
        return async (...args: unknown[]) => {
          if (hold !== undefined) {
            held += 1;
            await hold;
          }
          return (value as (...args: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    let skew = 0;
    const cluster = await ClusterClient.connect({ bootstrap: [broker.bootstrap] });
    clients.push(cluster);
    const member = await ZooKeeperConsumer.connect({
      zookeeper: store, bootstrap: cluster, group: 'frozen', autoOffsetReset: 'smallest', autoCommitIntervalMs: 0, sessionTimeoutMs: 3000,
      rebalanceBackoffMs: 50, rebalanceDebounceMs: 20, rebalanceCheckIntervalMs: 0, fetchWaitMaxMs: 50, logger, clock: { now: () => Date.now() + skew },
    });
    open.push(member);
    const received: Message[] = [];
    drain((await member.createMessageStreams({ [topic]: 1 }))[topic] ?? [], received);
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(20);

    hold = new Promise<void>((resolve) => (release = resolve));
    skew += 10_000;
    const producer = await Producer.connect({ bootstrap: [broker.bootstrap], logger });
    await producer.send(topic, Array.from({ length: 8 }, (_, i) => ({ partition: i % PARTITIONS, value: Buffer.from(`late${i}`) })));
    await producer.close();
    try {
      await expect.poll(() => held, { timeout: 10_000 }).toBeGreaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(received.length).toBe(20);
    } finally {
      hold = undefined;
      release();
    }
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(28);
    expect(positions(received).size).toBe(28);
  }, 30_000);
  it('registers again after a session expiry although ZooKeeper first loses the connection', async () => {
    const { topic } = await setup(12);
    const session = tree.session();
    let failNext = false;
    let failed = 0;
    const store = new Proxy(session, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property);
        if (typeof value !== 'function') return value;
        if (property !== 'create') return (value as (...args: unknown[]) => unknown).bind(target);
        return async (path: string, ...rest: unknown[]) => {
          if (failNext && path.includes('/ids/')) {
            failNext = false;
            failed += 1;
            throw coordinationError('CONNECTION_LOSS', { operation: `create ${path}` });
          }
          return (value as (...args: unknown[]) => unknown).call(target, path, ...rest);
        };
      },
    });
    const errors: Error[] = [];
    const cluster = await ClusterClient.connect({ bootstrap: [broker.bootstrap] });
    clients.push(cluster);
    const member = await ZooKeeperConsumer.connect({
      zookeeper: store, bootstrap: cluster, group: 'reregister', autoOffsetReset: 'smallest', autoCommitIntervalMs: 0,
      rebalanceBackoffMs: 50, rebalanceDebounceMs: 20, rebalanceCheckIntervalMs: 0, fetchWaitMaxMs: 50, logger, onError: (error) => errors.push(error),
    });
    open.push(member);
    const received: Message[] = [];
    drain((await member.createMessageStreams({ [topic]: 1 }))[topic] ?? [], received);
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(12);
    failNext = true;
    await session.expireSession();
    await expect.poll(() => failed, { timeout: 5_000 }).toBe(1);
    await expect.poll(async () => (await tree.session().children(consumerIdsPath('reregister')))?.length, { timeout: 10_000 }).toBe(1);
    await expect.poll(() => member.ownership().size, { timeout: 10_000 }).toBe(PARTITIONS);
    expect(errors).toEqual([]);
  }, 30_000);
});
