/**
 * Maps an Avro record schema onto a Parquet schema in parquetjs-lite's notation, with the
 * conversions of values both ways. The layout is the one parquet-avro and the Parquet format's
 * LogicalTypes.md describe, so Java readers see the same structure:
 *
 *   boolean, int, long, float, double   BOOLEAN, INT32, INT64, FLOAT, DOUBLE
 *   string, enum, uuid                  BYTE_ARRAY (UTF8)
 *   bytes                               BYTE_ARRAY
 *   fixed(n)                            FIXED_LEN_BYTE_ARRAY(n)
 *   timestamp-millis, date, time-millis INT64 TIMESTAMP_MILLIS, INT32 DATE, INT32 TIME_MILLIS
 *   record                              group of its fields
 *   ["null", T] or [T, "null"]          T, optional (otherwise required)
 *   array<T>                            group (LIST) { repeated group list { T element } }
 *   map<T>                              group (MAP) { repeated group key_value { required binary key (UTF8); T value } }
 *
 * Anything else (other unions, null alone, recursive or empty records, other logical types) has no
 * Parquet form here: DATA_FILE_SCHEMA_UNSUPPORTED naming the field. Reading expects raw primitives
 * (converted types removed; see parquet-file.ts): INT64 as BigInt, BYTE_ARRAY as Buffer.
 */
import type { Type, types } from 'avsc';
import { dataFileError } from './errors.js';

/** A field of a parquetjs-lite schema definition. */
export interface ParquetFieldDefinition {
  type?: string;
  typeLength?: number;
  optional?: boolean;
  repeated?: boolean;
  fields?: Record<string, ParquetFieldDefinition>;
  compression?: string;
  statistics?: boolean;
}

export type ParquetCompression = 'UNCOMPRESSED' | 'SNAPPY' | 'GZIP';

export interface ParquetRecordPlan {
  readonly definition: Record<string, ParquetFieldDefinition>;
  /** An Avro record (valid for the schema) as a parquetjs-lite row. */
  toRow(record: unknown): Record<string, unknown>;
  /** A parquetjs-lite row of raw primitives as the Avro record. */
  fromRow(row: unknown): Record<string, unknown>;
}

interface ValuePlan {
  readonly definition: ParquetFieldDefinition;
  /** A non-null Avro value as parquetjs-lite takes it. */
  readonly write: (value: unknown, path: string) => unknown;
  /** What parquetjs-lite read (never null) as the Avro value. */
  readonly read: (value: unknown, path: string) => unknown;
}

const identity = (value: unknown): unknown => value;
const PARQUET_PRIMITIVES: Readonly<Record<string, string>> = { boolean: 'BOOLEAN', int: 'INT32', long: 'INT64', float: 'FLOAT', double: 'DOUBLE', bytes: 'BYTE_ARRAY' };
/** Logical types with a Parquet form here, and the Avro type each must annotate. */
const PARQUET_LOGICAL: Readonly<Record<string, { underlying: string; parquet: string }>> = {
  'timestamp-millis': { underlying: 'long', parquet: 'TIMESTAMP_MILLIS' },
  date: { underlying: 'int', parquet: 'DATE' },
  'time-millis': { underlying: 'int', parquet: 'TIME_MILLIS' },
  uuid: { underlying: 'string', parquet: 'UTF8' },
};

/**
 * Plans the Parquet form of `type`, which must be a record. Every leaf column gets `compression`
 * and no statistics: parquetjs-lite orders min/max with JavaScript comparisons (UTF-16 strings,
 * Buffers as text), which disagree with Parquet's unsigned byte order, and a reader that prunes
 * row groups by wrong statistics silently drops rows.
 */
export function planParquetRecord(type: Type, compression: ParquetCompression): ParquetRecordPlan {
  if (type.typeName !== 'record') throw unsupported('(top level)', `is ${describe(type)}; a Parquet file holds records`);
  const plan = planRecord(type as types.RecordType, '', { compression, enclosing: new Set() });
  const definition = plan.definition.fields ?? {};
  return {
    definition,
    toRow: (record) => plan.write(record, '') as Record<string, unknown>,
    fromRow: (row) => plan.read(row, '') as Record<string, unknown>,
  };
}

interface PlanContext {
  readonly compression: ParquetCompression;
  /** Records being planned around this point: meeting one again means recursion. */
  readonly enclosing: ReadonlySet<string>;
}

/** The Avro type name, with a custom long implementation (schema-types.ts) named `long`. */
function avroTypeName(type: Type): string {
  return type.typeName === 'abstract:long' ? 'long' : type.typeName;
}

function planValue(type: Type, path: string, context: PlanContext): ValuePlan {
  const name = avroTypeName(type);
  const leaf = (parquetType: string, write: ValuePlan['write'], read: ValuePlan['read'], extra: ParquetFieldDefinition = {}): ValuePlan => ({
    definition: { type: parquetType, compression: context.compression, statistics: false, ...extra },
    write,
    read,
  });
  const parquetPrimitive = PARQUET_PRIMITIVES[name];
  switch (name) {
    case 'boolean':
    case 'int':
      return leaf(parquetPrimitive ?? '', identity, identity);
    case 'long':
      return leaf('INT64', identity, readLong);
    case 'float':
    case 'double':
      return leaf(parquetPrimitive ?? '', writeFloating, identity);
    case 'bytes':
      return leaf('BYTE_ARRAY', identity, copyBuffer);
    case 'string':
      return leaf('UTF8', identity, readUtf8);
    case 'fixed':
      return leaf('FIXED_LEN_BYTE_ARRAY', identity, copyBuffer, { typeLength: (type as types.FixedType).size });
    case 'enum': {
      const symbols = new Set((type as types.EnumType).symbols);
      return leaf('UTF8', identity, (value, at) => {
        const symbol = readUtf8(value);
        if (!symbols.has(symbol)) throw dataFileError('DATA_FILE_CORRUPT', `Parquet file: field ${at} holds ${JSON.stringify(symbol)}, not a symbol of its enum`, { field: at });
        return symbol;
      });
    }
    case 'record':
      return planRecord(type as types.RecordType, path, context);
    case 'array':
      return planArray(type as types.ArrayType, path, context);
    case 'map':
      return planMap(type as types.MapType, path, context);
    case 'union:unwrapped':
    case 'union:wrapped':
      throw unsupported(path, `is the union ${describe(type)}; Parquet holds only ["null", T] unions, as an optional T, and nothing nested in another union`);
    default:
      if (name.startsWith('logical:')) return planLogical(type as types.LogicalType, path, context);
      throw unsupported(path, `is ${describe(type)}, which has no Parquet column type`);
  }
}

function planLogical(type: types.LogicalType, path: string, context: PlanContext): ValuePlan {
  const logicalName = type.typeName.slice('logical:'.length);
  const underlying = type.underlyingType;
  const mapping = PARQUET_LOGICAL[logicalName];
  if (mapping === undefined) {
    // The specification: a logical type on a type it cannot annotate is ignored.
    if (!annotates(logicalName, avroTypeName(underlying))) return planValue(underlying, path, context);
    throw unsupported(path, `has the logical type ${logicalName}, which parquetjs-lite cannot annotate (supported: ${Object.keys(PARQUET_LOGICAL).join(', ')})`);
  }
  if (mapping.underlying !== avroTypeName(underlying)) return planValue(underlying, path, context);
  const plain = planValue(underlying, path, context);
  // parquetjs-lite refuses dates and timestamps before 1970 with a bare string; say which field.
  const write =
    mapping.parquet === 'TIMESTAMP_MILLIS' || mapping.parquet === 'DATE'
      ? (value: unknown, at: string): unknown => {
          if (typeof value === 'number' && value < 0) throw valueRefused(at, `${logicalName} ${value} is before 1970, which parquetjs-lite cannot write`);
          return value;
        }
      : plain.write;
  return { definition: { ...plain.definition, type: mapping.parquet }, write, read: plain.read };
}

/** Which Avro types each logical type of the specification annotates. */
function annotates(logicalName: string, underlying: string): boolean {
  const fixedOrBytes = underlying === 'bytes' || underlying === 'fixed';
  switch (logicalName) {
    case 'decimal':
      return fixedOrBytes;
    case 'duration':
      return underlying === 'fixed';
    case 'time-micros':
    case 'timestamp-micros':
    case 'timestamp-nanos':
    case 'local-timestamp-millis':
    case 'local-timestamp-micros':
    case 'local-timestamp-nanos':
      return underlying === 'long';
    default:
      return true;
  }
}

/** A field's plan, with `["null", T]` made an optional T. */
function planSlot(type: Type, path: string, context: PlanContext): ValuePlan {
  if (type.typeName !== 'union:unwrapped' && type.typeName !== 'union:wrapped') {
    if (type.typeName === 'null') throw unsupported(path, 'is null alone, which has no Parquet column');
    return planValue(type, path, context);
  }
  const branches = (type as types.UnwrappedUnionType).types;
  const nonNull = branches.filter((branch) => branch.typeName !== 'null');
  const present = nonNull[0];
  if (branches.length !== 2 || nonNull.length !== 1 || present === undefined) {
    throw unsupported(path, `is the union ${describe(type)}; Parquet holds only ["null", T] unions, as an optional T`);
  }
  const inner = planValue(present, path, context);
  const wrapped = type.typeName === 'union:wrapped';
  return {
    definition: { ...inner.definition, optional: true },
    // avsc: an unwrapped union's value is the branch's value; a wrapped one's is {branchName: value}.
    write: (value, at) => (value === null || value === undefined ? undefined : inner.write(wrapped ? Object.values(value)[0] : value, at)),
    read: (value, at) => (value === null || value === undefined ? null : wrapped ? { [present.branchName ?? '']: inner.read(value, at) } : inner.read(value, at)),
  };
}

function planRecord(type: types.RecordType, path: string, context: PlanContext): ValuePlan {
  const name = type.name ?? '(anonymous record)';
  if (context.enclosing.has(name)) throw unsupported(path, `refers back to its enclosing record ${name}; Parquet schemas cannot be recursive`);
  if (type.fields.length === 0) throw unsupported(path || '(top level)', `is the record ${name} without fields; Parquet has no empty groups`);
  const inner: PlanContext = { ...context, enclosing: new Set(context.enclosing).add(name) };
  const fields = type.fields.map((field) => {
    const fieldPath = path === '' ? field.name : `${path}.${field.name}`;
    return { name: field.name, path: fieldPath, plan: planSlot(field.type, fieldPath, inner) };
  });
  return {
    definition: { fields: Object.fromEntries(fields.map((field) => [field.name, field.plan.definition])) },
    write: (value) => {
      const record = value as Record<string, unknown>;
      const row: Record<string, unknown> = {};
      for (const field of fields) {
        const fieldValue = record[field.name];
        row[field.name] = fieldValue === null || fieldValue === undefined ? fieldValue : field.plan.write(fieldValue, field.path);
      }
      return row;
    },
    read: (value) => {
      const row = value as Record<string, unknown>;
      const record: Record<string, unknown> = {};
      for (const field of fields) {
        const fieldValue = row[field.name];
        if ((fieldValue === undefined || fieldValue === null) && field.plan.definition.optional !== true && field.plan.definition.type !== 'LIST' && field.plan.definition.type !== 'MAP') {
          throw dataFileError('DATA_FILE_CORRUPT', `Parquet file: required field ${field.path} is missing`, { field: field.path });
        }
        record[field.name] = field.plan.read(fieldValue ?? null, field.path);
      }
      return record;
    },
  };
}

function planArray(type: types.ArrayType, path: string, context: PlanContext): ValuePlan {
  const element = planSlot(type.itemsType, `${path}[]`, context);
  return {
    definition: { type: 'LIST', fields: { list: { repeated: true, fields: { element: element.definition } } } },
    write: (value, at) => ({ list: (value as unknown[]).map((item) => ({ element: item === null ? null : element.write(item, `${at}[]`) })) }),
    // parquetjs-lite leaves `list` out for an empty list; an absent optional element is absent.
    read: (value, at) => ((value as { list?: { element?: unknown }[] } | null)?.list ?? []).map((entry) => element.read(entry.element ?? null, `${at}[]`)),
  };
}

function planMap(type: types.MapType, path: string, context: PlanContext): ValuePlan {
  const valuePlan = planSlot(type.valuesType as Type, `${path}{}`, context);
  const keyDefinition: ParquetFieldDefinition = { type: 'UTF8', compression: context.compression, statistics: false };
  return {
    definition: { type: 'MAP', fields: { key_value: { repeated: true, fields: { key: keyDefinition, value: valuePlan.definition } } } },
    write: (value, at) => ({
      key_value: Object.entries(value as Record<string, unknown>).map(([key, item]) => ({ key, value: item === null ? null : valuePlan.write(item, `${at}{}`) })),
    }),
    read: (value, at) => {
      const map: Record<string, unknown> = {};
      for (const entry of (value as { key_value?: { key?: unknown; value?: unknown }[] } | null)?.key_value ?? []) {
        map[readUtf8(entry.key)] = valuePlan.read(entry.value ?? null, `${at}{}`);
      }
      return map;
    },
  };
}

function writeFloating(value: unknown, path: string): unknown {
  if (typeof value === 'number' && Number.isNaN(value)) throw valueRefused(path, 'NaN, which parquetjs-lite cannot write');
  return value;
}

function readLong(value: unknown, path: string): unknown {
  const number = Number(value);
  if (!Number.isSafeInteger(number)) throw dataFileError('DATA_FILE_CORRUPT', `Parquet file: long field ${path} holds ${String(value)}, beyond ±2^53 where JavaScript numbers are exact`, { field: path });
  return number;
}

function readUtf8(value: unknown): string {
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}

function copyBuffer(value: unknown): unknown {
  return Buffer.from(value as Buffer);
}

function describe(type: Type): string {
  return JSON.stringify(type.schema());
}

function unsupported(path: string, what: string): Error {
  return dataFileError('DATA_FILE_SCHEMA_UNSUPPORTED', `Parquet: field ${path} ${what}`, { field: path });
}

function valueRefused(path: string, what: string): Error {
  return dataFileError('DATA_FILE_RECORD_INVALID', `Parquet: field ${path} holds ${what}`, { field: path });
}
