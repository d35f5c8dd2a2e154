/**
 * A data file's column metrics as an Iceberg manifest keeps them (data_file fields 108–130), from
 * the Parquet writer's statistics, keyed by field id. Bounds use Iceberg's single-value binary
 * encoding (the format's Appendix D), carried as hex in the loader's commit manifest:
 *
 *   boolean 1 byte · int, date 4 bytes LE · long 8 bytes LE · float, double 4 / 8 bytes LE (IEEE)
 *   time, timestamp, timestamptz  8 bytes LE, microseconds (millisecond columns are scaled)
 *   string  UTF-8, truncated to 16 code points (the default `truncate(16)` metrics mode); an upper
 *           bound that was truncated has its last code point incremented, or is left out
 *
 * Bounds are only written where they are certainly right, since a wrong bound makes engines skip
 * rows while a missing one only costs pruning: not for columns inside lists or maps (Iceberg
 * keeps none there, and no counts either: only their sizes), not for decimals, UUIDs, binary and
 * fixed (no bound, or an order we have not checked against Iceberg's), and not for a column whose
 * Parquet statistics were left out (parquet-row-group.ts leaves them out of a string chunk where
 * UTF-16 and UTF-8 order could part). Counts are written for every column outside lists and maps.
 */
import type { SchemaElement } from 'hyparquet';
import type { ParquetColumnStatistics, ParquetFileStatistics } from '../files/parquet-file.js';

export interface DataFileMetrics {
  readonly columnSizes: Readonly<Record<string, number>>;
  readonly valueCounts: Readonly<Record<string, number>>;
  readonly nullValueCounts: Readonly<Record<string, number>>;
  readonly nanValueCounts: Readonly<Record<string, number>>;
  /** Single-value encodings, hex. */
  readonly lowerBounds: Readonly<Record<string, string>>;
  readonly upperBounds: Readonly<Record<string, string>>;
  readonly splitOffsets: readonly number[];
}

/** Iceberg's default metrics mode, truncate(16). */
const TRUNCATE_CODE_POINTS = 16;

export function icebergMetrics(statistics: ParquetFileStatistics): DataFileMetrics {
  const columnSizes: Record<string, number> = {};
  const valueCounts: Record<string, number> = {};
  const nullValueCounts: Record<string, number> = {};
  const nanValueCounts: Record<string, number> = {};
  const lowerBounds: Record<string, string> = {};
  const upperBounds: Record<string, string> = {};
  for (const column of statistics.columns) {
    const id = column.element.field_id;
    if (id === undefined) continue;
    const key = String(id);
    columnSizes[key] = column.bytes;
    // Inside a list or map a chunk's counts are of level entries, not of values; Java's writer keeps only the size there too.
    if (column.repeated) continue;
    valueCounts[key] = column.valueCount;
    nullValueCounts[key] = column.nullCount;
    if (column.nanCount !== undefined) nanValueCounts[key] = column.nanCount;
    const bounds = boundsOf(column);
    if (bounds === undefined) continue;
    lowerBounds[key] = bounds.lower.toString('hex');
    if (bounds.upper !== undefined) upperBounds[key] = bounds.upper.toString('hex');
  }
  return { columnSizes, valueCounts, nullValueCounts, nanValueCounts, lowerBounds, upperBounds, splitOffsets: statistics.splitOffsets };
}

function boundsOf(column: ParquetColumnStatistics): { lower: Buffer; upper: Buffer | undefined } | undefined {
  const { min, max, element } = column;
  if (min === undefined || max === undefined) return undefined;
  const kind = boundKind(element);
  switch (kind) {
    case 'boolean':
      return { lower: Buffer.from([min === true ? 1 : 0]), upper: Buffer.from([max === true ? 1 : 0]) };
    case 'int':
      return { lower: int32(min), upper: int32(max) };
    case 'long':
      return { lower: int64(BigInt(min as bigint)), upper: int64(BigInt(max as bigint)) };
    case 'millis-as-micros':
      return { lower: int64(BigInt(min as bigint | number) * 1000n), upper: int64(BigInt(max as bigint | number) * 1000n) };
    case 'float': {
      const lower = Buffer.alloc(4);
      const upper = Buffer.alloc(4);
      lower.writeFloatLE(min as number);
      upper.writeFloatLE(max as number);
      return { lower, upper };
    }
    case 'double': {
      const lower = Buffer.alloc(8);
      const upper = Buffer.alloc(8);
      lower.writeDoubleLE(min as number);
      upper.writeDoubleLE(max as number);
      return { lower, upper };
    }
    case 'string': {
      if (typeof min !== 'string' || typeof max !== 'string') return undefined;
      return { lower: Buffer.from(truncateLower(min), 'utf8'), upper: truncateUpper(max) };
    }
    case 'none':
      return undefined;
  }
}

type BoundKind = 'boolean' | 'int' | 'long' | 'millis-as-micros' | 'float' | 'double' | 'string' | 'none';

function boundKind(element: SchemaElement): BoundKind {
  const logical = element.logical_type;
  if (logical?.type === 'DECIMAL' || element.converted_type === 'DECIMAL') return 'none';
  switch (element.type) {
    case 'BOOLEAN':
      return 'boolean';
    case 'INT32':
      // TIME(MILLIS) is an int32 of milliseconds; Iceberg's time is a long of microseconds.
      return logical?.type === 'TIME' ? 'millis-as-micros' : 'int';
    case 'INT64':
      if ((logical?.type === 'TIMESTAMP' || logical?.type === 'TIME') && logical.unit === 'MILLIS') return 'millis-as-micros';
      if (logical?.type === 'TIMESTAMP' && logical.unit === 'NANOS') return 'none';
      return 'long';
    case 'FLOAT':
      return 'float';
    case 'DOUBLE':
      return 'double';
    case 'BYTE_ARRAY':
      return logical?.type === 'STRING' || element.converted_type === 'UTF8' ? 'string' : 'none';
    case 'FIXED_LEN_BYTE_ARRAY':
    case 'INT96':
    case undefined:
      return 'none';
  }
  return 'none';
}

function int32(value: unknown): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32LE(Number(value));
  return bytes;
}

function int64(value: bigint): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64LE(value);
  return bytes;
}

function truncateLower(text: string): string {
  const points = [...text];
  return points.length <= TRUNCATE_CODE_POINTS ? text : points.slice(0, TRUNCATE_CODE_POINTS).join('');
}

/** The first 16 code points with the last one incremented (Iceberg's UnicodeUtil.truncateStringMax), or undefined if none can be. */
function truncateUpper(text: string): Buffer | undefined {
  const points = [...text];
  if (points.length <= TRUNCATE_CODE_POINTS) return Buffer.from(text, 'utf8');
  const kept = points.slice(0, TRUNCATE_CODE_POINTS);
  for (let index = kept.length - 1; index >= 0; index -= 1) {
    let next = (kept[index]!.codePointAt(0) ?? 0) + 1;
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000; // surrogates are no code points of their own
    if (next <= 0x10ffff) return Buffer.from([...kept.slice(0, index), String.fromCodePoint(next)].join(''), 'utf8');
  }
  return undefined;
}
