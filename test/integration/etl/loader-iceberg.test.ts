/**
 * `format: iceberg` end to end (issue #33): `tributary etl run` as a real process, a real broker
 * process, a real registry server, each warehouse (a local folder, and real HDFS through
 * WebHDFS), and the Apache Iceberg Java API (iceberg-core/data/parquet 1.10.0: HadoopTables.load
 * and a generic scan, test/support/iceberg-java.ts) reading what was written.
 *
 * Two runs make two snapshots. Java must read exactly the records produced, field by field; the
 * data files must carry the schema's field ids (read from their footers, not matched by
 * position); files are partitioned by hour(_event_time) and an hour filter plans only that hour's
 * files; each snapshot's summary names its commit and the offsets it covers, and the two together
 * cover every partition from 0 without overlap; time travel to the first snapshot reads the
 * first run's records only; a run with nothing new makes no snapshot; `etl ddl` prints Spark's
 * catalog settings and Trino's register_table for the table, and `etl replay` refuses the load
 * (it would swap files snapshots name). Then a third registry version
 * changes the rows' shape: table schemas do not evolve yet, so the run fails with
 * ETL_ICEBERG_SCHEMA_CHANGED and the table keeps its snapshot and records.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readIcebergTable, type IcebergJsonField, type IcebergRecord, type IcebergTableDump } from '../../support/iceberg-java.js';
import { services } from '../services.js';
import {
  createTopic,
  HOUR,
  makeWarehouse,
  messagesOf,
  PAGE_VIEW_V2,
  producePageViews,
  registerPageViews,
  removeHdfsBase,
  runEtl,
  startLoaderEnvironment,
  writeLoadFile,
  type LoaderEnvironment,
  type ProducedRecord,
  type TestWarehouse,
  type WarehouseKind,
} from './loader-support.js';

const SLOW = 600_000;
const PAGE_VIEW_V3 = (() => {
  const schema = JSON.parse(PAGE_VIEW_V2) as { fields: unknown[] };
  schema.fields.push({ name: 'campaign', type: ['null', 'string'], default: null });
  return JSON.stringify(schema);
})();
const PARTITIONS = 3;

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

interface PageView {
  readonly header: { readonly eventId: string; readonly time: number; readonly server: string; readonly service: string };
  readonly memberId: number | null;
  readonly pageKey: string;
  readonly url: string;
  readonly referrer: string | null;
  readonly userAgent: string | null;
  readonly experiment?: string | null;
}

const iso = (ms: number): string => `${new Date(ms).toISOString().slice(0, 23)}000Z`;

/** A produced record as the Iceberg Java API prints its row (test/support/iceberg-java.ts). */
function expectedRow(topic: string, record: ProducedRecord): IcebergRecord {
  const view = record.value as PageView;
  return {
    header: { eventId: view.header.eventId, time: iso(view.header.time), server: view.header.server, service: view.header.service },
    memberId: view.memberId,
    pageKey: view.pageKey,
    url: view.url,
    referrer: view.referrer,
    userAgent: view.userAgent,
    experiment: view.experiment ?? null,
    _event_time: iso(view.header.time),
    _kafka: { topic, partition: record.partition, offset: record.offset, timestamp: iso(view.header.time) },
  };
}

const positionOf = (row: IcebergRecord): string => {
  const kafka = row['_kafka'] as { partition: number; offset: number };
  return `${kafka.partition}/${kafka.offset}`;
};

/** Field ids by dotted name path (list and map levels as Parquet names them). */
function idsByPath(fields: readonly IcebergJsonField[], prefix = ''): Map<string, number> {
  const ids = new Map<string, number>();
  for (const field of fields) {
    const path = `${prefix}${field.name}`;
    ids.set(path, field.id);
    if (typeof field.type !== 'string' && field.type.type === 'struct') for (const [inner, id] of idsByPath(field.type.fields, `${path}.`)) ids.set(inner, id);
  }
  return ids;
}

function expectOffsetsCovered(dump: IcebergTableDump, produced: readonly ProducedRecord[]): void {
  const ranges = new Map<string, [number, number][]>();
  for (const snapshot of dump.snapshots) {
    const offsets = JSON.parse(snapshot.summary['tributary.offsets'] ?? '{}') as Record<string, [number, number]>;
    for (const [partition, range] of Object.entries(offsets)) ranges.set(partition, [...(ranges.get(partition) ?? []), range]);
  }
  for (let partition = 0; partition < PARTITIONS; partition += 1) {
    const sorted = (ranges.get(String(partition)) ?? []).sort((a, b) => a[0] - b[0]);
    const end = Math.max(...produced.filter((record) => record.partition === partition).map((record) => record.offset)) + 1;
    // Contiguous from 0 to the end: no gap, no overlap.
    expect(sorted.map(([start]) => start)).toEqual([0, ...sorted.slice(0, -1).map(([, stop]) => stop)]);
    expect(sorted.at(-1)?.[1]).toBe(end);
  }
}

describe.each<WarehouseKind>(['local folder', 'HDFS'])('format: iceberg on %s', (kind) => {
  it(
    'writes a table the Iceberg Java API reads exactly: ids in the files, hour partitions, offsets in snapshot summaries, time travel',
    async () => {
      const name = `iceberg-${kind === 'HDFS' ? 'hdfs' : 'local'}`;
      const topic = `t-${name}`;
      const warehouse: TestWarehouse = makeWarehouse(kind, env, name);
      cleanups.push(() => warehouse.cleanup());
      await createTopic(env.broker.bootstrap, topic, PARTITIONS);
      await registerPageViews(env.registryClient, topic);
      const loadFile = await writeLoadFile(env, { name, topic, warehouse, format: 'iceberg', codec: 'zstd' });
      const location = warehouse.warehouse.describe(`${warehouse.root}/${topic}`);

      const first = await producePageViews(env, topic, { count: 240, partitions: PARTITIONS, hours: 4 });
      const firstRun = await runEtl(['run', '--load', loadFile, '--no-progress']);
      expect(firstRun.status, messagesOf(firstRun)).toBe(0);
      const second = await producePageViews(env, topic, { count: 90, partitions: PARTITIONS, hours: 4, firstId: first.length });
      const secondRun = await runEtl(['run', '--load', loadFile, '--no-progress']);
      expect(secondRun.status, messagesOf(secondRun)).toBe(0);
      const produced = [...first, ...second];

      const dump = await readIcebergTable(location, { runDir: services().runDir });
      expect(dump.formatVersion).toBe(2);
      expect(dump.records).toHaveLength(produced.length);
      const rows = new Map(dump.records.map((row) => [positionOf(row), row]));
      expect(rows.size).toBe(produced.length);
      for (const record of produced) expect(rows.get(`${record.partition}/${record.offset}`)).toEqual(expectedRow(topic, record));

      // Field ids: every column of every file carries the id the table schema gives its path.
      const ids = idsByPath(dump.schema.fields);
      expect(dump.fieldIdsInFiles.length).toBe(dump.files.length);
      for (const file of dump.fieldIdsInFiles) {
        const leaves = file.columns.filter((column) => column.type !== 'group');
        expect(leaves.length).toBeGreaterThan(10);
        for (const column of leaves) expect(column.fieldId, `${file.path}: ${column.path}`).toBe(ids.get(column.path));
      }
      expect(JSON.parse(dump.properties['schema.name-mapping.default'] ?? '[]')).toContainEqual({ 'field-id': ids.get('memberId'), names: ['memberId'] });

      // Partitions: one hour per file, the hours of the records.
      expect(dump.spec.fields).toEqual([expect.objectContaining({ name: '_event_time_hour', transform: 'hour', 'source-id': ids.get('_event_time') })]);
      const hours = new Set(produced.map((record) => Math.floor((record.value as PageView).header.time / HOUR)));
      expect(new Set(dump.files.map((file) => file.partition['_event_time_hour']))).toEqual(hours);
      for (const file of dump.files) {
        const hour = file.partition['_event_time_hour'] as number;
        expect(file.partitionPath).toBe(`_event_time_hour=${new Date(hour * HOUR).toISOString().slice(0, 13).replace('T', '-')}`);
        expect(Number(file.lowerBounds?.[String(ids.get('_event_time'))])).toBeGreaterThanOrEqual(hour * HOUR * 1000);
        expect(Number(file.upperBounds?.[String(ids.get('_event_time'))])).toBeLessThan((hour + 1) * HOUR * 1000);
        expect(file.valueCounts?.[String(ids.get('pageKey'))]).toBe(file.recordCount);
      }
      const oneHour = Math.min(...hours);
      const filtered = await readIcebergTable(location, { runDir: services().runDir, filter: { column: '_event_time', fromMicros: oneHour * HOUR * 1000, toMicros: (oneHour + 1) * HOUR * 1000 } });
      expect(filtered.files.length).toBeGreaterThan(0);
      expect(filtered.files.every((file) => file.partition['_event_time_hour'] === oneHour)).toBe(true);
      expect(filtered.records.map(positionOf).sort()).toEqual(produced.filter((record) => Math.floor((record.value as PageView).header.time / HOUR) === oneHour).map((record) => `${record.partition}/${record.offset}`).sort());

      // Snapshots: one per run, naming their commits, offsets contiguous and disjoint.
      expect(dump.snapshots.map((snapshot) => [snapshot.operation, snapshot.summary['tributary.commit-id'], snapshot.summary['added-records']])).toEqual([
        ['append', `${name}/1`, String(first.length)],
        ['append', `${name}/2`, String(second.length)],
      ]);
      expect(dump.snapshots[1]?.parentId).toBe(dump.snapshots[0]?.snapshotId);
      expect(dump.currentSnapshotId).toBe(dump.snapshots[1]?.snapshotId);
      expectOffsetsCovered(dump, produced);

      const travelled = await readIcebergTable(location, { runDir: services().runDir, snapshot: dump.snapshots[0]!.snapshotId });
      expect(travelled.records.map(positionOf).sort()).toEqual(first.map((record) => `${record.partition}/${record.offset}`).sort());

      // A third run with nothing new makes no snapshot.
      const idle = await runEtl(['run', '--load', loadFile, '--no-progress']);
      expect(idle.status, messagesOf(idle)).toBe(0);
      expect((await readIcebergTable(location, { runDir: services().runDir })).snapshots).toHaveLength(2);

      // etl ddl says where the table is, for Spark and Trino; replay refuses to swap the table's files.
      const ddl = await runEtl(['ddl', '--load', loadFile]);
      expect(ddl.status, messagesOf(ddl)).toBe(0);
      expect(ddl.stdout).toContain(`table_location => '${location}', metadata_file_name => 'v2.metadata.json'`);
      expect(ddl.stdout).toContain(`spark.sql.catalog.tributary.warehouse=${location.slice(0, -`/${warehouse.root}/${topic}`.length)}`);
      expect(ddl.stdout).toContain(`tributary.${warehouse.root}.\`${topic}\``);
      const replay = await runEtl(['replay', '--load', loadFile, '--from', new Date(Math.min(...hours) * HOUR).toISOString(), '--to', new Date((Math.min(...hours) + 1) * HOUR).toISOString(), '--no-progress']);
      expect(replay.status).not.toBe(0);
      expect(messagesOf(replay)).toContain('writes Iceberg tables, and etl replay does not work on them yet');

      // A new reader schema (a third registry version) changes the rows' shape: refused, table unchanged.
      await env.registryClient.register(`${topic}-value`, PAGE_VIEW_V3);
      await producePageViews(env, topic, { count: 6, partitions: PARTITIONS, hours: 1, firstId: produced.length });
      const refused = await runEtl(['run', '--load', loadFile, '--no-progress']);
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toContain('ETL_ICEBERG_SCHEMA_CHANGED');
      const after = await readIcebergTable(location, { runDir: services().runDir });
      expect([after.currentSnapshotId, after.records.length]).toEqual([dump.currentSnapshotId, produced.length]);
    },
    SLOW,
  );
});
