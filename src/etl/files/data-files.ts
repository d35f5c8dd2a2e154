/**
 * The data files the HDFS loader writes: one file per topic/hour/partition/offset range, holding
 * that range's decoded records as an Avro object container file (avro-container.ts) or a Parquet
 * file (parquet-file.ts). The bytes depend only on (records, options, code): the Avro sync marker
 * comes from `identity`, and no wall-clock time or random number enters a file, so a retried task
 * writes byte-identical files.
 */
import { createHash } from 'node:crypto';
import type { Type } from 'avsc';
import type { AvroCodecName } from './avro-codecs.js';
import { avroContainerHeader, AvroBlockWriter, readAvroContainer, SYNC_MARKER_BYTES } from './avro-container.js';
import { dataFileError } from './errors.js';
import { ParquetStreamWriter, readParquetFile, type ParquetCompression, type ParquetFileStatistics, type ParquetWriterOptions, type RowStore } from './parquet-file.js';

export { parseDataFileSchema } from './schema-types.js';

export type DataFileFormat = 'avro' | 'parquet';
export type DataFileCodec = 'null' | 'deflate' | 'snappy' | 'zstd' | 'gzip';

export const DATA_FILE_EXTENSIONS: Readonly<Record<DataFileFormat, string>> = Object.freeze({ avro: 'avro', parquet: 'parquet' });

export interface DataFileOptions {
  readonly format: DataFileFormat;
  readonly codec: DataFileCodec;
  /** The avsc Type every record is valid for (parseDataFileSchema keeps logical types). */
  readonly schema: Type;
  /** e.g. `topic+3+100+200`: seeds everything that would otherwise be random (the Avro sync marker). */
  readonly identity: string;
  /** Extra file metadata, e.g. `tributary.offsets`; keys starting `avro.` or `parquet.` are reserved. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** Parquet: a row group closes once its rows' Avro encodings reach this many bytes (default 128 MiB). */
  readonly rowGroupBytes?: number | undefined;
  /** Parquet: where a row group's rows wait until it closes (default: in memory). */
  readonly rowStore?: (() => RowStore) | undefined;
  /** Avro deflate: compress blocks on libuv's thread pool (emittedBytes then lags; not with size-cut files). */
  readonly compressOffThread?: boolean | undefined;
  /** Parquet: runs the encoding of each row group (a memory budget serializes them). */
  readonly encodeRowGroup?: ParquetWriterOptions['encodeRowGroup'];
  /** Parquet: where row groups are encoded (parquet-encoder.ts; default on this thread). */
  readonly encoder?: ParquetWriterOptions['encoder'];
  /** Parquet: field ids renumbered (an Iceberg table's ids for the schema's own numbering). */
  readonly fieldIds?: ParquetWriterOptions['fieldIds'];
  /** Parquet: millisecond times and timestamps as MICROS columns, as Iceberg tables have them. */
  readonly microseconds?: boolean | undefined;
}

export interface DecodedDataFile {
  readonly schemaJson: unknown;
  readonly records: unknown[];
  /** The file's extra metadata (what `DataFileOptions.metadata` gave), without the reserved keys. */
  readonly metadata: Record<string, string>;
}

/** Our codec names per format, and what each is called inside the file. */
const FORMAT_CODECS: { readonly avro: Partial<Record<DataFileCodec, AvroCodecName>>; readonly parquet: Partial<Record<DataFileCodec, ParquetCompression>> } = {
  avro: { null: 'null', deflate: 'deflate', snappy: 'snappy', zstd: 'zstandard' },
  parquet: { null: 'UNCOMPRESSED', snappy: 'SNAPPY', gzip: 'GZIP', zstd: 'ZSTD' },
};
const RESERVED_METADATA_PREFIXES = ['avro.', 'parquet.'];

/** Refuses, with CONFIG_INVALID, a format or a codec that format cannot be written with. */
export function validateCodec(format: DataFileFormat, codec: DataFileCodec): void {
  validateFormat(format);
  const codecs = FORMAT_CODECS[format];
  if (typeof codec !== 'string' || !Object.hasOwn(codecs, codec)) {
    throw dataFileError(
      'CONFIG_INVALID',
      `${format} data files cannot be written with codec ${JSON.stringify(codec)}; choose one of ${Object.keys(codecs).join(', ')}`,
      { format, codec, supported: Object.keys(codecs) },
    );
  }
}

/** One file's bytes holding `records` (values valid for `options.schema`, in offset order). */
export async function encodeDataFile(records: readonly unknown[], options: DataFileOptions): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const writer = openDataFileWriter(options, (chunk) => chunks.push(chunk), { checked: true });
  const metadata = checkedMetadata(options.metadata ?? {});
  // Every record is checked before any is written, so a bad one names itself and nothing else runs.
  records.forEach((record, index) => checkRecord(options.schema, record, index));
  for (const record of records) await writer.append(record);
  const head = await writer.finish(metadata);
  return Buffer.concat([head, ...chunks]);
}

/**
 * A data file written record by record, its bytes handed to `emit` as blocks (Avro) or row groups
 * (Parquet) fill, so memory holds one block, not the file. The file is `head` (what `finish`
 * answers: the Avro header, whose metadata may depend on every record; empty for Parquet) followed
 * by everything emitted, in order: the same bytes encodeDataFile gives for the same records.
 */
export interface DataFileWriter {
  /** Records appended. */
  readonly records: number;
  /** Bytes emitted so far; the file ends up a little larger (the head, the last block, a footer). */
  readonly emittedBytes: number;
  /** Checks and adds one record; a Promise only when the format must wait (Parquet). */
  append(record: unknown): void | Promise<void>;
  /** Emits what remains (last block, footer) and answers the head. Call once, after the last record. */
  finish(metadata: Readonly<Record<string, string>>): Promise<Buffer>;
  /** Lets go of what waits (a Parquet row group's stored rows) after a failure. */
  abandon(): Promise<void>;
  /** Parquet: the finished file's column statistics (for table metadata); undefined for Avro. */
  statistics(): ParquetFileStatistics | undefined;
}

export function openDataFileWriter(options: Omit<DataFileOptions, 'metadata'>, emit: (chunk: Buffer) => void, internal: { readonly checked?: boolean } = {}): DataFileWriter {
  validateCodec(options.format, options.codec);
  if (typeof options.identity !== 'string' || options.identity === '') {
    throw dataFileError('CONFIG_INVALID', 'a data file needs a non-empty identity (e.g. "topic+3+100+200") to derive its sync marker from', { identity: options.identity });
  }
  const { schema } = options;
  const check = internal.checked === true ? undefined : (record: unknown, index: number): void => checkRecord(schema, record, index);
  if (options.format === 'avro') {
    const codec = FORMAT_CODECS.avro[options.codec] ?? 'null';
    const syncMarker = syncMarkerFor(options.identity);
    const blocks = new AvroBlockWriter(schema, { codec, syncMarker, compressOffThread: options.compressOffThread === true }, emit);
    return {
      get records() {
        return blocks.records;
      },
      get emittedBytes() {
        return blocks.emittedBytes;
      },
      append(record) {
        check?.(record, blocks.records);
        return blocks.append(record);
      },
      async finish(metadata) {
        await blocks.settle();
        return avroContainerHeader(schema, { codec, syncMarker, metadata: checkedMetadata(metadata) });
      },
      abandon: () => Promise.resolve(),
      statistics: () => undefined,
    };
  }
  const rows = new ParquetStreamWriter(schema, {
      compression: FORMAT_CODECS.parquet[options.codec] ?? 'UNCOMPRESSED',
      rowGroupBytes: options.rowGroupBytes,
      rowStore: options.rowStore,
      encodeRowGroup: options.encodeRowGroup,
      encoder: options.encoder,
      fieldIds: options.fieldIds,
      microseconds: options.microseconds,
    }, emit);
  return {
    get records() {
      return rows.records;
    },
    get emittedBytes() {
      return rows.emittedBytes;
    },
    append(record) {
      check?.(record, rows.records);
      return rows.append(record);
    },
    async finish(metadata) {
      await rows.finish(checkedMetadata(metadata));
      return Buffer.alloc(0);
    },
    abandon: () => rows.abandon(),
    statistics: () => rows.statistics(),
  };
}

/** Reads a file `encodeDataFile` wrote; malformed bytes are DATA_FILE_CORRUPT. */
export async function decodeDataFile(bytes: Buffer, format: DataFileFormat): Promise<DecodedDataFile> {
  validateFormat(format);
  const contents = format === 'avro' ? readAvroContainer(bytes) : await readParquetFile(bytes);
  const metadata = Object.fromEntries(Object.entries(contents.metadata).filter(([key]) => !isReserved(key)));
  return { schemaJson: contents.schemaJson, records: contents.records, metadata };
}

/** The Avro sync marker of the file named by `identity`: the first 16 bytes of its SHA-256. */
export function syncMarkerFor(identity: string): Buffer {
  return createHash('sha256').update(identity, 'utf8').digest().subarray(0, SYNC_MARKER_BYTES);
}

function validateFormat(format: DataFileFormat): void {
  if (!Object.hasOwn(FORMAT_CODECS, format)) {
    throw dataFileError('CONFIG_INVALID', `unknown data file format ${JSON.stringify(format)}; choose one of ${Object.keys(FORMAT_CODECS).join(', ')}`, { format });
  }
}

function isReserved(key: string): boolean {
  return RESERVED_METADATA_PREFIXES.some((prefix) => key.startsWith(prefix));
}

function checkedMetadata(metadata: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  for (const [key, value] of Object.entries(metadata)) {
    if (isReserved(key)) {
      throw dataFileError('CONFIG_INVALID', `data file metadata key ${JSON.stringify(key)} is reserved (keys starting ${RESERVED_METADATA_PREFIXES.join(' or ')} belong to the formats)`, { key });
    }
    if (typeof value !== 'string') throw dataFileError('CONFIG_INVALID', `data file metadata ${JSON.stringify(key)} must be a string, not ${typeof value}`, { key });
  }
  return metadata;
}

/** Refuses a record the schema does not accept, naming the first bad field (avsc would write garbage). */
function checkRecord(schema: Type, record: unknown, index: number): void {
  if (schema.isValid(record)) return;
  let problem: string | undefined;
  schema.isValid(record, {
    errorHook: (path: string[], value: unknown, type: Type) => {
      problem ??= `field ${path.length === 0 ? '(the record itself)' : path.join('.')} holds ${shown(value)}, not ${JSON.stringify(type.schema())}`;
    },
  });
  throw dataFileError('DATA_FILE_RECORD_INVALID', `record ${index} is not valid for the data file's schema: ${problem ?? 'it does not match'}`, { record: index });
}

function shown(value: unknown): string {
  if (Buffer.isBuffer(value)) return `${value.length} bytes`;
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}
