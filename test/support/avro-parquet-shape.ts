/**
 * Walks an Avro schema (an avsc Type from parseDataFileSchema) the way a Parquet file lays it out,
 * for the Parquet readers' compat tests: what kind each type is, which ["null", T] unions are
 * optional slots, the leaf columns with their Parquet paths (`list`/`element` for arrays,
 * `key_value`/`key`/`value` for maps, as LogicalTypes.md names them), and the values each leaf
 * column holds for a record, one per definition/repetition slot (Dremel): an absent parent, a null
 * or an empty list or map is one null slot.
 */
import avro from 'avsc';
import type { Type, types } from 'avsc';

const MAP_KEY: Type = avro.Type.forSchema('string');

/** Every Avro type the data files take, logical types as their own kinds. */
export type AvroKind =
  | 'boolean' | 'int' | 'long' | 'float' | 'double' | 'string' | 'bytes' | 'fixed' | 'enum'
  | 'record' | 'array' | 'map'
  | 'decimal-bytes' | 'decimal-fixed' | 'uuid' | 'date' | 'time-millis' | 'time-micros'
  | 'timestamp-millis' | 'timestamp-micros' | 'local-timestamp-millis' | 'local-timestamp-micros';

const LOGICAL_KINDS: ReadonlySet<string> = new Set(['uuid', 'date', 'time-millis', 'time-micros', 'timestamp-millis', 'timestamp-micros', 'local-timestamp-millis', 'local-timestamp-micros']);

export interface Slot {
  /** The type without its null branch. */
  readonly type: Type;
  readonly optional: boolean;
}

/** ["null", T] and [T, "null"] as an optional T; anything else as it is. */
export function slotOf(type: Type): Slot {
  if (!type.typeName.startsWith('union')) return { type, optional: false };
  const branches = (type as types.UnwrappedUnionType).types;
  const present = branches.filter((branch) => branch.typeName !== 'null');
  const only = present[0];
  if (branches.length !== 2 || present.length !== 1 || only === undefined) throw new Error(`${JSON.stringify(type.schema())} is not ["null", T]`);
  return { type: only, optional: true };
}

export function kindOf(type: Type): AvroKind {
  const name = type.typeName === 'abstract:long' ? 'long' : type.typeName;
  if (!name.startsWith('logical:')) return name as AvroKind;
  const logical = name.slice('logical:'.length);
  const underlying = (type as types.LogicalType).underlyingType.typeName;
  if (logical === 'decimal') return underlying === 'fixed' ? 'decimal-fixed' : 'decimal-bytes';
  if (LOGICAL_KINDS.has(logical)) return logical as AvroKind;
  throw new Error(`no kind for logical type ${logical}`);
}

/** A decimal's precision and scale, a fixed's size, as the schema gives them. */
export function attributesOf(type: Type): { readonly precision: number | undefined; readonly scale: number; readonly size: number | undefined } {
  const schema = type.schema({ exportAttrs: true }) as { precision?: number; scale?: number; size?: number };
  return { precision: schema.precision, scale: schema.scale ?? 0, size: schema.size };
}

export function fieldsOf(type: Type): readonly { readonly name: string; readonly type: Type }[] {
  return (type as types.RecordType).fields;
}

export function itemsOf(type: Type): Type {
  return (type as types.ArrayType).itemsType;
}

export function valuesOf(type: Type): Type {
  return (type as types.MapType).valuesType as Type;
}

export interface LeafColumn {
  /** Parquet path below the root, e.g. ['tags', 'list', 'element']. */
  readonly path: readonly string[];
  /** The leaf's type, its null branch removed. */
  readonly type: Type;
  /** The leaf's slots in one record (null for a null slot), appended to `into`. */
  readonly slots: (record: unknown, into: unknown[]) => void;
}

/** The leaf columns of a record type, in schema order (Parquet's column order). */
export function leafColumns(recordType: Type): LeafColumn[] {
  return fieldsOf(recordType).flatMap((field) => leavesOf(field.type, [field.name]).map((leaf) => fromRecord(leaf, field.name)));
}

function fromRecord(leaf: LeafColumn, name: string): LeafColumn {
  return { ...leaf, slots: (record, into) => leaf.slots(isAbsent(record) ? null : (record as Record<string, unknown>)[name], into) };
}

function leavesOf(slotType: Type, path: readonly string[]): LeafColumn[] {
  const { type } = slotOf(slotType);
  const kind = kindOf(type);
  if (kind === 'record') {
    return fieldsOf(type).flatMap((field) => leavesOf(field.type, [...path, field.name]).map((leaf) => fromRecord(leaf, field.name)));
  }
  if (kind === 'array') {
    return leavesOf(itemsOf(type), [...path, 'list', 'element']).map((leaf) => ({
      ...leaf,
      slots: (value, into) => repeated(isAbsent(value) ? null : (value as unknown[]), (item) => leaf.slots(item, into), into),
    }));
  }
  if (kind === 'map') {
    const key: LeafColumn = {
      path: [...path, 'key_value', 'key'],
      type: MAP_KEY,
      slots: (value, into) => repeated(entries(value), ([name]) => into.push(name), into),
    };
    const values = leavesOf(valuesOf(type), [...path, 'key_value', 'value']).map((leaf) => ({
      ...leaf,
      slots: (value: unknown, into: unknown[]) => repeated(entries(value), ([, item]) => leaf.slots(item, into), into),
    }));
    return [key, ...values];
  }
  return [{ path, type, slots: (value, into) => into.push(isAbsent(value) ? null : value) }];
}

function repeated<T>(list: readonly T[] | null, each: (item: T) => void, into: unknown[]): void {
  if (list === null || list.length === 0) into.push(null);
  else list.forEach(each);
}

function entries(map: unknown): [string, unknown][] | null {
  return isAbsent(map) ? null : Object.entries(map as Record<string, unknown>);
}

function isAbsent(value: unknown): boolean {
  return value === null || value === undefined;
}

/** An Avro decimal's bytes: the unscaled value in big-endian two's complement, minimal (as Java's BigInteger.toByteArray) or sign-extended to `size` (fixed). */
export function decimalBytes(unscaled: bigint, size?: number): Buffer {
  const bytes: number[] = [];
  let rest = unscaled;
  for (;;) {
    const byte = Number(BigInt.asUintN(8, rest));
    bytes.unshift(byte);
    rest >>= 8n;
    const done = size === undefined ? (rest === 0n && (byte & 0x80) === 0) || (rest === -1n && (byte & 0x80) !== 0) : bytes.length === size;
    if (done) break;
  }
  return Buffer.from(bytes);
}

/** The unscaled value an Avro decimal's bytes hold. */
export function decimalValue(bytes: Uint8Array): bigint {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return bytes.length === 0 ? 0n : BigInt.asIntN(bytes.length * 8, value);
}

/** `value` (valid for `slotType`) with `leaf` applied to every non-null leaf value, containers rebuilt. */
export function mapLeaves(slotType: Type, value: unknown, leaf: (kind: AvroKind, value: unknown) => unknown): unknown {
  if (isAbsent(value)) return value;
  const { type } = slotOf(slotType);
  const kind = kindOf(type);
  if (kind === 'record') return Object.fromEntries(fieldsOf(type).map((field) => [field.name, mapLeaves(field.type, (value as Record<string, unknown>)[field.name], leaf)]));
  if (kind === 'array') return (value as unknown[]).map((item) => mapLeaves(itemsOf(type), item, leaf));
  if (kind === 'map') return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, item]) => [key, mapLeaves(valuesOf(type), item, leaf)]));
  return leaf(kind, value);
}
