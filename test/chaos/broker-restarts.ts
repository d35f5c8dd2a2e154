/**
 * Broker crash and damaged-file fault runs (issue #22; reliability reference §8.1 S1, S3–S5): one
 * standalone `tributary broker start` process, a topic of 3 partitions with small segments (so
 * that rolls, index entries and producer snapshots meet the faults), and round after round:
 *
 *   1. an idempotent producer (a new one each round; acks=−1, or acks=1) sends unique values
 *      `r<round>-<n>` from two concurrent loops for a random 0.3–1.5 s;
 *   2. SIGKILL the broker with sends in flight; the producer gives up on what was not acknowledged;
 *      with `powerLoss`, every file is then cut back to its last fsync (the broker journals them);
 *   3. with `damage`, damage one file of the stopped broker (test/support/file-damage.ts: a torn
 *      tail or random bytes in the active segment, an index, a time index, a producer snapshot, a
 *      checkpoint);
 *   4. restart it, read every partition back checking every batch served and the indexes from
 *      outside (test/support/verified-read.ts), then check that it takes writes again.
 *
 * Invariants, checked after every round against every record acknowledged so far:
 *   - nothing served is corrupt: CRC, magic, offsets following on, epochs never going back;
 *   - reads from any offset and ListOffsets by timestamp agree with the full read;
 *   - with acks=−1, an acknowledged record below the first damaged batch is there, unchanged (a
 *     crash alone, or damage to files other than a segment, loses nothing at all);
 *   - no offset holds a value other than the one acknowledged there, no value is stored twice,
 *     nothing is stored that was never sent;
 *   - the broker takes writes again after every restart.
 * Acknowledged records from the first damaged batch on are counted as cut with the damage (they
 * were destroyed on disk; no broker can serve them). With acks=1 a record acknowledged before its
 * fsync may be lost to a power loss (a process crash keeps the page cache): counted and reported,
 * and only ever a suffix of the log (past the recovered end), not a violation.
 * Both leave the model, since later records take their offsets.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { KafkaConnection } from '../../src/client/connection.js';
import { Producer } from '../../src/client/producer.js';
import { createLogger } from '../../src/common/logger.js';
import { ListOffsetsApi } from '../../src/protocol/apis/list-offsets.js';
import type { ServiceRun } from '../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../support/brokers.js';
import { DAMAGE_KINDS, damageDataDir, describeDamage, type Damage, type DamageKind } from '../support/file-damage.js';
import { loseUnsyncedWrites } from '../support/power-loss.js';
import { residentBytes } from '../support/process-memory.js';
import { readVerified } from '../support/verified-read.js';

export const RESTARTS_TOPIC = 'restarts';
const PARTITIONS = [0, 1, 2] as const;

export interface BrokerRestartsOptions {
  readonly run: ServiceRun;
  readonly rounds: number;
  readonly random: () => number;
  readonly acks: -1 | 1;
  /** Damage one file before each restart (default false: a plain crash). */
  readonly damage?: boolean;
  /** Cut every file back to its last fsync after each kill (test/support/power-loss.ts): a power loss, not a process crash. */
  readonly powerLoss?: boolean;
  /** Kinds to choose from (default: every kind). */
  readonly kinds?: readonly DamageKind[];
  /** 'random' (default) or 'each-in-turn': round i damages kind i mod |kinds| when it has a file. */
  readonly kindOrder?: 'random' | 'each-in-turn';
  /** Offsets and timestamps probed per partition per round. */
  readonly probes?: number;
  readonly say?: (line: string) => void;
}

export interface BrokerRestartsResult {
  readonly rounds: number;
  readonly kills: number;
  readonly damages: readonly Damage[];
  readonly acknowledged: number;
  /** Acknowledged records at or after a damaged batch: destroyed on disk, cut by recovery. */
  readonly cutByDamage: number;
  /** acks=1: acknowledged records the crash took before their fsync. */
  readonly lostUnflushed: number;
  /** Power loss: unsynced bytes dropped (all files, and segment files only). */
  readonly droppedBytes: number;
  readonly droppedSegmentBytes: number;
  /** Acknowledged records missing or changed where nothing allowed it: each a violation. */
  readonly lost: number;
  readonly duplicated: number;
  /** Milliseconds from the restart command until every partition answers reads. */
  readonly recoveryMs: readonly number[];
  readonly peakRssBytes: number;
  readonly violations: readonly string[];
  readonly brokerLog: string;
}

type Model = Map<number, Map<bigint, string>>;

const logger = createLogger({ name: 'broker-restarts', level: 'silent' });

export async function runBrokerRestarts(options: BrokerRestartsOptions): Promise<BrokerRestartsResult> {
  const say = options.say ?? (() => undefined);
  const broker = await startBrokerProcess({
    run: options.run,
    id: 1,
    fsyncJournal: options.powerLoss === true,
    settings: {
      'num.partitions': String(PARTITIONS.length),
      'log.segment.bytes': '16384',
      'log.index.interval.bytes': '512',
    },
  });
  const model: Model = new Map(PARTITIONS.map((partition) => [partition, new Map<bigint, string>()]));
  const sent = new Set<string>();
  const damages: Damage[] = [];
  const violations: string[] = [];
  const recoveryMs: number[] = [];
  let kills = 0;
  let acknowledged = 0;
  let cutByDamage = 0;
  let lostUnflushed = 0;
  let droppedBytes = 0;
  let droppedSegmentBytes = 0;
  let lost = 0;
  let duplicated = 0;
  let peakRssBytes = 0;
  const sampleRss = (): void => {
    peakRssBytes = Math.max(peakRssBytes, residentBytes(broker.daemon.pid));
  };
  const rssTimer = setInterval(sampleRss, 200);
  try {
    for (let round = 1; round <= options.rounds && violations.length === 0; round += 1) {
      acknowledged += await produceUntilKilled(broker, round, options, model, sent, violations);
      kills += 1;
      if (options.powerLoss === true && broker.fsyncJournal !== undefined) {
        const report = loseUnsyncedWrites(broker.dataDir, broker.fsyncJournal);
        droppedBytes += report.cut.reduce((sum, entry) => sum + entry.from - entry.to, 0);
        droppedSegmentBytes += report.cut.filter((entry) => entry.path.endsWith('.log')).reduce((sum, entry) => sum + entry.from - entry.to, 0);
      }
      let damage: Damage | undefined;
      if (options.damage === true) {
        const kinds = options.kinds ?? DAMAGE_KINDS;
        const prefer = options.kindOrder === 'each-in-turn' ? kinds[(round - 1) % kinds.length] : undefined;
        damage = damageDataDir(broker.dataDir, options.random, { topics: new Set([RESTARTS_TOPIC]), kinds, ...(prefer === undefined ? {} : { prefer }) });
        if (damage !== undefined) damages.push(damage);
      }
      const restarted = Date.now();
      await broker.restart();
      const connection = await KafkaConnection.open('127.0.0.1', broker.port, { requestTimeoutMs: 30_000 });
      const roundViolations: string[] = [];
      try {
        await waitForReads(connection);
        recoveryMs.push(Date.now() - restarted);
        sampleRss();
        const fault = damage === undefined ? 'a crash' : describeDamage(damage);
        for (const partition of PARTITIONS) {
          const where = `${RESTARTS_TOPIC}-${partition}`;
          const read = await readVerified(connection, RESTARTS_TOPIC, partition, { probes: options.probes ?? 20, random: options.random });
          roundViolations.push(...read.violations);
          const floor = damage?.partition === partition ? damage.firstDamagedOffset : undefined;
          const acked = model.get(partition) ?? new Map<bigint, string>();
          for (const [offset, value] of [...acked]) {
            const stored = read.records.get(offset)?.value;
            if (stored === value) continue;
            if (stored === undefined && offset >= read.end && floor !== undefined && offset >= floor) {
              cutByDamage += 1;
              acked.delete(offset);
            } else if (stored === undefined && offset >= read.end && options.acks === 1) {
              lostUnflushed += 1;
              acked.delete(offset);
            } else {
              lost += 1;
              roundViolations.push(`${where}: acknowledged offset ${offset} ("${value}") ${stored === undefined ? 'is missing' : `holds "${stored}"`} after ${fault}`);
            }
          }
          const seen = new Map<string, bigint>();
          for (const [offset, record] of read.records) {
            if (!sent.has(record.value)) roundViolations.push(`${where}: offset ${offset} holds "${record.value}", which was never sent (after ${fault})`);
            const before = seen.get(record.value);
            if (before !== undefined) {
              duplicated += 1;
              roundViolations.push(`${where}: "${record.value}" stored twice, at ${before} and ${offset}`);
            }
            seen.set(record.value, offset);
          }
        }
        // Last: writes resume (the probes are acknowledged records like any other).
        acknowledged += await probeWrites(broker, round, model, sent, roundViolations);
      } catch (error) {
        roundViolations.push(`the broker did not come back after ${damage === undefined ? 'a crash' : describeDamage(damage)}: ${(error as Error).message}`);
      } finally {
        connection.close();
      }
      say(`round ${round}: ${damage === undefined ? 'crash' : describeDamage(damage)}; ${roundViolations.length === 0 ? 'ok' : `${roundViolations.length} violations`}`);
      violations.push(...roundViolations.map((violation) => `round ${round}: ${violation}`));
    }
  } finally {
    clearInterval(rssTimer);
    await broker.stop().catch(() => undefined);
  }
  return { rounds: kills, kills, damages, acknowledged, cutByDamage, lostUnflushed, droppedBytes, droppedSegmentBytes, lost, duplicated, recoveryMs, peakRssBytes, violations, brokerLog: broker.logFile };
}

/** Sends from two loops until a random moment, SIGKILLs the broker, waits for every send to settle. */
async function produceUntilKilled(broker: BrokerProcess, round: number, options: BrokerRestartsOptions, model: Model, sent: Set<string>, violations: string[]): Promise<number> {
  const producer = await Producer.connect({ bootstrap: [broker.bootstrap], acks: options.acks, lingerMs: 2, deliveryTimeoutMs: 3000, requestTimeoutMs: 2000, retryBackoffMaxMs: 200, logger });
  let counter = 0;
  let acknowledged = 0;
  let stop = false;
  const loop = async (): Promise<void> => {
    while (!stop) {
      const values = Array.from({ length: 1 + Math.floor(options.random() * 20) }, () => `r${round}-${(counter += 1)}`);
      for (const value of values) sent.add(value);
      try {
        const placed = await producer.send(RESTARTS_TOPIC, values.map((value) => ({ key: Buffer.from(value), value: Buffer.from(value) })));
        placed.forEach((metadata, index) => {
          const value = values[index];
          if (value !== undefined) acknowledged += record(model, metadata.partition, metadata.offset, value, violations);
        });
      } catch {
        // Not acknowledged (the broker died): nothing to check for it.
      }
    }
  };
  const loops = [loop(), loop()];
  await sleep(300 + Math.floor(options.random() * 1200));
  await broker.kill();
  stop = true;
  await Promise.all(loops);
  await producer.close().catch(() => undefined);
  return acknowledged;
}

/** Adds an acknowledgement to the model; an offset acknowledged for two values is a violation. */
function record(model: Model, partition: number, offset: bigint, value: string, violations: string[]): number {
  const acked = model.get(partition);
  const previous = acked?.get(offset);
  if (previous !== undefined && previous !== value) violations.push(`offset ${offset} of partition ${partition} acknowledged for "${value}" after "${previous}"`);
  acked?.set(offset, value);
  return 1;
}

/** Until every partition answers ListOffsets (recovery done, partitions online); 60 s at most. */
async function waitForReads(connection: KafkaConnection): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const answer = await connection.request(ListOffsetsApi, 1, {
      replicaId: -1,
      isolationLevel: 0,
      topics: [{ name: RESTARTS_TOPIC, partitions: PARTITIONS.map((partitionIndex) => ({ partitionIndex, currentLeaderEpoch: -1, timestamp: -1n })) }],
    });
    const codes = answer.topics.flatMap((topic) => topic.partitions.map((partition) => partition.errorCode));
    if (codes.length === PARTITIONS.length && codes.every((code) => code === 0)) return;
    if (Date.now() > deadline) throw new Error(`partitions still answer ListOffsets with errors ${codes.join(', ')} after 60 s`);
    await sleep(100);
  }
}

/** One acks=−1 record to every partition; each must be acknowledged. */
async function probeWrites(broker: BrokerProcess, round: number, model: Model, sent: Set<string>, violations: string[]): Promise<number> {
  const producer = await Producer.connect({ bootstrap: [broker.bootstrap], acks: -1, deliveryTimeoutMs: 30_000, logger });
  try {
    const placed = await Promise.all(
      PARTITIONS.map(async (partition) => {
        const value = `probe-r${round}-${partition}`;
        sent.add(value);
        const [metadata] = await producer.send(RESTARTS_TOPIC, [{ partition, value: Buffer.from(value), key: null }]);
        return metadata === undefined ? 0 : record(model, partition, metadata.offset, value, violations);
      }),
    );
    return placed.reduce((sum, count) => sum + count, 0);
  } finally {
    await producer.close();
  }
}
