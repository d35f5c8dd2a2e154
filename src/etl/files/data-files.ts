/**
 * The data files the HDFS loader writes: one file per topic/hour/partition/offset range, holding
 * that range's decoded records as an Avro object container file or a Parquet file. Contents depend
 * only on (records, options, code): nothing random, nothing from the wall clock.
 */
import type { Type } from 'avsc';
import { TributaryError } from '../../common/errors.js';

export type DataFileFormat = 'avro' | 'parquet';
export type DataFileCodec = 'null' | 'deflate' | 'snappy' | 'zstd' | 'gzip';

export const DATA_FILE_EXTENSIONS: Readonly<Record<DataFileFormat, string>> = Object.freeze({ avro: 'avro', parquet: 'parquet' });

export interface DataFileOptions {
  readonly format: DataFileFormat;
  readonly codec: DataFileCodec;
  /** The avsc reader schema every record is valid for. */
  readonly schema: Type;
  /** e.g. `topic+3+100+200`: seeds everything that would otherwise be random (the Avro sync marker). */
  readonly identity: string;
  /** Extra file metadata, e.g. `tributary.offsets`. */
  readonly metadata?: Readonly<Record<string, string>>;
}

export interface DecodedDataFile {
  readonly schemaJson: unknown;
  readonly records: unknown[];
  readonly metadata: Record<string, string>;
}

export function validateCodec(format: DataFileFormat, codec: DataFileCodec): void {
  throw new TributaryError({ code: 'CONFIG_INVALID', message: `data files are not written yet (${format}/${codec})` });
}

export function encodeDataFile(records: readonly unknown[], options: DataFileOptions): Promise<Buffer> {
  validateCodec(options.format, options.codec);
  return Promise.reject(new Error(`not implemented (${records.length} records)`));
}

export function decodeDataFile(bytes: Buffer, format: DataFileFormat): Promise<DecodedDataFile> {
  return Promise.reject(new Error(`not implemented (${bytes.length} bytes of ${format})`));
}
