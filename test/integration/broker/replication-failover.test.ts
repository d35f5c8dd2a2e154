/**
 * Replication acceptance, failovers (issue #20; replication.md §6 tests 2 and 4, short runs): one
 * ZooKeeper, three broker processes, a topic of 3 partitions with RF=3 and min.insync.replicas 2,
 * an idempotent acks=−1 producer and a consumer per partition running throughout.
 *
 * - Leader SIGKILL ×5: the leader of partition 0 is killed, a new one takes over (another ISR
 *   member, in a higher epoch), the killed broker comes back on its data dir and rejoins the ISR.
 * - Double failover ×3 (KIP-279): the leader is killed, then the newly elected leader too, right
 *   after its election; both come back.
 *
 * After each scenario the checker (test/support/replication-history.ts) must find no violation of
 * I1–I5 and I7 (no acknowledged record lost, no offset with two values, nothing a consumer saw
 * disappears, no duplicate from the idempotent producer, no skipped or repeated poll, leader epochs
 * only grow), and I6: every ISR member holds byte-identical batches below the high watermark.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { openRun } from '../../services/run-dir.js';
import { formatReplicaComparison } from '../../support/replica-files.js';
import { ReplicatedCluster, type PartitionState } from '../../support/replicated-cluster.js';
import { checkReplicationHistory, formatReport } from '../../support/replication-history.js';
import { services, zookeeperAddress } from '../services.js';

const clusters: ReplicatedCluster[] = [];
afterAll(async () => {
  await Promise.all(clusters.map((cluster) => cluster.close()));
});

async function startCluster(name: string): Promise<ReplicatedCluster> {
  const cluster = await ReplicatedCluster.start({ run: openRun(services().runDir), zookeeper: zookeeperAddress().connectString, name, settings: { 'shutdown.grace.ms': '1000' } });
  clusters.push(cluster);
  return cluster;
}

/** Stops the workload, reads everything back, and checks every invariant; returns the checker's summary. */
async function settleAndCheck(cluster: ReplicatedCluster, topic: string, workload: Awaited<ReturnType<ReplicatedCluster['startWorkload']>>, sampler: ReturnType<ReplicatedCluster['startMetadataSampler']>): Promise<ReturnType<typeof checkReplicationHistory>> {
  await workload.stopProducing();
  for (let partition = 0; partition < 3; partition += 1) await cluster.waitForIsr(topic, partition, [1, 2, 3], { timeoutMs: 60_000 });
  const finalRead = await cluster.readAll(topic);
  await workload.waitForConsumers(finalRead);
  await workload.stopConsuming();
  await sampler.stop();
  const result = checkReplicationHistory(cluster.history(topic, finalRead));
  expect(result.violations, formatReport(result)).toEqual([]);
  for (let partition = 0; partition < 3; partition += 1) {
    const comparison = await cluster.checkReplicaFiles(topic, partition);
    expect(comparison.ok, formatReplicaComparison(comparison)).toBe(true);
  }
  return result;
}

describe('replication: failovers', () => {
  it('survives 5 SIGKILLs of the leader with every acknowledged record kept, once, on every replica', { timeout: 240_000 }, async () => {
    const topic = 'failover-kills';
    const cluster = await startCluster('kills');
    await cluster.createTopic(topic, { partitions: 3, replicationFactor: 3 });
    const sampler = cluster.startMetadataSampler(topic);
    const workload = await cluster.startWorkload({ topic, idempotent: true, ratePerSecond: 200 });
    await workload.waitForAcknowledged(200);
    let previous: PartitionState = await cluster.waitForLeader(topic, 0);
    for (let round = 1; round <= 5; round += 1) {
      const victim = previous.leader;
      await cluster.kill(victim);
      const next = await cluster.waitForLeaderChange(previous, { timeoutMs: 30_000 });
      expect(next.leader, `round ${round}: a live ISR member leads`).not.toBe(victim);
      expect(next.leaderEpoch, `round ${round}: the epoch grows`).toBeGreaterThan(previous.leaderEpoch);
      const acknowledged = workload.acknowledged();
      await workload.waitForAcknowledged(acknowledged + 100, { timeoutMs: 30_000 });
      await cluster.restart(victim);
      await cluster.waitForRegistered();
      await cluster.waitForIsr(topic, 0, [1, 2, 3], { timeoutMs: 60_000 });
      previous = await cluster.partitionState(topic, 0);
    }
    const result = await settleAndCheck(cluster, topic, workload, sampler);
    expect(result.summary.acknowledged).toBeGreaterThan(700);
    console.log(`leader SIGKILL ×5: ${result.summary.acknowledged} acknowledged, ${result.summary.lost} lost, ${result.toleratedDuplicates.length} duplicates`);
  });

  it('survives 3 double failovers (the new leader killed right after its election): logs converge by leader epoch', { timeout: 240_000 }, async () => {
    const topic = 'failover-double';
    const cluster = await startCluster('double');
    await cluster.createTopic(topic, { partitions: 3, replicationFactor: 3 });
    const sampler = cluster.startMetadataSampler(topic);
    const workload = await cluster.startWorkload({ topic, idempotent: true, ratePerSecond: 200 });
    await workload.waitForAcknowledged(200);
    for (let round = 1; round <= 3; round += 1) {
      const first = await cluster.waitForLeader(topic, 0);
      await cluster.kill(first.leader);
      const second = await cluster.waitForLeaderChange(first, { timeoutMs: 30_000, intervalMs: 50 });
      await cluster.kill(second.leader);
      // The third replica leads now; the two killed ones come back as followers, truncate what
      // they wrote in their short reigns that the leader never got, and catch up.
      await cluster.restart(first.leader);
      await cluster.restart(second.leader);
      await cluster.waitForRegistered();
      for (let partition = 0; partition < 3; partition += 1) await cluster.waitForIsr(topic, partition, [1, 2, 3], { timeoutMs: 60_000 });
      const acknowledged = workload.acknowledged();
      await workload.waitForAcknowledged(acknowledged + 100, { timeoutMs: 30_000 });
    }
    const result = await settleAndCheck(cluster, topic, workload, sampler);
    console.log(`double failover ×3: ${result.summary.acknowledged} acknowledged, ${result.summary.lost} lost, ${result.toleratedDuplicates.length} duplicates`);
  });
});
