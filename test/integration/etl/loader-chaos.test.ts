/**
 * Acceptance chaos test of the loader (issue #9): `tributary etl run` as a real OS process,
 * SIGKILLed by this harness at 30 or more random moments — while it starts and fetches, between
 * staged files, right after its claim, between renames, between the last rename and the
 * manifest, after the manifest — and run again until it succeeds, on real HDFS and on a local
 * folder. Then the warehouse must hold every produced record exactly once: the multiset of
 * (partition, offset) and payload hashes equals what was produced, and the per-hour counts of
 * the manifests equal the produced counts.
 *
 * The same for `format: iceberg` (issue #33; 30 kills on a local folder, 12 on HDFS), with the
 * moment after a table's snapshot is made and before the manifest is published added, and the
 * table checked through the Iceberg Java API: the current snapshot holds every produced record
 * once, and every snapshot of the history added exactly the records of the offset ranges its
 * summary names, those ranges contiguous and disjoint per partition (so no snapshot was partial
 * and none repeated another's offsets).
 *
 * A kill moment is an event of the loader's debug log (one JSON line per event on stderr) plus a
 * random delay, so kills land inside each phase, not only at its edges. Each chosen moment is
 * printed when the test fails, to replay it.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCommitLog } from '../../../src/etl/load/commit-log.js';
import { readIcebergTable } from '../../support/iceberg-java.js';
import { services } from '../services.js';
import {
  createTopic,
  expectExactlyOnce,
  makeWarehouse,
  manifestsPerHour,
  producedPerHour,
  producePageViews,
  readWarehouse,
  registerPageViews,
  removeHdfsBase,
  startLoaderEnvironment,
  writeLoadFile,
  type LoaderEnvironment,
  type ProducedRecord,
  type TestWarehouse,
  type WarehouseKind,
} from './loader-support.js';

const KILLS = 30;
const PARTITIONS = 8;
/**
 * Produced before each run while kills are still due, so every run has work and each phase can
 * be hit: about 40 runs make 2 000 to 3 000 records.
 */
const WAVE = 64;
/** Per partition and run: a run that follows kills catches up over a few commits. */
const MAX_RECORDS_PER_RUN = 40;
const tributaryBin = fileURLToPath(new URL('../../../bin/tributary.js', import.meta.url));

/** Log events of a run (src/etl), the phase each one starts, and how many of them a run may pass. */
const MOMENTS = [
  { event: 'start', phase: 'starting, recovering, planning', most: 1 },
  { event: 'fetching', phase: 'fetching and decoding', most: PARTITIONS },
  { event: 'staged-file', phase: 'writing staged files', most: 2 * PARTITIONS },
  { event: 'claimed', phase: 'after the claim, before any rename', most: 1 },
  { event: 'renamed-file', phase: 'renaming into place', most: 2 * PARTITIONS },
  { event: 'renamed', phase: 'between the last rename and the manifest (the table commit, for iceberg)', most: 1 },
  { event: 'published', phase: 'after the manifest', most: 1 },
] as const;
/** Format iceberg also stops after a table's snapshot, before the manifest is published. */
const TABLE_MOMENT = { event: 'table-committed', phase: 'after the table snapshot, before the manifest', most: 1 } as const;

interface ChaosCase {
  readonly kind: WarehouseKind;
  readonly format: 'avro' | 'iceberg';
  readonly kills: number;
}

const CASES: readonly ChaosCase[] = [
  { kind: 'HDFS', format: 'avro', kills: KILLS },
  { kind: 'local folder', format: 'avro', kills: KILLS },
  { kind: 'local folder', format: 'iceberg', kills: KILLS },
  { kind: 'HDFS', format: 'iceberg', kills: 12 },
];

interface Kill {
  readonly event: string;
  readonly pass: number;
  readonly delayMs: number;
}

interface Attempt {
  readonly kill: Kill | undefined;
  readonly killed: boolean;
  readonly status: number | null;
  readonly stdout: string;
  readonly stderrTail: string;
  readonly seconds: number;
}

function randomKill(format: ChaosCase['format']): Kill {
  const moments = format === 'iceberg' ? [...MOMENTS, TABLE_MOMENT] : MOMENTS;
  const moment = moments[Math.floor(Math.random() * moments.length)]!;
  const delayMs = moment.event === 'start' ? Math.floor(Math.random() * 3_000) : Math.floor(Math.random() * 25);
  return { event: moment.event, pass: 1 + Math.floor(Math.random() * moment.most), delayMs };
}

/** One `etl run`; with `kill`, SIGKILLs it `delayMs` after the `pass`-th log event `event`. */
function attempt(loadFile: string, kill: Kill | undefined): Promise<Attempt> {
  const began = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [tributaryBin, 'etl', 'run', '--load', loadFile, '--log-level', 'debug'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let partial = '';
    let passes = 0;
    let killed = false;
    const killNow = (): void => {
      if (killed) return;
      killed = true;
      setTimeout(() => child.kill('SIGKILL'), kill?.delayMs ?? 0);
    };
    if (kill?.event === 'start') killNow();
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      stderr = (stderr + text).slice(-4_000);
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (kill === undefined || killed || !line.includes(`"event":"${kill.event}"`)) continue;
        passes += 1;
        if (passes === kill.pass) killNow();
      }
    });
    child.once('close', (status, signal) => resolve({ kill, killed: signal === 'SIGKILL', status, stdout, stderrTail: stderr.slice(-2_000), seconds: (performance.now() - began) / 1000 }));
  });
}

/** The table through the Iceberg Java API: every record once now, and every snapshot exactly its offset ranges' records. */
async function expectTableExactlyOnce(warehouse: TestWarehouse, topic: string, produced: readonly ProducedRecord[]): Promise<void> {
  const dump = await readIcebergTable(warehouse.warehouse.describe(`${warehouse.root}/${topic}`), { runDir: services().runDir });
  const positions = dump.records.map((row) => {
    const kafka = row['_kafka'] as { partition: number; offset: number };
    return `${kafka.partition}/${kafka.offset}`;
  });
  expect(positions.sort()).toEqual(produced.map((record) => `${record.partition}/${record.offset}`).sort());
  const covered = new Map<number, [number, number][]>();
  for (const snapshot of dump.snapshots) {
    const offsets = JSON.parse(snapshot.summary['tributary.offsets'] ?? '{}') as Record<string, [number, number]>;
    const inRanges = produced.filter((record) => {
      const range = offsets[String(record.partition)];
      return range !== undefined && record.offset >= range[0] && record.offset < range[1];
    });
    expect(snapshot.summary['added-records'], `snapshot ${snapshot.summary['tributary.commit-id']}`).toBe(String(inRanges.length));
    for (const [partition, range] of Object.entries(offsets)) covered.set(Number(partition), [...(covered.get(Number(partition)) ?? []), range]);
  }
  for (const [partition, ranges] of covered) {
    const sorted = ranges.sort((a, b) => a[0] - b[0]);
    expect(sorted.map(([start]) => start), `partition ${partition}`).toEqual([0, ...sorted.slice(0, -1).map(([, end]) => end)]);
  }
  // The history is one chain: each snapshot's parent is the one before.
  expect(dump.snapshots.slice(1).map((snapshot) => snapshot.parentId)).toEqual(dump.snapshots.slice(0, -1).map((snapshot) => snapshot.snapshotId));
}

let env: LoaderEnvironment;
const warehouses: TestWarehouse[] = [];

beforeAll(async () => {
  env = await startLoaderEnvironment();
}, 120_000);

afterAll(async () => {
  for (const warehouse of warehouses) await warehouse.cleanup().catch(() => undefined);
  await removeHdfsBase().catch(() => undefined);
  await env?.close();
}, 60_000);

// The two warehouses run side by side: each run is mostly process start-up and waiting on I/O.
describe.concurrent('loader chaos', () => {
  it.each(CASES)(
    'format $format on $kind loses and duplicates nothing when SIGKILLed at $kills random moments',
    async ({ kind, format, kills: killsWanted }) => {
      const name = `chaos-${format}-${kind === 'HDFS' ? 'hdfs' : 'local'}`;
      const topic = `t-${name}`;
      const warehouse = makeWarehouse(kind, env, name);
      warehouses.push(warehouse);
      await createTopic(env.broker.bootstrap, topic, PARTITIONS);
      await registerPageViews(env.registryClient, topic);
      const loadFile = await writeLoadFile(env, { name, topic, warehouse, maxRecordsPerRun: MAX_RECORDS_PER_RUN, format, ...(format === 'iceberg' ? { codec: 'zstd' } : {}) });
      // Records arrive in waves between runs, so every run has work and each phase can be hit.
      const produced: ProducedRecord[] = [];
      const produceWave = async (): Promise<void> => {
        produced.push(...(await producePageViews(env, topic, { count: WAVE, partitions: PARTITIONS, hours: 3, firstId: produced.length })));
      };

      const history: Attempt[] = [];
      const killsByPhase = new Map<string, number>();
      const describeHistory = (): string =>
        history.map((a, index) => `${index + 1}. (${a.seconds.toFixed(1)} s) ${a.kill === undefined ? 'no kill' : `kill ${a.kill.delayMs} ms after ${a.kill.event} #${a.kill.pass}`}: ${a.killed ? 'killed' : `exit ${a.status}`} ${a.stdout.trim()}`).join('\n');
      for (;;) {
        const kills = history.filter((a) => a.killed).length;
        if (kills < killsWanted) await produceWave();
        const result = await attempt(loadFile, kills < killsWanted ? randomKill(format) : undefined);
        history.push(result);
        console.info(`${kind} ${describeHistory().split('\n').at(-1) ?? ''}`);
        expect(history.length, `no convergence:\n${describeHistory()}`).toBeLessThan(killsWanted * 4);
        if (result.killed) {
          const phase = [...MOMENTS, TABLE_MOMENT].find((moment) => moment.event === result.kill?.event)?.phase ?? '?';
          killsByPhase.set(phase, (killsByPhase.get(phase) ?? 0) + 1);
          continue;
        }
        expect(result.status, `run ${history.length} failed:\n${result.stderrTail}\n${describeHistory()}`).toBe(0);
        if (kills >= killsWanted && result.stdout.includes('nothing new to load')) break;
      }

      const kills = history.filter((a) => a.killed).length;
      expect(kills).toBeGreaterThanOrEqual(killsWanted);
      if (format === 'iceberg') await expectTableExactlyOnce(warehouse, topic, produced);
      else expectExactlyOnce(await readWarehouse(warehouse.warehouse, warehouse.root, topic), produced);
      expect(await manifestsPerHour(warehouse.warehouse, warehouse.root, name, topic)).toEqual(producedPerHour(produced));
      const log = await readCommitLog(warehouse.warehouse, warehouse.root, name);
      expect(log.pending).toEqual([]);
      // Reported so a reader of the test output sees where the kills landed.
      console.info(`${kind}: ${produced.length} records, ${kills} kills in ${history.length} runs, ${log.lastPublished} commits; kills by phase: ${JSON.stringify(Object.fromEntries(killsByPhase))}`);
    },
    900_000,
  );
});
