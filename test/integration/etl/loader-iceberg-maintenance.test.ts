/**
 * Table maintenance of `format: iceberg` loads (issue #33), with real processes (`tributary etl`,
 * a broker, a registry), a local warehouse, and the Apache Iceberg Java API reading the result:
 *
 * - Compaction beside loads. Four runs leave eight small files per hour. A fifth run is killed
 *   after its files are in place and its commit claimed, before its snapshot; `etl compact` then
 *   rewrites each hour as one file in a `replace` snapshot (same rows, same totals, the new files
 *   with the data sequence number of the snapshot it read); the next run finishes the killed
 *   commit on top of it. Then a run and a compaction start at once and both succeed, whatever
 *   their order. Java reads exactly the records produced, each once, field by field; the offsets in
 *   the snapshot summaries cover every partition from 0 without gap or overlap; time travel to
 *   before the first compaction reads the rows of that moment. Expiry then deletes the compacted-
 *   away files, and the table still reads whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readIcebergTable, type IcebergTableDump } from '../../support/iceberg-java.js';
import { services } from '../services.js';
import { expectExactly, expectOffsetsCovered } from './iceberg-checks.js';
import {
  createTopic,
  makeWarehouse,
  messagesOf,
  producePageViews,
  registerPageViews,
  removeHdfsBase,
  runEtl,
  startLoaderEnvironment,
  writeLoadFile,
  type LoaderEnvironment,
  type ProducedRecord,
  type WarehouseKind,
} from './loader-support.js';

const SLOW = 600_000;
const PARTITIONS = 2;
const BATCH = 40;

let env: LoaderEnvironment;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  env = await startLoaderEnvironment();
}, 120_000);

afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  await removeHdfsBase().catch(() => undefined);
  await env?.close();
}, 60_000);

const filesPerHour = (dump: IcebergTableDump): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const file of dump.files) counts[file.partitionPath] = (counts[file.partitionPath] ?? 0) + 1;
  return counts;
};

// On a local folder: compaction reads and writes through the same warehouse calls as replay, whose
// HDFS runs are in loader-iceberg; HDFS here would add ~100 s to npm test for no other path.
describe.each<WarehouseKind>(['local folder'])('format: iceberg maintenance on %s', (kind) => {
  it(
    'compacts beside loads (a killed run finished on top of the compaction, a run and a compaction at once): every record once, the same totals, then expiry',
    async () => {
      const name = `iceberg-compact-${kind === 'HDFS' ? 'hdfs' : 'local'}`;
      const topic = `t-${name}`;
      const warehouse = makeWarehouse(kind, env, name);
      cleanups.push(() => warehouse.cleanup());
      await createTopic(env.broker.bootstrap, topic, PARTITIONS);
      await registerPageViews(env.registryClient, topic);
      const loadFile = await writeLoadFile(env, { name, topic, warehouse, format: 'iceberg', codec: 'zstd' });
      const location = warehouse.warehouse.describe(`${warehouse.root}/${topic}`);
      const read = (snapshot?: string): Promise<IcebergTableDump> => readIcebergTable(location, { runDir: services().runDir, ...(snapshot === undefined ? {} : { snapshot }) });
      const produced: ProducedRecord[] = [];
      const produce = async (): Promise<void> => {
        produced.push(...(await producePageViews(env, topic, { count: BATCH, partitions: PARTITIONS, hours: 2, firstId: produced.length })));
      };
      const run = async (failpoint?: string): Promise<void> => {
        const result = await runEtl(['run', '--load', loadFile, '--no-progress'], failpoint === undefined ? {} : { TRIBUTARY_ETL_FAILPOINT: failpoint });
        if (failpoint === undefined) expect(result.status, messagesOf(result)).toBe(0);
        else expect(result.signal, messagesOf(result)).toBe('SIGKILL');
      };
      const compact = () => runEtl(['compact', '--load', loadFile, '--min-input-files', '2']);

      for (let batch = 0; batch < 4; batch += 1) {
        await produce();
        await run();
      }
      const before = await read();
      expect(Object.values(filesPerHour(before))).toEqual([8, 8]);

      // A run killed with its files in place and its commit claimed, its snapshot not made.
      await produce();
      await run('after-rename');
      const compacted = await compact();
      expect(compacted.status, messagesOf(compacted)).toBe(0);
      expect(compacted.stdout).toMatch(/replace snapshot \d+ \(metadata v5\) rewrote 16 files as 2 in 2 hours/);
      const afterCompaction = await read();
      const replace = afterCompaction.snapshots.find((snapshot) => snapshot.snapshotId === afterCompaction.currentSnapshotId)!;
      expect(replace.operation).toBe('replace');
      expect(replace.parentId).toBe(before.currentSnapshotId);
      expect(replace.summary).toMatchObject({ 'deleted-data-files': '16', 'added-data-files': '2', 'total-records': String(4 * BATCH), 'total-data-files': '2' });
      expect(Object.values(filesPerHour(afterCompaction))).toEqual([1, 1]);
      // The rewritten rows are as old as the snapshot the compaction read.
      expect(afterCompaction.files.map((file) => file.dataSequenceNumber)).toEqual([before.lastSequenceNumber, before.lastSequenceNumber]);
      expectExactly(afterCompaction, produced.slice(0, 4 * BATCH));

      // The next run finishes the killed commit: its snapshot lands on top of the compaction.
      await run();
      const finished = await read();
      expect(finished.snapshots.find((snapshot) => snapshot.snapshotId === finished.currentSnapshotId)?.parentId).toBe(replace.snapshotId);
      expectExactly(finished, produced);

      // A run and a compaction at once: both succeed, in whichever order their commits land.
      await produce();
      await produce();
      const [loaded, compactedAgain] = await Promise.all([runEtl(['run', '--load', loadFile, '--no-progress']), compact()]);
      expect(loaded.status, messagesOf(loaded)).toBe(0);
      expect(compactedAgain.status, messagesOf(compactedAgain)).toBe(0);
      const both = await read();
      expectExactly(both, produced);
      expectOffsetsCovered(both, produced, PARTITIONS);
      for (const snapshot of both.snapshots.filter((candidate) => candidate.operation === 'replace')) {
        const parent = both.snapshots.find((candidate) => candidate.snapshotId === snapshot.parentId)!;
        expect(snapshot.summary['total-records'], 'a compaction keeps the row count').toBe(parent.summary['total-records']);
      }
      // Time travel to before the first compaction reads the rows of that moment.
      expectExactly(await read(before.currentSnapshotId!), produced.slice(0, 4 * BATCH));

      // Expiry drops the history and the files only it reached: the compacted-away small files.
      const expired = await runEtl(['expire', '--load', loadFile, '--older-than', '0ms', '--retain-last', '1']);
      expect(expired.status, messagesOf(expired)).toBe(0);
      const last = await read();
      expect(last.snapshots).toHaveLength(1);
      expectExactly(last, produced);
      const dataFiles: string[] = [];
      for (const hour of await warehouse.warehouse.list(`${warehouse.root}/${topic}/data`)) {
        for (const entry of await warehouse.warehouse.list(`${warehouse.root}/${topic}/data/${hour.name}`)) if (entry.type === 'file') dataFiles.push(`${hour.name}/${entry.name}`);
      }
      expect(dataFiles.sort()).toEqual(last.files.map((file) => file.path.split('/').slice(-2).join('/')).sort());
    },
    SLOW,
  );
});
