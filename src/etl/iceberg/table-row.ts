/**
 * A row of a loader-written Iceberg table: the record as the load writes it (decoded, or
 * transformed), then two columns of the loader's own, as Redpanda's and Confluent's topic tables
 * carry theirs:
 *
 *   _event_time  timestamptz, required   the event time the loader put the record in its hour by
 *                                        (timeField, else the Kafka timestamp): the source of the
 *                                        table's hour partition, so engines prune by it
 *   _kafka       struct, required        where the record came from: topic, partition, offset and
 *                                        the Kafka timestamp (timestamptz), so each row names its
 *                                        offset and exactly-once can be checked by any engine
 *
 * The Avro type of the rows (what the Parquet writer takes) is the record's type with these two
 * fields appended; field ids follow from it (files/parquet-schema.ts, table-schema.ts). Both times
 * are timestamp-millis in Avro, as the loader's event times are (micros would pass 2^53, the
 * exact-long limit, for event times after 2255, which the loader accepts up to 9999); the Parquet
 * files of a table hold them, like every millisecond time, as MICROS columns (Iceberg's unit).
 */
import type { Type } from 'avsc';
import { etlError } from '../errors.js';
import { parseDataFileSchema } from '../files/data-files.js';
import { schemaJsonOf } from '../files/schema-types.js';

export const EVENT_TIME_COLUMN = '_event_time';
export const KAFKA_COLUMN = '_kafka';

const KAFKA_RECORD = {
  type: 'record',
  name: 'KafkaPosition',
  namespace: 'io.tributary.iceberg',
  fields: [
    { name: 'topic', type: 'string' },
    { name: 'partition', type: 'int' },
    { name: 'offset', type: 'long' },
    { name: 'timestamp', type: { type: 'long', logicalType: 'timestamp-millis' } },
  ],
};

const rowTypes = new WeakMap<Type, Type>();

/** The Avro type of the table's rows for records of `recordType`; refuses a record that has the loader's column names. */
export function tableRowType(recordType: Type): Type {
  const known = rowTypes.get(recordType);
  if (known !== undefined) return known;
  const schema = schemaJsonOf(recordType) as { type: string; fields?: { name: string }[] };
  if (schema.type !== 'record' || schema.fields === undefined) {
    throw etlError('ETL_SCHEMA_PROBLEM', `an Iceberg table holds records, and the load writes ${JSON.stringify(schema.type)} values`, { details: { type: schema.type } });
  }
  for (const name of [EVENT_TIME_COLUMN, KAFKA_COLUMN]) {
    if (schema.fields.some((field) => field.name === name)) {
      throw etlError(
        'ETL_SCHEMA_PROBLEM',
        `the records have a field ${name}, the name of a column the loader adds to Iceberg tables; rename the field, or drop it with the load's transform`,
        { details: { field: name } },
      );
    }
  }
  const rowSchema = {
    ...schema,
    fields: [...schema.fields, { name: EVENT_TIME_COLUMN, type: { type: 'long', logicalType: 'timestamp-millis' } }, { name: KAFKA_COLUMN, type: KAFKA_RECORD }],
  };
  const rowType = parseDataFileSchema(rowSchema);
  rowTypes.set(recordType, rowType);
  return rowType;
}

export interface RowSource {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  /** The Kafka record timestamp (ms). */
  readonly timestamp: number;
  /** The event time the record was bucketed by (ms). */
  readonly eventTimeMs: number;
}

/** The row of a record (a value of the record type) read from `source`. */
export function tableRow(record: unknown, source: RowSource): Record<string, unknown> {
  return {
    ...(record as Record<string, unknown>),
    [EVENT_TIME_COLUMN]: source.eventTimeMs,
    [KAFKA_COLUMN]: { topic: source.topic, partition: source.partition, offset: source.offset, timestamp: source.timestamp },
  };
}
