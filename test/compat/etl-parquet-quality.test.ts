/**
 * What engines need from the loader's Parquet files beyond the values, read from the footer as
 * DuckDB shows it (parquet_metadata(), parquet_schema()), for files encodeDataFile wrote from the
 * every-type records (test/support/parquet-every-type.ts):
 *
 * - statistics present and correct for every leaf column: min/max in Parquet's order for the
 *   type, null_count and num_values as the records' definition/repetition slots give them
 * - a field id on every field (Iceberg reads columns by id), the same for the same schema
 * - dictionary pages where a column repeats, none where every value differs
 * - sizes that agree with the bytes: compressed sizes tile the file without overlap, uncompressed
 *   sizes are the pages' real size (what the same chunk takes uncompressed), row group totals sum
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { encodeDataFile, type DataFileCodec } from '../../src/etl/files/data-files.js';
import { leafColumns } from '../support/avro-parquet-shape.js';
import { openDuckDB, sqlText, type DuckDB } from '../support/duckdb.js';
import { everyTypeRecords, everyTypeSchema } from '../support/parquet-every-type.js';
import { columnChunks, parquetSchemaTree, type ColumnChunk, type ParquetSchemaNode } from '../support/parquet-metadata.js';
import { statisticsProblems } from '../support/parquet-statistics.js';

const { runDir } = inject('compat');
const folder = join(runDir, 'etl-parquet-quality');
const schema = everyTypeSchema();
const records = everyTypeRecords(2_000);
let duckdb: DuckDB;

const files = new Map<string, Promise<string>>();
function fileFor(codec: DataFileCodec, rows: readonly unknown[] = records, name = 'every-type'): Promise<string> {
  const key = `${name}.${codec}`;
  let file = files.get(key);
  if (file === undefined) {
    file = (async () => {
      const path = join(folder, `${key}.parquet`);
      writeFileSync(path, await encodeDataFile(rows, { format: 'parquet', codec, schema, identity: `${name}+0+0+${rows.length}` }));
      return path;
    })();
    files.set(key, file);
  }
  return file;
}

beforeAll(async () => {
  mkdirSync(folder, { recursive: true });
  duckdb = await openDuckDB();
});

afterAll(() => {
  duckdb.close();
});

const chunkAt = (chunks: readonly ColumnChunk[], path: string): ColumnChunk[] => chunks.filter((chunk) => chunk.path.join('.') === path);

describe('statistics', () => {
  it('every leaf column chunk has min, max, null_count and num_values as the records imply', async () => {
    const chunks = await columnChunks(duckdb, await fileFor('snappy'));
    expect(statisticsProblems(chunks, leafColumns(schema), records)).toEqual([]);
  });
});

describe('field ids', () => {
  /** Every element but the root and the repeated `list`/`key_value` groups, which stand for no field. */
  function fieldElements(node: ParquetSchemaNode, path: string): { path: string; fieldId: number | null }[] {
    return node.children.flatMap((child) => {
      const childPath = path === '' ? child.element.name : `${path}.${child.element.name}`;
      const synthetic = child.element.repetition_type === 'REPEATED' && (child.element.name === 'list' || child.element.name === 'key_value');
      return [...(synthetic ? [] : [{ path: childPath, fieldId: child.element.field_id }]), ...fieldElements(child, childPath)];
    });
  }

  const idsOf = async (path: string): Promise<{ path: string; fieldId: number | null }[]> =>
    fieldElements(parquetSchemaTree(await duckdb.rows(`SELECT * FROM parquet_schema(${sqlText(path)})`)), '');

  it('parquet_schema() shows a field id on every field, list element, map key and value, each a distinct positive integer', async () => {
    const elements = await idsOf(await fileFor('snappy'));
    expect(elements.filter((element) => element.fieldId === null || element.fieldId < 1).map((element) => element.path)).toEqual([]);
    const ids = elements.map((element) => element.fieldId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('the ids depend on the schema alone: a file of other records of the same schema has the same ones', async () => {
    const few = await idsOf(await fileFor('snappy', records.slice(0, 3), 'every-type-edges'));
    expect(few).toEqual(await idsOf(await fileFor('snappy')));
  });
});

describe('dictionary encoding', () => {
  it('a column that repeats has a dictionary page and RLE_DICTIONARY data pages', async () => {
    const chunks = await columnChunks(duckdb, await fileFor('snappy'));
    // kind: 3 symbols over 2,003 rows; header.source: 4 hosts and a few others.
    for (const path of ['kind', 'header.source']) {
      const chunk = chunkAt(chunks, path);
      expect(chunk.length, path).toBeGreaterThan(0);
      for (const { dictionaryPageOffset, encodings } of chunk) {
        expect(dictionaryPageOffset, path).not.toBeNull();
        expect(encodings.some((encoding) => encoding === 'RLE_DICTIONARY' || encoding === 'PLAIN_DICTIONARY'), `${path}: ${encodings.join(', ')}`).toBe(true);
      }
    }
  });

  it('a column whose values all differ falls back to plain: no dictionary page', async () => {
    const chunks = await columnChunks(duckdb, await fileFor('snappy'));
    // big: 2,003 distinct longs; payload: 2,003 distinct byte strings. A dictionary would only add bytes.
    for (const path of ['big', 'payload']) {
      const chunk = chunkAt(chunks, path);
      expect(chunk.length, path).toBeGreaterThan(0);
      for (const { dictionaryPageOffset, encodings } of chunk) {
        expect(dictionaryPageOffset, path).toBeNull();
        expect(encodings.some((encoding) => encoding.endsWith('_DICTIONARY')), `${path}: ${encodings.join(', ')}`).toBe(false);
      }
    }
  });
});

describe('sizes in the metadata', () => {
  it.each(['null', 'snappy', 'gzip', 'zstd'] as const)('codec %s: column chunks lie inside the file, one after another, without overlap; row group totals are their sums', async (codec) => {
    const path = await fileFor(codec);
    const bytes = readFileSync(path);
    // The footer: FileMetaData, its 4-byte little-endian length, "PAR1".
    const footerStart = bytes.length - 8 - bytes.readUInt32LE(bytes.length - 8);
    const chunks = await columnChunks(duckdb, path);
    const ranges = chunks.map((chunk) => ({ path: chunk.path.join('.'), start: chunk.dictionaryPageOffset ?? chunk.dataPageOffset, size: chunk.compressedSize })).sort((left, right) => left.start - right.start);
    expect(ranges[0]?.start).toBe(4);
    ranges.forEach((range, index) => {
      const next = ranges[index + 1];
      expect(range.size, range.path).toBeGreaterThan(0);
      expect(range.start + range.size, `${range.path} runs into ${next?.path ?? 'the footer'}`).toBeLessThanOrEqual(next?.start ?? footerStart);
    });
    expect(ranges.reduce((sum, range) => sum + range.size, 0)).toBeLessThanOrEqual(bytes.length);
    for (const group of new Set(chunks.map((chunk) => chunk.rowGroup))) {
      const inGroup = chunks.filter((chunk) => chunk.rowGroup === group);
      // total_byte_size is the uncompressed column data; total_compressed_size (optional) the compressed.
      expect(inGroup[0]?.rowGroupBytes).toBe(inGroup.reduce((sum, chunk) => sum + chunk.uncompressedSize, 0));
      const compressed = inGroup[0]?.rowGroupCompressedBytes;
      if (compressed !== null && compressed !== undefined) expect(compressed).toBe(inGroup.reduce((sum, chunk) => sum + chunk.compressedSize, 0));
    }
  });

  it('uncompressed: every chunk says total_uncompressed_size = total_compressed_size', async () => {
    const chunks = await columnChunks(duckdb, await fileFor('null'));
    expect(chunks.filter((chunk) => chunk.uncompressedSize !== chunk.compressedSize).map((chunk) => chunk.path.join('.'))).toEqual([]);
  });

  it.each(['snappy', 'gzip', 'zstd'] as const)('codec %s: each chunk\'s total_uncompressed_size is what the same chunk takes uncompressed, and the file compresses', async (codec) => {
    const plain = await columnChunks(duckdb, await fileFor('null'));
    const chunks = await columnChunks(duckdb, await fileFor(codec));
    expect(chunks.map((chunk) => chunk.path.join('.'))).toEqual(plain.map((chunk) => chunk.path.join('.')));
    const off = chunks.flatMap((chunk, index) => {
      const uncompressed = plain[index]?.compressedSize ?? 0;
      // Page headers differ by a few bytes (they hold the compressed size as a varint): 1% + 16 bytes.
      return Math.abs(chunk.uncompressedSize - uncompressed) <= uncompressed / 100 + 16 ? [] : [`${chunk.path.join('.')}: says ${chunk.uncompressedSize}, takes ${uncompressed}`];
    });
    expect(off).toEqual([]);
    const sum = (list: readonly ColumnChunk[], size: (chunk: ColumnChunk) => number): number => list.reduce((total, chunk) => total + size(chunk), 0);
    expect(sum(chunks, (chunk) => chunk.uncompressedSize)).toBeGreaterThan(sum(chunks, (chunk) => chunk.compressedSize));
  });
});
