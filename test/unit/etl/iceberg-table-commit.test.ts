/**
 * The file-system table commit (src/etl/iceberg/table-commit.ts) on a local warehouse folder:
 * versions, hint, snapshot chain, manifests with field ids, a commit id made at most once, racing
 * writers each landing once, and a stale hint probed past.
 */
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseDataFileSchema } from '../../../src/etl/files/data-files.js';
import { parseIcebergJson, stringifyIcebergJson } from '../../../src/etl/iceberg/iceberg-json.js';
import { HOUR_PARTITION_FIELDS, hourSpecOf, rowSchemaOf } from '../../../src/etl/iceberg/load-tables.js';
import { decodeManifest, decodeManifestList, readManifestContainer } from '../../../src/etl/iceberg/manifest-avro.js';
import { appendSnapshot, loadTable, setMain, type AppendCommit, type IcebergTable } from '../../../src/etl/iceberg/table-commit.js';
import { expireSnapshots } from '../../../src/etl/iceberg/table-expiry.js';
import { mainAncestry } from '../../../src/etl/iceberg/table-metadata.js';
import { evolveSchema } from '../../../src/etl/iceberg/schema-evolution.js';
import { openWarehouse } from '../../../src/etl/warehouse/open-warehouse.js';

const schema = rowSchemaOf(parseDataFileSchema({ type: 'record', name: 'R', fields: [{ name: 'id', type: 'long' }] }));
const HOUR = 496_474; // 2026-08-21T10

let folder: string;
let table: IcebergTable;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'tributary-iceberg-'));
  const warehouse = openWarehouse(folder);
  table = { warehouse, dir: 'db/events', location: warehouse.describe('db/events') };
});

afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

function commit(commitId: string, files: number): AppendCommit {
  return {
    commitId,
    schema,
    spec: hourSpecOf(schema),
    partitionFields: HOUR_PARTITION_FIELDS,
    properties: { 'write.format.default': 'parquet', 'schema.name-mapping.default': '[]' },
    files: Array.from({ length: files }, (_, index) => ({ path: `db/events/data/_event_time_hour=2026-08-21-10/${commitId.replace('/', '-')}-${index}.parquet`, hour: HOUR + index, records: 10, bytes: 1000 })),
    summary: { 'tributary.offsets': '{"0":[0,10]}', 'tributary.load': commitId.split('/')[0]!, 'tributary.seq': commitId.split('/')[1]! },
    nowMs: () => 1_787_307_360_000,
  };
}

const metadataFolder = (): string => join(folder, 'db', 'events', 'metadata');

describe('appending snapshots to a file-system table', () => {
  it('makes v1 and v2, points the hint at the newest, and chains the snapshots', async () => {
    const first = await appendSnapshot(table, commit('load/1', 2));
    const second = await appendSnapshot(table, commit('load/2', 1));
    expect([first.outcome, first.version, second.outcome, second.version]).toEqual(['committed', 1, 'committed', 2]);
    expect(await readFile(join(metadataFolder(), 'version-hint.text'), 'utf8')).toBe('2');
    const loaded = await loadTable(table);
    const ancestry = mainAncestry(loaded!.metadata);
    expect(ancestry.map((snapshot) => snapshot['snapshot-id'])).toEqual([second.snapshotId, first.snapshotId]);
    expect(ancestry.map((snapshot) => snapshot['sequence-number'])).toEqual([2, 1]);
    expect(ancestry[0]?.summary).toMatchObject({ operation: 'append', 'added-data-files': '1', 'total-data-files': '3', 'total-records': '30', 'tributary.commit-id': 'load/2', 'tributary.offsets': '{"0":[0,10]}' });
    expect(loaded!.metadata['metadata-log']?.map((entry) => entry['metadata-file'])).toEqual([`${table.location}/metadata/v1.metadata.json`]);
    // The second manifest list holds both manifests, the new one first, each with its own sequence number.
    const list = decodeManifestList(await readFile(join(metadataFolder(), (ancestry[0]?.['manifest-list'] ?? '').split('/').at(-1)!)));
    expect(list.map((row) => [row.sequence_number, row.added_files_count, row.added_snapshot_id])).toEqual([
      [2n, 1, second.snapshotId],
      [1n, 2, first.snapshotId],
    ]);
  });

  it('writes manifests whose Avro schemas carry the field ids and whose entries inherit sequence numbers', async () => {
    await appendSnapshot(table, commit('load/1', 2));
    const names = await readdir(metadataFolder());
    const manifest = names.find((name) => name.endsWith('-m0.avro'))!;
    const bytes = await readFile(join(metadataFolder(), manifest));
    const container = readManifestContainer(bytes);
    const fieldsWithoutIds: string[] = [];
    const visit = (node: unknown, path: string): void => {
      if (Array.isArray(node)) return node.forEach((item) => visit(item, path));
      if (typeof node !== 'object' || node === null) return;
      const record = node as Record<string, unknown>;
      for (const field of (record['fields'] ?? []) as Record<string, unknown>[]) {
        if (typeof field['field-id'] !== 'number') fieldsWithoutIds.push(`${path}.${String(field['name'])}`);
        visit(field['type'], `${path}.${String(field['name'])}`);
      }
      if (record['type'] === 'array' && typeof (record['items'] as Record<string, unknown>)['type'] !== 'string' && record['logicalType'] !== 'map') {
        if (typeof record['element-id'] !== 'number') fieldsWithoutIds.push(`${path}[]`);
      }
      visit(record['items'], path);
    };
    visit(container.schemaJson, 'manifest_entry');
    expect(fieldsWithoutIds).toEqual([]);
    expect(JSON.stringify(container.schemaJson)).toContain('"logicalType":"map"');
    expect(container.metadata).toMatchObject({ 'format-version': '2', content: 'data', 'partition-spec-id': '0', 'partition-spec': JSON.stringify(hourSpecOf(schema).fields) });
    const entries = decodeManifest(bytes);
    expect(entries.map((entry) => [entry.status, entry.sequence_number, entry.data_file.partition['_event_time_hour']])).toEqual([
      [1, null, HOUR],
      [1, null, HOUR + 1],
    ]);
    expect(entries[0]?.data_file.file_path).toBe(`${table.location}/data/_event_time_hour=2026-08-21-10/load-1-0.parquet`);
  });

  it('makes a commit once: the same commit id again finds its snapshot and writes nothing', async () => {
    const first = await appendSnapshot(table, commit('load/1', 1));
    const before = await readdir(metadataFolder());
    const again = await appendSnapshot(table, commit('load/1', 1));
    expect(again).toEqual({ outcome: 'already-committed', snapshotId: first.snapshotId, version: 1 });
    expect(await readdir(metadataFolder())).toEqual(before);
  });

  it('lands each of several racing commits once, the losers retrying on the new version', async () => {
    const outcomes = await Promise.all(['load/1', 'other/1', 'third/1'].map((id) => appendSnapshot(table, commit(id, 1))));
    expect(outcomes.map((outcome) => outcome.outcome)).toEqual(['committed', 'committed', 'committed']);
    expect(outcomes.map((outcome) => outcome.version).sort()).toEqual([1, 2, 3]);
    const ancestry = mainAncestry((await loadTable(table))!.metadata);
    expect(ancestry.map((snapshot) => snapshot.summary['tributary.commit-id']).sort()).toEqual(['load/1', 'other/1', 'third/1']);
    expect(ancestry[0]?.summary['total-data-files']).toBe('3');
    // The losers removed what they wrote: every manifest list and manifest left is referenced.
    const names = (await readdir(metadataFolder())).filter((name) => name.endsWith('.avro'));
    expect(names).toHaveLength(6);
    expect(names.filter((name) => name.startsWith('.'))).toEqual([]);
  });

  it('probes past a stale hint and repairs it with the next commit', async () => {
    await appendSnapshot(table, commit('load/1', 1));
    await appendSnapshot(table, commit('load/2', 1));
    await writeFile(join(metadataFolder(), 'version-hint.text'), '1');
    expect((await loadTable(table))?.version).toBe(2);
    const third = await appendSnapshot(table, commit('load/3', 1));
    expect(third.version).toBe(3);
    expect(await readFile(join(metadataFolder(), 'version-hint.text'), 'utf8')).toBe('3');
  });

  it('keeps 63-bit snapshot ids exact through the metadata JSON', async () => {
    const first = await appendSnapshot(table, commit('load/1', 1));
    const text = await readFile(join(metadataFolder(), 'v1.metadata.json'), 'utf8');
    expect(text).toContain(`"current-snapshot-id": ${first.snapshotId}`);
    expect((parseIcebergJson(text) as Record<string, unknown>)['current-snapshot-id']).toBe(first.snapshotId > BigInt(Number.MAX_SAFE_INTEGER) ? first.snapshotId : Number(first.snapshotId));
  });

  it('removes files in an overwrite: the rewritten manifest keeps the others EXISTING and marks the removed DELETED, with their sequence numbers', async () => {
    await appendSnapshot(table, commit('load/1', 2));
    const overwrite = await appendSnapshot(table, { ...commit('replay/1', 1), remove: (file) => file.path.endsWith('load-1-0.parquet') });
    const metadata = (await loadTable(table))!.metadata;
    const snapshot = mainAncestry(metadata)[0]!;
    expect(snapshot.summary).toMatchObject({ operation: 'overwrite', 'added-data-files': '1', 'deleted-data-files': '1', 'deleted-records': '10', 'total-data-files': '2', 'total-records': '20' });
    const list = decodeManifestList(await readFile(join(metadataFolder(), snapshot['manifest-list'].split('/').at(-1)!)));
    expect(list.map((row) => [row.added_files_count, row.existing_files_count, row.deleted_files_count, row.sequence_number])).toEqual([
      [1, 0, 0, 2n],
      [0, 1, 1, 2n],
    ]);
    const rewritten = decodeManifest(await readFile(join(metadataFolder(), list[1]!.manifest_path.split('/').at(-1)!)));
    expect(rewritten.map((entry) => [entry.status, entry.sequence_number, entry.file_sequence_number, entry.snapshot_id === overwrite.snapshotId, entry.data_file.file_path.split('/').at(-1)])).toEqual([
      [2, 1n, 1n, true, 'load-1-0.parquet'],
      [0, 1n, 1n, false, 'load-1-1.parquet'],
    ]);
    expect(list[1]?.min_sequence_number).toBe(1n);
  });

  it('expires old snapshots and deletes only what no kept snapshot reaches', async () => {
    const first = await appendSnapshot(table, commit('load/1', 2));
    const second = await appendSnapshot(table, commit('load/2', 1));
    const replay = await appendSnapshot(table, { ...commit('replay/1', 1), remove: (file) => file.path.endsWith('load-1-0.parquet') });
    await setMain(table, second.snapshotId, replay.snapshotId);
    // Data files exist for the whole story, so deletions can be seen.
    const dataFolder = join(folder, 'db', 'events', 'data', '_event_time_hour=2026-08-21-10');
    await mkdir(dataFolder, { recursive: true });
    for (const name of ['load-1-0', 'load-1-1', 'load-2-0', 'replay-1-0']) await writeFile(join(dataFolder, `${name}.parquet`), 'x');
    const report = await expireSnapshots(table, { olderThanMs: Number.MAX_SAFE_INTEGER, retainLast: 1 });
    expect([...report.expired].sort()).toEqual([String(first.snapshotId), String(replay.snapshotId)].sort());
    expect(report.kept).toBe(1);
    const metadata = (await loadTable(table))!.metadata;
    expect(metadata.snapshots?.map((snapshot) => snapshot['snapshot-id'])).toEqual([second.snapshotId]);
    expect(metadata['snapshot-log']?.map((entry) => entry['snapshot-id'])).toEqual([second.snapshotId]);
    // The replay's file went; the files the kept snapshot reads stayed.
    expect((await readdir(dataFolder)).sort()).toEqual(['load-1-0.parquet', 'load-1-1.parquet', 'load-2-0.parquet']);
    // Every manifest list and manifest the kept snapshot names is still there.
    const list = decodeManifestList(await readFile(join(metadataFolder(), metadata.snapshots![0]!['manifest-list'].split('/').at(-1)!)));
    for (const row of list) await readFile(join(metadataFolder(), row.manifest_path.split('/').at(-1)!));
    expect((await readdir(metadataFolder())).filter((name) => name.startsWith('snap-'))).toHaveLength(1);
  });

  it('refuses to build on a table whose main lost a snapshot of the load (rolled back by another tool)', async () => {
    const first = await appendSnapshot(table, commit('load/1', 1));
    await appendSnapshot(table, commit('load/2', 1));
    // Another tool's rollback: v3 is v2 with main pointing at the first snapshot again.
    const metadata = parseIcebergJson(await readFile(join(metadataFolder(), 'v2.metadata.json'), 'utf8')) as Record<string, unknown>;
    const rolledBack = { ...metadata, 'current-snapshot-id': first.snapshotId, refs: { main: { 'snapshot-id': first.snapshotId, type: 'branch' } } };
    await writeFile(join(metadataFolder(), 'v3.metadata.json'), stringifyIcebergJson(rolledBack));
    const loaded = await loadTable(table);
    expect(mainAncestry(loaded!.metadata).map((snapshot) => snapshot['snapshot-id'])).toEqual([first.snapshotId]);
    const refused = appendSnapshot(table, commit('load/3', 1));
    await expect(refused).rejects.toMatchObject({ code: 'ETL_ICEBERG_METADATA_INVALID' });
    await expect(refused).rejects.toThrow(/rolled back or moved by another tool/);
    expect((await loadTable(table))?.version).toBe(3);
  });

  it('evolves the table when the rows add a field: a new schema, ids kept, the new id above the last', async () => {
    await appendSnapshot(table, commit('load/1', 1));
    const loaded = (await loadTable(table))!;
    const wider = rowSchemaOf(parseDataFileSchema({ type: 'record', name: 'R', fields: [{ name: 'id', type: 'long' }, { name: 'more', type: 'string' }] }));
    const evolved = evolveSchema({ schema: loaded.metadata.schemas[0]!, lastColumnId: loaded.metadata['last-column-id'], schemaIds: [0] }, wider, 'test');
    expect(evolved.changes).toEqual(['added more']);
    await appendSnapshot(table, { ...commit('load/2', 1), schema: evolved.schema });
    const after = (await loadTable(table))!.metadata;
    expect(after['current-schema-id']).toBe(1);
    expect(after['last-column-id']).toBe(loaded.metadata['last-column-id'] + 1);
    const fields = after.schemas[1]!.fields;
    expect(fields.find((field) => field.name === 'more')).toEqual({ id: loaded.metadata['last-column-id'] + 1, name: 'more', required: false, type: 'string' });
    expect(fields.find((field) => field.name === 'id')?.id).toBe(1);
    expect(mainAncestry(after)[0]?.['schema-id']).toBe(1);
    // The name mapping follows: the new column is in it.
    expect(JSON.parse(after.properties?.['schema.name-mapping.default'] ?? '[]')).toContainEqual({ 'field-id': loaded.metadata['last-column-id'] + 1, names: ['more'] });
  });

  it('refuses rows whose ids are not what evolving the table gives (planned against an older table), changing nothing', async () => {
    await appendSnapshot(table, commit('load/1', 1));
    const before = await readdir(metadataFolder());
    // Fresh ids: `more` takes id 2, which the table gives to _event_time.
    const wider = rowSchemaOf(parseDataFileSchema({ type: 'record', name: 'R', fields: [{ name: 'id', type: 'long' }, { name: 'more', type: ['null', 'string'], default: null }] }));
    await expect(appendSnapshot(table, { ...commit('load/2', 1), schema: wider })).rejects.toMatchObject({ code: 'ETL_ICEBERG_SCHEMA_CHANGED' });
    expect(await readdir(metadataFolder())).toEqual(before);
  });
});
