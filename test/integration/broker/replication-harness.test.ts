/**
 * The replication harness (test/support/replicated-started.ts) on a topic with replication
 * factor 1: three broker processes on one ZooKeeper chroot, the workload (an idempotent producer
 * at acks=-1 and one consumer per partition), the metadata sampler, a pause and a clean restart of
 * one broker, the final read, and the checker. Nothing is lost or reordered, so the checker must
 * find no violation and the replica files (one replica per partition) must hold whole, valid
 * batches up to the high watermark. Then the only replica of a partition comes back with a wiped
 * data dir: the partition stays offline (no unclean election resets it to an empty log), and the
 * checker, given a final read without its records, reports them lost. This proves the harness;
 * the replication acceptance tests use it on replicated topics.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { openRun } from '../../services/run-dir.js';
import { formatReplicaComparison } from '../../support/replica-files.js';
import { ReplicatedCluster } from '../../support/replicated-cluster.js';
import { checkReplicationHistory, formatReport } from '../../support/replication-history.js';
import { services, zookeeperAddress } from '../services.js';

const TOPIC = 'harness-events';

let cluster: ReplicatedCluster | undefined;
afterAll(async () => {
  await cluster?.close();
});

describe('replication harness on a topic with one replica per partition', () => {
  it('runs the workload through a pause and a restart with no violation; a wiped only replica keeps its partition offline, and the checker reports its records lost', { timeout: 90_000 }, async () => {
    const started = await ReplicatedCluster.start({
      run: openRun(services().runDir),
      zookeeper: zookeeperAddress().connectString,
      name: 'harness',
      // Replication factor 1 and one in-sync replica: a quick clean shutdown keeps the test short.
      replicationDefaults: false,
      settings: { 'shutdown.grace.ms': '1000' },
    });
    cluster = started;
    const states = await started.createTopic(TOPIC, { partitions: 3, replicationFactor: 1 });
    expect(states.map((state) => state.isr.length)).toEqual([1, 1, 1]);

    const sampler = started.startMetadataSampler(TOPIC);
    const workload = await started.startWorkload({ topic: TOPIC, idempotent: true, ratePerSecond: 300 });
    await workload.waitForAcknowledged(300);

    // A pause the clients ride out: the paused broker's partitions wait, then carry on.
    const paused = states[0]!.leader;
    started.pause(paused);
    expect(started.liveBrokerIds()).not.toContain(paused);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    started.resume(paused);

    // A clean restart on the same port and data dir: its partitions come back with their records.
    const restarted = states[1]!.leader;
    const before = workload.acknowledged();
    expect(await started.stop(restarted)).toBe(0);
    await started.restart(restarted);
    await started.waitForRegistered();
    await started.waitForLeader(TOPIC, 1);
    await workload.waitForAcknowledged(before + 600, { timeoutMs: 30_000 });

    await workload.stopProducing();
    const finalRead = await started.readAll(TOPIC);
    await workload.waitForConsumers(finalRead);
    await workload.stopConsuming();
    await sampler.stop();

    const result = checkReplicationHistory(started.history(TOPIC, finalRead));
    expect(result.violations, formatReport(result)).toEqual([]);
    expect(result.summary.acknowledged).toBeGreaterThanOrEqual(before + 600);
    expect(result.summary.lost).toBe(0);
    expect(result.summary.polledRecords).toBeGreaterThanOrEqual(result.summary.acknowledged);
    expect(result.summary.consumers).toBe(3);
    expect(result.summary.metadataSamples).toBeGreaterThan(0);
    expect(result.toleratedDuplicates).toEqual([]);

    // I6 with one replica per partition: the files hold whole, valid batches up to the high watermark.
    for (const { partition, records } of finalRead) {
      const comparison = await started.checkReplicaFiles(TOPIC, partition);
      expect(comparison.ok, formatReplicaComparison(comparison)).toBe(true);
      expect(comparison.highWatermark).toBe(records.length);
      expect(comparison.replicas[0]?.endOffset).toBeGreaterThanOrEqual(records.length);
    }

    // The only replica of a partition comes back on an empty disk (a new storage id): the
    // controller does not elect it (that would reset the partition to an empty log), so the
    // partition stays offline, and its records are lost — the checker must say exactly that.
    const wiped = states[2]!.leader;
    const wipedPartitions = new Set(states.filter((state) => state.leader === wiped).map((state) => state.partition));
    const wipedRecords = finalRead.filter((entry) => wipedPartitions.has(entry.partition)).reduce((sum, entry) => sum + entry.records.length, 0);
    expect(wipedRecords).toBeGreaterThan(0);
    await started.stop(wiped);
    await started.restart(wiped, { wipe: true });
    await started.waitForRegistered();
    for (const partition of wipedPartitions) {
      await started.waitFor(`${TOPIC}-${partition} offline with broker ${wiped} its last in-sync replica`, async () => {
        const stored = await started.zookeeperPartitionState(TOPIC, partition);
        return stored !== undefined && stored.leader === -1 && stored.isr.join(',') === String(wiped) ? true : undefined;
      });
    }
    // Still offline a while later: the controller has seen the broker back and keeps it so.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    for (const partition of wipedPartitions) expect((await started.partitionState(TOPIC, partition)).leader).toBe(-1);
    const withoutWiped = finalRead.map((entry) => (wipedPartitions.has(entry.partition) ? { ...entry, records: [] } : entry));
    const afterWipe = checkReplicationHistory(started.history(TOPIC, withoutWiped));
    expect(afterWipe.summary, formatReport(afterWipe)).toMatchObject({ lost: wipedRecords, unseen: wipedRecords, vanishedPolls: wipedRecords });
    expect(new Set(afterWipe.violations.map((violation) => violation.kind))).toEqual(new Set(['lost', 'vanished-poll']));
  });
});
