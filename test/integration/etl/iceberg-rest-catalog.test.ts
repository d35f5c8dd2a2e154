/**
 * Tables committed through a real Iceberg REST catalog (issue #33): Apache Iceberg's own REST
 * server (RESTCatalogServer of iceberg-open-api 1.10.0's test fixtures, over a JDBC catalog on
 * sqlite; test/services/iceberg-rest.ts) and our client (src/etl/iceberg/rest-catalog.ts), reached
 * with an OAuth2 client credential, a local warehouse holding the files.
 *
 * A new table is created through the catalog (its namespace too) and gets two append snapshots:
 * data files written by the loader's Parquet writer, manifests and manifest lists by its Avro
 * writer, each next metadata built with table-metadata.ts and committed with commitMetadata
 * (table-versions.ts), the catalog's table bound to the IcebergTable. Iceberg's Java RESTCatalog
 * client, loading the same table from the same server, must then see both snapshots chained on
 * main, the row schema with the loader's column ids (nested struct, list and map included), the
 * hour partition spec, the three data files and every row. A commit built on the table as it was
 * before the second append (its assert-ref-snapshot-id names the first snapshot) is answered
 * conflict, and the catalog still points at the same metadata file.
 *
 * A second table goes through the other changes the loader commits: a schema evolution
 * (add-schema, set-current-schema) with its append, a rollback (set-snapshot-ref back), an expiry
 * (remove-snapshots), properties set and removed; the server applies each and Java sees the end.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Type } from 'avsc';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDataFileSchema } from '../../../src/etl/files/data-files.js';
import { HOUR_PARTITION_FIELDS, hourSpecOf, rowSchemaOf } from '../../../src/etl/iceberg/load-tables.js';
import { decodeManifestList, encodeManifest, encodeManifestList, ENTRY_ADDED, type ManifestEntryRecord, type ManifestFileRecord } from '../../../src/etl/iceberg/manifest-avro.js';
import { RestCatalog, type TableIdentifier } from '../../../src/etl/iceberg/rest-catalog.js';
import { tableChanges } from '../../../src/etl/iceberg/rest-updates.js';
import { writeRowFile } from '../../../src/etl/iceberg/row-files.js';
import { evolveSchema } from '../../../src/etl/iceberg/schema-evolution.js';
import type { AppendedFile } from '../../../src/etl/iceberg/table-commit.js';
import { currentSchema, currentSnapshot, defaultSpec, newTableMetadata, withMain, withSnapshot, type Snapshot, type TableMetadata } from '../../../src/etl/iceberg/table-metadata.js';
import { tableRow, tableRowType } from '../../../src/etl/iceberg/table-row.js';
import { highestFieldId, type IcebergSchema } from '../../../src/etl/iceberg/table-schema.js';
import { commitMetadata, loadTable, type IcebergTable, type LoadedTable } from '../../../src/etl/iceberg/table-versions.js';
import { openWarehouse } from '../../../src/etl/warehouse/open-warehouse.js';
import type { WarehouseFileSystem } from '../../../src/etl/warehouse/warehouse.js';
import { startIcebergRestCatalog, type IcebergRestCatalogServer } from '../../services/iceberg-rest.js';
import { openRun } from '../../services/run-dir.js';
import { serviceDir } from '../../services/run-dir.js';
import { checkRestTable } from '../../support/iceberg-rest-check.js';
import { services } from '../services.js';

const SLOW = 300_000;
const HOUR_MS = 3_600_000;
const FIRST_HOUR = Date.UTC(2026, 7, 21, 10) / HOUR_MS;
const NAMESPACE = ['tributary', 'it'];

const PAGE_VIEW = {
  type: 'record',
  name: 'PageView',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'page', type: ['null', 'string'], default: null },
    { name: 'session', type: { type: 'record', name: 'Session', fields: [{ name: 'browser', type: 'string' }, { name: 'tags', type: { type: 'array', items: 'string' } }] } },
    { name: 'counts', type: { type: 'map', values: 'int' } },
  ],
};

interface PageView {
  readonly id: number;
  readonly page: string | null;
  readonly session: { readonly browser: string; readonly tags: readonly string[] };
  readonly counts: Readonly<Record<string, number>>;
}

let server: IcebergRestCatalogServer;
let catalog: RestCatalog;
let warehouse: WarehouseFileSystem;
let runDir: string;
const timings: Record<string, number> = {};
let commits = 0;

beforeAll(async () => {
  const run = openRun(services().runDir);
  runDir = run.dir;
  const began = performance.now();
  server = await startIcebergRestCatalog(run, 'iceberg-rest', (line) => void process.stderr.write(`[iceberg-rest] ${line}\n`));
  timings['server start (s)'] = Math.round(performance.now() - began) / 1000;
  warehouse = openWarehouse(serviceDir(run, 'iceberg-rest-warehouse'));
  // The fixture's token endpoint grants any client credential; what is tested is that ours gets and sends one.
  catalog = await RestCatalog.connect({ uri: server.uri, credential: 'tributary:secret' });
}, SLOW);

afterAll(async () => {
  await server?.stop();
  process.stderr.write(`[iceberg-rest] timings ${JSON.stringify(timings)}\n`);
}, 60_000);

function boundTable(name: string): { table: IcebergTable; id: TableIdentifier } {
  const id = { namespace: NAMESPACE, name };
  const dir = `tables/${name}`;
  return { id, table: { warehouse, dir, location: warehouse.describe(dir), catalog: catalog.table(id, dir) } };
}

/** A positive 63-bit id above 2^53, so that any rounding on the way would show. */
function snapshotId(): bigint {
  return (randomBytes(8).readBigUInt64BE(0) & 0x3fff_ffff_ffff_ffffn) | (1n << 60n);
}

function pageView(id: number): PageView {
  return { id, page: id % 3 === 0 ? null : `/page/${id}`, session: { browser: `b${id % 2}`, tags: id % 2 === 0 ? [] : ['x', `t${id}`] }, counts: { clicks: id, views: id * 2 } };
}

function eventTime(hour: number, id: number): number {
  return hour * HOUR_MS + id * 1_001 + 7;
}

async function writeFile(table: IcebergTable, recordType: Type, hour: number, ids: readonly number[]): Promise<AppendedFile> {
  const rows = ids.map((id) => tableRow(pageView(id), { topic: 'page-views', partition: 0, offset: id, timestamp: eventTime(hour, id) + 5, eventTimeMs: eventTime(hour, id) }));
  const stamp = new Date(hour * HOUR_MS).toISOString().slice(0, 13).replace('T', '-');
  return writeRowFile({ warehouse, path: `${table.dir}/data/_event_time_hour=${stamp}/${randomUUID()}.parquet`, rowType: tableRowType(recordType), codec: 'snappy', hour }, rows);
}

/**
 * The metadata after one append of `files` on `base`, its manifest and manifest list written under
 * the table's metadata folder, as the loader's file-system commit makes them (table-commit.ts).
 */
async function appendedMetadata(table: IcebergTable, base: TableMetadata, files: readonly AppendedFile[], commitId: string): Promise<{ metadata: TableMetadata; snapshot: Snapshot }> {
  const location = base.location.replace(/\/+$/, '');
  const uri = (path: string): string => `${location}/${path.slice(table.dir.length + 1)}`;
  const schema = currentSchema(base)!;
  const spec = defaultSpec(base)!;
  const parent = currentSnapshot(base);
  const id = snapshotId();
  const sequenceNumber = base['last-sequence-number'] + 1;
  const entries: ManifestEntryRecord[] = files.map((file) => ({
    status: ENTRY_ADDED,
    snapshot_id: id,
    sequence_number: null,
    file_sequence_number: null,
    data_file: {
      content: 0,
      file_path: uri(file.path),
      file_format: 'PARQUET',
      partition: { [HOUR_PARTITION_FIELDS[0]!.name]: file.hour },
      record_count: BigInt(file.records),
      file_size_in_bytes: BigInt(file.bytes),
      column_sizes: null,
      value_counts: null,
      null_value_counts: null,
      nan_value_counts: null,
      lower_bounds: null,
      upper_bounds: null,
      key_metadata: null,
      split_offsets: null,
      equality_ids: null,
      sort_order_id: 0,
    },
  }));
  const unique = randomUUID();
  const manifestPath = `${table.dir}/metadata/${unique}-m0.avro`;
  const manifest = encodeManifest(entries, HOUR_PARTITION_FIELDS, { schemaJson: JSON.stringify(schema), schemaId: schema['schema-id'], partitionSpecJson: JSON.stringify(spec.fields), partitionSpecId: spec['spec-id'] });
  await warehouse.create(manifestPath, manifest);
  const hours = files.map((file) => file.hour);
  const bound = (hour: number): Buffer => {
    const bytes = Buffer.alloc(4);
    bytes.writeInt32LE(hour);
    return bytes;
  };
  const row: ManifestFileRecord = {
    manifest_path: uri(manifestPath),
    manifest_length: BigInt(manifest.length),
    partition_spec_id: spec['spec-id'],
    content: 0,
    sequence_number: BigInt(sequenceNumber),
    min_sequence_number: BigInt(sequenceNumber),
    added_snapshot_id: id,
    added_files_count: files.length,
    existing_files_count: 0,
    deleted_files_count: 0,
    added_rows_count: BigInt(files.reduce((sum, file) => sum + file.records, 0)),
    existing_rows_count: 0n,
    deleted_rows_count: 0n,
    partitions: [{ contains_null: false, contains_nan: false, lower_bound: bound(Math.min(...hours)), upper_bound: bound(Math.max(...hours)) }],
    key_metadata: null,
  };
  const parentRows = parent === undefined ? [] : decodeManifestList(await warehouse.open(`${table.dir}/${parent['manifest-list'].slice(location.length + 1)}`));
  const listPath = `${table.dir}/metadata/snap-${id}-1-${unique}.avro`;
  await warehouse.create(listPath, encodeManifestList([row, ...parentRows], id, parent?.['snapshot-id'], sequenceNumber));
  const records = files.reduce((sum, file) => sum + file.records, 0);
  const previous = parent?.summary ?? {};
  const now = Math.max(Date.now(), base['last-updated-ms']);
  const snapshot: Snapshot = {
    'snapshot-id': id,
    ...(parent === undefined ? {} : { 'parent-snapshot-id': parent['snapshot-id'] }),
    'sequence-number': sequenceNumber,
    'timestamp-ms': now,
    'manifest-list': uri(listPath),
    summary: {
      operation: 'append',
      'added-data-files': String(files.length),
      'added-records': String(records),
      'total-data-files': String(Number(previous['total-data-files'] ?? '0') + files.length),
      'total-records': String(Number(previous['total-records'] ?? '0') + records),
      'tributary.commit-id': commitId,
    },
    'schema-id': schema['schema-id'],
  };
  return { metadata: withSnapshot(base, snapshot, undefined, now), snapshot };
}

function newMetadata(table: IcebergTable, schema: IcebergSchema): TableMetadata {
  return newTableMetadata({
    uuid: randomUUID(),
    location: table.location,
    schema: { ...schema, 'schema-id': 0 },
    lastColumnId: highestFieldId(schema),
    spec: hourSpecOf(schema),
    properties: { 'write.format.default': 'parquet', 'write.parquet.compression-codec': 'snappy', 'tributary.topic': 'page-views' },
    nowMs: Date.now(),
  });
}

async function committed(table: IcebergTable, base: LoadedTable | undefined, next: TableMetadata): Promise<LoadedTable> {
  const began = performance.now();
  const outcome = await commitMetadata(table, base, next);
  commits += 1;
  timings[`commit ${commits} (ms)`] = Math.round(performance.now() - began);
  if (outcome.outcome !== 'committed') throw new Error(`expected the commit to land, got a conflict: ${outcome.reason}`);
  return outcome.loaded;
}

describe('a table committed through a real Iceberg REST catalog', () => {
  it(
    'is created with the loader’s ids, takes two appends that Java reads back through the catalog, and answers a stale commit conflict',
    async () => {
      const recordType = parseDataFileSchema(PAGE_VIEW);
      const schema = rowSchemaOf(recordType);
      const { table, id } = boundTable('page_views');
      expect(await loadTable(table)).toBeUndefined();

      // First append: the table does not exist; the catalog creates it, then takes the snapshot.
      const firstFiles = [await writeFile(table, recordType, FIRST_HOUR, [1, 2, 3]), await writeFile(table, recordType, FIRST_HOUR + 1, [4, 5])];
      const first = await appendedMetadata(table, newMetadata(table, schema), firstFiles, 'load/1');
      const afterFirst = await committed(table, undefined, first.metadata);
      // The catalog's metadata file is under the table's folder (Java prints file:///x as file:/x).
      expect(afterFirst.path).toMatch(/^tables\/page_views\/metadata\/\d{5}-[0-9a-f-]+\.metadata\.json$/);
      expect(afterFirst.metadataLocation?.endsWith(afterFirst.path.slice('tables/page_views'.length))).toBe(true);
      expect(await warehouse.stat(afterFirst.path)).toBeDefined();

      // Second append, on the table as loaded through the catalog.
      const loaded = await loadTable(table);
      expect(loaded?.metadataLocation).toBe(afterFirst.metadataLocation);
      expect(currentSnapshot(loaded!.metadata)?.['snapshot-id']).toBe(first.snapshot['snapshot-id']);
      const secondFiles = [await writeFile(table, recordType, FIRST_HOUR + 1, [6, 7, 8, 9])];
      const second = await appendedMetadata(table, loaded!.metadata, secondFiles, 'load/2');
      const afterSecond = await committed(table, loaded, second.metadata);
      expect(afterSecond.version).toBeGreaterThan(afterFirst.version);

      // A commit built on the table before the second append: its requirement names the first snapshot as main.
      const stale = await appendedMetadata(table, loaded!.metadata, [await writeFile(table, recordType, FIRST_HOUR, [99])], 'load/stale');
      expect(tableChanges(loaded!.metadata, stale.metadata, 'stale').requirements).toContainEqual({ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': first.snapshot['snapshot-id'] });
      const refused = await commitMetadata(table, loaded, stale.metadata);
      expect(refused.outcome).toBe('conflict');
      expect(refused.outcome === 'conflict' && refused.reason).toMatch(/main/);
      const now = await catalog.loadTable(id);
      expect(now?.metadataLocation).toBe(afterSecond.metadataLocation);
      expect((now?.metadata.snapshots ?? []).map((snapshot) => snapshot['snapshot-id'])).toEqual([first.snapshot['snapshot-id'], second.snapshot['snapshot-id']]);

      // What Iceberg's Java client sees through the same catalog.
      const began = performance.now();
      const view = await checkRestTable(server.uri, NAMESPACE, id.name, { runDir });
      timings['java check 1 (s)'] = Math.round(performance.now() - began) / 1000;
      expect(view.metadataFileLocation).toBe(afterSecond.metadataLocation);
      expect(view.formatVersion).toBe(2);
      expect(view.location).toBe(table.location);
      expect(view.currentSnapshotId).toBe(String(second.snapshot['snapshot-id']));
      expect(view.refs).toEqual({ main: { snapshotId: String(second.snapshot['snapshot-id']), type: 'branch' } });
      expect(view.snapshots.map((snapshot) => [snapshot.snapshotId, snapshot.parentId, snapshot.sequenceNumber, snapshot.operation, snapshot.summary['tributary.commit-id']])).toEqual([
        [String(first.snapshot['snapshot-id']), null, 1, 'append', 'load/1'],
        [String(second.snapshot['snapshot-id']), String(first.snapshot['snapshot-id']), 2, 'append', 'load/2'],
      ]);
      expect(view.schemas).toHaveLength(1);
      expect(view.currentSchemaId).toBe(0);
      expect(JSON.parse(JSON.stringify(view.schemas[0]!.fields))).toEqual(JSON.parse(JSON.stringify(schema.fields)));
      expect(view.spec.fields).toEqual(hourSpecOf(schema).fields);
      expect(view.properties).toMatchObject({ 'write.format.default': 'parquet', 'tributary.topic': 'page-views' });
      const fileUri = (file: AppendedFile): string => `${table.location}/${file.path.slice(table.dir.length + 1)}`;
      expect(view.files.map((file) => [file.path, file.recordCount, file.partition[0]]).sort()).toEqual(
        [...firstFiles, ...secondFiles].map((file) => [fileUri(file), file.records, file.hour]).sort(),
      );
      const expected = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => ({ ...pageView(n), hour: n <= 3 ? FIRST_HOUR : FIRST_HOUR + 1 }));
      const read = [...view.records].sort((a, b) => Number(a['id']) - Number(b['id']));
      expect(read.map((record) => ({ id: record['id'], page: record['page'], session: record['session'], counts: record['counts'] }))).toEqual(expected.map(({ hour: _hour, ...record }) => record));
      expect(read.map((record) => Date.parse(record['_event_time'] as string))).toEqual(expected.map((record) => eventTime(record.hour, record.id)));
      expect(read.map((record) => (record['_kafka'] as { offset: number }).offset)).toEqual(expected.map((record) => record.id));
    },
    SLOW,
  );

  it(
    'takes a schema evolution, a rollback, an expiry and property changes as the catalog’s updates',
    async () => {
      const v1 = parseDataFileSchema(PAGE_VIEW);
      const v2 = parseDataFileSchema({ ...PAGE_VIEW, fields: [...PAGE_VIEW.fields, { name: 'referrer', type: ['null', 'string'], default: null }] });
      const { table, id } = boundTable('evolving');
      const a = await appendedMetadata(table, newMetadata(table, rowSchemaOf(v1)), [await writeFile(table, v1, FIRST_HOUR, [1, 2])], 'load/1');
      let loaded = await committed(table, undefined, a.metadata);

      // The rows gain a column: the table's schema evolves (ids kept, the new one above the last), then the append uses it.
      const tableSchema = currentSchema(loaded.metadata)!;
      const evolved = evolveSchema({ schema: tableSchema, lastColumnId: loaded.metadata['last-column-id'], schemaIds: [0] }, rowSchemaOf(v2), id.name);
      expect(evolved.changes).toEqual([expect.stringContaining('referrer')]);
      const withNewSchema: TableMetadata = {
        ...loaded.metadata,
        schemas: [...loaded.metadata.schemas, { ...evolved.schema, 'schema-id': 1 }],
        'current-schema-id': 1,
        'last-column-id': evolved.lastColumnId,
        properties: { ...loaded.metadata.properties, 'tributary.schema-version': '2' },
      };
      const b = await appendedMetadata(table, withNewSchema, [await writeFile(table, v2, FIRST_HOUR + 1, [3])], 'load/2');
      loaded = await committed(table, loaded, b.metadata);
      expect(loaded.metadata['current-schema-id']).toBe(1);
      expect(loaded.metadata.schemas.map((schema) => schema['schema-id'])).toEqual([0, 1]);
      expect(loaded.metadata['last-column-id']).toBe(evolved.lastColumnId);

      // Rollback: main back to a, no new snapshot.
      loaded = await committed(table, loaded, withMain(loaded.metadata, a.snapshot['snapshot-id'], loaded.path, Date.now()));
      expect(currentSnapshot(loaded.metadata)?.['snapshot-id']).toBe(a.snapshot['snapshot-id']);

      // Expiry of b (off main now), and a property dropped.
      const { ['tributary.topic']: _dropped, ...properties } = loaded.metadata.properties ?? {};
      loaded = await committed(table, loaded, { ...loaded.metadata, snapshots: (loaded.metadata.snapshots ?? []).filter((snapshot) => snapshot['snapshot-id'] === a.snapshot['snapshot-id']), properties });
      expect((loaded.metadata.snapshots ?? []).map((snapshot) => snapshot['snapshot-id'])).toEqual([a.snapshot['snapshot-id']]);

      const view = await checkRestTable(server.uri, NAMESPACE, id.name, { runDir });
      expect(view.metadataFileLocation).toBe(loaded.metadataLocation);
      expect(view.currentSchemaId).toBe(1);
      expect(view.schemas.map((schema) => schema['schema-id'])).toEqual([0, 1]);
      expect(JSON.parse(JSON.stringify(view.schemas[1]!.fields))).toEqual(JSON.parse(JSON.stringify(evolved.schema.fields)));
      expect(view.snapshots.map((snapshot) => snapshot.snapshotId)).toEqual([String(a.snapshot['snapshot-id'])]);
      expect(view.refs['main']?.snapshotId).toBe(String(a.snapshot['snapshot-id']));
      expect(view.properties['tributary.schema-version']).toBe('2');
      expect(view.properties['tributary.topic']).toBeUndefined();
      // Read in the current schema: a's rows, the new column null.
      expect(view.records.map((record) => [record['id'], record['referrer']]).sort()).toEqual([
        [1, null],
        [2, null],
      ]);
    },
    SLOW,
  );
});
