/**
 * What a column chunk's statistics must say, worked out from the records it holds, and checked
 * against what DuckDB's parquet_metadata() shows (min_value/max_value as DuckDB prints values of
 * the column's type, null_count, num_values).
 *
 * The order is Parquet's for each logical type: signed for integers, dates, times and timestamps
 * (decimals have no bounds: see chunkProblems); unsigned bytes for strings (UTF-8, i.e. code
 * point order, not JavaScript's UTF-16 order), binary, fixed and UUIDs; numeric for floats with NaN
 * left out of min/max. A string or binary bound may be truncated (Iceberg truncates at 16): a
 * value up to 16 bytes must be the exact bound, a longer one only has to bound (min ≤ every value
 * ≤ max, byte order).
 */
import { DuckDBDateValue, DuckDBDecimalValue, DuckDBTimestampTZValue, DuckDBTimestampValue, DuckDBTimeValue } from '@duckdb/node-api';
import { attributesOf, decimalValue, kindOf, type AvroKind, type LeafColumn } from './avro-parquet-shape.js';
import type { ColumnChunk } from './parquet-metadata.js';

/** Bytes up to which a string or binary bound must be exact. */
export const EXACT_BOUND_BYTES = 16;

/**
 * The problems of every column chunk's statistics in a file holding `records` in order, one line
 * each (none: all correct). `chunks` are the file's, `leaves` the schema's leaf columns (same order).
 */
export function statisticsProblems(chunks: readonly ColumnChunk[], leaves: readonly LeafColumn[], records: readonly unknown[]): string[] {
  const problems: string[] = [];
  let firstRow = 0;
  const groups = [...new Set(chunks.map((chunk) => chunk.rowGroup))];
  for (const group of groups) {
    const inGroup = chunks.filter((chunk) => chunk.rowGroup === group);
    const rows = records.slice(firstRow, firstRow + (inGroup[0]?.rowGroupRows ?? 0));
    firstRow += rows.length;
    if (inGroup.length !== leaves.length) problems.push(`row group ${group}: ${inGroup.length} column chunks for ${leaves.length} leaf columns`);
    leaves.forEach((leaf, index) => {
      const chunk = inGroup[index];
      const at = `row group ${group} column ${leaf.path.join('.')}`;
      if (chunk === undefined || chunk.path.join('.') !== leaf.path.join('.')) {
        problems.push(`${at}: the chunk is ${chunk?.path.join('.') ?? 'missing'}`);
        return;
      }
      problems.push(...chunkProblems(chunk, leaf, rows).map((problem) => `${at}: ${problem}`));
    });
  }
  if (firstRow !== records.length) problems.push(`the row groups hold ${firstRow} rows, not ${records.length}`);
  return problems;
}

function chunkProblems(chunk: ColumnChunk, leaf: LeafColumn, rows: readonly unknown[]): string[] {
  const slots: unknown[] = [];
  for (const row of rows) leaf.slots(row, slots);
  const kind = kindOf(leaf.type);
  const order = orderOf(kind);
  const present = slots.filter((value) => value !== null && !(typeof value === 'number' && Number.isNaN(value)));
  const min = present.reduce<unknown>((least, value) => (least === undefined || order(value, least) < 0 ? value : least), undefined);
  const max = present.reduce<unknown>((most, value) => (most === undefined || order(value, most) > 0 ? value : most), undefined);
  const nulls = slots.filter((value) => value === null).length;
  const problems: string[] = [];
  if (chunk.numValues !== slots.length) problems.push(`num_values ${chunk.numValues}, the records give ${slots.length} level slots`);
  // Decimals carry no statistics: the writer leaves them out rather than bound them by byte order,
  // which is not their numeric order (missing bounds cost pruning, wrong ones cost rows).
  if (kind === 'decimal-bytes' || kind === 'decimal-fixed') {
    if (chunk.statsMin !== null || chunk.statsMax !== null) problems.push(`decimal bounds ${String(chunk.statsMin)} … ${String(chunk.statsMax)}, where the writer promises none`);
    return problems;
  }
  if (chunk.nullCount !== nulls) problems.push(`null_count ${String(chunk.nullCount)}, the records give ${nulls}`);
  problems.push(...boundProblems('min', chunk.statsMin, min, leaf, -1), ...boundProblems('max', chunk.statsMax, max, leaf, 1));
  return problems;
}

/** `side` −1: a min (must be ≤ the true one when inexact), 1: a max. */
function boundProblems(name: string, shown: string | null, expected: unknown, leaf: LeafColumn, side: -1 | 1): string[] {
  const kind = kindOf(leaf.type);
  if (expected === undefined) return shown === null ? [] : [`${name} ${shown}, but no value is present`];
  // DuckDB prints no infinite float bound, not even of files it wrote itself: nothing to compare.
  if (shown === null && (kind === 'float' || kind === 'double') && !Number.isFinite(expected)) return [];
  if (shown === null) return [`no ${name} (the records give ${display(kind, leaf, expected)})`];
  if (kind === 'string' || kind === 'enum' || kind === 'bytes') {
    const bound = kind === 'bytes' ? blobFromDisplay(shown) : Buffer.from(shown, 'utf8');
    const value = kind === 'bytes' ? (expected as Buffer) : Buffer.from(expected as string, 'utf8');
    if (value.length <= EXACT_BOUND_BYTES) return bound.equals(value) ? [] : [`${name} ${JSON.stringify(shown)}, the records give ${JSON.stringify(display(kind, leaf, expected))}`];
    const comparison = Buffer.compare(bound, value);
    return comparison === 0 || Math.sign(comparison) === side ? [] : [`${name} ${JSON.stringify(shown)} does not bound ${JSON.stringify(display(kind, leaf, expected))} (byte order)`];
  }
  if (kind === 'float' || kind === 'double') {
    const read = numberFromDisplay(shown);
    const wanted = expected as number;
    // LogicalTypes.md: a zero bound may be either zero (writers should write −0 as min, +0 as max).
    const same = kind === 'float' ? Math.fround(read) === wanted : read === wanted;
    return same ? [] : [`${name} ${shown}, the records give ${String(wanted)}`];
  }
  const wanted = display(kind, leaf, expected);
  return shown === wanted ? [] : [`${name} ${JSON.stringify(shown)}, the records give ${JSON.stringify(wanted)}`];
}

/** A value as DuckDB prints it in the column's type (contract types: see etl-parquet-readers). */
function display(kind: AvroKind, leaf: LeafColumn, value: unknown): string {
  const { precision, scale } = attributesOf(leaf.type);
  switch (kind) {
    case 'date':
      return new DuckDBDateValue(value as number).toString();
    case 'time-millis':
      return new DuckDBTimeValue(BigInt(value as number) * 1000n).toString();
    case 'time-micros':
      return new DuckDBTimeValue(BigInt(value as number)).toString();
    case 'timestamp-millis':
      return new DuckDBTimestampTZValue(BigInt(value as number) * 1000n).toString();
    case 'timestamp-micros':
      return new DuckDBTimestampTZValue(BigInt(value as number)).toString();
    case 'local-timestamp-millis':
      return new DuckDBTimestampValue(BigInt(value as number) * 1000n).toString();
    case 'local-timestamp-micros':
      return new DuckDBTimestampValue(BigInt(value as number)).toString();
    case 'decimal-bytes':
    case 'decimal-fixed':
      return new DuckDBDecimalValue(decimalValue(value as Buffer), precision ?? 38, scale).toString();
    case 'uuid':
      return (value as string).toLowerCase();
    case 'bytes':
    case 'fixed':
      return blobDisplay(value as Buffer);
    case 'boolean':
    case 'int':
    case 'long':
    case 'float':
    case 'double':
    case 'string':
    case 'enum':
      return String(value);
    case 'record':
    case 'array':
    case 'map':
      throw new Error(`${kind} is not a leaf`);
  }
}

type Order = (left: unknown, right: unknown) => number;

function orderOf(kind: AvroKind): Order {
  switch (kind) {
    case 'string':
    case 'enum':
      return (left, right) => Buffer.compare(Buffer.from(left as string, 'utf8'), Buffer.from(right as string, 'utf8'));
    case 'uuid':
      // The 16 bytes' unsigned order is the order of the lowercase hex text.
      return (left, right) => Buffer.compare(Buffer.from((left as string).toLowerCase()), Buffer.from((right as string).toLowerCase()));
    case 'bytes':
    case 'fixed':
      return (left, right) => Buffer.compare(left as Buffer, right as Buffer);
    case 'decimal-bytes':
    case 'decimal-fixed':
      return (left, right) => Number(decimalValue(left as Buffer) - decimalValue(right as Buffer)) || 0;
    case 'boolean':
      return (left, right) => Number(left) - Number(right);
    case 'int':
    case 'long':
    case 'float':
    case 'double':
    case 'date':
    case 'time-millis':
    case 'time-micros':
    case 'timestamp-millis':
    case 'timestamp-micros':
    case 'local-timestamp-millis':
    case 'local-timestamp-micros':
      return (left, right) => (left as number) - (right as number);
    case 'record':
    case 'array':
    case 'map':
      throw new Error(`${kind} is not a leaf`);
  }
}

/** DuckDB prints a BLOB with bytes outside printable ASCII, and \ ' ", as \xHH. */
function blobDisplay(bytes: Buffer): string {
  return [...bytes].map((byte) => (byte >= 0x20 && byte <= 0x7e && byte !== 0x5c && byte !== 0x27 && byte !== 0x22 ? String.fromCharCode(byte) : `\\x${byte.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
}

function blobFromDisplay(text: string): Buffer {
  const bytes: number[] = [];
  for (let index = 0; index < text.length; index += 1) {
    if (text.startsWith('\\x', index)) {
      bytes.push(Number.parseInt(text.slice(index + 2, index + 4), 16));
      index += 3;
    } else {
      bytes.push(text.charCodeAt(index));
    }
  }
  return Buffer.from(bytes);
}

function numberFromDisplay(text: string): number {
  const special: Record<string, number> = { inf: Infinity, '-inf': -Infinity, infinity: Infinity, '-infinity': -Infinity, nan: NaN };
  return special[text.toLowerCase()] ?? Number(text);
}
