/**
 * Replication acceptance, power loss (replication.md §6 test 9, short run; the full ×50 is
 * `npm run chaos -- replication --scenario power-loss`): three brokers journaling their fsyncs
 * (TRIBUTARY_FSYNC_JOURNAL), a topic of 3 partitions with RF=3 and min.insync.replicas 2 on
 * small segments (they roll during the run), an idempotent acks=−1 producer and a consumer per
 * partition running throughout. Three rounds: the leader of partition 0 loses power, then it and
 * another broker, then all three at once. Each victim is SIGKILLed, its data dir cut back to
 * what it had fsynced (test/support/power-loss.ts: the page cache is lost), and restarted.
 *
 * Every acknowledged record was fsynced on every in-sync replica, so none may be lost, and
 * nothing a consumer saw may vanish: the checker must find no violation of I1–I5 and I7, and
 * every ISR member must hold byte-identical batches below the high watermark (I6).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { openRun } from '../../services/run-dir.js';
import { formatPowerLoss, readFsyncJournal } from '../../support/power-loss.js';
import { formatReplicaComparison } from '../../support/replica-files.js';
import { ReplicatedCluster } from '../../support/replicated-cluster.js';
import { checkReplicationHistory, formatReport } from '../../support/replication-history.js';
import { services, zookeeperAddress } from '../services.js';

const clusters: ReplicatedCluster[] = [];
afterAll(async () => {
  await Promise.all(clusters.map((cluster) => cluster.close()));
});

describe('replication: power loss', () => {
  it('loses no acknowledged record when 1, 2, then all 3 brokers lose their unsynced writes', { timeout: 150_000 }, async () => {
    const topic = 'power-loss';
    const cluster = await ReplicatedCluster.start({
      run: openRun(services().runDir),
      zookeeper: zookeeperAddress().connectString,
      name: 'power-loss',
      settings: { 'shutdown.grace.ms': '1000', 'log.segment.bytes': '16384' },
      fsyncJournal: true,
    });
    clusters.push(cluster);
    await cluster.createTopic(topic, { partitions: 3, replicationFactor: 3 });
    const sampler = cluster.startMetadataSampler(topic);
    const workload = await cluster.startWorkload({ topic, idempotent: true, ratePerSecond: 200 });
    await workload.waitForAcknowledged(300);

    const reports: string[] = [];
    for (const round of [1, 2, 3]) {
      const before = await cluster.waitForLeader(topic, 0);
      const others = cluster.brokerIds.filter((id) => id !== before.leader);
      const victims = [before.leader, ...others].slice(0, round);
      await Promise.all(victims.map((id) => cluster.kill(id)));
      for (const id of victims) reports.push(`round ${round}, broker ${id}: ${formatPowerLoss(cluster.loseUnsyncedWrites(id))}`);
      await Promise.all(victims.map((id) => cluster.restart(id)));
      await cluster.waitForRegistered([1, 2, 3], { timeoutMs: 60_000 });
      const after = await cluster.waitForLeader(topic, 0, { timeoutMs: 60_000 });
      expect(after.leaderEpoch, `round ${round}: a new epoch after the loss`).toBeGreaterThan(before.leaderEpoch);
      for (let partition = 0; partition < 3; partition += 1) await cluster.waitForIsr(topic, partition, [1, 2, 3], { timeoutMs: 60_000 });
      const acknowledged = workload.acknowledged();
      await workload.waitForAcknowledged(acknowledged + 100, { timeoutMs: 30_000 });
    }
    for (const id of cluster.brokerIds) expect(readFsyncJournal(cluster.broker(id).fsyncJournal!).records, `broker ${id} journaled its fsyncs`).toBeGreaterThan(0);

    await workload.stopProducing();
    const finalRead = await cluster.readAll(topic);
    await workload.waitForConsumers(finalRead);
    await workload.stopConsuming();
    await sampler.stop();
    const result = checkReplicationHistory(cluster.history(topic, finalRead));
    expect(result.violations, `${formatReport(result)}\n${reports.join('\n')}`).toEqual([]);
    for (let partition = 0; partition < 3; partition += 1) {
      const comparison = await cluster.checkReplicaFiles(topic, partition);
      expect(comparison.ok, formatReplicaComparison(comparison)).toBe(true);
    }
    console.log(`power loss ×3 rounds (1, 2, 3 brokers): ${result.summary.acknowledged} acknowledged, ${result.summary.lost} lost, ${result.summary.duplicatedValues} duplicated\n${reports.join('\n')}`);
  });
});
