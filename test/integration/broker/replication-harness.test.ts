/**
 * The replication harness (test/support/replicated-cluster.ts) on today's broker, before it
 * replicates: three broker processes on one ZooKeeper chroot, a topic with replication factor 1,
 * the workload (an idempotent producer at acks=-1 and one consumer per partition), the metadata
 * sampler, a pause and a clean restart of one broker, the final read, and the checker. Nothing is
 * lost or reordered, so the checker must find no violation and the replica files (one replica per
 * partition) must hold whole, valid batches up to the high watermark. Then one broker's data dir
 * is wiped, and the checker must report that partition's records lost. This proves the harness;
 * the replication acceptance tests then use it against replicated topics.
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

describe('replication harness on today’s broker', () => {
  it('runs the workload through a pause and a restart with no violation, then reports the records of a wiped data dir lost', { timeout: 90_000 }, async () => {
    cluster = await ReplicatedCluster.start({
      run: openRun(services().runDir),
      zookeeper: zookeeperAddress().connectString,
      name: 'harness',
      // Today's broker refuses the replication settings; a quick clean shutdown keeps the test short.
      replicationDefaults: false,
      settings: { 'shutdown.grace.ms': '1000' },
    });
    const states = await cluster.createTopic(TOPIC, { partitions: 3, replicationFactor: 1 });
    expect(states.map((state) => state.isr.length)).toEqual([1, 1, 1]);

    const sampler = cluster.startMetadataSampler(TOPIC);
    const workload = await cluster.startWorkload({ topic: TOPIC, idempotent: true, ratePerSecond: 300 });
    await workload.waitForAcknowledged(300);

    // A pause the clients ride out: the paused broker's partitions wait, then carry on.
    const paused = states[0]!.leader;
    cluster.pause(paused);
    expect(cluster.liveBrokerIds()).not.toContain(paused);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    cluster.resume(paused);

    // A clean restart on the same port and data dir: its partitions come back with their records.
    const restarted = states[1]!.leader;
    const before = workload.acknowledged();
    expect(await cluster.stop(restarted)).toBe(0);
    await cluster.restart(restarted);
    await cluster.waitForRegistered();
    await cluster.waitForLeader(TOPIC, 1);
    await workload.waitForAcknowledged(before + 600, { timeoutMs: 30_000 });

    await workload.stopProducing();
    const finalRead = await cluster.readAll(TOPIC);
    await workload.waitForConsumers(finalRead);
    await workload.stopConsuming();
    await sampler.stop();

    const result = checkReplicationHistory(cluster.history(TOPIC, finalRead));
    expect(result.violations, formatReport(result)).toEqual([]);
    expect(result.summary.acknowledged).toBeGreaterThanOrEqual(before + 600);
    expect(result.summary.lost).toBe(0);
    expect(result.summary.polledRecords).toBeGreaterThanOrEqual(result.summary.acknowledged);
    expect(result.summary.consumers).toBe(3);
    expect(result.summary.metadataSamples).toBeGreaterThan(0);
    expect(result.toleratedDuplicates).toEqual([]);

    // I6 with one replica per partition: the files hold whole, valid batches up to the high watermark.
    for (const { partition, records } of finalRead) {
      const comparison = await cluster.checkReplicaFiles(TOPIC, partition);
      expect(comparison.ok, formatReplicaComparison(comparison)).toBe(true);
      expect(comparison.highWatermark).toBe(records.length);
      expect(comparison.replicas[0]?.endOffset).toBeGreaterThanOrEqual(records.length);
    }

    // And the checker sees a real loss: without replication, wiping the only replica of the
    // partitions a broker leads loses their records, each acknowledged (unseen) and polled (vanished).
    const wiped = states[2]!.leader;
    const wipedPartitions = new Set(states.filter((state) => state.leader === wiped).map((state) => state.partition));
    const wipedRecords = finalRead.filter((entry) => wipedPartitions.has(entry.partition)).reduce((sum, entry) => sum + entry.records.length, 0);
    expect(wipedRecords).toBeGreaterThan(0);
    await cluster.stop(wiped);
    await cluster.restart(wiped, { wipe: true });
    await cluster.waitForLeader(TOPIC, 2);
    const afterWipe = checkReplicationHistory(cluster.history(TOPIC, await cluster.readAll(TOPIC)));
    expect(afterWipe.summary, formatReport(afterWipe)).toMatchObject({ lost: wipedRecords, unseen: wipedRecords, vanishedPolls: wipedRecords });
    expect(new Set(afterWipe.violations.map((violation) => violation.kind))).toEqual(new Set(['lost', 'vanished-poll']));
  });
});
