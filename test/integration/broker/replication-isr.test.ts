/**
 * Replication acceptance, the ISR under faults (issue #20; replication.md §6 tests 6, 7, 8 and 11,
 * short runs): one ZooKeeper, three broker processes (session timeout 6 s, replica.lag.time.max.ms
 * 10 s), topics with RF=3 and min.insync.replicas 2.
 *
 * - A follower SIGSTOPped: the leader drops it from the ISR (lag bound 2.5 s there, below the
 *   session timeout), acks=−1 writes keep succeeding with two in sync; after SIGCONT it catches up
 *   and the ISR grows back.
 * - Both followers SIGSTOPped: once the ISR is the leader alone, acks=−1 is refused with
 *   NOT_ENOUGH_REPLICAS (19) and the high watermark stands still; after SIGCONT writes succeed.
 * - A zombie leader: SIGSTOPped past its session timeout, a new leader is elected and takes
 *   writes; SIGCONT: the old leader completes no acks=−1 write, steps down, and what it held of
 *   its own epoch beyond the new leader's log is truncated.
 * - A wiped follower: it comes back with an empty data dir (a new storage id), is out of the ISR
 *   until it has copied everything, then joins; the records are all there.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { KafkaConnection } from '../../../src/client/connection.js';
import { ProduceApi } from '../../../src/protocol/apis/produce.js';
import { KafkaErrorCode } from '../../../src/protocol/kafka-errors.js';
import { encodeRecordBatch } from '../../../src/protocol/records.js';
import { LOOPBACK } from '../../services/network.js';
import { openRun } from '../../services/run-dir.js';
import { formatReplicaComparison } from '../../support/replica-files.js';
import { ReplicatedCluster } from '../../support/replicated-cluster.js';
import { checkReplicationHistory, formatReport } from '../../support/replication-history.js';
import { services, zookeeperAddress } from '../services.js';

const clusters: ReplicatedCluster[] = [];
afterAll(async () => {
  await Promise.all(clusters.map((cluster) => cluster.close()));
});

async function startCluster(name: string, settings: Readonly<Record<string, string>> = {}): Promise<ReplicatedCluster> {
  const cluster = await ReplicatedCluster.start({ run: openRun(services().runDir), zookeeper: zookeeperAddress().connectString, name, settings: { 'shutdown.grace.ms': '1000', ...settings } });
  clusters.push(cluster);
  return cluster;
}

/**
 * One acks=−1 Produce of one record straight to `brokerId`; resolves with the partition's error
 * code. NOT_LEADER_OR_FOLLOWER is asked again for a while, as clients do: a broker named leader
 * in the metadata takes the role a moment later.
 */
async function produceOnce(cluster: ReplicatedCluster, brokerId: number, topic: string, value: string, timeoutMs = 5_000): Promise<number> {
  const connection = await KafkaConnection.open(LOOPBACK, cluster.broker(brokerId).port, { requestTimeoutMs: timeoutMs + 5_000 });
  try {
    for (let attempt = 0; ; attempt += 1) {
      const batch = encodeRecordBatch([{ value: Buffer.from(value) }], { baseTimestamp: Date.now() });
      const response = await connection.request(ProduceApi, 8, { transactionalId: null, acks: -1, timeoutMs, topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }] });
      const errorCode = response.responses[0]?.partitionResponses[0]?.errorCode ?? -99;
      if (errorCode !== KafkaErrorCode.NOT_LEADER_OR_FOLLOWER || attempt >= 20) return errorCode;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    connection.close();
  }
}

describe('replication: the ISR under faults', () => {
  it('drops a paused follower from the ISR, keeps taking acks=-1 writes, and takes it back after it catches up', { timeout: 150_000 }, async () => {
    const topic = 'isr-pause';
    // A lag bound below the session timeout: the leader drops the follower before the controller
    // would (after its session expires), so the leader's own conditional ISR write is what is tested.
    const cluster = await startCluster('pause', { 'replica.lag.time.max.ms': '2500' });
    await cluster.createTopic(topic, { partitions: 1, replicationFactor: 3 });
    const sampler = cluster.startMetadataSampler(topic);
    const workload = await cluster.startWorkload({ topic, idempotent: true, ratePerSecond: 100 });
    await workload.waitForAcknowledged(100);
    const { leader, replicas } = await cluster.waitForLeader(topic, 0);
    const follower = replicas.find((id) => id !== leader)!;
    const others = replicas.filter((id) => id !== follower);
    cluster.pause(follower);
    await cluster.waitForIsr(topic, 0, others, { timeoutMs: 30_000 });
    const acknowledged = workload.acknowledged();
    await workload.waitForAcknowledged(acknowledged + 200, { timeoutMs: 20_000 });
    cluster.resume(follower);
    await cluster.waitForIsr(topic, 0, replicas, { timeoutMs: 40_000 });
    await workload.stopProducing();
    const finalRead = await cluster.readAll(topic);
    await workload.waitForConsumers(finalRead);
    await workload.stopConsuming();
    await sampler.stop();
    const result = checkReplicationHistory(cluster.history(topic, finalRead));
    expect(result.violations, formatReport(result)).toEqual([]);
    const comparison = await cluster.checkReplicaFiles(topic, 0);
    expect(comparison.ok, formatReplicaComparison(comparison)).toBe(true);
  });

  it('refuses acks=-1 with NOT_ENOUGH_REPLICAS once both followers are out, with the high watermark still, and writes again after they return', { timeout: 150_000 }, async () => {
    const topic = 'isr-min';
    const cluster = await startCluster('min-isr');
    await cluster.createTopic(topic, { partitions: 1, replicationFactor: 3 });
    const { leader, replicas } = await cluster.waitForLeader(topic, 0);
    expect(await produceOnce(cluster, leader, topic, 'before')).toBe(0);
    const followers = replicas.filter((id) => id !== leader);
    for (const id of followers) cluster.pause(id);
    await cluster.waitForIsr(topic, 0, [leader], { timeoutMs: 30_000 });
    const highWatermark = await cluster.highWatermark(topic, 0);
    expect(await produceOnce(cluster, leader, topic, 'refused')).toBe(KafkaErrorCode.NOT_ENOUGH_REPLICAS);
    expect(await cluster.highWatermark(topic, 0)).toBe(highWatermark);
    for (const id of followers) cluster.resume(id);
    await cluster.waitForIsr(topic, 0, replicas, { timeoutMs: 40_000 });
    expect(await produceOnce(cluster, leader, topic, 'after')).toBe(0);
    const values = (await cluster.readAll(topic))[0]!.records;
    expect(values.length).toBe(2);
  });

  it('fences a zombie leader: paused past its session, it completes no acks=-1 write on resuming and steps down', { timeout: 150_000 }, async () => {
    const topic = 'isr-zombie';
    const cluster = await startCluster('zombie');
    await cluster.createTopic(topic, { partitions: 1, replicationFactor: 3 });
    const sampler = cluster.startMetadataSampler(topic);
    const workload = await cluster.startWorkload({ topic, idempotent: true, ratePerSecond: 100 });
    await workload.waitForAcknowledged(100);
    const before = await cluster.waitForLeader(topic, 0);
    const zombie = before.leader;
    // A request in flight to the zombie when it freezes: it must not be acknowledged.
    const stuck = produceOnce(cluster, zombie, topic, 'zombie-write', 30_000);
    cluster.pause(zombie);
    const after = await cluster.waitForLeaderChange(before, { timeoutMs: 30_000 });
    expect(after.leaderEpoch).toBeGreaterThan(before.leaderEpoch);
    const acknowledged = workload.acknowledged();
    await workload.waitForAcknowledged(acknowledged + 200, { timeoutMs: 30_000 });
    cluster.resume(zombie);
    expect(await stuck).not.toBe(0);
    await cluster.waitForIsr(topic, 0, before.replicas, { timeoutMs: 60_000 });
    expect((await cluster.partitionState(topic, 0)).leader).toBe(after.leader);
    await workload.stopProducing();
    const finalRead = await cluster.readAll(topic);
    await workload.waitForConsumers(finalRead);
    await workload.stopConsuming();
    await sampler.stop();
    const result = checkReplicationHistory(cluster.history(topic, finalRead));
    expect(result.violations, formatReport(result)).toEqual([]);
    const comparison = await cluster.checkReplicaFiles(topic, 0);
    expect(comparison.ok, formatReplicaComparison(comparison)).toBe(true);
  });

  it('brings back a follower with a wiped disk only after it has copied everything', { timeout: 150_000 }, async () => {
    const topic = 'isr-wiped';
    const cluster = await startCluster('wiped');
    await cluster.createTopic(topic, { partitions: 1, replicationFactor: 3 });
    const workload = await cluster.startWorkload({ topic, idempotent: true, ratePerSecond: 200 });
    await workload.waitForAcknowledged(500);
    const { leader, replicas } = await cluster.waitForLeader(topic, 0);
    const follower = replicas.find((id) => id !== leader)!;
    await cluster.kill(follower);
    await cluster.waitForIsr(topic, 0, replicas.filter((id) => id !== follower), { timeoutMs: 30_000 });
    await cluster.restart(follower, { wipe: true });
    await cluster.waitForIsr(topic, 0, replicas, { timeoutMs: 60_000 });
    await workload.stopProducing();
    const finalRead = await cluster.readAll(topic);
    await workload.waitForConsumers(finalRead);
    await workload.stopConsuming();
    const result = checkReplicationHistory(cluster.history(topic, finalRead));
    expect(result.violations, formatReport(result)).toEqual([]);
    const comparison = await cluster.checkReplicaFiles(topic, 0);
    expect(comparison.ok, formatReplicaComparison(comparison)).toBe(true);
    expect(comparison.replicas.find((replica) => replica.brokerId === follower)?.endOffset).toBeGreaterThanOrEqual(finalRead[0]!.records.length);
  });
});
