/**
 * DeleteRecords on a replicated cluster (compaction-transactions.md §2 and §5's invariants): one
 * ZooKeeper, three broker processes, a topic with RF 3 and min.insync.replicas 2.
 *
 * - The answer comes once every live replica has moved its log start (each one's
 *   log-start-offset-checkpoint says so when the client hears back), and whole segments below it
 *   are gone on every replica.
 * - Fetch below the start is OFFSET_OUT_OF_RANGE, ListOffsets EARLIEST answers the start, −1 means
 *   the high watermark, a follower answers NOT_LEADER_OR_FOLLOWER.
 * - A stalled (SIGSTOPped, still registered) follower makes the request time out with
 *   REQUEST_TIMED_OUT while the leader has moved already; the follower catches up once resumed.
 * - After the leader is SIGKILLed the new leader's start is at least every acknowledged delete,
 *   and the killed broker comes back with its start from its checkpoint.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterClient } from '../../../src/client/cluster-client.js';
import { KafkaConnection } from '../../../src/client/connection.js';
import { Producer } from '../../../src/client/producer.js';
import { deleteRecords, type DeleteRecordsOutcome } from '../../../src/client/records-admin.js';
import { SimpleConsumer } from '../../../src/client/simple-consumer.js';
import { TributaryError } from '../../../src/common/errors.js';
import { createLogger } from '../../../src/common/logger.js';
import { DeleteRecordsApi } from '../../../src/protocol/apis/delete-records.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { checkpointKey, readCheckpoint } from '../../../src/storage/checkpoint.js';
import { LOG_START_CHECKPOINT } from '../../../src/storage/log-manager.js';
import { LOOPBACK } from '../../services/network.js';
import { openRun } from '../../services/run-dir.js';
import { ReplicatedCluster } from '../../support/replicated-cluster.js';
import { services, zookeeperAddress } from '../services.js';

const TOPIC = 'trimmed';

let cluster: ReplicatedCluster;
let client: ClusterClient;

beforeAll(async () => {
  cluster = await ReplicatedCluster.start({
    run: openRun(services().runDir),
    zookeeper: zookeeperAddress().connectString,
    name: 'delete-records',
    // Small segments, so deleting records deletes whole segments too.
    settings: { 'shutdown.grace.ms': '1000', 'log.segment.bytes': '4096' },
  });
  await cluster.createTopic(TOPIC, { partitions: 1, replicationFactor: 3 });
  client = await ClusterClient.connect({ bootstrap: cluster.bootstrap(), clientId: 'delete-records-test', allowAutoTopicCreation: false, requestTimeoutMs: 20_000 });
  await produce(200);
}, 120_000);

afterAll(async () => {
  client?.close();
  await cluster?.close();
});

async function produce(count: number): Promise<void> {
  const producer = await Producer.connect({ bootstrap: cluster.bootstrap(), acks: -1, logger: createLogger({ name: 'test', level: 'silent' }) });
  try {
    // Ten records a send: many batches, so the log spans several segments.
    for (let i = 0; i < count; i += 10) {
      const records = Array.from({ length: Math.min(10, count - i) }, (_, j) => ({ partition: 0, key: null, value: Buffer.from(`record ${i + j} ${'x'.repeat(100)}`) }));
      await producer.send(TOPIC, records);
    }
  } finally {
    await producer.close();
  }
}

/** Each broker's log start of the partition, as its log-start-offset-checkpoint says (written before the move counts). */
function checkpointedStarts(ids = cluster.brokerIds): number[] {
  return ids.map((id) => readCheckpoint(join(cluster.dataDir(id), LOG_START_CHECKPOINT)).get(checkpointKey(TOPIC, 0)) ?? -1);
}

/** Base offsets of the segment files a broker holds for the partition. */
function segmentBases(id: number): number[] {
  return readdirSync(join(cluster.dataDir(id), `${TOPIC}-0`))
    .filter((file) => file.endsWith('.log'))
    .map((file) => Number(file.slice(0, 20)))
    .sort((a, b) => a - b);
}

async function trim(offset: bigint, timeoutMs = 20_000): Promise<DeleteRecordsOutcome> {
  const [outcome] = await deleteRecords(client, [{ topic: TOPIC, partition: 0, offset }], { timeoutMs });
  return outcome!;
}

async function fetchCode(offset: bigint): Promise<string> {
  try {
    await new SimpleConsumer(client, { retries: 8 }).fetch(TOPIC, 0, offset);
    return 'NONE';
  } catch (error) {
    if (error instanceof TributaryError) return error.code;
    throw error;
  }
}

const earliest = (): Promise<bigint> => new SimpleConsumer(client, { retries: 8 }).listOffset(TOPIC, 0, 'earliest');

describe('DeleteRecords on a replicated cluster', () => {
  it('answers once every replica has moved its log start; reads below it are OFFSET_OUT_OF_RANGE and covered segments are gone everywhere', async () => {
    const before = cluster.brokerIds.map(segmentBases);
    expect(before.every((bases) => bases.length > 3)).toBe(true);
    expect(await trim(120n)).toEqual({ topic: TOPIC, partition: 0, lowWatermark: 120n });
    expect(checkpointedStarts()).toEqual([120, 120, 120]);
    for (const id of cluster.brokerIds) {
      const bases = segmentBases(id);
      expect(bases[0], `broker ${id} keeps the segment holding 120`).toBeLessThanOrEqual(120);
      expect(bases[1] ?? Infinity, `broker ${id} deleted every segment wholly below 120`).toBeGreaterThan(120);
      expect(bases.length).toBeLessThan(before[id - 1]!.length);
    }
    expect(await earliest()).toBe(120n);
    expect(await fetchCode(119n)).toBe('OFFSET_OUT_OF_RANGE');
    expect(await fetchCode(120n)).toBe('NONE');
    // At or below the start: nothing moves, and the answer is the start.
    expect(await trim(50n)).toEqual({ topic: TOPIC, partition: 0, lowWatermark: 120n });
    const past = await trim(100_000n);
    expect('error' in past && past.error.code).toBe('OFFSET_OUT_OF_RANGE');
  });

  it('answers NOT_LEADER_OR_FOLLOWER from a follower', async () => {
    const leader = await cluster.leaderOf(TOPIC, 0);
    const follower = cluster.brokerIds.find((id) => id !== leader)!;
    const connection = await KafkaConnection.open(LOOPBACK, cluster.broker(follower).port, { clientId: 'delete-records-test' });
    try {
      const response = await connection.request(DeleteRecordsApi, 1, { topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, offset: 130n }] }], timeoutMs: 5_000 });
      expect(response.topics[0]!.partitions[0]).toEqual({ partitionIndex: 0, lowWatermark: -1n, errorCode: KafkaErrorCode.NOT_LEADER_OR_FOLLOWER });
    } finally {
      connection.close();
    }
    expect(checkpointedStarts()).toEqual([120, 120, 120]);
  });

  it('times out with REQUEST_TIMED_OUT while a live follower is stalled, without undoing the leader’s move; the follower catches up', async () => {
    const leader = await cluster.leaderOf(TOPIC, 0);
    const stalled = cluster.brokerIds.find((id) => id !== leader)!;
    cluster.pause(stalled);
    try {
      // Well inside the 6 s session timeout: the stalled broker still counts as alive.
      const outcome = await trim(150n, 1_500);
      expect('error' in outcome && outcome.error.code).toBe('REQUEST_TIMED_OUT');
      expect(await earliest()).toBe(150n);
      expect(checkpointedStarts([stalled])).toEqual([120]);
    } finally {
      cluster.resume(stalled);
    }
    await cluster.waitFor('the stalled follower to take the leader’s log start', async () => (checkpointedStarts([stalled])[0] === 150 ? true : undefined), { timeoutMs: 30_000 });
    // Asked again, the same delete now completes at once on every replica.
    expect(await trim(150n)).toEqual({ topic: TOPIC, partition: 0, lowWatermark: 150n });
    expect(checkpointedStarts()).toEqual([150, 150, 150]);
  });

  it('keeps the log start across a leader SIGKILL (the new leader answers it) and the killed broker’s restart; −1 deletes up to the high watermark', { timeout: 120_000 }, async () => {
    const before = await cluster.waitForLeader(TOPIC, 0);
    await cluster.kill(before.leader);
    const after = await cluster.waitForLeaderChange(before, { timeoutMs: 30_000 });
    expect(after.leader).not.toBe(before.leader);
    await client.refreshMetadata([TOPIC]);
    expect(await earliest()).toBe(150n);
    expect(await fetchCode(149n)).toBe('OFFSET_OUT_OF_RANGE');

    await cluster.restart(before.leader);
    await cluster.waitForRegistered();
    await cluster.waitForIsr(TOPIC, 0, [1, 2, 3], { timeoutMs: 60_000 });
    expect(checkpointedStarts()).toEqual([150, 150, 150]);

    await produce(20);
    const highWatermark = await cluster.highWatermark(TOPIC, 0);
    expect(highWatermark).toBe(220);
    expect(await trim(-1n)).toEqual({ topic: TOPIC, partition: 0, lowWatermark: 220n });
    expect(checkpointedStarts()).toEqual([220, 220, 220]);
    expect(await earliest()).toBe(220n);
    // Writes go on at the end as before.
    await produce(5);
    expect(await cluster.highWatermark(TOPIC, 0)).toBe(225);
    expect(await fetchCode(220n)).toBe('NONE');
  });
});
