/**
 * DuckDB (@duckdb/node-api, in memory) as a Parquet reader for the compat tests: queries, DuckDB's
 * column types written out (`STRUCT(a INTEGER, b VARCHAR[])`, without DuckDB's identifier quoting),
 * and DuckDB's values turned back into the Avro values they stand for, guided by the Avro type
 * (a TIMESTAMP WITH TIME ZONE's microseconds back to a timestamp-millis long, a DECIMAL back to
 * the decimal's two's-complement bytes), so a read can be compared with the records written.
 */
import {
  DuckDBBlobValue,
  DuckDBDateValue,
  DuckDBDecimalType,
  DuckDBDecimalValue,
  DuckDBInstance,
  DuckDBListType,
  DuckDBListValue,
  DuckDBMapType,
  DuckDBMapValue,
  DuckDBStructType,
  DuckDBStructValue,
  DuckDBTimestampTZValue,
  DuckDBTimestampValue,
  DuckDBTimeTZValue,
  DuckDBTimeValue,
  DuckDBTypeId,
  DuckDBUUIDValue,
  type DuckDBConnection,
  type DuckDBResultReader,
  type DuckDBType,
  type DuckDBValue,
} from '@duckdb/node-api';
import type { Type } from 'avsc';
import { attributesOf, decimalBytes, fieldsOf, itemsOf, kindOf, slotOf, valuesOf } from './avro-parquet-shape.js';

export interface DuckDB {
  read(sql: string): Promise<DuckDBResultReader>;
  rows(sql: string): Promise<Record<string, DuckDBValue>[]>;
  close(): void;
}

/** An in-memory DuckDB whose session time zone is UTC (it prints TIMESTAMPTZ values in it). */
export async function openDuckDB(): Promise<DuckDB> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection: DuckDBConnection = await instance.connect();
  await connection.run("SET TimeZone = 'UTC'");
  return {
    read: (sql) => connection.runAndReadAll(sql),
    rows: async (sql) => (await connection.runAndReadAll(sql)).getRowObjects(),
    close: () => {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

/** A string as a SQL literal. */
export function sqlText(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

const TYPE_NAMES: Partial<Record<DuckDBTypeId, string>> = {
  [DuckDBTypeId.TIMESTAMP_TZ]: 'TIMESTAMP WITH TIME ZONE',
  [DuckDBTypeId.TIME_TZ]: 'TIME WITH TIME ZONE',
};

/** A DuckDB type as text: `STRUCT(a INTEGER, b MAP(VARCHAR, DECIMAL(9,2)))`, names unquoted. */
export function duckTypeText(type: DuckDBType): string {
  if (type instanceof DuckDBStructType) return `STRUCT(${type.entryNames.map((name, index) => `${name} ${duckTypeText(type.entryTypes[index] as DuckDBType)}`).join(', ')})`;
  if (type instanceof DuckDBListType) return `${duckTypeText(type.valueType)}[]`;
  if (type instanceof DuckDBMapType) return `MAP(${duckTypeText(type.keyType)}, ${duckTypeText(type.valueType)})`;
  if (type instanceof DuckDBDecimalType) return `DECIMAL(${type.width},${type.scale})`;
  return TYPE_NAMES[type.typeId] ?? DuckDBTypeId[type.typeId];
}

/**
 * The Avro value a DuckDB value stands for, for a slot of Avro type `slotType`. Throws, naming
 * `path`, when DuckDB handed over something that cannot be that type's value; DuckDB's column
 * types are checked separately, against the contract.
 */
export function avroFromDuckDB(value: DuckDBValue, slotType: Type, path: string): unknown {
  if (value === null) return null;
  const { type } = slotOf(slotType);
  const refuse = (): never => {
    throw new Error(`DuckDB gave ${String(value)} (${typeof value}${typeof value === 'object' ? ` ${value.constructor.name}` : ''}) for ${path}, of Avro type ${JSON.stringify(type.schema({ exportAttrs: true }))}`);
  };
  // A TIME WITH TIME ZONE at offset 0 still holds the exact time of day (its type is checked apart).
  const micros = (): bigint =>
    value instanceof DuckDBTimestampTZValue || value instanceof DuckDBTimestampValue || value instanceof DuckDBTimeValue || (value instanceof DuckDBTimeTZValue && value.offset === 0) ? value.micros : refuse();
  switch (kindOf(type)) {
    case 'boolean':
      return typeof value === 'boolean' ? value : refuse();
    case 'int':
    case 'float':
    case 'double':
      return typeof value === 'number' ? value : refuse();
    case 'long':
      return typeof value === 'bigint' ? exactNumber(value, path) : refuse();
    case 'string':
    case 'enum':
      return typeof value === 'string' ? value : refuse();
    case 'uuid':
      // RFC 4122's text: lowercase hex in 8-4-4-4-12 groups.
      return value instanceof DuckDBUUIDValue ? value.toString() : typeof value === 'string' ? value : refuse();
    case 'bytes':
    case 'fixed':
      return value instanceof DuckDBBlobValue ? Buffer.from(value.bytes) : refuse();
    case 'decimal-bytes':
      return value instanceof DuckDBDecimalValue ? decimalBytes(value.value) : refuse();
    case 'decimal-fixed':
      return value instanceof DuckDBDecimalValue ? decimalBytes(value.value, attributesOf(type).size) : refuse();
    case 'date':
      return value instanceof DuckDBDateValue ? value.days : refuse();
    case 'time-millis':
    case 'timestamp-millis':
    case 'local-timestamp-millis':
      // Not a whole number of milliseconds comes out fractional, and so unequal.
      return Number(micros()) / 1000;
    case 'time-micros':
    case 'timestamp-micros':
    case 'local-timestamp-micros':
      return exactNumber(micros(), path);
    case 'record':
      if (!(value instanceof DuckDBStructValue)) return refuse();
      return Object.fromEntries(fieldsOf(type).map((field) => [field.name, avroFromDuckDB(value.entries[field.name] ?? null, field.type, `${path}.${field.name}`)]));
    case 'array':
      return value instanceof DuckDBListValue ? value.items.map((item, index) => avroFromDuckDB(item, itemsOf(type), `${path}[${index}]`)) : refuse();
    case 'map':
      if (!(value instanceof DuckDBMapValue)) return refuse();
      return Object.fromEntries(value.entries.map(({ key, value: item }) => [typeof key === 'string' ? key : refuse(), avroFromDuckDB(item, valuesOf(type), `${path}{${String(key)}}`)]));
  }
}

function exactNumber(value: bigint, path: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) throw new Error(`${path}: ${value} is beyond what the records can hold`);
  return Number(value);
}
