/**
 * Records that cannot be loaded as they are, set aside with the reason instead of being dropped
 * (Camus and Gobblin skip them and advance the offset). A quarantine file is committed with the
 * run that read the records and counted in its manifest.
 *
 * Format: UTF-8 JSON lines, one record a line, in offset order:
 *   {"topic","partition","offset","timestamp","code","reason","key":<base64>|null,"payload":<base64>|null}
 * `code` is the failure's code (e.g. SERDE_DECODE_FAILED, ETL_NO_EVENT_TIME), `reason` its message;
 * key and payload are the record's bytes exactly as Kafka holds them.
 */
import { TributaryError } from '../../common/errors.js';

export interface QuarantinedRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp: number;
  readonly code: string;
  readonly reason: string;
  readonly key: Buffer | null;
  readonly payload: Buffer | null;
}

/**
 * Failures that belong to the record itself: the same bytes will always fail the same way. Any
 * other failure (registry unreachable, a timeout) fails the task instead, and the run is retried.
 */
const RECORD_FAILURES: ReadonlySet<string> = new Set([
  'SERDE_NOT_FRAMED',
  'SERDE_FRAME_TOO_SHORT',
  'SERDE_BAD_SCHEMA_ID',
  'SERDE_DECODE_FAILED',
  'SERDE_NOT_RESOLVABLE',
  'SERDE_UNSUPPORTED_SCHEMA_TYPE',
  'SERDE_BAD_WRITER_SCHEMA',
  'REGISTRY_SCHEMA_NOT_FOUND',
]);

export function isRecordFailure(error: unknown): error is TributaryError {
  return error instanceof TributaryError && RECORD_FAILURES.has(error.code) && !error.retriable;
}

export function encodeQuarantine(records: readonly QuarantinedRecord[]): Buffer {
  const lines = records.map((record) =>
    JSON.stringify({
      topic: record.topic,
      partition: record.partition,
      offset: record.offset,
      timestamp: record.timestamp,
      code: record.code,
      reason: record.reason,
      key: record.key === null ? null : record.key.toString('base64'),
      payload: record.payload === null ? null : record.payload.toString('base64'),
    }),
  );
  return Buffer.from(lines.map((line) => `${line}\n`).join(''), 'utf8');
}

export function decodeQuarantine(bytes: Buffer): QuarantinedRecord[] {
  return bytes
    .toString('utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const entry = JSON.parse(line) as Omit<QuarantinedRecord, 'key' | 'payload'> & { key: string | null; payload: string | null };
      return { ...entry, key: entry.key === null ? null : Buffer.from(entry.key, 'base64'), payload: entry.payload === null ? null : Buffer.from(entry.payload, 'base64') };
    });
}
