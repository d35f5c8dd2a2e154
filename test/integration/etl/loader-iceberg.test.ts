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
 * catalog settings and Trino's register_table for the table; `etl replay` of one hour makes one
 * overwrite snapshot replacing exactly that hour's files with the same records, and `etl rollback`
 * moves main back to the snapshot before it; `etl expire` then drops every other snapshot and the
 * files only they reached (the replay's), the table still whole, and the next run appends; `etl
 * orphans` deletes files no snapshot reaches and nothing else.
 *
 * Schema evolution across three registry versions of a subject (a top-level field added, then a
 * field added inside a nested record): each run evolves the table's schema, existing columns keep
 * their ids, new ones get ids above the last, and Java reads every record in the newest schema,
 * with nulls where a version lacked a field. A fourth version that Avro accepts but Iceberg cannot
 * follow (long → double) fails the run with ETL_ICEBERG_SCHEMA_CHANGED, the table unchanged.
 *
 * Records a run sets aside (not framed, unknown schema id, null value) land in the load's
 * dead-letter table with their raw bytes, offsets, codes and reasons, and `etl ddl` names it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AvroSerializer } from '../../../src/registry/serde/serializer.js';
import { readIcebergTable, type IcebergJsonField, type IcebergRecord, type IcebergTableDump } from '../../support/iceberg-java.js';
import { services } from '../services.js';
import { expectOffsetsCovered, positionOf } from './iceberg-checks.js';
import {
  createTopic,
  HOUR,
  makeWarehouse,
  messagesOf,
  FIRST_HOUR,
  PAGE_VIEW_V1,
  PAGE_VIEW_V2,
  produceRaw,
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

describe.each<WarehouseKind>(['local folder', 'HDFS'])('format: iceberg on %s', (kind) => {
  it(
    'writes a table the Iceberg Java API reads exactly (ids in the files, hour partitions, offsets in snapshot summaries, time travel); replays an hour as an overwrite and rolls it back',
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
      expectOffsetsCovered(dump, produced, PARTITIONS);

      const travelled = await readIcebergTable(location, { runDir: services().runDir, snapshot: dump.snapshots[0]!.snapshotId });
      expect(travelled.records.map(positionOf).sort()).toEqual(first.map((record) => `${record.partition}/${record.offset}`).sort());

      // A third run with nothing new makes no snapshot.
      const idle = await runEtl(['run', '--load', loadFile, '--no-progress']);
      expect(idle.status, messagesOf(idle)).toBe(0);
      expect((await readIcebergTable(location, { runDir: services().runDir })).snapshots).toHaveLength(2);

      // etl ddl says where the table is, for Spark and Trino.
      const ddl = await runEtl(['ddl', '--load', loadFile]);
      expect(ddl.status, messagesOf(ddl)).toBe(0);
      expect(ddl.stdout).toContain(`table_location => '${location}', metadata_file_name => 'v2.metadata.json'`);
      expect(ddl.stdout).toContain(`spark.sql.catalog.tributary.warehouse=${location.slice(0, -`/${warehouse.root}/${topic}`.length)}`);
      expect(ddl.stdout).toContain(`tributary.${warehouse.root}.\`${topic}\``);

      // Replay of one hour: one overwrite snapshot replacing exactly that hour's files, same records.
      const hourIso = new Date(oneHour * HOUR).toISOString();
      const replay = await runEtl(['replay', '--load', loadFile, '--from', hourIso, '--to', new Date((oneHour + 1) * HOUR).toISOString(), '--no-progress']);
      expect(replay.status, messagesOf(replay)).toBe(0);
      expect(replay.stdout).toContain(`overwrite snapshot`);
      const replayed = await readIcebergTable(location, { runDir: services().runDir });
      const replaySnapshot = replayed.snapshots.at(-1)!;
      expect([replaySnapshot.operation, replaySnapshot.parentId, replaySnapshot.summary['tributary.replay']]).toEqual(['overwrite', dump.currentSnapshotId, `${hourIso}/${new Date((oneHour + 1) * HOUR).toISOString()}`]);
      expect(replaySnapshot.summary['deleted-records']).toBe(replaySnapshot.summary['added-records']);
      expect(replayed.records.map(positionOf).sort()).toEqual(produced.map((record) => `${record.partition}/${record.offset}`).sort());
      for (const record of produced) expect(replayed.records.find((row) => positionOf(row) === `${record.partition}/${record.offset}`)).toEqual(expectedRow(topic, record));
      const rebuilt = replayed.files.filter((file) => file.partition['_event_time_hour'] === oneHour);
      expect(rebuilt.length).toBeGreaterThan(0);
      expect(rebuilt.every((file) => file.path.includes('.replay-'))).toBe(true);
      expect(replayed.files.filter((file) => file.partition['_event_time_hour'] !== oneHour).map((file) => file.path).sort()).toEqual(dump.files.filter((file) => file.partition['_event_time_hour'] !== oneHour).map((file) => file.path).sort());
      // Rollback: main back to the snapshot before the replay, metadata only.
      const rollback = await runEtl(['rollback', '--load', loadFile, '--hour', hourIso]);
      expect(rollback.status, messagesOf(rollback)).toBe(0);
      const rolledBack = await readIcebergTable(location, { runDir: services().runDir });
      expect(rolledBack.currentSnapshotId).toBe(dump.currentSnapshotId);
      expect(rolledBack.snapshots).toHaveLength(3);
      expect(rolledBack.files.map((file) => file.path).sort()).toEqual(dump.files.map((file) => file.path).sort());
      expect(rolledBack.records).toHaveLength(produced.length);

      // Expiry: everything but main's newest snapshot goes (the first commit, and the rolled-back replay),
      // with the files only they reached; the table still reads every record, and loads go on.
      const expire = await runEtl(['expire', '--load', loadFile, '--older-than', '0ms', '--retain-last', '1']);
      expect(expire.status, messagesOf(expire)).toBe(0);
      expect(expire.stdout).toContain(`${topic}: 2 snapshots expired, 1 kept`);
      const expired = await readIcebergTable(location, { runDir: services().runDir });
      expect(expired.snapshots.map((snapshot) => snapshot.snapshotId)).toEqual([dump.currentSnapshotId]);
      expect(expired.records.map(positionOf).sort()).toEqual(produced.map((record) => `${record.partition}/${record.offset}`).sort());
      const hourFolder = await warehouse.warehouse.list(`${warehouse.root}/${topic}/data/_event_time_hour=${hourIso.slice(0, 13).replace('T', '-')}`);
      expect(hourFolder.filter((entry) => entry.name.includes('.replay-'))).toEqual([]);
      expect(hourFolder.length).toBe(rebuilt.length);
      const third = await producePageViews(env, topic, { count: 30, partitions: PARTITIONS, hours: 4, firstId: produced.length });
      const afterExpiry = await runEtl(['run', '--load', loadFile, '--no-progress']);
      expect(afterExpiry.status, messagesOf(afterExpiry)).toBe(0);
      expect((await readIcebergTable(location, { runDir: services().runDir })).records).toHaveLength(produced.length + third.length);

      // A replay with a load on top, then rollback: an overwrite snapshot undoes the replay alone, the load's records kept.
      const replayAgain = await runEtl(['replay', '--load', loadFile, '--from', hourIso, '--to', new Date((oneHour + 1) * HOUR).toISOString(), '--no-progress']);
      expect(replayAgain.status, messagesOf(replayAgain)).toBe(0);
      const replayId = (await readIcebergTable(location, { runDir: services().runDir })).currentSnapshotId;
      const fourth = await producePageViews(env, topic, { count: 20, partitions: PARTITIONS, hours: 4, firstId: produced.length + third.length });
      const onTop = await runEtl(['run', '--load', loadFile, '--no-progress']);
      expect(onTop.status, messagesOf(onTop)).toBe(0);
      const undo = await runEtl(['rollback', '--load', loadFile, '--hour', hourIso]);
      expect(undo.status, messagesOf(undo)).toBe(0);
      expect(undo.stdout).toContain(`put back the files the replay of ${hourIso.slice(0, 13)}`);
      const undone = await readIcebergTable(location, { runDir: services().runDir });
      const undoSnapshot = undone.snapshots.find((snapshot) => snapshot.snapshotId === undone.currentSnapshotId)!;
      expect([undoSnapshot.operation, undoSnapshot.summary['tributary.rolled-back']]).toEqual(['overwrite', replayId]);
      expect(undone.files.filter((file) => file.path.includes('.replay-'))).toEqual([]);
      const everything = [...produced, ...third, ...fourth];
      expect(undone.records.map(positionOf).sort()).toEqual(everything.map((record) => `${record.partition}/${record.offset}`).sort());
      for (const record of everything) expect(undone.records.find((row) => positionOf(row) === `${record.partition}/${record.offset}`)).toEqual(expectedRow(topic, record));
      // Done once: the same rollback again finds no replay left to undo.
      const again = await runEtl(['rollback', '--load', loadFile, '--hour', hourIso]);
      expect(again.stdout, messagesOf(again)).toContain('rollback: nothing to do in the window');

      // Orphans: files no snapshot reaches (a killed replay's, a lost race's manifest) go; nothing referenced does.
      const strayData = `${warehouse.root}/${topic}/data/_event_time_hour=${hourIso.slice(0, 13).replace('T', '-')}/stray.replay-dead.parquet`;
      const strayManifest = `${warehouse.root}/${topic}/metadata/00000000-dead-m0.avro`;
      await warehouse.warehouse.create(strayData, Buffer.from('left by a killed replay'));
      await warehouse.warehouse.create(strayManifest, Buffer.from('left by a lost race'));
      const dryRun = await runEtl(['orphans', '--load', loadFile, '--older-than', '0ms', '--dry-run']);
      expect(dryRun.status, messagesOf(dryRun)).toBe(0);
      expect(dryRun.stdout).toContain(`${topic}: 2 orphan files (dry run: none deleted)`);
      const orphans = await runEtl(['orphans', '--load', loadFile, '--older-than', '0ms']);
      expect(orphans.status, messagesOf(orphans)).toBe(0);
      expect(orphans.stdout).toContain(`${topic}: 2 orphan files, 2 deleted`);
      expect([await warehouse.warehouse.stat(strayData), await warehouse.warehouse.stat(strayManifest)]).toEqual([undefined, undefined]);
      expect((await readIcebergTable(location, { runDir: services().runDir })).records).toHaveLength(everything.length);

    },
    SLOW,
  );
});

/** PageViewEvent with a change applied to its JSON. */
function pageViewVersion(change: (schema: { fields: Record<string, unknown>[] }) => void): string {
  const schema = JSON.parse(PAGE_VIEW_V1) as { fields: Record<string, unknown>[] };
  change(schema);
  return JSON.stringify(schema);
}

const V2 = PAGE_VIEW_V2; // + experiment
const V3 = pageViewVersion((schema) => {
  schema.fields.push({ name: 'experiment', type: ['null', 'string'], default: null });
  const header = schema.fields.find((field) => field['name'] === 'header') as { type: { fields: Record<string, unknown>[] } };
  header.type.fields.push({ name: 'region', type: ['null', 'string'], default: null });
});
const V4 = pageViewVersion((schema) => {
  schema.fields.push({ name: 'experiment', type: ['null', 'string'], default: null });
  const header = schema.fields.find((field) => field['name'] === 'header') as { type: { fields: Record<string, unknown>[] } };
  header.type.fields.push({ name: 'region', type: ['null', 'string'], default: null });
  const member = schema.fields.find((field) => field['name'] === 'memberId')!;
  member['type'] = ['null', 'double'];
});

describe('format: iceberg schema evolution', () => {
  it(
    'follows three registry versions (a field added, then one inside a nested record), ids kept, and refuses long → double',
    async () => {
      const name = 'iceberg-evolution';
      const topic = `t-${name}`;
      const warehouse = makeWarehouse('local folder', env, name);
      cleanups.push(() => warehouse.cleanup());
      await createTopic(env.broker.bootstrap, topic, 1);
      const subject = `${topic}-value`;
      const loadFile = await writeLoadFile(env, { name, topic, warehouse, format: 'iceberg', codec: 'snappy' });
      const location = warehouse.warehouse.describe(`${warehouse.root}/${topic}`);
      const serializer = new AvroSerializer(env.registryClient);
      let next = 0;
      const produceIn = async (schema: string, extra: (id: number) => Record<string, unknown>, header: (id: number) => Record<string, unknown> = () => ({})): Promise<void> => {
        await env.registryClient.register(subject, schema);
        const values: Buffer[] = [];
        for (let index = 0; index < 5; index += 1, next += 1) {
          const value = {
            header: { eventId: `00000000-0000-4000-8000-${String(next).padStart(12, '0')}`, time: FIRST_HOUR + next * 60_000, server: 'web-1', service: 'frontend', ...header(next) },
            memberId: next,
            pageKey: `page-${next}`,
            url: `/p/${next}`,
            referrer: null,
            userAgent: null,
            ...extra(next),
          };
          values.push(await serializer.encode(subject, value, schema));
        }
        await produceRaw(env, topic, 0, values);
      };
      const run = async (): Promise<IcebergTableDump> => {
        const result = await runEtl(['run', '--load', loadFile, '--no-progress']);
        expect(result.status, messagesOf(result)).toBe(0);
        return readIcebergTable(location, { runDir: services().runDir });
      };

      await produceIn(PAGE_VIEW_V1, () => ({}));
      const first = await run();
      await produceIn(V2, (id) => ({ experiment: `arm-${id}` }));
      const second = await run();
      await produceIn(V3, (id) => ({ experiment: `arm-${id}` }), (id) => ({ region: `eu-${id}` }));
      const third = await run();

      const ids = (dump: IcebergTableDump): Map<string, number> => idsByPath(dump.schema.fields);
      // Columns keep their ids; each new one gets an id above every earlier one.
      for (const [path, id] of ids(first)) expect(ids(third).get(path), path).toBe(id);
      expect(ids(second).get('experiment')).toBe(first.lastColumnId + 1);
      expect(ids(third).get('header.region')).toBe(second.lastColumnId + 1);
      expect(third.schemas.map((schema) => schema['schema-id'])).toEqual([0, 1, 2]);
      expect(third.snapshots.map((snapshot) => snapshot.schemaId)).toEqual([0, 1, 2]);
      expect(third.schema.fields.find((field) => field.name === 'experiment')?.required).toBe(false);

      // Every record in the newest schema: what a version lacked reads as null.
      const rows = [...third.records].sort((a, b) => positionOf(a).localeCompare(positionOf(b), 'en', { numeric: true }));
      expect(rows.map((row) => [row['memberId'], row['experiment'], (row['header'] as Record<string, unknown>)['region']])).toEqual(
        Array.from({ length: 15 }, (_, id) => [id, id < 5 ? null : `arm-${id}`, id < 10 ? null : `eu-${id}`]),
      );

      // Avro reads a long as a double; Iceberg cannot promote long to double: refused, nothing changed.
      await produceIn(V4, (id) => ({ experiment: null, memberId: id + 0.5 }));
      const refused = await runEtl(['run', '--load', loadFile, '--no-progress']);
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toContain('ETL_ICEBERG_SCHEMA_CHANGED');
      expect(messagesOf(refused)).toContain('field memberId is long in the table and double in the records now written');
      const after = await readIcebergTable(location, { runDir: services().runDir });
      expect([after.currentSnapshotId, after.records.length, after.schemas.length]).toEqual([third.currentSnapshotId, 15, 3]);
    },
    SLOW,
  );
});

describe('format: iceberg dead letters', () => {
  it(
    'puts the records a run sets aside into the load\'s dead-letter table: raw bytes, offset, code and reason',
    async () => {
      const name = 'iceberg-dead-letters';
      const topic = `t-${name}`;
      const warehouse = makeWarehouse('local folder', env, name);
      cleanups.push(() => warehouse.cleanup());
      await createTopic(env.broker.bootstrap, topic, 1);
      await registerPageViews(env.registryClient, topic);
      const loadFile = await writeLoadFile(env, { name, topic, warehouse, format: 'iceberg', codec: 'zstd', quarantineMax: 10 });
      const good = await producePageViews(env, topic, { count: 12, partitions: 1, hours: 2 });
      const garbage = [Buffer.from('not avro at all'), Buffer.from([0, 0, 0, 0, 99, 1, 2]), null];
      const offsets = await produceRaw(env, topic, 0, garbage);
      const result = await runEtl(['run', '--load', loadFile, '--no-progress']);
      expect(result.status, messagesOf(result)).toBe(0);

      const data = await readIcebergTable(warehouse.warehouse.describe(`${warehouse.root}/${topic}`), { runDir: services().runDir });
      expect(data.records).toHaveLength(good.length);
      const letters = await readIcebergTable(warehouse.warehouse.describe(`${warehouse.root}/_etl/${name}/dead-letters`), { runDir: services().runDir });
      const rows = [...letters.records].sort((a, b) => positionOf(a).localeCompare(positionOf(b), 'en', { numeric: true }));
      expect(rows.map((row) => [(row['_kafka'] as { offset: number }).offset, row['value']])).toEqual(offsets.map((offset, index) => [offset, garbage[index] === null ? null : garbage[index]!.toString('base64')]));
      expect(rows.map((row) => row['code'])).toEqual(['SERDE_NOT_FRAMED', 'REGISTRY_SCHEMA_NOT_FOUND', 'ETL_NULL_VALUE']);
      expect(rows.every((row) => typeof row['reason'] === 'string' && (row['reason']).length > 10)).toBe(true);
      expect(letters.snapshots.map((snapshot) => snapshot.summary['tributary.commit-id'])).toEqual([`${name}/1`]);
      const ddl = await runEtl(['ddl', '--load', loadFile]);
      expect(ddl.stdout).toContain(`${name}_dead_letters (records set aside, with their reasons): ${letters.location}`);
    },
    SLOW,
  );
});
