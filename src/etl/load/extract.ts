/**
 * The decode loop of a task: read a partition's range [start, end), decode each record (schema
 * id + Avro) into the topic's reader schema, and take its event hour (UTC); readRange hands each
 * record on as it comes (a load streams them into its open files, slice-writer.ts), extractRange
 * keeps them bucketed by hour in memory (replays). Records that cannot be
 * loaded as they are go to the quarantine list with the reason. Only records below `end` are
 * taken, so the result depends on the range alone, not on when the task ran. The load's
 * transformation (transform.ts), if any, maps each record after its event time is taken.
 */
import type { Type } from 'avsc';
import { TributaryError } from '../../common/errors.js';
import type { AvroDeserializer } from '../../registry/serde/deserializer.js';
import { schemaIdOf } from '../../registry/serde/framing.js';
import { etlError } from '../errors.js';
import { eventTimeOf } from '../records/event-time.js';
import { hourOf } from '../layout.js';
import type { ReaderSchema } from './plan.js';
import { isRecordFailure, type QuarantinedRecord } from './quarantine.js';
import { HIGH_WATERMARK_WAIT_MS, highWatermarkBackoff, type LoadSource, type SourceRecord } from './source.js';
import { compileTransform, type TransformDefinition } from '../records/transform.js';

export interface HourBucket {
  readonly hour: number;
  readonly values: unknown[];
  /** The Kafka offset of each value, in the same order (ascending). */
  readonly offsets: number[];
}

export interface ExtractedRange {
  readonly topic: string;
  readonly partition: number;
  readonly start: number;
  readonly end: number;
  /** Sorted by hour. */
  readonly hours: readonly HourBucket[];
  readonly quarantined: readonly QuarantinedRecord[];
  /** The largest event time of the records bucketed (undefined when none). */
  readonly maxEventTime?: number;
  /** The Type the values are valid for: the transformation's output, else the reader's file type. */
  readonly outputType?: Type;
}

export interface ExtractInputs {
  readonly topic: string;
  readonly partition: number;
  readonly start: number;
  readonly end: number;
  readonly reader: ReaderSchema;
  readonly timeField: string | undefined;
  readonly source: LoadSource;
  readonly deserializer: AvroDeserializer;
  /** First fetch size; doubled when a single batch does not fit. Default 1 MiB. */
  readonly maxBytes?: number;
  /** The load's transformation; undefined writes records as decoded. */
  readonly transform?: TransformDefinition | undefined;
  /** Told after each fetch how many records of the range it brought and their bytes (progress bars). */
  readonly onFetched?: ((records: number, bytes: number) => void) | undefined;
  /** How long the partition's high watermark may stay below the range before the task fails; default HIGH_WATERMARK_WAIT_MS. */
  readonly highWatermarkWaitMs?: number;
}

const MAX_FETCH_BYTES = 256 * 1024 * 1024;

/** Where readRange hands each record, in offset order. */
export interface RangeVisitor {
  /**
   * A record that loads, with its event hour, its event time (ms) and its Kafka timestamp; a
   * Promise makes the reader wait (back-pressure).
   */
  record(hour: number, value: unknown, offset: number, eventTimeMs: number, timestamp: number): void | Promise<void>;
  quarantined(record: QuarantinedRecord): void;
  /** After each fetched batch's records were handed over. */
  afterBatch?(): Promise<void>;
}

export interface RangeSummary {
  /** The largest event time of the records bucketed (undefined when none). */
  readonly maxEventTime?: number;
  /** The Type the values are valid for: the transformation's output, else the reader's file type. */
  readonly outputType?: Type;
}

/** Every record of the range, decoded and transformed, into the range's hours (a whole range in memory: replays). */
export async function extractRange(inputs: ExtractInputs): Promise<ExtractedRange> {
  const { topic, partition, start, end } = inputs;
  const buckets = new Map<number, HourBucket>();
  const quarantined: QuarantinedRecord[] = [];
  let last: HourBucket | undefined;
  const summary = await readRange(inputs, {
    record(hour, value, offset) {
      // Records mostly follow the one before into its hour: skip the map then.
      let bucket = last !== undefined && last.hour === hour ? last : buckets.get(hour);
      if (bucket === undefined) buckets.set(hour, (bucket = { hour, values: [], offsets: [] }));
      last = bucket;
      bucket.values.push(value);
      bucket.offsets.push(offset);
    },
    quarantined(record) {
      quarantined.push(record);
    },
  });
  const hours = [...buckets.values()].sort((a, b) => a.hour - b.hour);
  return { topic, partition, start, end, hours, quarantined, ...summary };
}

/** Reads the range [start, end) and hands each record to `visitor` as it is decoded. */
export async function readRange(inputs: ExtractInputs, visitor: RangeVisitor): Promise<RangeSummary> {
  const { topic, partition, end, source } = inputs;
  const transform = inputs.transform === undefined ? undefined : compileTransform(inputs.transform, inputs.reader, topic);
  let maxBytes = inputs.maxBytes ?? 1024 * 1024;
  let offset = inputs.start;
  let maxEventTime: number | undefined;
  const highWatermarkWaitMs = inputs.highWatermarkWaitMs ?? HIGH_WATERMARK_WAIT_MS;
  /** Since when, and how many looks, the high watermark has been at or below `offset`. */
  let behind: { since: number; looks: number } | undefined;
  while (offset < end) {
    const batch = await source.fetch(topic, partition, offset, maxBytes);
    const records = batch.records.filter((record) => record.offset >= offset && record.offset < end);
    if (records.length === 0 && batch.nextOffset <= offset) {
      if (batch.highWatermark <= offset) {
        // The plan's end was a high watermark: everything below it was committed. A leader elected
        // since (a failover) serves its own high watermark, behind until its followers fetch from
        // it; only one that stays behind means the log was truncated.
        behind ??= { since: Date.now(), looks: 0 };
        if (Date.now() - behind.since < highWatermarkWaitMs) {
          await highWatermarkBackoff(behind.looks);
          behind.looks += 1;
          continue;
        }
        throw etlError(
          'ETL_FETCH_INCOMPLETE',
          `partition ${topic}-${partition} ends at ${batch.highWatermark} now, and stayed there for ${Math.round(highWatermarkWaitMs / 1000)} s, but the plan reads up to ${end}: the log was truncated during the run. Nothing was committed; run again`,
          { retriable: true, details: { topic, partition, offset, end, highWatermark: batch.highWatermark } },
        );
      }
      if (maxBytes >= MAX_FETCH_BYTES) {
        throw etlError('ETL_FETCH_INCOMPLETE', `partition ${topic}-${partition}: the batch at offset ${offset} does not fit in ${MAX_FETCH_BYTES} bytes`, {
          details: { topic, partition, offset, maxBytes },
        });
      }
      maxBytes *= 2; // a batch larger than maxBytes comes back cut off, and is dropped
      continue;
    }
    behind = undefined;
    inputs.onFetched?.(records.length, records.reduce((sum, record) => sum + (record.key?.length ?? 0) + (record.value?.length ?? 0), 0));
    await prefetchWriterSchemas(inputs.deserializer, records);
    const reader = inputs.reader.schema;
    const failed = (record: SourceRecord, code: string, reason: string): void => {
      visitor.quarantined({ topic, partition, offset: record.offset, timestamp: record.timestamp, code, reason, key: record.key, payload: record.value });
    };
    for (const record of records) {
      if (record.value === null) {
        failed(record, 'ETL_NULL_VALUE', 'the record has no value (a tombstone); there is nothing to decode');
        continue;
      }
      let value: unknown;
      try {
        value = decodeCached(inputs.deserializer, record.value, reader);
        if (value === NOT_CACHED) value = await inputs.deserializer.decode(record.value, reader);
      } catch (error) {
        if (!isRecordFailure(error)) throw error;
        failed(record, error.code, error.message);
        continue;
      }
      const time = eventTimeOf(value, record.timestamp, inputs.timeField);
      if (!time.ok) {
        failed(record, 'ETL_NO_EVENT_TIME', time.reason);
        continue;
      }
      if (maxEventTime === undefined || time.ms > maxEventTime) maxEventTime = time.ms;
      const handed = visitor.record(hourOf(time.ms), transform === undefined ? value : transform.apply(value), record.offset, time.ms, record.timestamp);
      if (handed !== undefined) await handed;
    }
    await visitor.afterBatch?.();
    offset = Math.max(batch.nextOffset, (records.at(-1)?.offset ?? offset - 1) + 1);
  }
  return { ...(maxEventTime === undefined ? {} : { maxEventTime }), ...(transform === undefined ? {} : { outputType: transform.outputType }) };
}

/**
 * Fetches the writer schema of every id the batch names, so that its records decode without a
 * promise each (decodeSync). A failed lookup is left for the record's own `decode` to meet again,
 * which then quarantines the record or fails the task exactly as before.
 */
async function prefetchWriterSchemas(deserializer: AvroDeserializer, records: readonly SourceRecord[]): Promise<void> {
  const ids = new Set<number>();
  let last = -1;
  for (const record of records) {
    if (record.value === null) continue;
    let id: number;
    try {
      id = schemaIdOf(record.value);
    } catch {
      continue; // not framed: its decode says why
    }
    if (id !== last) ids.add((last = id));
  }
  await Promise.all([...ids].map((id) => deserializer.prefetch(id).catch(() => undefined)));
}

const NOT_CACHED = Symbol('not cached');

/** The value decoded without waiting, or NOT_CACHED when its writer schema is not cached yet. */
function decodeCached(deserializer: AvroDeserializer, message: Buffer, reader: ReaderSchema['schema']): unknown {
  try {
    return deserializer.decodeSync(message, reader);
  } catch (error) {
    if (error instanceof TributaryError && error.code === 'SERDE_SCHEMA_NOT_CACHED') return NOT_CACHED;
    throw error;
  }
}

/** Offsets as compact ranges, `100-150,152,160-200`: the file metadata that maps records to offsets. */
export function compactOffsets(offsets: readonly number[]): string {
  const parts: string[] = [];
  let index = 0;
  while (index < offsets.length) {
    const first = offsets[index]!;
    let last = first;
    while (index + 1 < offsets.length && offsets[index + 1] === last + 1) {
      index += 1;
      last += 1;
    }
    parts.push(first === last ? String(first) : `${first}-${last}`);
    index += 1;
  }
  return parts.join(',');
}

/** The inverse of compactOffsets. */
export function expandOffsets(text: string): number[] {
  if (text === '') return [];
  return text.split(',').flatMap((part) => {
    const [first, last] = part.split('-').map(Number);
    if (first === undefined) return [];
    if (last === undefined) return [first];
    return Array.from({ length: last - first + 1 }, (_, index) => first + index);
  });
}
