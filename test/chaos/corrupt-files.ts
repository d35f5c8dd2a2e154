/**
 * The torn-and-corrupt-files fault run (issue #22; reliability reference §2.2, §8.1 S3–S5): one
 * standalone `tributary broker start` process, a topic of 3 partitions with small segments (so
 * that rolls, index entries and producer snapshots meet the faults), and round after round:
 *
 *   1. an idempotent acks=−1 producer (a new one each round) sends unique values `r<round>-<n>`
 *      from two concurrent loops for a random 0.3–1.5 s;
 *   2. SIGKILL the broker with sends in flight; the producer gives up on what was not acknowledged;
 *   3. damage one file of the stopped broker (test/support/file-damage.ts: a torn tail or random
 *      bytes in the active segment, an index, a time index, a producer snapshot, a checkpoint);
 *   4. restart it and read every partition back, checking every batch served
 *      (test/support/verified-read.ts) and the indexes from outside.
 *
 * Invariants, checked after every round against every record acknowledged so far:
 *   - nothing served is corrupt: CRC, magic, offsets following on, epochs never going back;
 *   - reads from any offset and ListOffsets by timestamp agree with the full read;
 *   - an acknowledged record below the first damaged batch is there, unchanged (damage to files
 *     other than a segment loses nothing at all);
 *   - recovery cuts at the damaged batch: the log ends exactly there, or the damage was harmless
 *     and every record is still served intact;
 *   - no value stored twice, nothing stored that was never sent;
 *   - the broker takes writes again after every restart.
 * Acknowledged records from the first damaged batch on are counted as cut by the damage (they
 * were destroyed on disk; no broker can serve them), and leave the model.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { KafkaConnection } from '../../src/client/connection.js';
import { Producer } from '../../src/client/producer.js';
import { createLogger } from '../../src/common/logger.js';
import type { ServiceRun } from '../services/run-dir.js';
import { startBrokerProcess, type BrokerProcess } from '../support/brokers.js';
import { DAMAGE_KINDS, damageDataDir, describeDamage, type Damage, type DamageKind } from '../support/file-damage.js';
import { readVerified } from '../support/verified-read.js';

export const CORRUPT_FILES_TOPIC = 'damaged';
const PARTITIONS = [0, 1, 2] as const;

export interface CorruptFilesOptions {
  readonly run: ServiceRun;
  readonly rounds: number;
  readonly random: () => number;
  /** Kinds to choose from (default: every kind). */
  readonly kinds?: readonly DamageKind[];
  /** 'random' (default) or 'each-in-turn': round i damages kind i mod |kinds| when it has a file. */
  readonly kindOrder?: 'random' | 'each-in-turn';
  /** Offsets and timestamps probed per partition per round. */
  readonly probes?: number;
  readonly say?: (line: string) => void;
}

export interface CorruptFilesResult {
  readonly rounds: number;
  readonly damages: readonly Damage[];
  readonly acknowledged: number;
  /** Acknowledged records at or after a damaged batch: destroyed on disk, cut by recovery. */
  readonly cutByDamage: number;
  /** Acknowledged records missing or changed below the damage: each a violation. */
  readonly lost: number;
  readonly duplicated: number;
  /** Median and maximum milliseconds from the restart command to a broker taking writes again. */
  readonly recoveryMs: readonly number[];
  readonly peakRssBytes: number;
  readonly violations: readonly string[];
  readonly brokerLog: string;
}

const logger = createLogger({ name: 'corrupt-files', level: 'silent' });

export async function runCorruptFiles(options: CorruptFilesOptions): Promise<CorruptFilesResult> {
  const say = options.say ?? (() => undefined);
  const broker = await startBrokerProcess({
    run: options.run,
    id: 1,
    settings: {
      'num.partitions': String(PARTITIONS.length),
      'log.segment.bytes': '16384',
      'log.index.interval.bytes': '512',
    },
  });
  const model = new Map<number, Map<bigint, string>>(PARTITIONS.map((partition) => [partition, new Map()]));
  const sent = new Set<string>();
  const damages: Damage[] = [];
  const violations: string[] = [];
  const recoveryMs: number[] = [];
  let acknowledged = 0;
  let cutByDamage = 0;
  let lost = 0;
  let duplicated = 0;
  let peakRssBytes = 0;
  const sampleRss = (): void => {
    peakRssBytes = Math.max(peakRssBytes, residentBytes(broker.daemon.pid));
  };
  const rssTimer = setInterval(sampleRss, 200);
  try {
    for (let round = 1; round <= options.rounds && violations.length === 0; round += 1) {
      acknowledged += await produceUntilKilled(broker, round, options.random, model, sent, violations);
      const kinds = options.kinds ?? DAMAGE_KINDS;
      const prefer = options.kindOrder === 'each-in-turn' ? kinds[(round - 1) % kinds.length] : undefined;
      const damage = damageDataDir(broker.dataDir, options.random, { topics: new Set([CORRUPT_FILES_TOPIC]), kinds, ...(prefer === undefined ? {} : { prefer }) });
      if (damage !== undefined) damages.push(damage);
      const restarted = Date.now();
      await broker.restart();
      const connection = await KafkaConnection.open('127.0.0.1', broker.port, { requestTimeoutMs: 30_000 });
      try {
        acknowledged += await waitForWrites(broker, round, model, sent);
        recoveryMs.push(Date.now() - restarted);
        sampleRss();
        const roundViolations: string[] = [];
        for (const partition of PARTITIONS) {
          const read = await readVerified(connection, CORRUPT_FILES_TOPIC, partition, { probes: options.probes ?? 20, random: options.random });
          roundViolations.push(...read.violations);
          const floor = damage?.partition === partition && damage.firstDamagedOffset !== undefined ? damage.firstDamagedOffset : undefined;
          const acked = model.get(partition) ?? new Map<bigint, string>();
          for (const [offset, value] of [...acked]) {
            const stored = read.records.get(offset)?.value;
            if (stored === value) continue;
            if (floor !== undefined && offset >= floor && stored === undefined) {
              cutByDamage += 1;
              acked.delete(offset);
              continue;
            }
            lost += 1;
            roundViolations.push(`${CORRUPT_FILES_TOPIC}-${partition}: acknowledged offset ${offset} ("${value}") ${stored === undefined ? 'is missing' : `holds "${stored}"`} after ${damage === undefined ? 'a crash' : describeDamage(damage)}`);
          }
          if (floor !== undefined && read.end > floor) {
            // Not cut: then the damage changed no byte a reader sees (e.g. only a batch's leader epoch field); everything must still be intact.
            for (const [offset, record] of read.records) if (offset >= floor && acked.has(offset) && acked.get(offset) !== record.value) roundViolations.push(`${CORRUPT_FILES_TOPIC}-${partition}: after ${describeDamage(damage!)} offset ${offset} holds "${record.value}"`);
          }
          const seen = new Map<string, bigint>();
          for (const [offset, record] of read.records) {
            if (!sent.has(record.value)) roundViolations.push(`${CORRUPT_FILES_TOPIC}-${partition}: offset ${offset} holds "${record.value}", which was never sent`);
            const before = seen.get(record.value);
            if (before !== undefined) {
              duplicated += 1;
              roundViolations.push(`${CORRUPT_FILES_TOPIC}-${partition}: "${record.value}" stored twice, at ${before} and ${offset}`);
            }
            seen.set(record.value, offset);
          }
        }
        const line = `round ${round}: ${damage === undefined ? 'no file to damage' : describeDamage(damage)}; ${roundViolations.length === 0 ? 'ok' : `${roundViolations.length} violations`}`;
        say(line);
        violations.push(...roundViolations.map((violation) => `round ${round}: ${violation}`));
      } finally {
        connection.close();
      }
    }
  } finally {
    clearInterval(rssTimer);
    await broker.stop().catch(() => undefined);
  }
  return { rounds: damages.length, damages, acknowledged, cutByDamage, lost, duplicated, recoveryMs, peakRssBytes, violations, brokerLog: broker.logFile };
}

/** Sends from two loops until a random moment, SIGKILLs the broker, waits for every send to settle. */
async function produceUntilKilled(broker: BrokerProcess, round: number, random: () => number, model: Map<number, Map<bigint, string>>, sent: Set<string>, violations: string[]): Promise<number> {
  const producer = await Producer.connect({ bootstrap: [broker.bootstrap], acks: -1, lingerMs: 2, deliveryTimeoutMs: 3000, requestTimeoutMs: 2000, retryBackoffMaxMs: 200, logger });
  let counter = 0;
  let acknowledged = 0;
  let stop = false;
  const loop = async (): Promise<void> => {
    while (!stop) {
      const values = Array.from({ length: 1 + Math.floor(random() * 20) }, () => `r${round}-${(counter += 1)}`);
      for (const value of values) sent.add(value);
      try {
        const placed = await producer.send(CORRUPT_FILES_TOPIC, values.map((value) => ({ key: Buffer.from(value), value: Buffer.from(value) })));
        placed.forEach((metadata, index) => {
          const value = values[index];
          if (value === undefined) return;
          const acked = model.get(metadata.partition);
          const previous = acked?.get(metadata.offset);
          if (previous !== undefined && previous !== value) violations.push(`round ${round}: offset ${metadata.offset} of partition ${metadata.partition} acknowledged for "${value}" and earlier for "${previous}"`);
          acked?.set(metadata.offset, value);
          acknowledged += 1;
        });
      } catch {
        // Not acknowledged (the broker died): nothing to check for it.
      }
    }
  };
  const loops = [loop(), loop()];
  await sleep(300 + Math.floor(random() * 1200));
  await broker.kill();
  stop = true;
  await Promise.all(loops);
  await producer.close().catch(() => undefined);
  return acknowledged;
}

/** Until one acks=−1 send to every partition succeeds (recovery done, partitions online); the probes count as acknowledged records. */
async function waitForWrites(broker: BrokerProcess, round: number, model: Map<number, Map<bigint, string>>, sent: Set<string>): Promise<number> {
  const producer = await Producer.connect({ bootstrap: [broker.bootstrap], acks: -1, deliveryTimeoutMs: 60_000, logger });
  try {
    const placed = await Promise.all(
      PARTITIONS.map(async (partition) => {
        const value = `probe-r${round}-${partition}`;
        sent.add(value);
        const [metadata] = await producer.send(CORRUPT_FILES_TOPIC, [{ partition, value: Buffer.from(value), key: null }]);
        if (metadata !== undefined) model.get(partition)?.set(metadata.offset, value);
      }),
    );
    return placed.length;
  } finally {
    await producer.close();
  }
}

function residentBytes(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kilobytes = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return kilobytes === undefined ? 0 : Number(kilobytes) * 1024;
  } catch {
    return 0;
  }
}
