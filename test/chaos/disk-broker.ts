/**
 * Disk full under a broker (issue #22; reliability reference §8 S9): one standalone `tributary
 * broker start` process whose data dir is a small tmpfs (test/support/tmpfs.ts), a topic of 3
 * partitions with small segments (so rolls, index entries, producer snapshots and checkpoints meet
 * the full disk too), two producer loops sending acks=−1 Produce requests over the wire the whole
 * time (raw requests: every answer's error code is seen, nothing is retried behind our back), and
 * cycle after cycle:
 *
 *   1. produce normally for a moment;
 *   2. fill the filesystem to its last page (a filler file);
 *   3. wait until produce requests are refused, then read every partition back (checked batch by
 *      batch, test/support/verified-read.ts) while the disk is still full;
 *   4. every `killEvery`-th cycle: SIGKILL the broker while the disk is full, start it again (with
 *      ZooKeeper on the still-full disk; standalone once the space is back) and read it back: a
 *      crash during ENOSPC recovers to a valid log;
 *   5. give the space back: delete the filler, or (every 4th cycle) remount the tmpfs 2 MiB larger;
 *   6. wait for the next acknowledged produce: writes resume without a restart.
 * At the end, a clean stop and start, and a last full read.
 *
 * Invariants, checked at every read against everything acknowledged so far:
 *   - a refusal is KAFKA_STORAGE_ERROR (56), never another code, and the broker process stays up;
 *   - nothing served is corrupt (CRC, magic, offsets following on; verified-read.ts);
 *   - every acknowledged record is there, unchanged, unless retention (1 MiB a partition, so that
 *     the log fits the small disk cycle after cycle) deleted its segment since; no value is stored twice; nothing is stored
 *     that was never sent, and no record of a refused request is ever stored (a refused batch was
 *     not written, not even in part);
 *   - reads are served while the disk is full, and writes resume once space returns.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { cpSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { KafkaConnection } from '../../src/client/connection.js';
import { CreateTopicsApi } from '../../src/protocol/apis/create-topics.js';
import { ProduceApi } from '../../src/protocol/apis/produce.js';
import { ListOffsetsApi } from '../../src/protocol/apis/list-offsets.js';
import { encodeRecordBatch } from '../../src/protocol/records.js';
import { freePort, LOOPBACK } from '../services/network.js';
import type { ServiceRun } from '../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../support/brokers.js';
import { residentBytes } from '../support/process-memory.js';
import { fillDisk, MIB, mountTmpfs, removeFiller, resizeTmpfs, unmountTmpfs, type Filler } from '../support/tmpfs.js';
import { readVerified } from '../support/verified-read.js';

export const DISK_TOPIC = 'disk-full';
const PARTITIONS = [0, 1, 2] as const;
const KAFKA_STORAGE_ERROR = 56;

export interface DiskFullBrokerOptions {
  readonly run: ServiceRun;
  readonly cycles: number;
  readonly random: () => number;
  /** SIGKILL the broker while the disk is full every this many cycles (0: never). */
  readonly killEvery?: number;
  /**
   * ZooKeeper's `host:port` (the broker gets a chroot of its own): coordination on its own disk,
   * as deployed, so a broker killed on the full disk is started again at once, still full. Without
   * it the broker is standalone, its coordination file (topics, partition states) shares the full
   * disk, and a killed broker is started again once the space is back: it cannot record its new
   * leader epochs before.
   */
  readonly zookeeper?: string;
  /** The tmpfs size at the start (default 8 MiB). */
  readonly sizeBytes?: number;
  /** Called in every cycle while the disk is full (a test's own client checks), with the bootstrap address; a throw is a violation. */
  readonly whileFull?: (bootstrap: string) => Promise<void>;
  /** Offsets probed per partition per read (verified-read.ts). */
  readonly probes?: number;
  readonly say?: (line: string) => void;
}

export interface DiskFullBrokerResult {
  readonly cycles: number;
  readonly fills: number;
  readonly kills: number;
  /** Produce requests answered with an error, by error code. */
  readonly refusedByCode: ReadonlyMap<number, number>;
  readonly refusedRequests: number;
  readonly acknowledged: number;
  readonly lost: number;
  /** Records of refused requests found stored. */
  readonly refusedStored: number;
  readonly duplicated: number;
  /** Acknowledged records retention deleted since (below the log start): no longer checked. */
  readonly retired: number;
  /** Checked reads of every partition while the disk was full. */
  readonly readsWhileFull: number;
  /** Milliseconds from space returning to the next acknowledged produce. */
  readonly resumeMs: readonly number[];
  readonly peakRssBytes: number;
  readonly violations: readonly string[];
  readonly brokerLog: string;
}

type Model = Map<number, Map<bigint, string>>;

interface Traffic {
  readonly model: Model;
  readonly sent: Set<string>;
  readonly refused: Set<string>;
  readonly refusedByCode: Map<number, number>;
  acknowledged: number;
  refusedRequests: number;
  /** When each partition last acknowledged a request. */
  readonly lastAckAt: Map<number, number>;
  lastRefusalAt: number;
  stop: boolean;
  readonly violations: string[];
}

export async function runDiskFullBroker(options: DiskFullBrokerOptions): Promise<DiskFullBrokerResult> {
  const say = options.say ?? (() => undefined);
  const port = await freePort();
  // The data dir startBrokerProcess will use, mounted first.
  const dataDir = join(options.run.dir, `broker-1-${port}`, 'data');
  let size = options.sizeBytes ?? 8 * MIB;
  mountTmpfs(dataDir, size);
  const traffic: Traffic = {
    model: new Map(PARTITIONS.map((partition) => [partition, new Map<bigint, string>()])),
    sent: new Set(),
    refused: new Set(),
    refusedByCode: new Map(),
    acknowledged: 0,
    refusedRequests: 0,
    lastAckAt: new Map(),
    lastRefusalAt: 0,
    stop: false,
    violations: [],
  };
  const violations = traffic.violations;
  const resumeMs: number[] = [];
  let fills = 0;
  let kills = 0;
  let lost = 0;
  let refusedStored = 0;
  let duplicated = 0;
  let readsWhileFull = 0;
  let retired = 0;
  let peakRssBytes = 0;
  let broker: BrokerProcess | undefined;
  const fillers: Filler[] = [];
  const sampleRss = (): void => {
    if (broker !== undefined) peakRssBytes = Math.max(peakRssBytes, residentBytes(broker.daemon.pid));
  };
  const rssTimer = setInterval(sampleRss, 200);

  /** Reads every partition back, checked, against the model; returns the violations found. */
  const verify = async (when: string): Promise<string[]> => {
    const found: string[] = [];
    const connection = await KafkaConnection.open(LOOPBACK, port, { requestTimeoutMs: 30_000 });
    try {
      await waitForReads(connection);
      for (const partition of PARTITIONS) {
        const where = `${DISK_TOPIC}-${partition} (${when})`;
        // What was acknowledged before the read began: the loops go on producing meanwhile, and
        // a record acknowledged after the read fetched the high watermark is checked next time.
        const acked = traffic.model.get(partition) ?? new Map<bigint, string>();
        const ackedBefore = [...acked];
        const read = await readVerified(connection, DISK_TOPIC, partition, { probes: options.probes ?? 5, random: options.random });
        found.push(...read.violations.map((violation) => `${violation} (${when})`));
        for (const [offset, value] of ackedBefore) {
          if (offset < read.logStart) {
            // Deleted by retention: never checked again.
            acked.delete(offset);
            retired += 1;
            continue;
          }
          const stored = read.records.get(offset)?.value;
          if (stored === value) continue;
          lost += 1;
          found.push(`${where}: acknowledged offset ${offset} ("${value.slice(0, 24)}") ${stored === undefined ? 'is missing' : `holds "${stored.slice(0, 24)}"`} (read ${read.logStart} to the high watermark ${read.end})`);
        }
        const seen = new Map<string, bigint>();
        for (const [offset, record] of read.records) {
          if (traffic.refused.has(record.value)) {
            refusedStored += 1;
            found.push(`${where}: offset ${offset} holds "${record.value.slice(0, 24)}", whose produce request was refused`);
          } else if (!traffic.sent.has(record.value)) {
            found.push(`${where}: offset ${offset} holds "${record.value.slice(0, 24)}", which was never sent`);
          }
          const before = seen.get(record.value);
          if (before !== undefined) {
            duplicated += 1;
            found.push(`${where}: "${record.value.slice(0, 24)}" stored twice, at ${before} and ${offset}`);
          }
          seen.set(record.value, offset);
        }
      }
    } finally {
      connection.close();
    }
    return found;
  };

  const alive = (when: string): boolean => {
    if (broker?.daemon.pid !== undefined && processAlive(broker.daemon.pid)) return true;
    violations.push(`the broker process died (${when}); see ${broker?.logFile ?? 'its log'}`);
    return false;
  };

  let loops: Promise<void>[] = [];
  try {
    broker = await startBrokerProcess({
      run: options.run,
      id: 1,
      port,
      ...(options.zookeeper === undefined ? {} : { zookeeper: `${options.zookeeper}/disk-full-${process.pid}-${port}` }),
      settings: {
        ...(options.zookeeper === undefined ? {} : { 'zookeeper.session.timeout.ms': '6000' }),
        'num.partitions': String(PARTITIONS.length),
        'log.segment.bytes': String(64 * 1024),
        'log.index.interval.bytes': '1024',
        'log.retention.ms': '-1',
        // Retention keeps the log to about 3 MiB, so 20 cycles fit the 8 MiB disk; it runs on the
        // full disk too (and must delete nothing it cannot record).
        'log.retention.bytes': String(MIB),
        'log.retention.check.interval.ms': '1000',
      },
    });
    // The topic exists before the first fill.
    await createTopic(port);
    loops = [0, 1].map((loop) => produceLoop(port, loop, traffic, options.random));
    for (let cycle = 1; cycle <= options.cycles && violations.length === 0; cycle += 1) {
      await sleep(300 + Math.floor(options.random() * 500));
      // A filler left by a remount cycle goes now: the log needs the room for the cycles to come.
      for (const left of fillers.splice(0)) removeFiller(left);
      const filler = fillDisk(dataDir);
      fillers.push(filler);
      fills += 1;
      const filledAt = Date.now();
      // Requests in flight when the filler took the last page may still be acknowledged: they
      // fitted into pages the log already held. Wait for the first refusal.
      const refused = await waitFor(() => traffic.lastRefusalAt > filledAt, 15_000);
      if (!refused) violations.push(`cycle ${cycle}: no produce request was refused within 15 s of filling the disk`);
      await sleep(200 + Math.floor(options.random() * 400));
      if (!alive(`cycle ${cycle}, disk full`)) break;
      const whileFull = await verify(`cycle ${cycle}, disk full`);
      violations.push(...whileFull.map((violation) => `cycle ${cycle}: ${violation}`));
      if (whileFull.length === 0) readsWhileFull += 1;
      if (options.whileFull !== undefined) {
        try {
          await options.whileFull(broker.bootstrap);
        } catch (error) {
          violations.push(`cycle ${cycle}: ${(error as Error).message}`);
        }
      }
      const kill = (options.killEvery ?? 0) > 0 && cycle % (options.killEvery ?? 1) === 0;
      const restartWhileFull = options.zookeeper !== undefined;
      if (kill) {
        // A crash while the disk is full. With ZooKeeper, a start on the still-full disk: recovery
        // must manage without writing, and the broker serve what it holds.
        await broker.kill();
        kills += 1;
        if (restartWhileFull) {
          await broker.restart();
          const afterCrash = await verify(`cycle ${cycle}, restarted on the full disk after a SIGKILL`);
          violations.push(...afterCrash.map((violation) => `cycle ${cycle}: ${violation}`));
        }
      }
      let how: string;
      if (cycle % 4 === 0) {
        size += 2 * MIB;
        resizeTmpfs(dataDir, size);
        how = `remounted at ${size / MIB} MiB`;
      } else {
        removeFiller(filler);
        fillers.splice(fillers.indexOf(filler), 1);
        how = 'filler deleted';
      }
      const freedAt = Date.now();
      if (kill && !restartWhileFull) {
        await broker.restart();
        const afterCrash = await verify(`cycle ${cycle}, restarted after a SIGKILL on the full disk`);
        violations.push(...afterCrash.map((violation) => `cycle ${cycle}: ${violation}`));
      }
      // Every partition: a log taken offline by the full disk would refuse writes until a restart.
      const resumedAt = (): number | undefined => {
        const times = PARTITIONS.map((partition) => traffic.lastAckAt.get(partition) ?? 0);
        return times.every((time) => time > freedAt) ? Math.max(...times) : undefined;
      };
      const resumed = await waitFor(() => resumedAt() !== undefined, 30_000);
      const resumeTime = resumedAt();
      if (resumeTime !== undefined) resumeMs.push(resumeTime - freedAt);
      else {
        const stuck = PARTITIONS.filter((partition) => (traffic.lastAckAt.get(partition) ?? 0) <= freedAt);
        violations.push(`cycle ${cycle}: writes to partitions ${stuck.join(', ')} did not resume within 30 s of the space returning (${how}${kill ? ', after a restart' : ', no restart'})`);
      }
      sampleRss();
      say(`cycle ${cycle}: filled ${(filler.bytes / MIB).toFixed(1)} MiB, ${how}${kill ? ', SIGKILL while full' : ''}; resumed ${resumed && resumeTime !== undefined ? `on every partition in ${resumeTime - freedAt} ms` : 'never'}${kill && restartWhileFull ? ' (no restart since the space returned)' : ''}; ${traffic.acknowledged} acknowledged, ${traffic.refusedRequests} requests refused so far`);
    }
    traffic.stop = true;
    await Promise.all(loops);
    loops = [];
    if (alive('at the end')) {
      const code = await broker.stop();
      if (code !== 0) violations.push(`the clean stop at the end exited with ${code}`);
      await broker.restart();
      violations.push(...(await verify('after a clean restart at the end')));
    }
  } finally {
    traffic.stop = true;
    await Promise.all(loops).catch(() => undefined);
    clearInterval(rssTimer);
    await broker?.kill().catch(() => undefined);
    // The evidence of a failed run leaves the tmpfs before it goes.
    if (violations.length > 0) cpSync(dataDir, join(dirname(dataDir), 'data-at-failure'), { recursive: true });
    unmountTmpfs(dataDir);
  }
  for (const [code, count] of traffic.refusedByCode) {
    if (code !== KAFKA_STORAGE_ERROR) violations.push(`${count} produce requests were refused with error ${code}, not KAFKA_STORAGE_ERROR (${KAFKA_STORAGE_ERROR})`);
  }
  return {
    cycles: fills,
    fills,
    kills,
    refusedByCode: traffic.refusedByCode,
    refusedRequests: traffic.refusedRequests,
    acknowledged: traffic.acknowledged,
    lost,
    refusedStored,
    duplicated,
    retired,
    readsWhileFull,
    resumeMs,
    peakRssBytes,
    violations,
    brokerLog: broker?.logFile ?? '',
  };
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

let counter = 0;

/** One acks=−1 request of 1–10 records of 30–330 bytes to a random partition; records what the broker answered. */
async function produceOnce(port: number, traffic: Traffic, tag: string, random: () => number, connection?: KafkaConnection): Promise<void> {
  const own = connection ?? (await KafkaConnection.open(LOOPBACK, port, { requestTimeoutMs: 30_000 }));
  const partition = PARTITIONS[Math.floor(random() * PARTITIONS.length)] ?? 0;
  const values = Array.from({ length: 1 + Math.floor(random() * 10) }, () => {
    counter += 1;
    return `${tag}-${counter}-${'x'.repeat(20 + Math.floor(random() * 300))}`;
  });
  for (const value of values) traffic.sent.add(value);
  try {
    const response = await own.request(ProduceApi, 3, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 30_000,
      topicData: [{ name: DISK_TOPIC, partitionData: [{ index: partition, records: encodeRecordBatch(values.map((value) => ({ value: Buffer.from(value) }))) }] }],
    });
    const answer = response.responses[0]?.partitionResponses[0];
    const code = answer?.errorCode ?? -1;
    if (code === 0 && answer !== undefined) {
      const acked = traffic.model.get(partition);
      values.forEach((value, index) => {
        const offset = answer.baseOffset + BigInt(index);
        const previous = acked?.get(offset);
        if (previous !== undefined && previous !== value) traffic.violations.push(`offset ${offset} of partition ${partition} acknowledged for a second value`);
        acked?.set(offset, value);
      });
      traffic.acknowledged += values.length;
      traffic.lastAckAt.set(partition, Date.now());
    } else {
      traffic.refusedRequests += 1;
      traffic.refusedByCode.set(code, (traffic.refusedByCode.get(code) ?? 0) + 1);
      for (const value of values) traffic.refused.add(value);
      traffic.lastRefusalAt = Date.now();
    }
  } finally {
    if (connection === undefined) own.close();
  }
}

/** Sends until told to stop; reconnects after a broker restart (a request lost with its connection is neither acknowledged nor refused). */
async function produceLoop(port: number, loop: number, traffic: Traffic, random: () => number): Promise<void> {
  let connection: KafkaConnection | undefined;
  while (!traffic.stop) {
    try {
      connection ??= await KafkaConnection.open(LOOPBACK, port, { requestTimeoutMs: 30_000 });
      await produceOnce(port, traffic, `l${loop}`, random, connection);
      // About 100 requests a second per loop: the log grows by a few hundred KiB a cycle.
      await sleep(10);
    } catch {
      connection?.close();
      connection = undefined;
      await sleep(100);
    }
  }
  connection?.close();
}

async function createTopic(port: number): Promise<void> {
  const connection = await KafkaConnection.open(LOOPBACK, port, { requestTimeoutMs: 30_000 });
  try {
    const answer = await connection.request(CreateTopicsApi, 4, {
      topics: [{ name: DISK_TOPIC, numPartitions: PARTITIONS.length, replicationFactor: -1, assignments: [], configs: [] }],
      timeoutMs: 30_000,
      validateOnly: false,
    });
    const code = answer.topics[0]?.errorCode ?? -1;
    if (code !== 0) throw new Error(`creating topic ${DISK_TOPIC} answered error ${code}`);
    await waitForReads(connection);
  } finally {
    connection.close();
  }
}

/** Until every partition answers ListOffsets (60 s at most). */
async function waitForReads(connection: KafkaConnection): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const answer = await connection.request(ListOffsetsApi, 1, {
      replicaId: -1,
      isolationLevel: 0,
      topics: [{ name: DISK_TOPIC, partitions: PARTITIONS.map((partitionIndex) => ({ partitionIndex, currentLeaderEpoch: -1, timestamp: -1n })) }],
    });
    const codes = answer.topics.flatMap((topic) => topic.partitions.map((partition) => partition.errorCode));
    if (codes.length === PARTITIONS.length && codes.every((code) => code === 0)) return;
    if (Date.now() > deadline) throw new Error(`partitions still answer ListOffsets with errors ${codes.join(', ')} after 60 s`);
    await sleep(100);
  }
}
