/**
 * Parquet files, encoded by hyparquet-writer's column writer, written row group by row group:
 * the bytes go to the caller's `emit` in file order (the footer last). The bytes:
 *
 *   magic       4 bytes   "PAR1"
 *   row groups  each closed once its rows' Avro encodings reach `rowGroupBytes` (parquet-mr's
 *               parquet.block.size measures buffered bytes alike), and at the end of the file;
 *               per leaf column, in schema order, one column chunk:
 *                 [dictionary page (PLAIN values)] when the column repeats enough that a
 *                   dictionary at least halves it and stays under 1 MiB (parquet-row-group.ts); otherwise
 *                   plain pages (the fallback)
 *                 data pages v2 of ~1 MiB: repetition and definition levels (RLE/bit-packed
 *                   hybrid, uncompressed, as v2 pages keep them), then the values (RLE_DICTIONARY
 *                   indexes or PLAIN), compressed with the file's codec
 *   indexes     per column chunk of several pages: its ColumnIndex (min, max, null count per page)
 *               then, after all of them, each OffsetIndex (page locations)
 *   footer      FileMetaData (Thrift compact): version 2; the schema (parquet-schema.ts, field ids
 *               on every element); per row group and column: sizes (uncompressed and compressed,
 *               each as written), offsets, encodings, statistics (min, max, null count, NaN count;
 *               not for decimals); key_value_metadata = parquet.avro.schema (the Avro schema, JSON,
 *               which Java's parquet-avro reads records by), then the caller's keys sorted;
 *               created_by CREATED_BY
 *   length      4 bytes   footer size, little-endian
 *   magic       4 bytes   "PAR1"
 *
 * Until its row group closes, a row waits as its Avro binary encoding in a RowStore (the caller's:
 * the loader's spills to disk when the run's memory budget is used up), so an open file holds a
 * few bytes per row, not a JavaScript object; closing the group decodes the rows back and shreds
 * them into columns. Nothing depends on the clock, on chance or on what else the process does: a
 * row group's bounds are a function of the rows, so the same rows always give the same bytes.
 */
import { gunzipSync } from 'node:zlib';
import type { Type } from 'avsc';
import type { CompressionCodec, FileMetaData, RowGroup, SchemaElement, Statistics } from 'hyparquet';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { ByteWriter } from 'hyparquet-writer';
import { writeIndexes } from 'hyparquet-writer/src/indexes.js';
import { writeMetadata } from 'hyparquet-writer/src/metadata.js';
import type { PageIndexes } from 'hyparquet-writer/src/types.js';
import { TributaryError } from '../../common/errors.js';
import { decompress } from '../../protocol/compression.js';
import { dataFileError, describeThrown } from './errors.js';
import { planParquetRecord, type ParquetRecordPlan } from './parquet-schema.js';
import { INLINE_ENCODER, type RowGroupEncoder } from './parquet-encoder.js';
import { asBuffer } from './parquet-row-group.js';
import { EncodingBuffer } from './encoding-buffer.js';
import { parseDataFileSchema, schemaJsonOf } from './schema-types.js';

export const PARQUET_AVRO_SCHEMA_KEY = 'parquet.avro.schema';
/** What older parquet-avro versions wrote; read, never written. */
const LEGACY_AVRO_SCHEMA_KEY = 'avro.schema';
const MAGIC = 0x31524150; // "PAR1" little-endian
/**
 * A constant, so files do not change with the version. In parquet-mr's `<app> version <v> (build <b>)`
 * form: a writer it cannot parse gets its string and decimal statistics ignored (PARQUET-251), so
 * row groups would not be pruned on them; an application other than parquet-mr gets no workaround.
 */
export const CREATED_BY = 'tributary version 0.1.0 (build hyparquet-writer-0.17.0)';
/** parquet-mr's parquet.block.size. */
export const DEFAULT_ROW_GROUP_BYTES = 128 * 1024 * 1024;
/** Rows are Avro-encoded into blocks of about this size before they go to the row store. */
const ROW_BLOCK_BYTES = 16 * 1024;

export type ParquetCompression = 'UNCOMPRESSED' | 'SNAPPY' | 'GZIP' | 'ZSTD';

/** One leaf column's statistics over a whole file (its row groups' chunks summed up): what table formats keep per file. */
export interface ParquetColumnStatistics {
  readonly element: SchemaElement;
  /** Whether the column sits inside a list or map (repetition level above 0). */
  readonly repeated: boolean;
  /** Values including nulls (the chunks' num_values). */
  readonly valueCount: number;
  readonly nullCount: number;
  /** NaN values of a float or double column (written by the column writer), else undefined. */
  readonly nanCount: number | undefined;
  /** Compressed bytes of the column's chunks. */
  readonly bytes: number;
  /** Smallest and largest non-null, non-NaN value as the column writer saw them; undefined when a chunk had none or no statistics. */
  readonly min: unknown;
  readonly max: unknown;
}

/** What a finished Parquet file holds, for table metadata. */
export interface ParquetFileStatistics {
  readonly columns: readonly ParquetColumnStatistics[];
  /** Each row group's first byte, ascending. */
  readonly splitOffsets: readonly number[];
}

/** Where a file's rows wait for their row group to close (the loader's SpillBuffer is one). */
export interface RowStore {
  /** Takes a chunk the caller will not change again. */
  write(chunk: Buffer): void;
  /** The bytes written, in order, cut anywhere. */
  chunks(): AsyncIterable<Buffer>;
  dispose(): Promise<void>;
}

export interface ParquetWriterOptions {
  readonly compression: ParquetCompression;
  /** A row group closes once its rows' Avro encodings reach this many bytes; default DEFAULT_ROW_GROUP_BYTES. */
  readonly rowGroupBytes?: number | undefined;
  /** A new store for each row group; default: in memory. */
  readonly rowStore?: (() => RowStore) | undefined;
  /** Encodes the row groups (a worker thread: parquet-encoder.ts); default: on this thread. */
  readonly encoder?: RowGroupEncoder | undefined;
  /** Runs the encoding of a row group whose rows have `rowBytes` Avro bytes (a memory budget serializes them); default: at once. */
  readonly encodeRowGroup?: (<T>(rowBytes: number, work: () => Promise<T>) => Promise<T>) | undefined;
  /** Field ids renumbered: the schema's own numbering (parquet-schema.ts) → the ids written (an Iceberg table's). */
  readonly fieldIds?: ReadonlyMap<number, number> | undefined;
  /** Millisecond times and timestamps written as MICROS columns (Iceberg's units; parquet-schema.ts). */
  readonly microseconds?: boolean | undefined;
}


/** Page decompression for reading back; each bounded by the page's declared size. */
const DECOMPRESSORS = {
  SNAPPY: (bytes: Uint8Array, size: number): Uint8Array => decompress('snappy', asBuffer(bytes), size),
  GZIP: (bytes: Uint8Array, size: number): Uint8Array => gunzipSync(bytes, { maxOutputLength: Math.max(1, size) }),
  // The zstd bound walks frames without a content size by whole 128 KiB blocks.
  ZSTD: (bytes: Uint8Array, size: number): Uint8Array => decompress('zstd', asBuffer(bytes), size + 128 * 1024),
};

/** Rows of the open row group, Avro-encoded into blocks. */
class PendingRows {
  private readonly block = new EncodingBuffer(2 * ROW_BLOCK_BYTES);
  /** Rows' encoded bytes in this group (in the store and in the block). */
  bytes = 0;
  rows = 0;

  constructor(
    private readonly type: Type,
    readonly store: RowStore,
  ) {}

  append(record: unknown): void {
    this.bytes += this.block.append(this.type, record);
    this.rows += 1;
    if (this.block.length >= ROW_BLOCK_BYTES) this.flushBlock();
  }

  flushBlock(): void {
    if (this.block.length === 0) return;
    this.store.write(Buffer.from(this.block.view()));
    this.block.clear();
  }

  /** The rows' encodings back to back, from the store. */
  async bytesInOrder(): Promise<Buffer> {
    this.flushBlock();
    const parts: Buffer[] = [];
    for await (const chunk of this.store.chunks()) parts.push(chunk);
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }
}

/** Sends hyparquet's bytes on after each column chunk, keeping its running offset. */
class EmittingByteWriter extends ByteWriter {
  constructor(private readonly emit: (chunk: Buffer) => void) {
    super(64 * 1024);
  }

  drain(): void {
    if (this.index === 0) return;
    this.emit(Buffer.from(this.getBuffer()));
    this.index = 0;
  }

  /** Emits bytes written elsewhere (an encoded row group) at the current offset. */
  skip(bytes: Buffer): void {
    this.drain();
    this.emit(bytes);
    this.offset += bytes.length;
  }
}

/** One Parquet file written row group by row group; the metadata is given at the end (it goes in the footer). */
export class ParquetStreamWriter {
  private readonly plan: ParquetRecordPlan;
  private readonly writer: EmittingByteWriter;
  private readonly codec: CompressionCodec;
  private readonly rowGroupBytes: number;
  private readonly newStore: () => RowStore;
  private readonly encodeRowGroup: <T>(rowBytes: number, work: () => Promise<T>) => Promise<T>;
  private readonly encoder: RowGroupEncoder;
  private readonly microseconds: boolean;
  private readonly schemaText: string;
  private pending: PendingRows;
  /** The encoding of the last closed row group (they run one after the other). */
  private encoding: Promise<void> = Promise.resolve();
  private readonly rowGroups: RowGroup[] = [];
  private readonly pageIndexes: PageIndexes[] = [];
  records = 0;

  constructor(
    private readonly type: Type,
    options: ParquetWriterOptions,
    emit: (chunk: Buffer) => void,
  ) {
    this.microseconds = options.microseconds === true;
    this.plan = planParquetRecord(type, options.fieldIds, { microseconds: this.microseconds });
    this.codec = options.compression;
    this.rowGroupBytes = options.rowGroupBytes ?? DEFAULT_ROW_GROUP_BYTES;
    this.newStore = options.rowStore ?? memoryRowStore;
    this.encodeRowGroup = options.encodeRowGroup ?? ((_bytes, work) => work());
    this.encoder = options.encoder ?? INLINE_ENCODER;
    this.schemaText = JSON.stringify(schemaJsonOf(type));
    this.writer = new EmittingByteWriter(emit);
    this.writer.appendUint32(MAGIC);
    this.pending = new PendingRows(type, this.newStore());
  }

  /** Bytes emitted so far (closed row groups). */
  get emittedBytes(): number {
    return this.writer.offset - this.writer.index;
  }

  /** Adds one record (valid for the type); a Promise when it closed a row group. */
  append(record: unknown): void | Promise<void> {
    this.pending.append(record);
    this.records += 1;
    if (this.pending.bytes >= this.rowGroupBytes) return this.closeRowGroup();
    return undefined;
  }

  /** Writes the last row group, the page indexes and the footer with `metadata` (after parquet.avro.schema, keys sorted). */
  async finish(metadata: Readonly<Record<string, string>>): Promise<void> {
    if (this.pending.rows > 0) await this.closeRowGroup();
    await this.encoding;
    await this.pending.store.dispose();
    writeIndexes(this.writer, this.pageIndexes);
    const keyValues = [{ key: PARQUET_AVRO_SCHEMA_KEY, value: this.schemaText }, ...Object.keys(metadata).sort().map((key) => ({ key, value: metadata[key] ?? '' }))];
    const footer: FileMetaData = {
      version: 2,
      created_by: CREATED_BY,
      schema: this.plan.schema,
      num_rows: BigInt(this.records),
      row_groups: this.rowGroups,
      key_value_metadata: keyValues,
      metadata_length: 0,
    };
    delete (footer as Partial<FileMetaData>).metadata_length; // computed by the writer, not a Thrift field
    writeMetadata(this.writer, footer, Number.POSITIVE_INFINITY);
    this.writer.appendUint32(MAGIC);
    this.writer.drain();
  }

  /** The file's column statistics; call after `finish`. */
  statistics(): ParquetFileStatistics {
    const columns = this.plan.leaves.map((leaf, index): ParquetColumnStatistics => {
      let valueCount = 0;
      let nullCount = 0;
      let nanCount: number | undefined;
      let bytes = 0;
      let min: unknown;
      let max: unknown;
      let bounded = this.rowGroups.length > 0;
      for (const group of this.rowGroups) {
        const meta = group.columns[index]?.meta_data;
        if (meta === undefined) throw new Error(`row group ${group.ordinal ?? '?'} lacks column ${leaf.name}`);
        valueCount += Number(meta.num_values);
        bytes += Number(meta.total_compressed_size);
        // hyparquet-writer fills nan_count (the format's field 8), which hyparquet's Statistics type lacks.
        const stats = meta.statistics as (Statistics & { nan_count?: bigint }) | undefined;
        nullCount += Number(stats?.null_count ?? 0n);
        if (stats?.nan_count !== undefined) nanCount = (nanCount ?? 0) + Number(stats.nan_count);
        const chunkValues = Number(meta.num_values) - Number(stats?.null_count ?? 0n) - Number(stats?.nan_count ?? 0n);
        if (chunkValues === 0) continue; // an all-null chunk bounds nothing
        if (stats?.min_value === undefined || stats.max_value === undefined) {
          bounded = false;
          continue;
        }
        if (min === undefined || lessThan(stats.min_value, min)) min = stats.min_value;
        if (max === undefined || lessThan(max, stats.max_value)) max = stats.max_value;
      }
      return { element: leaf.element, repeated: leaf.maxRepetitionLevel > 0, valueCount, nullCount, nanCount, bytes, min: bounded ? min : undefined, max: bounded ? max : undefined };
    });
    return { columns, splitOffsets: this.rowGroups.map((group) => Number(group.file_offset ?? 0n)) };
  }

  /** Removes what the open row group's store holds (after a failure). */
  async abandon(): Promise<void> {
    await this.encoding.catch(() => undefined);
    await this.pending.store.dispose();
  }

  /**
   * Closes the open row group and has it encoded after the ones before it; answers the encoding
   * of the group before, so the caller runs at most one group ahead of the encoder.
   */
  private closeRowGroup(): Promise<void> {
    const group = this.pending;
    const firstRow = this.records - group.rows;
    this.pending = new PendingRows(this.type, this.newStore());
    const before = this.encoding;
    this.encoding = before.then(() => this.encodeRowGroup(group.bytes, () => this.writeRowGroup(group, firstRow)));
    this.encoding.catch(() => undefined); // seen by the next append or finish
    return before;
  }

  private async writeRowGroup(group: PendingRows, firstRow: number): Promise<void> {
    let rows: Buffer;
    try {
      rows = await group.bytesInOrder();
    } finally {
      await group.store.dispose();
    }
    const encoded = await this.encoder.encode({
      plan: this.plan,
      type: this.type,
      schemaText: this.schemaText,
      microseconds: this.microseconds,
      codec: this.codec,
      rows,
      rowCount: group.rows,
      start: this.writer.offset,
      firstRow,
      ordinal: this.rowGroups.length,
    });
    this.rowGroups.push(encoded.rowGroup);
    this.pageIndexes.push(...encoded.pageIndexes);
    this.writer.skip(encoded.bytes);
  }
}

/** Order of two statistics values of one column: numbers, BigInts and booleans as JavaScript orders them, strings and bytes by their (UTF-8) bytes, as Parquet does. */
function lessThan(a: unknown, b: unknown): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b) < 0;
  if (typeof a === 'string' && typeof b === 'string') return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')) < 0;
  return (a as number) < (b as number);
}

function memoryRowStore(): RowStore {
  let chunks: Buffer[] = [];
  return {
    write: (chunk) => void chunks.push(chunk),
    chunks: async function* () {
      yield* chunks;
    },
    dispose: () => {
      chunks = [];
      return Promise.resolve();
    },
  };
}

export interface ParquetFileContents {
  readonly schemaJson: unknown;
  /** Every key-value metadata entry, parquet.avro.schema included. */
  readonly metadata: Record<string, string>;
  readonly records: unknown[];
}

/** Reads a Parquet file written by ParquetStreamWriter back into Avro records (by the Avro schema it carries). */
export async function readParquetFile(bytes: Buffer): Promise<ParquetFileContents> {
  try {
    const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    const footer = parquetMetadata(file);
    const metadata = Object.fromEntries((footer.key_value_metadata ?? []).map(({ key, value }) => [key, value ?? '']));
    const schemaText = metadata[PARQUET_AVRO_SCHEMA_KEY] ?? metadata[LEGACY_AVRO_SCHEMA_KEY];
    if (schemaText === undefined) throw corrupt(`has no ${PARQUET_AVRO_SCHEMA_KEY} in its metadata, so the Avro records it holds are unknown`);
    const schemaJson: unknown = JSON.parse(schemaText);
    const type = parseDataFileSchema(schemaJson);
    const plain = planParquetRecord(type);
    // A file of an Iceberg table holds millisecond times as MICROS columns (its Avro schema still says millis).
    const footerLeaves = footer.schema.filter((element) => element.num_children === undefined);
    const unitOf = (element: SchemaElement | undefined): unknown => (element?.logical_type as { unit?: unknown } | undefined)?.unit;
    const scaled = plain.leaves.some((leaf, index) => unitOf(leaf.element) === 'MILLIS' && unitOf(footerLeaves[index]) === 'MICROS');
    const plan = scaled ? planParquetRecord(type, undefined, { microseconds: true }) : plain;
    // The plan converts raw primitives itself (INT64 as BigInt, byte arrays as bytes): hyparquet's
    // conversions would turn timestamps into Dates and decimals into doubles. Strings stay strings
    // (map keys become object keys), groups keep LIST/MAP.
    const raw: FileMetaData = {
      ...footer,
      schema: footer.schema.map((element) => (element.num_children === undefined && element.converted_type !== 'UTF8' ? withoutAnnotations(element) : element)),
    };
    const rows = await parquetReadObjects({ file, metadata: raw, utf8: false, compressors: DECOMPRESSORS });
    const records = rows.map((row) => plan.fromRow(row));
    const declared = Number(footer.num_rows);
    if (records.length !== declared) throw corrupt(`declares ${declared} rows but holds ${records.length}`);
    return { schemaJson, metadata, records };
  } catch (error) {
    if (error instanceof TributaryError && error.code === 'DATA_FILE_CORRUPT') throw error;
    throw corrupt(`cannot be read: ${describeThrown(error)}`, error);
  }
}

function withoutAnnotations(element: SchemaElement): SchemaElement {
  const { converted_type: _converted, logical_type: _logical, ...raw } = element;
  return raw;
}

function corrupt(what: string, cause?: unknown): Error {
  return dataFileError('DATA_FILE_CORRUPT', `Parquet file ${what}`, {}, cause);
}
