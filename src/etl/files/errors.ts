/**
 * The failures of writing and reading data files. CONFIG_INVALID: a format, codec or metadata key
 * the loader was configured with cannot be written; DATA_FILE_SCHEMA_UNSUPPORTED: the topic's
 * schema has no form in the chosen format (the message names the field); DATA_FILE_RECORD_INVALID:
 * a record is not valid for the schema, or holds a value the format's writer cannot store;
 * DATA_FILE_CORRUPT: bytes that are not a well-formed file of the format. None of these is
 * retriable: the same call fails the same way until the configuration, schema or input changes.
 * DATA_FILE_ENCODER_FAILED: the Parquet encoder thread died (parquet-encoder.ts); retriable.
 */
import { TributaryError } from '../../common/errors.js';

export type DataFileErrorCode = 'CONFIG_INVALID' | 'DATA_FILE_SCHEMA_UNSUPPORTED' | 'DATA_FILE_RECORD_INVALID' | 'DATA_FILE_CORRUPT' | 'DATA_FILE_ENCODER_FAILED';

export function dataFileError(code: DataFileErrorCode, message: string, details: Readonly<Record<string, unknown>> = {}, cause?: unknown): TributaryError {
  return new TributaryError({ code, message, details, ...(cause === undefined ? {} : { cause }) });
}

/** The message of anything thrown, bare strings included. */
export function describeThrown(thrown: unknown): string {
  return thrown instanceof Error ? thrown.message : String(thrown);
}
