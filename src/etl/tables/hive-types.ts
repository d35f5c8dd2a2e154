/**
 * Hive column types for the records of the loader's data files, from their Avro schema (as
 * parseDataFileSchema parses it: logical types kept). The same mapping serves both formats, as
 * Hive's AvroSerDe and the Parquet layout of files/parquet-schema.ts agree on it:
 *
 *   boolean, int, long, float, double   BOOLEAN, INT, BIGINT, FLOAT, DOUBLE
 *   string, enum, uuid                  STRING
 *   bytes, fixed                        BINARY
 *   timestamp-millis (long)             TIMESTAMP  (Parquet: INT64 TIMESTAMP_MILLIS, UTC)
 *   date (int)                          DATE       (Parquet: INT32 DATE)
 *   decimal(p, s) (bytes, fixed)        DECIMAL(p,s) (Avro only: parquet-schema.ts cannot write it)
 *   other logical types                 the underlying type (time-millis INT; Hive has no TIME)
 *   record                              STRUCT<`field`: T, …>
 *   array<T>, map<T>                    ARRAY<T>, MAP<STRING, T>
 *   ["null", T] or [T, "null"]          T (every Hive column is nullable)
 *   other unions                        UNIONTYPE<…> (Avro only; Parquet files cannot hold them)
 *
 * A type Hive cannot express (null alone, a recursive record, a decimal wider than 38 digits) is
 * ETL_SCHEMA_PROBLEM naming the field.
 */
import type { Type, types } from 'avsc';
import { etlError } from '../errors.js';

export interface HiveColumn {
  readonly name: string;
  /** Hive's type text, e.g. `STRUCT<\`time\`: BIGINT>`. */
  readonly type: string;
}

/** Hive's widest DECIMAL. */
const HIVE_MAX_PRECISION = 38;

const PRIMITIVES: Readonly<Record<string, string>> = {
  boolean: 'BOOLEAN',
  int: 'INT',
  long: 'BIGINT',
  'abstract:long': 'BIGINT',
  float: 'FLOAT',
  double: 'DOUBLE',
  string: 'STRING',
  enum: 'STRING',
  bytes: 'BINARY',
  fixed: 'BINARY',
};

/** An identifier in backticks (a backtick inside doubled, as Hive and Spark read it). */
export function quoteIdentifier(name: string): string {
  return `\`${name.replaceAll('`', '``')}\``;
}

/** The columns of a record type: one per field, in order. */
export function hiveColumns(type: Type, what: string): HiveColumn[] {
  if (type.typeName !== 'record') throw problem(what, '(top level)', `is ${JSON.stringify(type.schema())}; a table holds records`);
  const record = type as types.RecordType;
  const enclosing = new Set([record.name ?? '']);
  return record.fields.map((field) => ({ name: field.name, type: hiveType(field.type, field.name, what, enclosing) }));
}

function hiveType(type: Type, path: string, what: string, enclosing: ReadonlySet<string>): string {
  const name = type.typeName;
  const primitive = PRIMITIVES[name];
  if (primitive !== undefined) return primitive;
  switch (name) {
    case 'record': {
      const record = type as types.RecordType;
      const recordName = record.name ?? '';
      if (enclosing.has(recordName)) throw problem(what, path, `refers back to its enclosing record ${recordName}; Hive types cannot be recursive`);
      const inner = new Set(enclosing).add(recordName);
      if (record.fields.length === 0) throw problem(what, path, `is the record ${recordName} without fields; Hive has no empty STRUCT`);
      return `STRUCT<${record.fields.map((field) => `${quoteIdentifier(field.name)}: ${hiveType(field.type, `${path}.${field.name}`, what, inner)}`).join(', ')}>`;
    }
    case 'array':
      return `ARRAY<${hiveType((type as types.ArrayType).itemsType, `${path}[]`, what, enclosing)}>`;
    case 'map':
      return `MAP<STRING, ${hiveType((type as types.MapType).valuesType as Type, `${path}{}`, what, enclosing)}>`;
    case 'union:unwrapped':
    case 'union:wrapped': {
      const branches = (type as types.UnwrappedUnionType).types.filter((branch) => branch.typeName !== 'null');
      const [only] = branches;
      if (only === undefined) throw problem(what, path, 'is a union of null alone, which has no Hive column type');
      if (branches.length === 1) return hiveType(only, path, what, enclosing);
      return `UNIONTYPE<${branches.map((branch) => hiveType(branch, path, what, enclosing)).join(', ')}>`;
    }
    case 'null':
      throw problem(what, path, 'is null alone, which has no Hive column type');
    default:
      if (name.startsWith('logical:')) return logicalType(type as types.LogicalType, path, what, enclosing);
      throw problem(what, path, `is ${JSON.stringify(type.schema())}, which has no Hive column type`);
  }
}

function logicalType(type: types.LogicalType, path: string, what: string, enclosing: ReadonlySet<string>): string {
  const logical = type.typeName.slice('logical:'.length);
  const underlying = type.underlyingType;
  const base = underlying.typeName === 'abstract:long' ? 'long' : underlying.typeName;
  if (logical === 'timestamp-millis' && base === 'long') return 'TIMESTAMP';
  if (logical === 'date' && base === 'int') return 'DATE';
  if (logical === 'decimal' && (base === 'bytes' || base === 'fixed')) {
    const schema = type.schema({ exportAttrs: true }) as { precision?: number; scale?: number };
    const precision = Number(schema.precision);
    const scale = schema.scale === undefined ? 0 : Number(schema.scale);
    if (!Number.isInteger(precision) || precision < 1 || precision > HIVE_MAX_PRECISION || !Number.isInteger(scale) || scale < 0 || scale > precision) {
      throw problem(what, path, `is decimal(${schema.precision}, ${schema.scale ?? 0}); Hive's DECIMAL takes a precision of 1 to ${HIVE_MAX_PRECISION} and a scale of 0 to the precision`);
    }
    return `DECIMAL(${precision},${scale})`;
  }
  return hiveType(underlying, path, what, enclosing);
}

function problem(what: string, path: string, explanation: string): Error {
  return etlError('ETL_SCHEMA_PROBLEM', `${what}: field ${path} ${explanation}`, { details: { field: path } });
}
