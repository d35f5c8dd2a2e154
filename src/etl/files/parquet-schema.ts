/**
 * Maps an Avro record schema onto a Parquet schema (the format's SchemaElement list, depth first)
 * and shreds records into its leaf columns (Dremel: values with repetition and definition levels),
 * and back. The layout is parquet-avro's and the format's LogicalTypes.md, so Java readers, DuckDB
 * and Iceberg see the same structure:
 *
 *   boolean, int, long, float, double   BOOLEAN, INT32, INT64, FLOAT, DOUBLE
 *   string, enum                        BYTE_ARRAY STRING (enum symbols as strings)
 *   uuid (string)                       FIXED_LEN_BYTE_ARRAY(16) UUID
 *   bytes / fixed(n)                    BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY(n)
 *   decimal(p, s) on bytes / fixed(n)   BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY(n) DECIMAL(p, s) (same big-endian two's complement bytes)
 *   date                                INT32 DATE
 *   time-millis / time-micros           INT32 TIME(MILLIS) / INT64 TIME(MICROS), not UTC-adjusted (a time of day)
 *   timestamp-millis / -micros / -nanos INT64 TIMESTAMP(unit, isAdjustedToUTC = true)
 *   local-timestamp-millis / -micros / -nanos   INT64 TIMESTAMP(unit, isAdjustedToUTC = false)
 *   record                              group of its fields
 *   ["null", T] or [T, "null"]          T, OPTIONAL (everything else REQUIRED)
 *   array<T>                            group (LIST) { repeated group list { T element } }      (3-level lists)
 *   map<T>                              group (MAP) { repeated group key_value { required binary key (STRING); T value } }
 *
 * Every element carries a field id, assigned as Iceberg assigns fresh ids to a new table's schema
 * (TypeUtil.assignFreshIds): a record's fields take consecutive ids, then the types inside each
 * field, field by field, in the same way (a list's element and a map's key and value are
 * numbered before what they contain). The ids depend on the schema alone.
 *
 * Anything else (other unions, null alone, recursive or empty records) has no Parquet form:
 * DATA_FILE_SCHEMA_UNSUPPORTED naming the field.
 */
import type { Type, types } from 'avsc';
import type { SchemaElement } from 'hyparquet';
import { dataFileError } from './errors.js';

/** A leaf column being filled: one entry per level pair (null where the value is absent). */
export interface LeafColumn {
  values: unknown[];
  definitionLevels: number[];
  repetitionLevels: number[];
}

export interface LeafPlan {
  /** Elements from the root to the leaf (SchemaElement list order), as hyparquet's writer wants them. */
  readonly schemaPath: readonly SchemaElement[];
  readonly element: SchemaElement;
  /** Dotted path, e.g. `attrs.key_value.value`. */
  readonly name: string;
  readonly maxDefinitionLevel: number;
  readonly maxRepetitionLevel: number;
  /** Whether statistics are written: not for decimals (bytes order is not their numeric order). */
  readonly statistics: boolean;
  /**
   * The element the column writer gets: a decimal's without its annotation, since the Avro value
   * is already the big-endian two's complement bytes Parquet stores (hyparquet-writer would want
   * numbers, and writes a zero as no bytes at all, which Java's readers refuse).
   */
  readonly writeElement: SchemaElement;
}

export interface ParquetRecordPlan {
  /** The Parquet schema, depth first, root first. */
  readonly schema: SchemaElement[];
  readonly leaves: readonly LeafPlan[];
  /** Empty accumulators, one per leaf. */
  newColumns(): LeafColumn[];
  /** Adds one record (valid for the Avro type) to the columns. */
  shred(record: unknown, columns: LeafColumn[]): void;
  /** A row as hyparquet assembles it (raw primitives: see readElementsRaw) as the Avro record. */
  fromRow(row: unknown): Record<string, unknown>;
}

/** One node of the plan: how a value of this Avro type becomes levels in the leaves below it. */
interface Node {
  /** Leaf indexes below this node (the nulls of an absent value go to each). */
  readonly leaves: readonly number[];
  /** Writes a present (non-null) value at the given levels. */
  write(value: unknown, repetition: number, definition: number, columns: LeafColumn[]): void;
  /** What hyparquet assembled for this node (never null) as the Avro value. */
  read(value: unknown, path: string): unknown;
}

interface PlanState {
  readonly elements: SchemaElement[];
  readonly leaves: LeafPlan[];
  /** Records being planned around this point: meeting one again means recursion. */
  readonly enclosing: ReadonlySet<string>;
  readonly microseconds: boolean;
}

export interface ParquetPlanOptions {
  /**
   * Millisecond times and timestamps as MICROS columns (values × 1000), as the Iceberg spec has
   * them (its time and timestamps are microseconds; Iceberg 1.10's vectorized reader refuses
   * TIMESTAMP(MILLIS)). The Avro values stay milliseconds; reading converts back.
   */
  readonly microseconds?: boolean;
}

/**
 * Plans the Parquet form of `type`, which must be a record. `renumbered` renumbers the ids (an
 * Iceberg table's ids for the schema's own numbering); every id must be in it.
 */
export function planParquetRecord(type: Type, renumbered?: ReadonlyMap<number, number>, options: ParquetPlanOptions = {}): ParquetRecordPlan {
  if (type.typeName !== 'record') throw unsupported('(top level)', `is ${describe(type)}; a Parquet file holds records`);
  const record = type as types.RecordType;
  if (record.fields.length === 0) throw unsupported('(top level)', `is the record ${record.name ?? ''} without fields; Parquet has no empty groups`);
  const state: PlanState = { elements: [], leaves: [], enclosing: new Set([record.name ?? '']), microseconds: options.microseconds === true };
  const root: SchemaElement = { name: 'root', num_children: record.fields.length };
  state.elements.push(root);
  const ids = new FieldIds();
  const fieldIds = record.fields.map(() => ids.next());
  const fields = record.fields.map((field, index) => planField(field.name, field.name, field.type, fieldIds[index]!, ids, [root], 0, 0, state));
  const rootNode = recordNode(fields, state);
  if (renumbered !== undefined) renumber(state, renumbered);
  return {
    schema: state.elements,
    leaves: state.leaves,
    newColumns: () => state.leaves.map(() => ({ values: [], definitionLevels: [], repetitionLevels: [] })),
    shred: (value, columns) => rootNode.write(value, 0, 0, columns),
    fromRow: (row) => rootNode.read(row, '') as Record<string, unknown>,
  };
}

/** Gives every element (and each leaf's write element, a copy for decimals) its id from `fieldIds`. */
function renumber(state: PlanState, fieldIds: ReadonlyMap<number, number>): void {
  const elements = new Set<SchemaElement>([...state.elements, ...state.leaves.map((leaf) => leaf.writeElement)]);
  for (const element of elements) {
    if (element.field_id === undefined) continue;
    const id = fieldIds.get(element.field_id);
    if (id === undefined) throw new Error(`no field id given for ${element.name} (id ${element.field_id} of the schema's own numbering)`);
    element.field_id = id;
  }
}

class FieldIds {
  private last = 0;
  next(): number {
    this.last += 1;
    return this.last;
  }
}

interface PlannedField {
  readonly name: string;
  readonly optional: boolean;
  readonly node: Node;
}

/**
 * Plans one named slot (a record field, a list element, a map value) of Avro type `type`:
 * appends its element(s) to the schema and answers how to write it. `definition` and
 * `repetition` are the levels of the enclosing group.
 */
function planField(name: string, path: string, type: Type, fieldId: number, ids: FieldIds, parents: readonly SchemaElement[], definition: number, repetition: number, state: PlanState): PlannedField {
  const { inner, optional } = unwrapOptional(type, path);
  const slotDefinition = optional ? definition + 1 : definition;
  const element: SchemaElement = { name, repetition_type: optional ? 'OPTIONAL' : 'REQUIRED', field_id: fieldId };
  state.elements.push(element);
  const node = planValue(inner, path, element, ids, [...parents, element], slotDefinition, repetition, state);
  return { name, optional, node };
}

function unwrapOptional(type: Type, path: string): { inner: Type; optional: boolean } {
  if (type.typeName !== 'union:unwrapped' && type.typeName !== 'union:wrapped') {
    if (type.typeName === 'null') throw unsupported(path, 'is null alone, which has no Parquet column');
    return { inner: type, optional: false };
  }
  const branches = (type as types.UnwrappedUnionType).types;
  const present = branches.filter((branch) => branch.typeName !== 'null');
  if (branches.length !== 2 || present.length !== 1 || present[0] === undefined) {
    throw unsupported(path, `is the union ${describe(type)}; Parquet holds only ["null", T] unions, as an optional T`);
  }
  if (type.typeName === 'union:wrapped') throw unsupported(path, `is the wrapped union ${describe(type)}; data files unwrap ["null", T] unions`);
  return { inner: present[0], optional: true };
}

/** The Avro type name, with a custom long implementation (schema-types.ts) named `long`. */
function avroTypeName(type: Type): string {
  return type.typeName === 'abstract:long' ? 'long' : type.typeName;
}

/**
 * Fills in `element` for a value of `type` (the slot's element, already in the schema) and plans
 * its writing. `definition` counts the slot itself when it is optional.
 */
function planValue(type: Type, path: string, element: SchemaElement, ids: FieldIds, schemaPath: readonly SchemaElement[], definition: number, repetition: number, state: PlanState): Node {
  const name = avroTypeName(type);
  switch (name) {
    case 'record':
      return planRecord(type as types.RecordType, path, element, ids, schemaPath, definition, repetition, state);
    case 'array':
      return planList(type as types.ArrayType, path, element, ids, schemaPath, definition, repetition, state);
    case 'map':
      return planMap(type as types.MapType, path, element, ids, schemaPath, definition, repetition, state);
    case 'union:unwrapped':
    case 'union:wrapped':
      throw unsupported(path, `is the union ${describe(type)}; Parquet holds only ["null", T] unions, as an optional T, and nothing nested in another union`);
    default: {
      const primitive = primitiveOf(type, path, state.microseconds);
      Object.assign(element, primitive.element);
      return leafNode(path, schemaPath, element, definition, repetition, primitive, state);
    }
  }
}

interface Primitive {
  readonly element: Partial<SchemaElement>;
  /** The Avro value as hyparquet writes it. */
  readonly write: (value: unknown, path: string) => unknown;
  /** The raw primitive read back (BigInt for INT64, Uint8Array for byte arrays) as the Avro value. */
  readonly read: (value: unknown, path: string) => unknown;
  readonly statistics?: boolean;
}

const same = (value: unknown): unknown => value;
const STRING: Partial<SchemaElement> = { type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } };

function primitiveOf(type: Type, path: string, microseconds = false): Primitive {
  const name = avroTypeName(type);
  switch (name) {
    case 'boolean':
      return { element: { type: 'BOOLEAN' }, write: same, read: same };
    case 'int':
      return { element: { type: 'INT32' }, write: same, read: same };
    case 'long':
      return { element: { type: 'INT64' }, write: toBigInt, read: readLong };
    case 'float':
      return { element: { type: 'FLOAT' }, write: same, read: same };
    case 'double':
      return { element: { type: 'DOUBLE' }, write: same, read: same };
    case 'bytes':
      return { element: { type: 'BYTE_ARRAY' }, write: same, read: copyBytes };
    case 'fixed':
      return { element: { type: 'FIXED_LEN_BYTE_ARRAY', type_length: (type as types.FixedType).size }, write: same, read: copyBytes };
    case 'string':
      return { element: STRING, write: same, read: readUtf8 };
    case 'enum': {
      const symbols = new Set((type as types.EnumType).symbols);
      return {
        element: STRING,
        write: same,
        read: (value, at) => {
          const symbol = readUtf8(value);
          if (!symbols.has(symbol)) throw dataFileError('DATA_FILE_CORRUPT', `Parquet file: field ${at} holds ${JSON.stringify(symbol)}, not a symbol of its enum`, { field: at });
          return symbol;
        },
      };
    }
    default:
      if (name.startsWith('logical:')) return logicalOf(type as types.LogicalType, path, microseconds);
      throw unsupported(path, `is ${describe(type)}, which has no Parquet column type`);
  }
}

/** Which Avro types each logical type of the specification annotates (otherwise it is ignored, as the specification says). */
const ANNOTATES: Readonly<Record<string, readonly string[]>> = {
  decimal: ['bytes', 'fixed'],
  uuid: ['string', 'fixed'],
  date: ['int'],
  'time-millis': ['int'],
  'time-micros': ['long'],
  'timestamp-millis': ['long'],
  'timestamp-micros': ['long'],
  'timestamp-nanos': ['long'],
  'local-timestamp-millis': ['long'],
  'local-timestamp-micros': ['long'],
  'local-timestamp-nanos': ['long'],
  duration: ['fixed'],
};

const TIME_UNITS = { millis: 'MILLIS', micros: 'MICROS', nanos: 'NANOS' } as const;

function logicalOf(type: types.LogicalType, path: string, microseconds: boolean): Primitive {
  const logicalName = type.typeName.slice('logical:'.length);
  const underlying = type.underlyingType;
  const underlyingName = avroTypeName(underlying);
  if (!(ANNOTATES[logicalName] ?? []).includes(underlyingName)) return primitiveOf(underlying, path);
  const plain = primitiveOf(underlying, path);
  const schema = type.schema({ exportAttrs: true }) as { precision?: unknown; scale?: unknown; size?: unknown };
  const timestamp = /^(local-)?timestamp-(millis|micros|nanos)$/.exec(logicalName);
  if (timestamp !== null) {
    const scaled = microseconds && timestamp[2] === 'millis';
    const unit = scaled ? 'MICROS' : TIME_UNITS[timestamp[2] as keyof typeof TIME_UNITS];
    const converted = unit === 'MILLIS' ? 'TIMESTAMP_MILLIS' : unit === 'MICROS' ? 'TIMESTAMP_MICROS' : undefined;
    const adjusted = timestamp[1] === undefined;
    return {
      ...plain,
      ...(scaled ? { write: millisToMicros, read: microsToMillis } : {}),
      element: { type: 'INT64', ...(adjusted && converted !== undefined ? { converted_type: converted } : {}), logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: adjusted, unit } },
    };
  }
  switch (logicalName) {
    case 'date':
      return { ...plain, element: { type: 'INT32', converted_type: 'DATE', logical_type: { type: 'DATE' } } };
    // A time of day has no zone (Iceberg's time is TIME(MICROS, false)); the converted types
    // TIME_MILLIS / TIME_MICROS would say UTC-adjusted, so there are none.
    case 'time-millis':
      if (microseconds) return { element: { type: 'INT64', logical_type: { type: 'TIME', isAdjustedToUTC: false, unit: 'MICROS' } }, write: millisToMicros, read: microsToMillis };
      return { ...plain, element: { type: 'INT32', logical_type: { type: 'TIME', isAdjustedToUTC: false, unit: 'MILLIS' } } };
    case 'time-micros':
      return { ...plain, element: { type: 'INT64', logical_type: { type: 'TIME', isAdjustedToUTC: false, unit: 'MICROS' } } };
    case 'uuid':
      if (underlyingName === 'fixed' && (underlying as types.FixedType).size !== 16) return plain;
      return {
        element: { type: 'FIXED_LEN_BYTE_ARRAY', type_length: 16, logical_type: { type: 'UUID' } },
        write: underlyingName === 'fixed' ? same : uuidBytes,
        read: underlyingName === 'fixed' ? copyBytes : uuidText,
      };
    case 'decimal': {
      const precision = Number(schema.precision);
      const scale = schema.scale === undefined ? 0 : Number(schema.scale);
      const size = underlyingName === 'fixed' ? (underlying as types.FixedType).size : undefined;
      const fits = Number.isInteger(precision) && precision >= 1 && Number.isInteger(scale) && scale >= 0 && scale <= precision && (size === undefined || precision <= maxDecimalDigits(size));
      // An invalid decimal annotation is ignored, as the Avro specification says.
      if (!fits) return plain;
      return { ...plain, element: { ...plain.element, converted_type: 'DECIMAL', precision, scale, logical_type: { type: 'DECIMAL', precision, scale } }, statistics: false };
    }
    default:
      return plain; // duration: 12 raw bytes, as parquet-avro writes it
  }
}

/** Digits a fixed of `size` bytes holds as a signed two's complement integer. */
function maxDecimalDigits(size: number): number {
  return Math.floor(Math.log10(2) * (8 * size - 1));
}

function leafNode(path: string, schemaPath: readonly SchemaElement[], element: SchemaElement, definition: number, repetition: number, primitive: Primitive, state: PlanState): Node {
  const index = state.leaves.length;
  state.leaves.push({
    schemaPath,
    element,
    name: schemaPath
      .slice(1)
      .map((entry) => entry.name)
      .join('.'),
    maxDefinitionLevel: definition,
    maxRepetitionLevel: repetition,
    statistics: primitive.statistics ?? true,
    writeElement: element.converted_type === 'DECIMAL' ? withoutDecimal(element) : element,
  });
  const { write, read } = primitive;
  return {
    leaves: [index],
    write(value, repetitionLevel, definitionLevel, columns) {
      const column = columns[index]!;
      column.values.push(write(value, path));
      column.definitionLevels.push(definitionLevel);
      column.repetitionLevels.push(repetitionLevel);
    },
    read: (value, at) => read(value, at),
  };
}

/** Writes the nulls of an absent value into every leaf under it. */
function writeAbsent(leaves: readonly number[], repetition: number, definition: number, columns: LeafColumn[]): void {
  for (const leaf of leaves) {
    const column = columns[leaf]!;
    column.values.push(null);
    column.definitionLevels.push(definition);
    column.repetitionLevels.push(repetition);
  }
}

/** Writes a slot's value: present, or the nulls of an optional one at the slot's definition level minus one. */
function writeSlot(field: PlannedField, value: unknown, repetition: number, definition: number, columns: LeafColumn[]): void {
  if (value === null || value === undefined) {
    writeAbsent(field.node.leaves, repetition, definition, columns);
    return;
  }
  field.node.write(value, repetition, field.optional ? definition + 1 : definition, columns);
}

function readSlot(field: PlannedField, value: unknown, path: string): unknown {
  if (value === null || value === undefined) {
    if (!field.optional) throw dataFileError('DATA_FILE_CORRUPT', `Parquet file: required field ${path} is missing`, { field: path });
    return null;
  }
  return field.node.read(value, path);
}

function planRecord(type: types.RecordType, path: string, element: SchemaElement, ids: FieldIds, schemaPath: readonly SchemaElement[], definition: number, repetition: number, state: PlanState): Node {
  const name = type.name ?? '(anonymous record)';
  if (state.enclosing.has(name)) throw unsupported(path, `refers back to its enclosing record ${name}; Parquet schemas cannot be recursive`);
  if (type.fields.length === 0) throw unsupported(path, `is the record ${name} without fields; Parquet has no empty groups`);
  element.num_children = type.fields.length;
  const inner: PlanState = { ...state, enclosing: new Set(state.enclosing).add(name) };
  const fieldIds = type.fields.map(() => ids.next());
  const fields = type.fields.map((field, index) => planField(field.name, `${path}.${field.name}`, field.type, fieldIds[index]!, ids, schemaPath, definition, repetition, inner));
  return recordNode(fields, state);
}

function recordNode(fields: readonly PlannedField[], state: PlanState): Node {
  void state;
  const leaves = fields.flatMap((field) => field.node.leaves);
  return {
    leaves,
    write(value, repetition, definition, columns) {
      const record = value as Record<string, unknown>;
      for (const field of fields) writeSlot(field, record[field.name], repetition, definition, columns);
    },
    read(value, path) {
      const row = value as Record<string, unknown>;
      const record: Record<string, unknown> = {};
      for (const field of fields) record[field.name] = readSlot(field, row[field.name], path === '' ? field.name : `${path}.${field.name}`);
      return record;
    },
  };
}

/** A repeated group (a list's `list`, a map's `key_value`) under `element`, which becomes the LIST or MAP group. */
function repeatedGroup(name: string, children: number, schemaPath: readonly SchemaElement[], state: PlanState): SchemaElement[] {
  const group: SchemaElement = { name, repetition_type: 'REPEATED', num_children: children };
  state.elements.push(group);
  return [...schemaPath, group];
}

function planList(type: types.ArrayType, path: string, element: SchemaElement, ids: FieldIds, schemaPath: readonly SchemaElement[], definition: number, repetition: number, state: PlanState): Node {
  Object.assign(element, { num_children: 1, converted_type: 'LIST', logical_type: { type: 'LIST' } });
  const groupPath = repeatedGroup('list', 1, schemaPath, state);
  // A present, non-empty list defines one more level (the repeated group) and repeats at one more.
  const itemDefinition = definition + 1;
  const itemRepetition = repetition + 1;
  const item = planField('element', `${path}[]`, type.itemsType, ids.next(), ids, groupPath, itemDefinition, itemRepetition, state);
  const leaves = item.node.leaves;
  return {
    leaves,
    write(value, repetitionLevel, definitionLevel, columns) {
      const items = value as readonly unknown[];
      if (items.length === 0) {
        writeAbsent(leaves, repetitionLevel, definitionLevel, columns);
        return;
      }
      for (let index = 0; index < items.length; index += 1) writeSlot(item, items[index], index === 0 ? repetitionLevel : itemRepetition, itemDefinition, columns);
    },
    read(value, at) {
      return (value as readonly unknown[]).map((entry) => readSlot(item, entry, `${at}[]`));
    },
  };
}

function planMap(type: types.MapType, path: string, element: SchemaElement, ids: FieldIds, schemaPath: readonly SchemaElement[], definition: number, repetition: number, state: PlanState): Node {
  Object.assign(element, { num_children: 1, converted_type: 'MAP', logical_type: { type: 'MAP' } });
  const groupPath = repeatedGroup('key_value', 2, schemaPath, state);
  const entryDefinition = definition + 1;
  const entryRepetition = repetition + 1;
  const keyId = ids.next();
  const valueId = ids.next();
  const keyElement: SchemaElement = { name: 'key', repetition_type: 'REQUIRED', field_id: keyId, ...STRING };
  state.elements.push(keyElement);
  const keyNode = leafNode(`${path}{key}`, [...groupPath, keyElement], keyElement, entryDefinition, entryRepetition, { element: STRING, write: same, read: readUtf8 }, state);
  const valueField = planField('value', `${path}{}`, type.valuesType as Type, valueId, ids, groupPath, entryDefinition, entryRepetition, state);
  const leaves = [...keyNode.leaves, ...valueField.node.leaves];
  return {
    leaves,
    write(value, repetitionLevel, definitionLevel, columns) {
      let index = 0;
      for (const key in value as Record<string, unknown>) {
        const entryRepetitionLevel = index === 0 ? repetitionLevel : entryRepetition;
        keyNode.write(key, entryRepetitionLevel, entryDefinition, columns);
        writeSlot(valueField, (value as Record<string, unknown>)[key], entryRepetitionLevel, entryDefinition, columns);
        index += 1;
      }
      if (index === 0) writeAbsent(leaves, repetitionLevel, definitionLevel, columns);
    },
    read(value, at) {
      const map: Record<string, unknown> = {};
      // hyparquet assembles a map as an object of its keys (strings read as bytes: see readParquetFile).
      for (const [key, entry] of mapEntries(value)) map[readUtf8(key)] = readSlot(valueField, entry, `${at}{}`);
      return map;
    },
  };
}

function withoutDecimal(element: SchemaElement): SchemaElement {
  const { converted_type: _converted, logical_type: _logical, precision: _precision, scale: _scale, ...raw } = element;
  return raw;
}

function mapEntries(value: unknown): [unknown, unknown][] {
  if (value instanceof Map) return [...(value as Map<unknown, unknown>).entries()];
  if (Array.isArray(value)) return value.map((entry: { key?: unknown; value?: unknown }) => [entry.key, entry.value]);
  return Object.entries(value as Record<string, unknown>);
}

function toBigInt(value: unknown): unknown {
  return BigInt(value as number);
}

function millisToMicros(value: unknown): unknown {
  return BigInt(value as number) * 1000n;
}

function microsToMillis(value: unknown, path: string): unknown {
  const micros = BigInt(value as bigint);
  if (micros % 1000n !== 0n) throw dataFileError('DATA_FILE_CORRUPT', `Parquet file: field ${path} holds ${micros} µs, not a whole number of the milliseconds its Avro schema says`, { field: path });
  return readLong(micros / 1000n, path);
}

function readLong(value: unknown, path: string): unknown {
  const number = Number(value);
  if (!Number.isSafeInteger(number)) throw dataFileError('DATA_FILE_CORRUPT', `Parquet file: long field ${path} holds ${String(value)}, beyond ±2^53 where JavaScript numbers are exact`, { field: path });
  return number;
}

const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

function uuidBytes(value: unknown, path: string): unknown {
  const text = String(value);
  if (!UUID_PATTERN.test(text)) {
    throw dataFileError('DATA_FILE_RECORD_INVALID', `Parquet: field ${path} holds ${JSON.stringify(text.slice(0, 60))}, which is not a UUID (8-4-4-4-12 hex digits) as its uuid logical type requires`, { field: path });
  }
  return Buffer.from(text.replaceAll('-', ''), 'hex');
}

function uuidText(value: unknown): unknown {
  const hex = Buffer.from(value as Uint8Array).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function readUtf8(value: unknown): string {
  if (typeof value === 'string') return value;
  const bytes = value as Uint8Array;
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

function copyBytes(value: unknown): unknown {
  return Buffer.from(value as Uint8Array);
}

function describe(type: Type): string {
  return JSON.stringify(type.schema());
}

function unsupported(path: string, what: string): Error {
  return dataFileError('DATA_FILE_SCHEMA_UNSUPPORTED', `Parquet: field ${path} ${what}`, { field: path });
}
