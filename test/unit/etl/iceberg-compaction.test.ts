/**
 * Compaction of a table (src/etl/iceberg/table-compaction.ts) on a local warehouse folder, with
 * real Parquet data files: which files are picked (small ones, per hour, at least minInputFiles,
 * grouped up to the target); one `replace` snapshot with the same rows in load order, the new
 * files carrying the starting snapshot's data sequence number; an append landing on the table
 * before the rewrite commits survives it; a rewrite whose input a replay removed meanwhile is
 * refused with nothing committed; files written with an older row schema are rewritten in
 * today's (added field null, int widened to long).
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Type } from 'avsc';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseDataFileSchema } from '../../../src/etl/files/data-files.js';
import { readParquetFile } from '../../../src/etl/files/parquet-file.js';
import { HOUR_PARTITION_FIELDS, hourSpecOf, rowSchemaOf } from '../../../src/etl/iceberg/load-tables.js';
import { liveDataFiles, type LiveDataFile } from '../../../src/etl/iceberg/live-files.js';
import { writeRowFile } from '../../../src/etl/iceberg/row-files.js';
import { evolveSchema, idMapping } from '../../../src/etl/iceberg/schema-evolution.js';
import { compactTable, planCompaction } from '../../../src/etl/iceberg/table-compaction.js';
import { appendSnapshot, loadTable, type AppendedFile, type IcebergTable } from '../../../src/etl/iceberg/table-commit.js';
import { currentSnapshot } from '../../../src/etl/iceberg/table-metadata.js';
import { tableRow, tableRowType } from '../../../src/etl/iceberg/table-row.js';
import type { IcebergSchema } from '../../../src/etl/iceberg/table-schema.js';
import { openWarehouse } from '../../../src/etl/warehouse/open-warehouse.js';

const HOUR = 496_474; // 2026-08-21T10
const HOUR_MS = 3_600_000;
const V1 = parseDataFileSchema({ type: 'record', name: 'R', fields: [{ name: 'id', type: 'int' }] });
const V2 = parseDataFileSchema({
  type: 'record',
  name: 'R',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'note', type: ['null', 'string'], default: null },
  ],
});

let folder: string;
let table: IcebergTable;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'tributary-compaction-'));
  const warehouse = openWarehouse(folder);
  table = { warehouse, dir: 'db/events', location: warehouse.describe('db/events') };
});

afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

interface Rows {
  readonly recordType: Type;
  readonly schema: IcebergSchema;
}

const v1Rows: Rows = { recordType: V1, schema: rowSchemaOf(V1) };

/** A data file of rows with ids [from, to) in `hour`, offsets = ids. */
async function dataFile(rows: Rows, name: string, hour: number, from: number, to: number): Promise<AppendedFile> {
  const records = Array.from({ length: to - from }, (_, index) => {
    const id = from + index;
    return tableRow({ id }, { topic: 'events', partition: 0, offset: id, timestamp: hour * HOUR_MS + id, eventTimeMs: hour * HOUR_MS + id });
  });
  return writeRowFile(
    { warehouse: table.warehouse, path: `db/events/data/h${hour}/${name}.parquet`, rowType: tableRowType(rows.recordType), codec: 'snappy', fieldIds: idMapping(rowSchemaOf(rows.recordType), rows.schema), hour },
    records,
  );
}

async function append(rows: Rows, commitId: string, files: readonly AppendedFile[], remove?: (file: { path: string }) => boolean): Promise<void> {
  await appendSnapshot(table, {
    commitId,
    schema: rows.schema,
    spec: hourSpecOf(rows.schema),
    partitionFields: HOUR_PARTITION_FIELDS,
    properties: {},
    files,
    summary: {},
    remove,
    nowMs: Date.now,
  });
}

async function live(): Promise<LiveDataFile[]> {
  const loaded = await loadTable(table);
  return liveDataFiles(table, loaded!.metadata, currentSnapshot(loaded!.metadata)!);
}

async function idsIn(file: LiveDataFile): Promise<unknown[]> {
  const contents = await readParquetFile(await table.warehouse.open(file.path));
  return contents.records.map((record) => (record as Record<string, unknown>)['id']);
}

const compaction = (rows: Rows, minInputFiles = 2, targetFileBytes = 64 * 1024 * 1024) => ({
  policy: { targetFileBytes, minInputFiles },
  rows: { rowType: tableRowType(rows.recordType), schema: rows.schema, fieldIds: idMapping(rowSchemaOf(rows.recordType), rows.schema), codec: 'zstd' as const },
  attempt: 'a1',
  commitId: 'load/compact/a1',
  summary: { 'tributary.load': 'load' },
});

describe('planning a compaction', () => {
  const file = (uri: string, hour: number, bytes: number, sequence: number): LiveDataFile => ({ uri, path: uri, hour, records: 1, bytes, dataSequenceNumber: BigInt(sequence) });

  it('picks the small files of hours holding at least minInputFiles of them, grouped up to the target in load order', () => {
    const files = [
      file('c', HOUR, 300, 3),
      file('a', HOUR, 300, 1),
      file('b', HOUR, 300, 2),
      file('big', HOUR, 800, 1), // ≥ 75% of the target: left as it is
      file('d', HOUR, 300, 4),
      file('x', HOUR + 1, 100, 1), // one small file: nothing to merge it with
      file('y', HOUR + 2, 100, 1),
      file('z', HOUR + 2, 100, 2),
    ];
    const plan = planCompaction(files, { targetFileBytes: 1000, minInputFiles: 2 });
    expect(plan.map(({ hour, groups }) => [hour - HOUR, groups.map((group) => group.map((entry) => entry.uri))])).toEqual([
      [0, [['a', 'b', 'c']]], // 'd' would pass the target and is alone in its group: not rewritten
      [2, [['y', 'z']]],
    ]);
    expect(planCompaction(files, { targetFileBytes: 1000, minInputFiles: 5 })).toEqual([]);
    expect(planCompaction(files, { targetFileBytes: 1000, minInputFiles: 2, hours: { from: HOUR + 1, to: HOUR + 3 } }).map(({ hour }) => hour - HOUR)).toEqual([2]);
  });
});

describe('compacting a table', () => {
  it('rewrites an hour\'s small files as one in a replace snapshot: same rows in load order, the starting sequence number, other hours untouched', async () => {
    for (let run = 0; run < 4; run += 1) await append(v1Rows, `load/${run + 1}`, [await dataFile(v1Rows, `run${run}`, HOUR, run * 10, run * 10 + 10)]);
    await append(v1Rows, 'load/5', [await dataFile(v1Rows, 'other-hour', HOUR + 1, 100, 105)]);
    const before = await loadTable(table);
    const startSequence = currentSnapshot(before!.metadata)!['sequence-number'];

    const report = await compactTable(table, compaction(v1Rows));

    expect(report.hours.map(({ hour, inputFiles, outputFiles, records }) => ({ hour, inputFiles, outputFiles, records }))).toEqual([{ hour: HOUR, inputFiles: 4, outputFiles: 1, records: 40 }]);
    expect(report.hours[0]!.outputBytes).toBeLessThan(report.hours[0]!.inputBytes);
    const after = await loadTable(table);
    const snapshot = currentSnapshot(after!.metadata)!;
    expect(String(snapshot['snapshot-id'])).toBe(report.snapshotId);
    expect(snapshot.summary).toMatchObject({ operation: 'replace', 'added-data-files': '1', 'deleted-data-files': '4', 'added-records': '40', 'deleted-records': '40', 'total-records': '45', 'total-data-files': '2', 'tributary.commit-id': 'load/compact/a1' });
    const files = await live();
    expect(files.map((entry) => [entry.hour! - HOUR, entry.records])).toEqual(expect.arrayContaining([[0, 40], [1, 5]]));
    expect(files).toHaveLength(2);
    const compacted = files.find((entry) => entry.hour === HOUR)!;
    expect(compacted.dataSequenceNumber).toBe(BigInt(startSequence));
    expect(compacted.uri).toContain('compact-a1-0.parquet');
    expect(await idsIn(compacted)).toEqual(Array.from({ length: 40 }, (_, id) => id));
    // Nothing more to do: a second pass makes no snapshot.
    expect(await compactTable(table, { ...compaction(v1Rows), attempt: 'a2', commitId: 'load/compact/a2' })).toEqual({ hours: [] });
  });

  it('keeps an append that lands before the rewrite commits, and refuses a rewrite whose input a replay removed, committing nothing', async () => {
    const a = await dataFile(v1Rows, 'a', HOUR, 0, 5);
    const b = await dataFile(v1Rows, 'b', HOUR, 5, 10);
    await append(v1Rows, 'load/1', [a]);
    await append(v1Rows, 'load/2', [b]);
    const [liveA, liveB] = await live();
    const start = currentSnapshot((await loadTable(table))!.metadata)!['sequence-number'];
    // A load commits after the rewrite read the table: the rewrite lands on top of it, the load's file kept.
    await append(v1Rows, 'load/3', [await dataFile(v1Rows, 'c', HOUR, 10, 15)]);
    const merged = await dataFile(v1Rows, 'merged', HOUR, 0, 10);
    const rewrite = (commitId: string) =>
      appendSnapshot(table, {
        commitId,
        schema: v1Rows.schema,
        spec: hourSpecOf(v1Rows.schema),
        partitionFields: HOUR_PARTITION_FIELDS,
        properties: {},
        files: [merged],
        summary: {},
        removesExactly: new Set([liveA!.uri, liveB!.uri]),
        rewrite: { dataSequenceNumber: start },
        nowMs: Date.now,
      });
    await rewrite('load/compact/x');
    expect((await live()).map((entry) => entry.uri.split('/').at(-1)).sort()).toEqual(['c.parquet', 'merged.parquet']);

    // A replay removes 'c' (and adds its own) after a second rewrite read it: that rewrite is stale.
    const liveC = (await live()).find((entry) => entry.uri.endsWith('/c.parquet'));
    await append(v1Rows, 'replay/1', [await dataFile(v1Rows, 'c-replayed', HOUR, 10, 15)], (file) => file.path.endsWith('/c.parquet'));
    const version = (await loadTable(table))!.version;
    const metadataFiles = (await readdir(join(folder, 'db/events/metadata'))).length;
    const stale = appendSnapshot(table, {
      commitId: 'load/compact/y',
      schema: v1Rows.schema,
      spec: hourSpecOf(v1Rows.schema),
      partitionFields: HOUR_PARTITION_FIELDS,
      properties: {},
      files: [await dataFile(v1Rows, 'merged-2', HOUR, 0, 15)],
      summary: {},
      removesExactly: new Set([liveC!.uri, (await live()).find((entry) => entry.uri.endsWith('merged.parquet'))!.uri]),
      rewrite: { dataSequenceNumber: start },
      nowMs: Date.now,
    });
    await expect(stale).rejects.toMatchObject({ code: 'ETL_ICEBERG_COMPACTION_STALE', retriable: true });
    expect((await loadTable(table))!.version).toBe(version);
    // The attempt's manifests and metadata were removed: the folder holds what it held.
    expect((await readdir(join(folder, 'db/events/metadata'))).length).toBe(metadataFiles);
    expect((await live()).map((entry) => entry.uri.split('/').at(-1)).sort()).toEqual(['c-replayed.parquet', 'merged.parquet']);
  });

  it('rewrites files of an older row schema in today\'s: the added field null, int widened to long', async () => {
    await append(v1Rows, 'load/1', [await dataFile(v1Rows, 'old-1', HOUR, 0, 3)]);
    await append(v1Rows, 'load/2', [await dataFile(v1Rows, 'old-2', HOUR, 3, 6)]);
    const current = (await loadTable(table))!.metadata;
    const evolved = evolveSchema({ schema: current.schemas[0]!, lastColumnId: current['last-column-id'], schemaIds: [0] }, rowSchemaOf(V2), 'db/events').schema;
    const v2Rows: Rows = { recordType: V2, schema: evolved };

    await compactTable(table, compaction(v2Rows));

    const after = (await loadTable(table))!.metadata;
    expect(after['current-schema-id']).toBe(1);
    const [file] = await live();
    const contents = await readParquetFile(await table.warehouse.open(file!.path));
    expect(contents.records.map((record) => [(record as Record<string, unknown>)['id'], (record as Record<string, unknown>)['note']])).toEqual(Array.from({ length: 6 }, (_, id) => [id, null]));
    expect(JSON.stringify(contents.schemaJson)).toContain('"note"');
  });
});
