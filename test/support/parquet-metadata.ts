/**
 * A Parquet file's footer as DuckDB shows it (`parquet_schema()`, `parquet_metadata()`), in plain
 * values: the schema elements as a tree (DuckDB lists them depth first with num_children), and one
 * entry per column chunk with its row group, statistics, encodings, offsets and sizes.
 */
import type { DuckDBValue } from '@duckdb/node-api';
import { sqlText, type DuckDB } from './duckdb.js';

export interface ParquetSchemaElement {
  readonly name: string;
  readonly type: string | null;
  readonly type_length: number | null;
  readonly repetition_type: string | null;
  readonly converted_type: string | null;
  readonly logical_type: string | null;
  readonly scale: number | null;
  readonly precision: number | null;
  readonly field_id: number | null;
}

export interface ParquetSchemaNode {
  readonly element: ParquetSchemaElement;
  readonly children: ParquetSchemaNode[];
}

/** The rows of `SELECT * FROM parquet_schema(…)` as the tree under the root element. */
export function parquetSchemaTree(rows: readonly Record<string, DuckDBValue>[]): ParquetSchemaNode {
  let next = 0;
  const take = (): ParquetSchemaNode => {
    const row = rows[next];
    if (row === undefined) throw new Error('parquet_schema() ended inside a group');
    next += 1;
    const children: ParquetSchemaNode[] = [];
    const count = numberOrNull(row['num_children']) ?? 0;
    for (let index = 0; index < count; index += 1) children.push(take());
    return {
      element: {
        name: String(row['name']),
        type: textOrNull(row['type']),
        type_length: numberOrNull(row['type_length']),
        repetition_type: textOrNull(row['repetition_type']),
        converted_type: textOrNull(row['converted_type']),
        logical_type: textOrNull(row['logical_type']),
        scale: numberOrNull(row['scale']),
        precision: numberOrNull(row['precision']),
        field_id: numberOrNull(row['field_id']),
      },
      children,
    };
  };
  const root = take();
  if (next !== rows.length) throw new Error(`parquet_schema() has ${rows.length - next} elements after the root's`);
  return root;
}

export interface ColumnChunk {
  readonly rowGroup: number;
  readonly rowGroupRows: number;
  /** The row group's total_byte_size (uncompressed) and total_compressed_size (null when absent). */
  readonly rowGroupBytes: number;
  readonly rowGroupCompressedBytes: number | null;
  /** e.g. ['tags', 'list', 'element']. */
  readonly path: readonly string[];
  readonly numValues: number;
  readonly statsMin: string | null;
  readonly statsMax: string | null;
  readonly nullCount: number | null;
  readonly compression: string;
  readonly encodings: readonly string[];
  readonly dictionaryPageOffset: number | null;
  readonly dataPageOffset: number;
  readonly compressedSize: number;
  readonly uncompressedSize: number;
}

/** Every column chunk of the file, row group by row group, in column order. */
export async function columnChunks(duckdb: DuckDB, path: string): Promise<ColumnChunk[]> {
  const rows = await duckdb.rows(`SELECT * FROM parquet_metadata(${sqlText(path)}) ORDER BY row_group_id, column_id`);
  return rows.map((row) => ({
    rowGroup: numberOf(row['row_group_id']),
    rowGroupRows: numberOf(row['row_group_num_rows']),
    rowGroupBytes: numberOf(row['row_group_bytes']),
    rowGroupCompressedBytes: numberOrNull(row['row_group_compressed_bytes']),
    path: String(row['path_in_schema']).split(', '),
    numValues: numberOf(row['num_values']),
    // min_value/max_value: the min/max fields are deprecated (signed byte order for strings).
    statsMin: textOrNull(row['stats_min_value']),
    statsMax: textOrNull(row['stats_max_value']),
    nullCount: numberOrNull(row['stats_null_count']),
    compression: String(row['compression']),
    encodings: String(row['encodings']).split(', '),
    dictionaryPageOffset: numberOrNull(row['dictionary_page_offset']),
    dataPageOffset: numberOf(row['data_page_offset']),
    compressedSize: numberOf(row['total_compressed_size']),
    uncompressedSize: numberOf(row['total_uncompressed_size']),
  }));
}

function textOrNull(value: DuckDBValue | undefined): string | null {
  return value === null || value === undefined ? null : String(value);
}

function numberOrNull(value: DuckDBValue | undefined): number | null {
  return value === null || value === undefined ? null : numberOf(value);
}

function numberOf(value: DuckDBValue | undefined): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number)) throw new Error(`${String(value)} is not a whole number`);
  return number;
}
