/**
 * Parquet files through parquetjs-lite 0.8.7, written as row groups fill: the bytes go to the
 * caller's `emit` in file order (the footer last, when the file is finished). The bytes (Parquet format 2.x,
 * file version 1):
 *
 *   magic       4 bytes   50 41 52 31                          "PAR1"
 *   row groups  ROW_GROUP_ROWS records, or fewer once their Avro encodings reach
 *               ROW_GROUP_TARGET_BYTES (so memory stays bounded for wide records; a
 *               deterministic function of the records); per leaf column, in schema order, one column chunk:
 *                 data pages (v1): { PageHeader (Thrift compact), then compressed together:
 *                   repetition levels, definition levels (RLE/bit-packed hybrid, 4-byte length
 *                   prefix each, present when the column can repeat / be null), values (PLAIN) }
 *                 then the chunk's ColumnMetaData (Thrift compact)
 *   footer      FileMetaData (Thrift compact): version 1; schema elements depth first (root
 *               `root`, then the fields as parquet-schema.ts maps them); num_rows; row groups;
 *               key_value_metadata = parquet.avro.schema (the Avro schema, JSON, which Java's
 *               parquet-avro reads records by), then the caller's keys in sorted order;
 *               created_by "parquet.js" (a constant)
 *   length      4 bytes   footer size, little-endian
 *   magic       4 bytes   "PAR1"
 *
 * Nothing depends on the clock or on chance. Written without statistics (parquet-schema.ts says
 * why) and without page indexes (optional, and one less structure a reader could misread).
 */
import parquet from 'parquetjs-lite';
import type { Type } from 'avsc';
import { TributaryError } from '../../common/errors.js';
import { dataFileError, describeThrown } from './errors.js';
import { planParquetRecord, type ParquetCompression } from './parquet-schema.js';
import { parseDataFileSchema, schemaJsonOf } from './schema-types.js';

export const PARQUET_AVRO_SCHEMA_KEY = 'parquet.avro.schema';
/** What older parquet-avro versions wrote; read, never written. */
const LEGACY_AVRO_SCHEMA_KEY = 'avro.schema';
const ROW_GROUP_ROWS = 65_536;
/** parquetjs-lite holds a row group as shredded JS values, several times its encoded size. */
const ROW_GROUP_TARGET_BYTES = 8 * 1024 * 1024;

export interface ParquetFileOptions {
  readonly compression: ParquetCompression;
  readonly metadata: Readonly<Record<string, string>>;
}

/** Writes `records` (each already checked valid for `type`, a record schema) as one Parquet file. */
export async function writeParquetFile(type: Type, records: readonly unknown[], options: ParquetFileOptions): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const writer = new ParquetStreamWriter(type, options.compression, (chunk) => chunks.push(chunk));
  for (const record of records) await writer.append(record);
  await writer.finish(options.metadata);
  return Buffer.concat(chunks);
}

/** One Parquet file written row group by row group; the metadata is given at the end (it goes in the footer). */
export class ParquetStreamWriter {
  private readonly plan: ReturnType<typeof planParquetRecord>;
  private readonly writer: InstanceType<typeof parquet.ParquetWriter>;
  private scratch = Buffer.allocUnsafe(64 * 1024);
  private groupBytes = 0;
  records = 0;
  /** Bytes emitted so far (header and closed row groups). */
  emittedBytes = 0;

  constructor(
    private readonly type: Type,
    compression: ParquetCompression,
    emit: (chunk: Buffer) => void,
  ) {
    this.plan = planParquetRecord(type, compression);
    const schema = new parquet.ParquetSchema(this.plan.definition);
    const envelope = new parquet.ParquetEnvelopeWriter(
      schema,
      (chunk) => {
        this.emittedBytes += chunk.length;
        emit(chunk);
        return Promise.resolve();
      },
      () => Promise.resolve(),
      0,
      { useDataPageV2: false, pageIndex: false },
    );
    this.writer = new parquet.ParquetWriter(schema, envelope, { rowGroupSize: ROW_GROUP_ROWS });
  }

  /** Adds one record; a full row group is encoded and emitted. */
  async append(record: unknown): Promise<void> {
    const index = this.records;
    this.groupBytes += this.encodedSize(record);
    const rowsBuffered = (this.writer.rowBuffer as { rowCount?: number }).rowCount ?? 0;
    // parquetjs-lite closes a row group after the row that makes it rowGroupSize long.
    this.writer.setRowGroupSize(this.groupBytes >= ROW_GROUP_TARGET_BYTES ? rowsBuffered + 1 : ROW_GROUP_ROWS);
    try {
      await this.writer.appendRow(this.plan.toRow(record));
    } catch (error) {
      const details = error instanceof TributaryError ? { ...error.details, record: index } : { record: index };
      throw dataFileError('DATA_FILE_RECORD_INVALID', `record ${index} cannot be written: ${describeThrown(error)}`, details, error);
    }
    if (((this.writer.rowBuffer as { rowCount?: number }).rowCount ?? 0) === 0) this.groupBytes = 0;
    this.records += 1;
  }

  /** Writes the last row group and the footer with `metadata` (after parquet.avro.schema, keys sorted). */
  async finish(metadata: Readonly<Record<string, string>>): Promise<void> {
    this.writer.setMetadata(PARQUET_AVRO_SCHEMA_KEY, JSON.stringify(schemaJsonOf(this.type)));
    for (const key of Object.keys(metadata).sort()) this.writer.setMetadata(key, metadata[key] ?? '');
    await this.writer.close();
  }

  private encodedSize(record: unknown): number {
    let end = this.type.encode(record, this.scratch, 0);
    while (end < 0) {
      this.scratch = Buffer.allocUnsafe(Math.max(2 * this.scratch.length, this.scratch.length - end));
      end = this.type.encode(record, this.scratch, 0);
    }
    return end;
  }
}

export interface ParquetFileContents {
  readonly schemaJson: unknown;
  /** Every key-value metadata entry, parquet.avro.schema included. */
  readonly metadata: Record<string, string>;
  readonly records: unknown[];
}

/** Reads a Parquet file written by writeParquetFile back into Avro records. */
export async function readParquetFile(bytes: Buffer): Promise<ParquetFileContents> {
  try {
    const envelope = await parquet.ParquetEnvelopeReader.openBuffer(bytes);
    await envelope.readHeader();
    const footer = await envelope.readFooter();
    const metadata = Object.fromEntries((footer.key_value_metadata ?? []).map(({ key, value }) => [key, value]));
    const schemaText = metadata[PARQUET_AVRO_SCHEMA_KEY] ?? metadata[LEGACY_AVRO_SCHEMA_KEY];
    if (schemaText === undefined) throw corrupt(`has no ${PARQUET_AVRO_SCHEMA_KEY} in its metadata, so the Avro records it holds are unknown`);
    const schemaJson: unknown = JSON.parse(schemaText);
    const plan = planParquetRecord(parseDataFileSchema(schemaJson), 'UNCOMPRESSED');
    // parquetjs-lite's TIMESTAMP_MILLIS conversion does `+value` on the BigInt it reads and throws;
    // without converted types it hands over raw primitives, which the plan converts itself.
    for (const element of footer.schema) element.converted_type = null;
    const reader = new parquet.ParquetReader(footer, envelope);
    const cursor = reader.getCursor();
    const records: unknown[] = [];
    for (let row = await cursor.next(); row !== null; row = await cursor.next()) records.push(plan.fromRow(row));
    await reader.close();
    const declared = Number(footer.num_rows);
    if (records.length !== declared) throw corrupt(`declares ${declared} rows but holds ${records.length}`);
    return { schemaJson, metadata, records };
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'DATA_FILE_CORRUPT') throw error;
    throw corrupt(`cannot be read: ${describeThrown(error)}`, error);
  }
}

function corrupt(what: string, cause?: unknown): Error {
  return dataFileError('DATA_FILE_CORRUPT', `Parquet file ${what}`, {}, cause);
}
