/**
 * Replication's known data-loss interleavings, scripted in one process (issue #20; replication.md
 * §2 items 2–5 and 7, §6 test 13): brokers on one in-process coordination tree, logs laid out on
 * disk beforehand the way the faults leave them, then the brokers started and left to converge.
 *
 * - KIP-101 scenario 1: a follower restarts with a high watermark behind its log; the leader dies
 *   right after. Truncating to the HW would lose the acknowledged tail; truncating by epoch keeps it.
 * - KIP-101 scenario 2: after a correlated crash the replica with the shorter log is elected and
 *   writes new records in a new epoch at offsets the other still holds from the old epoch: the
 *   other truncates its divergent suffix and copies the new records (one lineage, no offset with
 *   two values).
 * - KIP-279: a follower holds an epoch the new leader never saw (a leader that died before
 *   replicating anything): everything of that epoch is cut in one step.
 * - KAFKA-7128: a follower joins the ISR only once it has reached the start of the leader's epoch,
 *   not just the (lagging) high watermark.
 * - KAFKA-6082: a deposed controller's state write is refused by its controller-epoch check, and
 *   the deposed controller resigns.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../../src/broker/broker.js';
import { parseBrokerConfig } from '../../../src/broker/config.js';
import { createLogger } from '../../../src/common/logger.js';
import { Producer } from '../../../src/client/producer.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { MemoryCoordination, type MemoryCoordinationStore } from '../../../src/coordination/memory-store.js';
import { decodePartitionState, encodePartitionState, type PartitionState } from '../../../src/coordination/partition-state.js';
import { controllerEpochPath, partitionPath, partitionStatePath, topicPath } from '../../../src/coordination/paths.js';
import { encodeTopicAssignment } from '../../../src/coordination/topic-assignment.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { LogManager } from '../../../src/storage/log-manager.js';
import { compareReplicas, formatReplicaComparison } from '../../support/replica-files.js';
import { LOOPBACK } from '../../services/network.js';

const TOPIC = 'scripted';
const logger = createLogger({ name: 'scripted', level: process.env['SCRIPTED_LOG'] === undefined ? 'silent' : 'info' });

interface Running {
  readonly id: number;
  readonly broker: Broker;
  readonly dataDir: string;
  readonly store: MemoryCoordinationStore;
}

let running: Running[] = [];
afterEach(async () => {
  await Promise.allSettled(running.map((entry) => entry.broker.stop()));
  running = [];
});

function dataDir(id: number): string {
  return mkdtempSync(join(tmpdir(), `tributary-scripted-${id}-`));
}

async function start(tree: MemoryCoordination, id: number, directory: string, settings: Record<string, string> = {}): Promise<Running> {
  const store = tree.session();
  const broker = await Broker.start({
    id,
    listen: { host: LOOPBACK, port: 0 },
    dataDir: directory,
    config: parseBrokerConfig({ 'min.insync.replicas': '1', 'replica.lag.time.max.ms': '5000', 'replica.fetch.wait.max.ms': '100', 'shutdown.grace.ms': '500', ...settings }, 'scripted test'),
    store,
    logger,
  });
  const entry = { id, broker, dataDir: directory, store };
  running.push(entry);
  return entry;
}

async function stop(entry: Running): Promise<void> {
  running = running.filter((candidate) => candidate !== entry);
  await entry.broker.stop();
}

/** One batch as a leader of `epoch` wrote it; the same bytes wherever it was replicated. */
interface LaidBatch {
  readonly epoch: number;
  readonly bytes: Buffer;
}

/** A batch of `values` (fixed timestamp: replicas that share a batch share its bytes). */
function batchOf(epoch: number, values: readonly string[]): LaidBatch {
  return { epoch, bytes: encodeRecordBatch(values.map((value) => ({ value: Buffer.from(value) })), { baseTimestamp: 1_700_000_000_000 }) };
}

/**
 * A replica's log laid out on disk before any broker runs: `batches` in order, each stamped with
 * its epoch as its leader appended it (the epoch cache follows).
 */
async function layOut(directory: string, brokerId: number, batches: readonly LaidBatch[]): Promise<void> {
  const logs = await LogManager.open({ dataDir: directory, brokerId, logger });
  const log = await logs.getOrCreateLog(TOPIC, 0);
  log.setHighWatermarkMode('replicated');
  for (const { epoch, bytes } of batches) await log.append(Buffer.from(bytes), { leaderEpoch: epoch });
  await log.flush();
  await logs.close();
}

/** The topic and its partition state as the faults left them, written before the brokers start. */
async function seed(tree: MemoryCoordination, replicas: readonly number[], state: PartitionState): Promise<void> {
  const store = tree.session();
  await store.ensurePath('/brokers/topics');
  await store.create(topicPath(TOPIC), encodeTopicAssignment(new Map([[0, replicas]])), 'persistent');
  await store.ensurePath(partitionPath(TOPIC, 0));
  await store.create(partitionStatePath(TOPIC, 0), encodePartitionState(state), 'persistent');
  await store.create(controllerEpochPath(), Buffer.from(String(state.controllerEpoch)), 'persistent');
  await store.close();
}

async function stateOf(tree: MemoryCoordination): Promise<PartitionState> {
  const store = tree.session();
  try {
    const node = await store.get(partitionStatePath(TOPIC, 0));
    if (node === undefined) throw new Error('no state');
    return decodePartitionState(node.data, partitionStatePath(TOPIC, 0));
  } finally {
    await store.close();
  }
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function readValues(bootstrap: string): Promise<string[]> {
  const cluster = await ClusterClient.connect({ bootstrap: [bootstrap], allowAutoTopicCreation: false });
  try {
    const consumer = new SimpleConsumer(cluster);
    const end = await consumer.listOffset(TOPIC, 0, 'latest');
    const values: string[] = [];
    let offset = 0n;
    while (offset < end) {
      const fetched = await consumer.fetch(TOPIC, 0, offset);
      for (const record of fetched.records) values.push(record.value?.toString('utf8') ?? '');
      offset = fetched.nextOffset;
    }
    return values;
  } finally {
    cluster.close();
  }
}

function bootstrapOf(entry: Running): string {
  return `${LOOPBACK}:${entry.broker.port}`;
}

const noIncarnation = { replicaStorage: {}, leaderIncarnation: '' } as const;

describe('replication: scripted interleavings', () => {
  it('KIP-101 scenario 2: the divergent suffix of the replica not elected is cut by epoch and replaced by the new leader’s records', { timeout: 60_000 }, async () => {
    const tree = new MemoryCoordination();
    const [a, b] = [dataDir(1), dataDir(2)];
    // Both wrote epoch 1; A got one more batch that B never fetched, then both crashed.
    const shared = batchOf(1, ['m0', 'm1']);
    await layOut(a, 1, [shared, batchOf(1, ['a-only'])]);
    await layOut(b, 2, [shared]);
    // B came back first: the last in-sync replica, offline until it returns.
    await seed(tree, [1, 2], { leader: -1, leaderEpoch: 1, isr: [2], controllerEpoch: 1, ...noIncarnation });
    const brokerB = await start(tree, 2, b);
    await until('B elected', async () => ((await stateOf(tree)).leader === 2 ? true : undefined));
    const producer = await Producer.connect({ bootstrap: [bootstrapOf(brokerB)], acks: -1, logger });
    await producer.send(TOPIC, [{ value: Buffer.from('b-new-1'), partition: 0 }]);
    await producer.send(TOPIC, [{ value: Buffer.from('b-new-2'), partition: 0 }]);
    await producer.close();
    const brokerA = await start(tree, 1, a);
    await until('A back in the ISR', async () => ((await stateOf(tree)).isr.includes(1) ? true : undefined));
    expect(await readValues(bootstrapOf(brokerB))).toEqual(['m0', 'm1', 'b-new-1', 'b-new-2']);
    const comparison = compareReplicas([{ brokerId: 2, dataDir: b }, { brokerId: 1, dataDir: a }], TOPIC, 0, 4);
    expect(comparison.ok, formatReplicaComparison(comparison)).toBe(true);
    expect(brokerA.broker.logManager.getLog(TOPIC, 0)?.leaderEpochCache.entries()).toEqual(brokerB.broker.logManager.getLog(TOPIC, 0)?.leaderEpochCache.entries());
  });

  it('KIP-279: a follower holding an epoch the new leader never saw cuts all of it in one step', { timeout: 60_000 }, async () => {
    const tree = new MemoryCoordination();
    const [a, b] = [dataDir(1), dataDir(2)];
    // Epoch 1 replicated to both; A then led epoch 2 alone and died before B fetched any of it.
    const shared = batchOf(1, ['m0', 'm1']);
    await layOut(a, 1, [shared, batchOf(2, ['e2-a', 'e2-b', 'e2-c'])]);
    await layOut(b, 2, [shared]);
    await seed(tree, [1, 2], { leader: -1, leaderEpoch: 2, isr: [2], controllerEpoch: 1, ...noIncarnation });
    const brokerB = await start(tree, 2, b);
    await until('B elected', async () => ((await stateOf(tree)).leader === 2 ? true : undefined));
    const producer = await Producer.connect({ bootstrap: [bootstrapOf(brokerB)], acks: -1, logger });
    await producer.send(TOPIC, [{ value: Buffer.from('e3-x'), partition: 0 }, { value: Buffer.from('e3-y'), partition: 0 }]);
    await producer.close();
    const brokerA = await start(tree, 1, a);
    await until('A back in the ISR', async () => ((await stateOf(tree)).isr.includes(1) ? true : undefined));
    expect(await readValues(bootstrapOf(brokerB))).toEqual(['m0', 'm1', 'e3-x', 'e3-y']);
    const comparison = compareReplicas([{ brokerId: 2, dataDir: b }, { brokerId: 1, dataDir: a }], TOPIC, 0, 4);
    expect(comparison.ok, formatReplicaComparison(comparison)).toBe(true);
    const epochs = brokerA.broker.logManager.getLog(TOPIC, 0)?.leaderEpochCache.entries().map((entry) => entry.epoch);
    expect(epochs, 'epoch 2 is gone from A').not.toContain(2);
  });

  it('KIP-101 scenario 1: a follower that restarts with a lagging high watermark keeps the acknowledged tail, and has it when elected', { timeout: 60_000 }, async () => {
    const tree = new MemoryCoordination();
    const [a, b] = [dataDir(1), dataDir(2)];
    const brokerB = await start(tree, 2, b);
    let brokerA = await start(tree, 1, a);
    const producer = await Producer.connect({ bootstrap: [bootstrapOf(brokerB)], acks: -1, logger });
    // A two-replica topic led by B (the first replica): created through B, then m1 and m2 acknowledged.
    const store = brokerB.store;
    await store.ensurePath('/brokers/topics');
    await store.create(topicPath(TOPIC), encodeTopicAssignment(new Map([[0, [2, 1]]])), 'persistent');
    await until('both in the ISR', async () => {
      const state = await stateOf(tree).catch(() => undefined);
      return state !== undefined && state.leader === 2 && state.isr.length === 2 ? true : undefined;
    });
    await producer.send(TOPIC, [{ value: Buffer.from('m1'), partition: 0 }]);
    await producer.send(TOPIC, [{ value: Buffer.from('m2'), partition: 0 }]);
    await producer.close();
    // A restarts: its own HW may trail (it learns the leader's HW one fetch late).
    await stop(brokerA);
    brokerA = await start(tree, 1, a);
    await until('A back in the ISR', async () => ((await stateOf(tree)).isr.includes(1) ? true : undefined));
    // The leader dies at once: A is elected and must hold m2.
    await stop(brokerB);
    await until('A elected', async () => ((await stateOf(tree)).leader === 1 ? true : undefined));
    expect(await readValues(bootstrapOf(brokerA))).toEqual(['m1', 'm2']);
  });

  it('KAFKA-7128: a follower at the lagging high watermark but short of the new epoch’s start does not join the ISR', { timeout: 60_000 }, async () => {
    const tree = new MemoryCoordination();
    const [a, b] = [dataDir(1), dataDir(2)];
    const first = batchOf(1, ['m0']);
    await layOut(b, 2, [first, batchOf(1, ['m1', 'm2'])]);
    await layOut(a, 1, [first]);
    await seed(tree, [2, 1], { leader: -1, leaderEpoch: 1, isr: [2], controllerEpoch: 1, ...noIncarnation });
    const brokerB = await start(tree, 2, b);
    await until('B elected', async () => ((await stateOf(tree)).leader === 2 ? true : undefined));
    const replica = brokerB.broker.replicaManager.replica(TOPIC, 0)!;
    expect(replica.epochStartOffset, 'B leads epoch 2 from its log end').toBe(3);
    // A new leader's HW lags its log (it learnt the HW as a follower, one fetch late): here 1.
    replica.log.resetHighWatermark(1);
    replica.recordFollowerFetch(1, 1);
    expect(replica.followersReadyToJoin(), 'at the lagging HW, short of the epoch start').toEqual([]);
    replica.recordFollowerFetch(1, 3);
    expect(replica.followersReadyToJoin(), 'at the epoch start').toEqual([1]);
    // And for real: A starts, copies up to the epoch start and beyond, then joins.
    await start(tree, 1, a);
    await until('A in the ISR', async () => ((await stateOf(tree)).isr.includes(1) ? true : undefined));
  });

  it('KAFKA-6082: a deposed controller’s write fails its controller-epoch check and it resigns', { timeout: 60_000 }, async () => {
    const tree = new MemoryCoordination();
    const [a, b] = [dataDir(1), dataDir(2)];
    const brokerA = await start(tree, 1, a);
    const brokerB = await start(tree, 2, b);
    await brokerA.store.ensurePath('/brokers/topics');
    await brokerA.store.create(topicPath(TOPIC), encodeTopicAssignment(new Map([[0, [1, 2]]])), 'persistent');
    await until('both in the ISR', async () => {
      const state = await stateOf(tree).catch(() => undefined);
      return state !== undefined && state.isr.length === 2 ? true : undefined;
    });
    expect(brokerA.broker.isController).toBe(true);
    // Another controller is elected behind A's back: the epoch node moves on.
    const rival = tree.session();
    const epoch = await rival.get(controllerEpochPath());
    await rival.set(controllerEpochPath(), Buffer.from(String(Number(epoch!.data.toString('utf8')) + 1)), epoch!.version);
    const before = await stateOf(tree);
    // B dies: A, still believing it is the controller, tries to drop B from the ISR.
    await brokerB.store.expireSession().catch(() => undefined);
    await stop(brokerB);
    await until('A resigned', () => (brokerA.broker.isController ? undefined : true));
    expect(await stateOf(tree)).toEqual(before);
    await rival.close();
  });
});
