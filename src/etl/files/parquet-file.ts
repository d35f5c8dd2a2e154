/**
 * Parquet files through parquetjs-lite 0.8.7, collected in memory. The bytes (Parquet format 2.x,
 * file version 1):
 *
 *   magic       4 bytes   50 41 52 31                          "PAR1"
 *   row groups  each ROW_GROUP_ROWS records; per leaf column, in schema order, one column chunk:
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

export interface ParquetFileOptions {
  readonly compression: ParquetCompression;
  readonly metadata: Readonly<Record<string, string>>;
}

/** Writes `records` (each already checked valid for `type`, a record schema) as one Parquet file. */
export async function writeParquetFile(type: Type, records: readonly unknown[], options: ParquetFileOptions): Promise<Buffer> {
  const plan = planParquetRecord(type, options.compression);
  const schema = new parquet.ParquetSchema(plan.definition);
  const chunks: Buffer[] = [];
  const envelope = new parquet.ParquetEnvelopeWriter(
    schema,
    (chunk) => {
      chunks.push(chunk);
      return Promise.resolve();
    },
    () => Promise.resolve(),
    0,
    { useDataPageV2: false, pageIndex: false },
  );
  const writer = new parquet.ParquetWriter(schema, envelope, { rowGroupSize: ROW_GROUP_ROWS });
  writer.setMetadata(PARQUET_AVRO_SCHEMA_KEY, JSON.stringify(schemaJsonOf(type)));
  for (const key of Object.keys(options.metadata).sort()) writer.setMetadata(key, options.metadata[key] ?? '');
  for (const [index, record] of records.entries()) {
    try {
      await writer.appendRow(plan.toRow(record));
    } catch (error) {
      const details = error instanceof TributaryError ? { ...error.details, record: index } : { record: index };
      throw dataFileError('DATA_FILE_RECORD_INVALID', `record ${index} cannot be written: ${describeThrown(error)}`, details, error);
    }
  }
  await writer.close();
  return Buffer.concat(chunks);
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
