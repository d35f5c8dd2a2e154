/**
 * Row-group pruning on the loader's Parquet files: records of six hours in time order, written by
 * encodeDataFile with small row groups (rowGroupBytes: 64 KiB, three or four an hour), and a DuckDB
 * query filtered on one hour's timestamp range reads only that hour's row groups.
 *
 * "Reads only" is shown without timing: in a copy of the file, every column chunk of every other
 * row group is overwritten with 0xFF bytes (pages that cannot be decoded, the footer left intact).
 * DuckDB still answers the hour's query from the copy, exactly, while a query that must read
 * everything fails on it. It can only have skipped those row groups by their statistics.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBTimestampTZValue } from '@duckdb/node-api';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { encodeDataFile, parseDataFileSchema } from '../../src/etl/files/data-files.js';
import { leafColumns } from '../support/avro-parquet-shape.js';
import { openDuckDB, sqlText, type DuckDB } from '../support/duckdb.js';
import { columnChunks, type ColumnChunk } from '../support/parquet-metadata.js';
import { statisticsProblems } from '../support/parquet-statistics.js';

const HOURS = 6;
const PER_HOUR = 3_000;
const HOUR_MS = 3_600_000;
const START = Date.UTC(2026, 11, 7, 0);
/** The hour the query asks for: one in the middle, so row groups on both sides must be skipped. */
const QUERIED = 2;

const schema = parseDataFileSchema({
  type: 'record',
  name: 'PageView',
  namespace: 'tributary.test.pruning',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' } },
    { name: 'user', type: 'string' },
    { name: 'kind', type: { type: 'enum', name: 'Kind', symbols: ['CLICK', 'VIEW', 'BUY'] } },
    { name: 'payload', type: 'string' },
  ],
});
// 64 hex characters of SHA-256 per record: about 85 Avro bytes a record that compress little.
const records = Array.from({ length: HOURS * PER_HOUR }, (_, index) => ({
  id: 1_000_000 + index,
  at: START + Math.floor(index / PER_HOUR) * HOUR_MS + Math.floor(((index % PER_HOUR) * HOUR_MS) / PER_HOUR),
  user: `user-${index % 97}`,
  kind: ['CLICK', 'VIEW', 'BUY'][index % 3],
  payload: createHash('sha256').update(String(index)).digest('hex'),
}));

const { runDir } = inject('compat');
const folder = join(runDir, 'etl-parquet-pruning');
const path = join(folder, 'page-views+0+1000000+1018000.parquet');
const damaged = join(folder, 'page-views+0+1000000+1018000.other-hours-damaged.parquet');
const from = START + QUERIED * HOUR_MS;
const to = from + HOUR_MS;
const hourFilter = `"at" >= TIMESTAMPTZ ${sqlText(new DuckDBTimestampTZValue(BigInt(from) * 1000n).toString())} AND "at" < TIMESTAMPTZ ${sqlText(new DuckDBTimestampTZValue(BigInt(to) * 1000n).toString())}`;
const hourIds = records.filter((record) => record.at >= from && record.at < to).map((record) => BigInt(record.id));
let duckdb: DuckDB;
let chunks: ColumnChunk[];

beforeAll(async () => {
  mkdirSync(folder, { recursive: true });
  duckdb = await openDuckDB();
  // rowGroupBytes: a row group closes once its rows' Avro encodings reach it (default 128 MiB).
  const bytes = await encodeDataFile(records, { format: 'parquet', codec: 'snappy', schema, identity: 'page-views+0+1000000+1018000', rowGroupBytes: 64 * 1024 });
  writeFileSync(path, bytes);
  chunks = await columnChunks(duckdb, path);
});

afterAll(() => {
  duckdb.close();
});

/** Each row group's first row and row count, in file order. */
function rowGroups(): { group: number; first: number; rows: number }[] {
  const groups: { group: number; first: number; rows: number }[] = [];
  for (const chunk of chunks) {
    if (groups.some((entry) => entry.group === chunk.rowGroup)) continue;
    const previous = groups.at(-1);
    groups.push({ group: chunk.rowGroup, first: previous === undefined ? 0 : previous.first + previous.rows, rows: chunk.rowGroupRows });
  }
  return groups;
}

it('the file has more row groups than hours, and every column chunk\'s statistics are those of its rows', () => {
  // About 1.6 MB of Avro in 64 KiB groups: some twenty row groups, three or four an hour.
  expect(rowGroups().length).toBeGreaterThan(HOURS);
  expect(statisticsProblems(chunks, leafColumns(schema), records)).toEqual([]);
});

it('by the `at` statistics, the hour\'s range overlaps just the row groups holding its rows: a strict minority', async () => {
  const bounds = await duckdb.rows(
    `SELECT row_group_id, epoch_ms(stats_min_value::TIMESTAMPTZ) AS low, epoch_ms(stats_max_value::TIMESTAMPTZ) AS high FROM parquet_metadata(${sqlText(path)}) WHERE path_in_schema = 'at' ORDER BY row_group_id`,
  );
  const overlapping = bounds.filter((row) => Number(row['low']) < to && Number(row['high']) >= from).map((row) => Number(row['row_group_id']));
  const first = records.findIndex((record) => record.at >= from);
  const last = records.findLastIndex((record) => record.at < to);
  const holding = rowGroups()
    .filter((entry) => entry.first <= last && entry.first + entry.rows > first)
    .map((entry) => entry.group);
  expect(overlapping).toEqual(holding);
  expect(holding.length).toBeLessThan(bounds.length / 2);
});

it('DuckDB answers the hour\'s query from a copy whose other row groups are unreadable, and only then', async () => {
  const bounds = await duckdb.rows(`SELECT row_group_id, epoch_ms(stats_min_value::TIMESTAMPTZ) AS low, epoch_ms(stats_max_value::TIMESTAMPTZ) AS high FROM parquet_metadata(${sqlText(path)}) WHERE path_in_schema = 'at'`);
  const skippable = new Set(bounds.filter((row) => Number(row['high']) < from || Number(row['low']) >= to).map((row) => Number(row['row_group_id'])));
  expect(skippable.size).toBeGreaterThan(0);
  const bytes = readFileSync(path);
  for (const chunk of chunks.filter((entry) => skippable.has(entry.rowGroup))) {
    const start = chunk.dictionaryPageOffset ?? chunk.dataPageOffset;
    bytes.fill(0xff, start, start + chunk.compressedSize);
  }
  writeFileSync(damaged, bytes);

  const query = (file: string): Promise<bigint[]> => duckdb.rows(`SELECT id FROM read_parquet(${sqlText(file)}) WHERE ${hourFilter} ORDER BY id`).then((rows) => rows.map((row) => row['id'] as bigint));
  expect(await query(path)).toEqual(hourIds);
  expect(await query(damaged)).toEqual(hourIds);
  // The damage is real: reading every row group's payload fails.
  await expect(duckdb.rows(`SELECT sum(hash(payload)) FROM read_parquet(${sqlText(damaged)})`)).rejects.toThrow();
});
