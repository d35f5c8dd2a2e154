/**
 * The `compacted-leader-kill` scenario of `npm run chaos -- replication` (issue #34's replicated
 * acceptance; a short version runs in `npm test`, test/integration/broker/replication-compaction.test.ts):
 *
 * Three brokers on one ZooKeeper chroot cleaning without pause (log.cleaner.backoff.ms 200,
 * log.cleaner.min.cleanable.ratio 0.01), a compacted topic of 3 partitions with RF 3,
 * min.insync.replicas 2 and 4 KiB segments (they roll every second or so, so there is always a
 * closed dirty segment to clean), and the keyed workload (test/support/compacted-replication.ts):
 * an idempotent acks=−1 producer over 30 keys per partition, 10% tombstones. Each round waits a
 * random 0.3–2.5 s (writes and cleaning go on), SIGKILLs the leader of a random partition, waits
 * for new leaders, and then either (every third round) SIGKILLs the new leader too after 0–0.5 s
 * (a double failover: the two come back to truncate by leader epoch) or waits for writes to flow
 * and a random 0–4 s more (the leader cleans what the killed replica has not fetched, so it comes
 * back to fetch across gaps); restarts what it killed and waits for the full ISR.
 *
 * After the last round the producer stops, the followers catch up, a consumer reads every
 * partition from its log start to its high watermark through the leaders (every key's latest
 * acknowledged write must be what it reads last for that key), the brokers stop cleanly, and every
 * replica's files are read back and checked (R1–R6 of compacted-replication.ts): every record held
 * was written there, every key's latest acknowledged write survives on every replica, replicas are
 * valid compactions of one history, and log starts, log ends, leader epochs and producer state
 * agree. Besides the 30 keys, 5% of the sends write one-shot keys and 5% delete them: their
 * tombstones are each key's last word and pass delete.retention.ms (30 s) during a long enough
 * run; a replica may then have dropped one, never while keeping the value it deleted.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterClient } from '../../src/client/cluster-client.js';
import { SimpleConsumer } from '../../src/client/simple-consumer.js';
import type { ServiceRun } from '../services/run-dir.js';
import { checkCompactedPartition, compactedLogConfig, ID_HEADER, KeyedWorkload, readReplica, type PartitionCheck } from '../support/compacted-replication.js';
import { readReplicaLog } from '../support/replica-files.js';
import { ReplicatedCluster, type PartitionState } from '../support/replicated-cluster.js';

export const COMPACTED_TOPIC = 'compacted';
const PARTITIONS = [0, 1, 2] as const;
const BROKERS = [1, 2, 3] as const;
const LEADER_TIMEOUT_MS = 60_000;
const ISR_TIMEOUT_MS = 120_000;

/** Broker settings: clean constantly, with a small key map (the test's keys fit many times over). */
export const COMPACTING_BROKER_SETTINGS: Readonly<Record<string, string>> = {
  'shutdown.grace.ms': '1000',
  'log.cleaner.backoff.ms': '200',
  'log.cleaner.min.cleanable.ratio': '0.01',
  'log.cleaner.dedupe.buffer.size': String(1024 * 1024),
};

/**
 * Topic configs: compacted, small segments, and tombstones kept 30 s after a pass first keeps them:
 * longer than a killed replica stays away (a replica that misses a tombstone the leader has already
 * dropped keeps the value it deleted: Kafka's rule too), shorter than a run, so one-shot keys'
 * tombstones are dropped while it runs.
 */
export const COMPACTED_TOPIC_CONFIGS: Readonly<Record<string, string>> = {
  'cleanup.policy': 'compact',
  'segment.bytes': '4096',
  'min.insync.replicas': '2',
  'delete.retention.ms': '30000',
};

export interface CompactedRunOptions {
  readonly run: ServiceRun;
  readonly zookeeper: string;
  readonly rounds: number;
  readonly random: () => number;
  /** Keyed sends per second over all partitions; default 150. */
  readonly rate?: number;
  readonly say: (line: string) => void;
  /** Where a failed run's broker logs, data dirs and writes are copied; none when undefined. */
  readonly out?: string;
}

export interface CompactedRunResult {
  readonly rounds: number;
  readonly faults: number;
  readonly acknowledged: number;
  /** Sends whose outcome is unknown (they may or may not be stored). */
  readonly unknown: number;
  /** Keys whose latest acknowledged write is missing on a replica or in the consumer's read. */
  readonly lost: number;
  /** Ids stored at two offsets. */
  readonly duplicated: number;
  readonly leaderTimes: readonly number[];
  readonly violations: readonly string[];
  readonly notes: readonly string[];
  /** Cleaning passes the brokers logged, swaps recovery finished after a kill, records the replicas no longer hold. */
  readonly cleaning: { readonly passes: number; readonly swapsRecovered: number; readonly recordsRemoved: number };
  readonly checks: readonly PartitionCheck[];
  readonly seconds: number;
}

export async function runCompactedLeaderKills(options: CompactedRunOptions): Promise<CompactedRunResult> {
  const { say, random } = options;
  const began = Date.now();
  const violations: string[] = [];
  const notes: string[] = [];
  const leaderTimes: number[] = [];
  const checks: PartitionCheck[] = [];
  let faults = 0;
  let workload: KeyedWorkload | undefined;
  const cluster = await ReplicatedCluster.start({ run: options.run, zookeeper: options.zookeeper, name: 'compacted-leader-kill', settings: COMPACTING_BROKER_SETTINGS });
  try {
    await cluster.createTopic(COMPACTED_TOPIC, { partitions: PARTITIONS.length, replicationFactor: BROKERS.length, configs: COMPACTED_TOPIC_CONFIGS });
    workload = await KeyedWorkload.start(cluster.bootstrap(), { topic: COMPACTED_TOPIC, partitions: PARTITIONS, keysPerPartition: 30, tombstoneShare: 0.1, oneShotShare: 0.05, ratePerSecond: options.rate ?? 150, random });
    const keyed = workload;
    await keyed.waitForAcknowledged(200, 60_000);

    const heal = async (): Promise<void> => {
      for (const id of BROKERS) if (cluster.state(id) === 'stopped') await cluster.restart(id);
      await cluster.waitForRegistered([...BROKERS], { timeoutMs: ISR_TIMEOUT_MS });
      for (const partition of PARTITIONS) await cluster.waitForIsr(COMPACTED_TOPIC, partition, [...BROKERS], { timeoutMs: ISR_TIMEOUT_MS });
      await keyed.waitForAcknowledged(keyed.acknowledged() + 50, 60_000);
    };

    for (let round = 1; round <= options.rounds; round += 1) {
      try {
        const before = await Promise.all(PARTITIONS.map((partition) => cluster.waitForLeader(COMPACTED_TOPIC, partition, { timeoutMs: LEADER_TIMEOUT_MS })));
        const target = before[Math.floor(random() * before.length)] as PartitionState;
        const victim = target.leader;
        const pause = 300 + Math.floor(random() * 2200);
        await sleep(pause);
        const killedAt = Date.now();
        await cluster.kill(victim);
        faults += 1;
        const after = await Promise.all(before.map((state) => (state.leader === victim ? cluster.waitForLeaderChange(state, { timeoutMs: LEADER_TIMEOUT_MS, intervalMs: 100 }) : Promise.resolve(state))));
        const ms = Date.now() - killedAt;
        leaderTimes.push(ms);
        let what = `killed broker ${victim} (leader of ${COMPACTED_TOPIC}-${target.partition}) after ${pause} ms; new leaders after ${ms} ms`;
        if (round % 3 === 0) {
          // A double failover: the new leader dies too, right after its election; the third replica
          // leads, and both come back to truncate what they wrote in their reigns and catch up.
          const successor = (after.find((state) => state.partition === target.partition) as PartitionState).leader;
          const delay = Math.floor(random() * 500);
          await sleep(delay);
          await cluster.kill(successor);
          faults += 1;
          what += `; then its successor ${successor} after ${delay} ms`;
        } else {
          // Down a while, so the leader cleans what this replica has not fetched yet: it comes back
          // to fetch across the gaps that cleaning left.
          await keyed.waitForAcknowledged(keyed.acknowledged() + 30, 60_000);
          const downtime = Math.floor(random() * 4000);
          await sleep(downtime);
          what += `; restarted after ${downtime} ms more`;
        }
        await heal();
        say(`  round ${round}/${options.rounds}: ${what}; ${keyed.acknowledged()} acknowledged`);
      } catch (error) {
        violations.push(`round ${round}: ${messageOf(error)}`);
        say(`  round ${round}: FAILED: ${messageOf(error)}`);
        await heal().catch((healError: unknown) => violations.push(`round ${round}: could not heal: ${messageOf(healError)}`));
      }
    }

    await heal().catch((error: unknown) => violations.push(`final heal: ${messageOf(error)}`));
    await keyed.stop();
    await waitForFollowers(cluster).catch((error: unknown) => violations.push(`followers did not catch up: ${messageOf(error)}`));
    const consumed = await consumeAll(cluster).catch((error: unknown) => {
      violations.push(`the final read failed: ${messageOf(error)}`);
      return undefined;
    });
    // The followers learn the last high watermark with their next fetch; then everyone stops cleanly.
    await sleep(2_000);
    for (const id of BROKERS) {
      const code = await cluster.stop(id);
      if (code !== 0) violations.push(`broker ${id} stopped with ${code}`);
    }

    const config = compactedLogConfig({ segmentBytes: 4096 });
    for (const partition of PARTITIONS) {
      const replicas = await Promise.all(BROKERS.map((id) => readReplica(id, cluster.dataDir(id), COMPACTED_TOPIC, partition, config)));
      const check = checkCompactedPartition(partition, keyed.writes, replicas);
      checks.push(check);
      violations.push(...check.violations);
      if (consumed !== undefined) violations.push(...checkConsumed(partition, consumed.get(partition) ?? [], keyed));
    }
  } catch (error) {
    violations.push(`scenario stopped: ${messageOf(error)}`);
    say(`  compacted-leader-kill stopped: ${messageOf(error)}`);
  } finally {
    await workload?.stop(5_000);
    if (violations.length > 0 && options.out !== undefined) saveEvidence(cluster, workload, violations, options.out, say);
    await cluster.close();
  }

  const cleaning = cleaningActivity(cluster, checks);
  const writes = workload === undefined ? [] : [...workload.writes.values()];
  notes.push(`${cleaning.passes} cleaning passes, ${cleaning.swapsRecovered} interrupted swaps finished at restart, ${cleaning.recordsRemoved} records removed over the replicas`);
  if (checks.length > 0) notes.push(`held per partition: ${checks.map((check) => `p${check.partition} ${check.held.map((held) => held.records).join('/')} of ${check.logEndOffset} offsets, ${check.keys} keys, ${check.tombstonesDropped} tombstones dropped`).join('; ')}`);
  return {
    rounds: options.rounds,
    faults,
    acknowledged: writes.filter((write) => write.outcome?.type === 'acknowledged').length,
    unknown: writes.filter((write) => write.outcome?.type === 'unknown').length,
    lost: checks.reduce((sum, check) => sum + check.lost, 0),
    duplicated: checks.reduce((sum, check) => sum + check.duplicated, 0),
    leaderTimes,
    violations,
    notes,
    cleaning,
    checks,
    seconds: Math.round((Date.now() - began) / 1000),
  };
}

/** Until every replica's files end where its partition's high watermark is, and the high watermark is the leader's log end. */
async function waitForFollowers(cluster: ReplicatedCluster): Promise<void> {
  for (const partition of PARTITIONS) {
    await cluster.waitFor(
      `every replica of ${COMPACTED_TOPIC}-${partition} at the high watermark`,
      async () => {
        const highWatermark = await cluster.highWatermark(COMPACTED_TOPIC, partition);
        const ends = BROKERS.map((id) => {
          // A cleaner swap may rename a file between the listing and the read: asked again next time.
          const log = readReplicaLog(cluster.dataDir(id), COMPACTED_TOPIC, partition);
          return (log.batches.at(-1)?.lastOffset ?? -1) + 1;
        });
        if (ends.some((end) => end !== highWatermark)) throw new Error(`high watermark ${highWatermark}, replica ends ${ends.join(', ')}`);
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  }
}

interface ConsumedRecord {
  readonly offset: number;
  readonly key: string;
  readonly id: number;
  readonly tombstone: boolean;
}

/** Every partition read through its leader from the log start to the high watermark, as a consumer reads it. */
async function consumeAll(cluster: ReplicatedCluster): Promise<Map<number, ConsumedRecord[]>> {
  const client = await ClusterClient.connect({ bootstrap: cluster.bootstrap(), clientId: 'compacted-reader', allowAutoTopicCreation: false, requestTimeoutMs: 10_000 });
  try {
    const consumer = new SimpleConsumer(client, { retries: 8 });
    const read = new Map<number, ConsumedRecord[]>();
    for (const partition of PARTITIONS) {
      const records: ConsumedRecord[] = [];
      let offset = await consumer.listOffset(COMPACTED_TOPIC, partition, 'earliest');
      const end = await consumer.listOffset(COMPACTED_TOPIC, partition, 'latest');
      while (offset < end) {
        const fetched = await consumer.fetch(COMPACTED_TOPIC, partition, offset, { maxBytes: 256 * 1024 });
        if (fetched.nextOffset <= offset) throw new Error(`${COMPACTED_TOPIC}-${partition}: a fetch at ${offset} below the high watermark ${end} did not move on`);
        for (const record of fetched.records) {
          const id = record.headers.find((header) => header.key === ID_HEADER)?.value;
          records.push({ offset: Number(record.offset), key: record.key?.toString('utf8') ?? '', id: id === null || id === undefined ? Number.NaN : Number(id.toString('utf8')), tombstone: record.value === null });
        }
        offset = fetched.nextOffset;
      }
      read.set(partition, records);
    }
    return read;
  } finally {
    client.close();
  }
}

/** R7: what a consumer reads last for each key is at or after that key's latest acknowledged write (the same write when at it). */
function checkConsumed(partition: number, records: readonly ConsumedRecord[], workload: KeyedWorkload): string[] {
  const newest = new Map<string, ConsumedRecord>();
  const problems: string[] = [];
  let previous = -1;
  for (const record of records) {
    if (record.offset <= previous) problems.push(`p${partition} R7 order: the consumer read offset ${record.offset} after ${previous}`);
    previous = record.offset;
    newest.set(record.key, record);
  }
  const latest = new Map<string, { id: number; offset: number; tombstone: boolean }>();
  for (const write of workload.writes.values()) {
    if (write.partition !== partition || write.outcome?.type !== 'acknowledged') continue;
    const known = latest.get(write.key);
    if (known === undefined || known.offset < write.outcome.offset) latest.set(write.key, { id: write.id, offset: write.outcome.offset, tombstone: write.tombstone });
  }
  for (const [key, acknowledged] of latest) {
    const found = newest.get(key);
    if (found === undefined && acknowledged.tombstone) continue; // past its delete horizon
    if (found === undefined || found.offset < acknowledged.offset || (found.offset === acknowledged.offset && found.id !== acknowledged.id)) {
      problems.push(`p${partition} R7 consumer: ${key}'s latest acknowledged write (id ${acknowledged.id} at ${acknowledged.offset}) is not what it read last (${found === undefined ? 'nothing' : `id ${found.id} at ${found.offset}`})`);
    }
  }
  return problems.slice(0, 10);
}

/** Cleaning passes and finished swaps the broker logs mention, and the records the cleaned replicas no longer hold. */
function cleaningActivity(cluster: ReplicatedCluster, checks: readonly PartitionCheck[]): CompactedRunResult['cleaning'] {
  let passes = 0;
  let swapsRecovered = 0;
  for (const id of cluster.brokerIds) {
    const file = cluster.broker(id).logFile;
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.includes('"msg":"cleaned log"')) passes += 1;
      else if (line.includes('finished or rolled back a cleaner swap')) swapsRecovered += 1;
    }
  }
  const recordsRemoved = checks.reduce((sum, check) => sum + check.held.reduce((inner, held) => inner + (check.logEndOffset - held.records), 0), 0);
  return { passes, swapsRecovered, recordsRemoved };
}

function saveEvidence(cluster: ReplicatedCluster, workload: KeyedWorkload | undefined, violations: readonly string[], out: string, say: (line: string) => void): void {
  const folder = join(out, 'compacted-leader-kill');
  try {
    mkdirSync(folder, { recursive: true });
    for (const id of cluster.brokerIds) {
      const broker = cluster.broker(id);
      const target = join(folder, `broker-${id}`);
      mkdirSync(target, { recursive: true });
      if (existsSync(broker.logFile)) cpSync(broker.logFile, join(target, 'broker.log'));
      if (existsSync(broker.dataDir)) cpSync(broker.dataDir, join(target, 'data'), { recursive: true });
    }
    writeFileSync(join(folder, 'violations.txt'), `${violations.join('\n')}\n`);
    if (workload !== undefined) writeFileSync(join(folder, 'writes.json'), JSON.stringify([...workload.writes.values()]));
    say(`  evidence of compacted-leader-kill saved in ${folder}`);
  } catch (error) {
    say(`  could not save the evidence of compacted-leader-kill: ${messageOf(error)}`);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
